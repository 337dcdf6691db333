"""Starting and stopping real servers on 127.0.0.1 in tests (chroma run, streamlit run), and waiting for state.

:func:`wait_for` is the suite's one way to wait: it polls for the state a test needs (a value, a port
answering, a file written, a log line) up to a generous bound, and fails at once, with the process's log,
when the process that should bring that state has exited. No test sleeps for a fixed time instead: on a
busy machine a fixed sleep is too short, on an idle one too long. Playwright's own ``locator.wait_for`` /
``page.wait_for_function`` are the same kind of wait inside the browser.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Mapping, TypeVar

from cns_core.cli.ports import spare_port

__all__ = ["free_port", "wait_for", "WaitFailed", "wait_until_serving", "wait_for_demo_data", "stop_process", "serve_dashboard"]

T = TypeVar("T")
LOG_TAIL = 4000         # characters of a log quoted in a failed wait

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now, and that no process asking the OS for "any
    free port" (a Ray worker of a parallel test, say) is handed before the server under test binds it."""
    return spare_port("127.0.0.1")


class WaitFailed(AssertionError, RuntimeError):
    """The state waited for did not come: the bound ran out, or the process that should bring it exited.

    An ``AssertionError`` (a test that meets it fails with its message) and a ``RuntimeError`` (what
    :func:`wait_until_serving` raised before it waited through :func:`wait_for`; its callers catch that)."""


def _tail(log: Path | Callable[[], str] | None) -> str:
    if log is None:
        return ""
    try:
        text = log() if callable(log) else log.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        text = f"(unreadable: {exc})"
    return f"; output:\n{text[-LOG_TAIL:]}"


def wait_for(predicate: Callable[[], T], timeout: float = 60.0, interval: float = 0.05, what: str = "condition",
             *, proc: subprocess.Popen | None = None, log: Path | Callable[[], str] | None = None,
             progress: Callable[[], object] | None = None) -> T:
    """Poll ``predicate`` until it returns something truthy, and return that.

    ``timeout`` is a bound, not a duration: a wait ends as soon as the state is there, so make it generous
    (the default is a minute; a suite under load runs 2-3 times slower than on idle cores). With ``progress``
    (a bulk job's count, say) the bound counts from the last change of its value: a job that keeps moving is
    waited for however slow the machine, one that stalls fails. Raises :class:`WaitFailed` naming ``what``
    when the bound runs out, or at once when ``proc`` has exited; ``log`` (a file, or a callable returning
    text) is quoted at the end of the message."""
    deadline = time.monotonic() + timeout
    last = progress() if progress is not None else None
    while True:
        value = predicate()
        if value:
            return value
        if proc is not None and proc.poll() is not None:
            raise WaitFailed(f"the process exited with status {proc.returncode} before {what}{_tail(log)}")
        if progress is not None and (now := progress()) != last:
            last, deadline = now, time.monotonic() + timeout
        if time.monotonic() > deadline:
            stalled = f" (stalled at {last})" if progress is not None else ""
            raise WaitFailed(f"timed out after {timeout:g} s waiting for {what}{stalled}{_tail(log)}")
        time.sleep(interval)


def answers_200(url: str) -> bool:
    """Whether ``url`` answers HTTP 200 right now."""
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return resp.status == 200
    except OSError:
        return False


def wait_until_serving(url: str, proc: subprocess.Popen, what: str, timeout_s: float = 120.0,
                       log: Path | None = None) -> None:
    """Wait until ``url`` answers 200; :class:`WaitFailed` (a ``RuntimeError``) naming ``what`` if the process
    exits first or the bound runs out."""
    wait_for(lambda: answers_200(url), timeout_s, 0.2, f"{what} to answer {url}", proc=proc, log=log)


def wait_for_demo_data(state: Path, proc: subprocess.Popen | None = None, timeout_s: float = 1200.0,
                       log: Path | None = None):
    """The demo data record of ``state`` (``cns run --demo-data``: ``demo_data.json``) once its filler is no longer
    at work (done, failed, or its process gone), through :func:`wait_for`. Without ``proc`` (a ``make run``
    started elsewhere) a folder with no record gives None at once; with it, :class:`WaitFailed` when ``proc``
    exits first or the bound runs out."""
    from cns_core.cli.demo_progress import read_progress

    if proc is None and read_progress(state) is None:
        return None

    def finished():
        progress = read_progress(state)
        return progress if progress is not None and not progress.running else None

    return wait_for(finished, timeout_s, 0.5, f"the demo data in {state} to be written", proc=proc, log=log)


def stop_process(proc: subprocess.Popen, grace_s: float = 10.0) -> None:
    """Terminate, then kill if it does not exit within ``grace_s``."""
    proc.terminate()
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextmanager
def serve_dashboard(state: Path, env: Mapping[str, str] | None = None, timeout_s: float = 120.0) -> Iterator[str]:
    """``streamlit run dashboard.py`` on 127.0.0.1 with ``state`` as CNS_STATE_DIR; yields its base URL.

    The server is fresh: nothing has visited it yet (Streamlit's page strategy is still undecided).
    """
    state.mkdir(parents=True, exist_ok=True)
    full = {**os.environ, "CNS_STATE_DIR": str(state), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
            "ANONYMIZED_TELEMETRY": "False", **(env or {})}
    port = free_port()
    log_path = state / "streamlit.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "dashboard.py", "--server.port", str(port),
                                 "--server.address", "127.0.0.1", "--server.headless", "true",
                                 "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
                                cwd=ROOT, env=full, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(f"{base}/_stcore/health", proc, "streamlit run", timeout_s, log=log_path)
        yield base
    finally:
        stop_process(proc)
