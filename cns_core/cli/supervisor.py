"""Run several long-lived commands as one: start them, relay their output, stop them all together.

``cns run`` (and so ``make run``) uses it for the memory's Chroma server, the judge loop
(``cns agents``) and the dashboard (``streamlit run``), and ``make run``'s demo data filler. Each child
runs in its own process group, so the supervisor alone decides when it stops: on SIGINT or SIGTERM every
child gets SIGTERM (its whole group), and whatever is still alive after the grace period is
killed; a child marked ``stop_last`` (the memory's server) only once the others are gone.
A child marked ``restart`` that dies is started again (a few times, with a pause; a child that ran
``stable_s`` healthy since has its count forgiven); one with a ``health`` check (a real request with
its own deadline, not a heartbeat) that fails ``health_misses`` times in a row is killed and so
restarted. A child marked
``one_shot`` (the demo data filler) runs to its end and its exit, whatever its status, ends nothing; any
other child that exits ends the whole run. Nothing is left behind: no process, and so no
port.

Not even when the supervisor itself is killed with SIGKILL, when it can stop nobody:
each child is started with a parent-death signal (Linux ``prctl(PR_SET_PDEATHSIG)``,
through ctypes), so the kernel sends it ``death_signal`` the moment the supervisor is
gone. The dashboard gets SIGKILL (Streamlit may take 20 s and more over SIGTERM, and
holds nothing to save); the judge loop SIGTERM (it finishes its batch within its grace).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import IO, Callable, Mapping, Sequence

__all__ = ["ChildSpec", "Supervisor", "exit_with_parent"]

_PR_SET_PDEATHSIG = 1


def exit_with_parent(sig: int = signal.SIGTERM) -> Callable[[], None]:
    """A ``preexec_fn`` that has the kernel send ``sig`` to the child when its parent dies (Linux; elsewhere
    it does nothing, and ``cns agents --exit-with-parent`` still polls its parent).

    Runs in the child between fork and exec: only async-signal-safe work (one prctl call).
    """
    parent = os.getpid()
    libc = None
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        except OSError:
            libc = None

    def preexec() -> None:
        if libc is None:
            return
        libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
        if os.getppid() != parent:      # the parent died before the call took effect
            os.kill(os.getpid(), sig)

    return preexec


@dataclass(frozen=True)
class ChildSpec:
    """One command to supervise; ``name`` prefixes its output lines."""

    name: str
    argv: Sequence[str]
    env: Mapping[str, str] | None = None
    cwd: str | None = None
    restart: bool = False           # start it again when it dies (up to max_restarts)
    max_restarts: int = 3
    restart_pause_s: float = 2.0
    death_signal: int = signal.SIGTERM   # what the kernel sends it when the supervisor dies
    on_start: Callable[[int], None] | None = None   # told each new pid (the dashboard's record)
    stop_last: bool = False         # stopped once the others have exited (the memory's server: they write to it)
    one_shot: bool = False          # a task that ends by itself (the demo data): its exit stops nothing
    health: Callable[[], str | None] | None = None   # a real request with its own deadline: None when it answered,
                                                     # else what went wrong (a live process is not enough)
    health_every_s: float = 15.0
    health_misses: int = 2          # this many failed checks in a row: the child is killed and restarted
    health_grace_s: float = 60.0    # after a start, failures count only from here (or from its first good answer)
    stable_s: float = 300.0         # a restarted child that then ran this long healthy has its restarts forgiven


@dataclass
class _Child:
    spec: ChildSpec
    proc: subprocess.Popen
    restarts: int = 0
    relay: threading.Thread | None = field(default=None, repr=False)
    ended: bool = False             # a one-shot child that has exited (and been said so)
    started_at: float = field(default_factory=time.monotonic)
    answered: bool = False          # its health check has succeeded since this start
    misses: int = 0                 # health checks failed in a row


class Supervisor:
    """``run()`` blocks until a signal or a child's exit, then stops every child; returns the exit status."""

    def __init__(self, children: Sequence[ChildSpec], *, grace_s: float = 10.0, out: IO[str] | None = None,
                 poll_s: float = 0.3):
        if not children:
            raise ValueError("nothing to supervise")
        self.specs = list(children)
        self.grace_s = grace_s
        self.out = out or sys.stdout
        self.poll_s = poll_s
        self.children: list[_Child] = []
        self._stop = threading.Event()
        self._signal: int | None = None
        self._print_lock = threading.Lock()

    def say(self, text: str) -> None:
        with self._print_lock:
            print(text, file=self.out, flush=True)

    def _start(self, spec: ChildSpec) -> subprocess.Popen:
        proc = subprocess.Popen(list(spec.argv), env=dict(spec.env) if spec.env is not None else None, cwd=spec.cwd,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, bufsize=1, start_new_session=True,
                                preexec_fn=exit_with_parent(spec.death_signal))
        self.say(f"[{spec.name}] started (pid {proc.pid})")
        if spec.on_start is not None:
            try:
                spec.on_start(proc.pid)
            except OSError as exc:
                self.say(f"[{spec.name}] could not record pid {proc.pid}: {exc}")
        return proc

    def _relay(self, child: _Child) -> threading.Thread:
        proc, name = child.proc, child.spec.name

        def pump() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                self.say(f"[{name}] {line.rstrip()}")

        thread = threading.Thread(target=pump, name=f"cns-relay-{name}", daemon=True)
        thread.start()
        return thread

    def _on_signal(self, signum: int, _frame: object) -> None:
        self._signal = signum
        self._stop.set()

    def run(self) -> int:
        previous = {sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
        status = 0
        try:
            for spec in self.specs:
                child = _Child(spec, self._start(spec))
                child.relay = self._relay(child)
                self.children.append(child)
                if spec.health is not None:
                    threading.Thread(target=self._watch_health, args=(child,), name=f"cns-health-{spec.name}",
                                     daemon=True).start()
            while not self._stop.wait(self.poll_s):
                status = self._check_children()
                if status:
                    break
            if self._signal is not None:
                self.say(f"stopping ({signal.Signals(self._signal).name})…")
        finally:
            self.stop_all()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        return status

    def _check_children(self) -> int:
        """0 while all is well (restarting what may be restarted), else the status to end the run with."""
        for child in self.children:
            code = child.proc.poll()
            if code is None or child.ended:
                continue
            spec = child.spec
            if spec.one_shot:
                child.ended = True
                _signal_group(child.proc, signal.SIGKILL)   # anything it left in its group
                if child.relay is not None:
                    child.relay.join(2.0)        # its last lines before the supervisor's
                self.say(f"[{spec.name}] {_ending(code)}" + ("" if code == 0 else "; the others go on"))
                if all(c.ended for c in self.children):
                    self._stop.set()            # nothing left to supervise
                continue
            if spec.restart and (child.answered or spec.health is None) \
                    and time.monotonic() - child.started_at >= spec.stable_s:
                child.restarts = 0           # it had recovered: an end long after is not the same failure
            if spec.restart and child.restarts < spec.max_restarts:
                child.restarts += 1
                self.say(f"[{spec.name}] {_ending(code)}; restarting "
                         f"({child.restarts}/{spec.max_restarts}) in {spec.restart_pause_s:g} s")
                if self._stop.wait(spec.restart_pause_s):
                    return 0
                child.proc = self._start(spec)
                child.relay = self._relay(child)
                child.started_at, child.answered, child.misses = time.monotonic(), False, 0
                continue
            if spec.restart:
                self.say(f"[{spec.name}] {_ending(code)} after {spec.max_restarts} restart(s), none of which ran "
                         f"{spec.stable_s:g} s healthy; stopping the rest (see its lines above)")
            else:
                self.say(f"[{spec.name}] exited with status {code}; stopping the rest")
            return code or 1
        return 0

    def _watch_health(self, child: _Child) -> None:
        """Ask a running child a real question every ``health_every_s``; after ``health_misses`` failures in a
        row (counted once it has answered once, or its start-up grace is over) kill it: the poll loop restarts
        it like any child that died. A server whose heartbeat answers while reads hang is not alive."""
        spec = child.spec
        assert spec.health is not None
        while not self._stop.wait(spec.health_every_s):
            proc = child.proc
            if proc.poll() is not None or child.ended:
                continue
            try:
                problem = spec.health()
            except Exception as exc:  # noqa: BLE001 - a check that raises is a failed check, not a dead thread
                problem = f"{type(exc).__name__}: {exc}"
            if proc is not child.proc:
                continue                 # restarted meanwhile
            if problem is None:
                child.answered, child.misses = True, 0
                continue
            if not child.answered and time.monotonic() - child.started_at < spec.health_grace_s:
                continue                 # still starting
            child.misses += 1
            if child.misses >= spec.health_misses and proc.poll() is None and not self._stop.is_set():
                self.say(f"[{spec.name}] {problem} ({child.misses} checks in a row); killing it to restart it")
                child.misses = 0
                _signal_group(proc, signal.SIGKILL)

    def stop_all(self) -> None:
        """SIGTERM every child's process group, wait up to the grace period, then SIGKILL what is left; children
        marked ``stop_last`` get the same once the others are gone."""
        for last in (False, True):
            self._stop_group([c for c in self.children if c.spec.stop_last == last and not c.ended])

    def _stop_group(self, children: Sequence[_Child]) -> None:
        for child in children:
            _signal_group(child.proc, signal.SIGTERM)
        deadline = time.monotonic() + self.grace_s
        for child in children:
            try:
                child.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.say(f"[{child.spec.name}] did not stop within {self.grace_s:g} s; killing it")
                _signal_group(child.proc, signal.SIGKILL)
                child.proc.wait()
            _signal_group(child.proc, signal.SIGKILL)   # any grandchild left in its group
            if child.relay is not None:
                child.relay.join(2.0)
            # Its own words ("[agents] stopped", relayed above) are the child's; this line is the supervisor's
            # and says how the process ended, so Ctrl-C never prints the same line twice.
            self.say(f"[{child.spec.name}] {_ending(child.proc.returncode)}")


def _ending(code: int | None) -> str:
    """``exited (status 0)``, ``exited with status 3`` or ``ended by SIGTERM``."""
    if code is None or code == 0:
        return "exited (status 0)"
    if code < 0:
        try:
            return f"ended by {signal.Signals(-code).name}"
        except ValueError:
            return f"ended by signal {-code}"
    return f"exited with status {code}"


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
