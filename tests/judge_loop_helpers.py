"""Shared pieces of the judge-loop tests: free ports, a real ``chroma run`` server, lean torch, and
:func:`local_servers.wait_for` (the suite's one wait, re-exported here where these tests have always found it).

The Chroma server is started once per test process; ``lean_torch`` keeps MiniLM on
one thread during these tests (two threads on a shared 2-core machine spin and
burn twice the CPU for the same work)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from local_servers import free_port, stop_process, wait_for, wait_until_serving

__all__ = ["free_port", "chroma_server_url", "lean_torch", "bus_config", "proxy", "fake_ollama", "ollama",
           "judge_settings", "warm_embedder", "wait_for"]


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
        try:
            wait_until_serving(f"{url}/api/v2/heartbeat", proc, "chroma run")
        except RuntimeError as exc:
            pytest.fail(f"{exc}; see {folder}/server.log")
        yield url
    finally:
        stop_process(proc)
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


@pytest.fixture
def bus_config():
    """Bus settings on free loopback ports (journal included)."""
    from cns_core.agents.bus import bus_settings

    return bus_settings(pub_port=free_port(), sub_port=free_port(), journal_port=free_port(), ready_timeout_s=5.0)


@pytest.fixture
def proxy(bus_config, state_dir):
    """A running bus proxy (and journal, under the test's state dir), recorded as the state dir's judge loop
    the way `cns agents` records itself (cns_core.agents.loop_record)."""
    from cns_core.agents.bus import BusProxy
    from cns_core.agents.loop_record import clear_record, write_record

    with BusProxy(bus_config) as running:
        write_record(bus_config)
        yield running
        clear_record()


@pytest.fixture(scope="module")
def fake_ollama():
    """One fake Ollama server per test module; tests set ``mode`` and it is reset after each."""
    from fake_ollama import FakeOllama

    with FakeOllama() as server:
        yield server


@pytest.fixture
def ollama(fake_ollama):
    fake_ollama.mode = "good"
    fake_ollama.delay = 2.0
    fake_ollama.requests.clear()
    yield fake_ollama
    fake_ollama.mode = "good"


@pytest.fixture
def judge_settings(ollama):
    """The configured judge settings pointed at the fake server, with a short timeout."""
    import dataclasses

    from cns_core.agents.prometheus import critic_settings

    return dataclasses.replace(critic_settings(), url=ollama.url, timeout=1.0)


@pytest.fixture(scope="module")
def warm_embedder(lean_torch):
    """Load MiniLM once, before agents start (its first load takes seconds)."""
    from cns_core.models import get_embedder

    get_embedder().encode(["warm up"])
