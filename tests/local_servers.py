"""Starting and stopping real servers on 127.0.0.1 in tests (chroma run, streamlit run)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Mapping

__all__ = ["free_port", "wait_until_serving", "wait_for_demo_data", "stop_process", "serve_dashboard"]

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_serving(url: str, proc: subprocess.Popen, what: str, timeout_s: float = 60.0) -> None:
    """Poll ``url`` until it answers 200; raise naming ``what`` if the process dies or time runs out."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            pass
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with status {proc.returncode} before answering {url}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not answer {url} within {timeout_s:.0f} s")
        time.sleep(0.2)


def wait_for_demo_data(state: Path, proc: subprocess.Popen | None = None, timeout_s: float = 1200.0):
    """The demo data record of ``state`` (``cns run --demo-data``: ``demo_data.json``) once its filler is no longer
    at work (done, failed, or its process gone), polled. Without ``proc`` (a ``make run`` started elsewhere) a
    folder with no record gives None at once; with it, RuntimeError when ``proc`` dies first or time runs out."""
    from cns_core.cli.demo_progress import read_progress

    deadline = time.monotonic() + timeout_s
    while True:
        progress = read_progress(state)
        if progress is not None and not progress.running:
            return progress
        if progress is None and proc is None:
            return None
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"cns run exited with status {proc.returncode} before its demo data was written")
        if time.monotonic() > deadline:
            raise RuntimeError(f"the demo data in {state} was not written within {timeout_s:.0f} s: {progress}")
        time.sleep(0.5)


def stop_process(proc: subprocess.Popen, grace_s: float = 10.0) -> None:
    """Terminate, then kill if it does not exit within ``grace_s``."""
    proc.terminate()
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextmanager
def serve_dashboard(state: Path, env: Mapping[str, str] | None = None, timeout_s: float = 60.0) -> Iterator[str]:
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
        try:
            wait_until_serving(f"{base}/_stcore/health", proc, "streamlit run", timeout_s)
        except RuntimeError as exc:
            raise RuntimeError(f"{exc}; log:\n{log_path.read_text()}") from None
        yield base
    finally:
        stop_process(proc)
