"""An exclusive lock on a file, held by one process at a time, that names its holder to whoever is refused.

Two things in CNS Studio belong to one process: an embedded Chroma folder (Chroma's ``PersistentClient`` is not
process-safe: a second process's index goes stale and concurrent writers can lose data) and a state folder's
judge loop (one store, one journal, one checkpoint). Each is guarded by :class:`ExclusiveLock`: ``flock(2)`` on a
lock file, so the kernel releases it when the holder exits however it exits (even SIGKILL), and a pid that is
reused later never holds it by mistake. The holder writes who it is into the file (pid, start time, command),
so a refused process can say which process holds it and what to do.

Within one process the lock is counted: every :meth:`ExclusiveLock.acquire` of the same file shares one hold,
and the file is unlocked when the last one is released (or the process ends).
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from cns_core.bounds import printable

__all__ = ["ExclusiveLock", "LockHeld", "Holder", "read_holder", "process_started", "remove_own_record", "command_line"]

_ACQUIRE_PATIENCE_S = 2.0      # a lock held for an instant (a probe, a process exiting) is waited for this long
_MAX_HOLDER_BYTES = 4096


@dataclass(frozen=True)
class Holder:
    """Who holds a lock, as the holder wrote it."""

    pid: int
    started: float
    command: str
    role: str

    def describe(self) -> str:
        """One printable line: the command and role come from a file another process wrote (a ``python -c`` holder's
        command holds line feeds), so their control characters are written as escapes (``\\x0a``)."""
        command, role = printable(self.command), printable(self.role)
        return f"pid {self.pid}" + (f" ({command})" if command else "") + (f", {role}" if role else "")


class LockHeld(RuntimeError):
    """Another process holds the lock; ``holder`` says which when it could be read."""

    def __init__(self, message: str, holder: Holder | None):
        super().__init__(message)
        self.holder = holder


def process_started(pid: int) -> float | None:
    """When process ``pid`` started (psutil's create_time), None when it is gone or a zombie: with the pid,
    it tells a live process from a later one that reuses the pid."""
    import psutil

    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return None
        return proc.create_time()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None


def remove_own_record(path: str | Path, pid_key: str) -> None:
    """Remove a JSON record file when its ``pid_key`` names this process (a newer process's record stays)."""
    path = Path(path)
    try:
        if json.loads(path.read_text(encoding="utf-8")).get(pid_key) == os.getpid():
            path.unlink()
    except (OSError, ValueError, AttributeError):
        pass


def command_line(pid: int) -> str:
    """Process ``pid``'s program and first five arguments as one printable line of at most 200 characters ("" when
    it is gone or hidden): an argument may hold line feeds (``python -c "..."``) or escape sequences."""
    import psutil

    try:
        words = psutil.Process(pid).cmdline()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return ""
    shown = [Path(words[0]).name, *words[1:6]] if words else []
    return printable(" ".join(shown))[:200]


def read_holder(path: str | Path) -> Holder | None:
    """The holder a lock file names (None when it names none or cannot be read); says nothing of whether it is held."""
    try:
        with open(path, "rb") as handle:
            raw = json.loads(handle.read(_MAX_HOLDER_BYTES).decode("utf-8"))
        return Holder(int(raw["pid"]), float(raw.get("started", 0.0)), str(raw.get("command", ""))[:200],
                      str(raw.get("role", ""))[:200])
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


class _Hold:
    def __init__(self, fd: int):
        self.fd = fd
        self.users = 0


_holds: dict[str, _Hold] = {}
_holds_lock = threading.Lock()


def _forget_in_child() -> None:
    """A forked child does not hold its parent's locks: it closes its copies (the parent's hold stays)."""
    global _holds_lock
    _holds_lock = threading.Lock()      # another thread may have held it at the fork
    for hold in _holds.values():
        try:
            os.close(hold.fd)
        except OSError:
            pass
    _holds.clear()


os.register_at_fork(after_in_child=_forget_in_child)


class ExclusiveLock:
    """``flock`` on ``path`` (created with its folder); ``what`` names the guarded thing in messages."""

    def __init__(self, path: str | Path, what: str, role: str = ""):
        self.path = Path(path)
        self.what = what
        self.role = role

    @property
    def key(self) -> str:
        return str(self.path.resolve())

    @property
    def held_here(self) -> bool:
        """Whether this process holds the lock."""
        with _holds_lock:
            return self.key in _holds

    def acquire(self, patience_s: float = _ACQUIRE_PATIENCE_S) -> None:
        """Hold the lock (shared with this process's other holders of the same file), waiting up to ``patience_s``
        for a brief holder; LockHeld naming the holder when another process keeps it."""
        with _holds_lock:
            hold = _holds.get(self.key)
            if hold is not None:
                hold.users += 1
                return
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)     # not inherited by exec'd children
            deadline = time.monotonic() + patience_s
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        os.close(fd)
                        holder = read_holder(self.path)
                        raise LockHeld(f"{self.what} is held by " + (holder.describe() if holder else
                                       "another process") + f" (lock file {self.path})", holder) from None
                    time.sleep(0.05)
            self._write_holder(fd)
            hold = _holds[self.key] = _Hold(fd)
            hold.users = 1

    def _write_holder(self, fd: int) -> None:
        me = os.getpid()
        data = json.dumps({"pid": me, "started": process_started(me) or time.time(),
                           "command": command_line(me) or printable(Path(sys.argv[0]).name), "role": self.role})
        os.ftruncate(fd, 0)
        os.pwrite(fd, data.encode("utf-8"), 0)

    def release(self) -> None:
        """Give up one hold; the last one unlocks the file (nothing happens when this process holds none)."""
        with _holds_lock:
            hold = _holds.get(self.key)
            if hold is None:
                return
            hold.users -= 1
            if hold.users > 0:
                return
            del _holds[self.key]
            try:
                os.ftruncate(hold.fd, 0)
            except OSError:
                pass
            os.close(hold.fd)          # closing the only descriptor releases the flock

    def holder(self) -> Holder | None:
        """The process holding the lock now (None when nobody does), without taking it for longer than a probe."""
        if self.held_here:
            return read_holder(self.path)
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = read_holder(self.path)
            return holder or Holder(0, 0.0, "", "unknown process")
        finally:
            os.close(fd)     # a shared probe taken is dropped at once
        return None
