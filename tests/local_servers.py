"""Starting and stopping real servers on 127.0.0.1 in tests (chroma run, streamlit run)."""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.request

__all__ = ["free_port", "wait_until_serving", "stop_process"]


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


def stop_process(proc: subprocess.Popen, grace_s: float = 10.0) -> None:
    """Terminate, then kill if it does not exit within ``grace_s``."""
    proc.terminate()
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
