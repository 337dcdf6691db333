"""Shared pieces of the judge-loop tests: free ports, a real ``chroma run`` server, lean torch.

The Chroma server is started once per test process; ``lean_torch`` keeps MiniLM on
one thread during these tests (two threads on a shared 2-core machine spin and
burn twice the CPU for the same work)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

__all__ = ["free_port", "chroma_server_url", "lean_torch"]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _chroma_binary() -> str | None:
    here = Path(sys.executable).parent / "chroma"
    return str(here) if here.exists() else shutil.which("chroma")


@pytest.fixture(scope="session")
def chroma_server_url():
    """URL of a fresh Chroma server in a temp folder; stopped at the end of the session."""
    binary = _chroma_binary()
    if binary is None:
        pytest.skip("the chroma CLI is not installed in this environment")
    folder = tempfile.mkdtemp(prefix="cns-chroma-")
    port = free_port()
    log = open(Path(folder) / "server.log", "wb")
    env = dict(os.environ, ANONYMIZED_TELEMETRY="False")
    proc = subprocess.Popen([binary, "run", "--path", str(Path(folder) / "db"), "--host", "127.0.0.1",
                             "--port", str(port)], stdout=log, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/api/v2/heartbeat", timeout=1) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"chroma run did not start (exit {proc.poll()}); see {folder}/server.log")
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def lean_torch():
    """One torch thread for the module, restored afterwards."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
