"""Which judge loop serves which state folder, and a loop that stops when asked even with no parent left.

Issue 31, item 1: a ``cns agents`` left behind by another state folder's ``make run`` held the bus
ports; the next ``cns run`` adopted it, so turns went to the other folder's memory, and the orphan
ignored SIGTERM. All processes here run on loopback, on free ports.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from judge_loop_helpers import fake_ollama, free_port, ollama, proxy, wait_for  # noqa: F401  (fixtures)

from cns_core.agents.bus import BusProxy, Publisher, RESPONSE, bus_settings
from cns_core.agents.loop_record import RECORD_NAME, find_loop, read_record, write_record

ROOT = Path(__file__).resolve().parent.parent


def _bus():
    return bus_settings(pub_port=free_port(), sub_port=free_port(), journal_port=free_port())


def _env(state: Path, bus, **extra: str) -> dict[str, str]:
    return {**os.environ, "CNS_STATE_DIR": str(state), "CNS_BUS_PUB_PORT": str(bus.pub_port),
            "CNS_BUS_SUB_PORT": str(bus.sub_port), "CNS_BUS_JOURNAL_PORT": str(bus.journal_port),
            "CNS_OLLAMA_URL": f"http://127.0.0.1:{free_port()}", "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False", "PYTHONUNBUFFERED": "1", **extra}


def test_find_loop_tells_this_folders_loop_from_a_stranger(tmp_path, monkeypatch):
    ours, other = tmp_path / "ours", tmp_path / "other"
    ours.mkdir(), other.mkdir()
    monkeypatch.setenv("CNS_STATE_DIR", str(other))
    bus = _bus()
    assert find_loop(bus).state == "none"
    with BusProxy(bus, journal=False):
        write_record(bus)                               # the loop of the *other* folder
        assert find_loop(bus).ours and find_loop(bus).record.pid == os.getpid()
        monkeypatch.setenv("CNS_STATE_DIR", str(ours))
        found = find_loop(bus)
        assert found.state == "stranger" and not found.ours
        assert found.folder == str(ours.resolve())
        assert f"pid {os.getpid()}" in found.holder       # who holds the ports, when it can be told
        assert "not a judge loop of this state folder" in found.describe()
    # a record whose process is gone is no loop at all
    (ours / RECORD_NAME).write_text(json.dumps({"pid": 2**22 + 7, "started": 1.0, "state_dir": str(ours),
                                                "host": "127.0.0.1", "pub_port": bus.pub_port,
                                                "sub_port": bus.sub_port, "journal_port": bus.journal_port}))
    assert read_record(ours) is None and find_loop(bus).state == "none"


def _stranger(tmp_path: Path, bus) -> subprocess.Popen:
    """Another state folder's judge loop (the bus proxy alone) on ``bus``'s ports."""
    state = tmp_path / "stranger-state"
    log = (tmp_path / "stranger.log").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "cns_core.cli", "agents", "--no-memory", "--no-critic",
                             "--no-generator"], cwd=ROOT, env=_env(state, bus), stdout=log, stderr=subprocess.STDOUT)
    wait_for(lambda: (state / RECORD_NAME).is_file(), 120, 0.2, "the stranger's record", proc=proc,
             log=tmp_path / "stranger.log")
    return proc


def test_cns_agents_refuses_to_start_on_ports_held_by_another_folders_loop(tmp_path):
    bus = _bus()
    stranger = _stranger(tmp_path, bus)
    try:
        done = subprocess.run([sys.executable, "-m", "cns_core.cli", "agents", "--no-memory", "--no-critic",
                               "--no-generator"], cwd=ROOT, env=_env(tmp_path / "ours", bus), capture_output=True,
                              text=True, timeout=60)
    finally:
        stranger.terminate()
        stranger.wait(timeout=30)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"something else holds the bus ports {bus.pub_port}/{bus.sub_port} (pid {stranger.pid}" in done.stderr
    assert f"not a judge loop of this state folder ({(tmp_path / 'ours').resolve()})" in done.stderr
    assert "cns run" in done.stderr and "Traceback" not in done.stderr


def test_cns_run_starts_its_own_loop_on_free_ports_beside_a_stranger(tmp_path):
    bus = _bus()
    stranger = _stranger(tmp_path, bus)
    ours = tmp_path / "ours"
    log = tmp_path / "run.log"
    try:
        with log.open("w") as out:
            run = subprocess.Popen([sys.executable, "-m", "cns_core.cli", "run", "--no-dashboard"], cwd=ROOT,
                                   env=_env(ours, bus), stdout=out, stderr=subprocess.STDOUT)
        try:
            record = wait_for(lambda: read_record(ours), 120, 0.2, "our own judge loop's record", proc=run, log=log)
            text = log.read_text()
            assert "using it" not in text
            assert f"not a judge loop of this state folder ({ours.resolve()}); starting ours on free ports " \
                   f"{record.pub_port}/{record.sub_port}/{record.journal_port}" in text, text
            assert {record.pub_port, record.sub_port}.isdisjoint({bus.pub_port, bus.sub_port})
            assert record.state_dir == str(ours.resolve()) and record.pid != stranger.pid
            assert read_record(tmp_path / "stranger-state").pid == stranger.pid     # left alone
            found = find_loop(bus, folder=ours)
            assert found.ours and found.bus.pub_port == record.pub_port
        finally:
            run.send_signal(signal.SIGINT)
            assert run.wait(timeout=60) == 0, log.read_text()
        assert stranger.poll() is None, "cns run must leave the other folder's loop alone"
        assert read_record(ours) is None
    finally:
        stranger.terminate()
        stranger.wait(timeout=30)


_PARENT = """
import subprocess, sys
child = subprocess.Popen([sys.executable, "-m", "cns_core.cli", "agents", "--no-memory", "--no-generator",
                          *sys.argv[1:]], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
print(child.pid, flush=True)
for line in child.stdout:
    print(line, end="", flush=True)
"""


def test_an_orphaned_judge_loop_stops_within_its_grace_period_on_sigterm(tmp_path, ollama):
    """`cns agents` in its own process group, its parent killed hard (its output pipe now broken), a judge
    call in flight that would take 60 s: SIGTERM ends it within the grace period all the same."""
    grace = 3.0
    ollama.mode, ollama.delay = "slow", 60.0
    bus = _bus()
    env = _env(tmp_path / "state", bus, CNS_OLLAMA_URL=ollama.url)
    parent = subprocess.Popen([sys.executable, "-c", _PARENT, "--grace", str(grace)], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, text=True)
    child = None
    try:
        child = psutil.Process(int(parent.stdout.readline()))
        lines: list[str] = []
        while not any("press Ctrl-C" in line for line in lines):
            line = parent.stdout.readline()
            assert line, f"cns agents ended early: {''.join(lines)}"
            lines.append(line)
        with Publisher(bus, source="test") as pub:
            pub.publish(RESPONSE, {"query": "Q?", "answer": "A.", "query_id": "slow-1", "session_id": "t"})
        wait_for(lambda: any("/api/chat" in str(r) or r.get("messages") for r in ollama.requests), 60, 0.2,
                 "the judge call")
        parent.kill()
        parent.wait(timeout=10)
        child.send_signal(signal.SIGTERM)
        try:
            child.wait(timeout=grace + 4.0)
        except psutil.TimeoutExpired:
            pytest.fail(f"cns agents still running {grace + 4:g} s after SIGTERM with a grace period of {grace:g} s")
    finally:
        if parent.poll() is None:
            parent.kill()
        if child is not None and child.is_running():
            child.kill()
    assert not _listening(bus.pub_port)
    assert read_record(tmp_path / "state") is None


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.3)
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_cns_grade_never_sends_a_turn_to_another_folders_loop(tmp_path, monkeypatch, capsys):
    from cns_core.cli import main

    bus = _bus()
    other = tmp_path / "other"
    other.mkdir()
    for name, port in (("PUB", bus.pub_port), ("SUB", bus.sub_port), ("JOURNAL", bus.journal_port)):
        monkeypatch.setenv(f"CNS_BUS_{name}_PORT", str(port))
    with BusProxy(bus, journal=False):
        write_record(bus, other)                       # the proxy serves another state folder
        monkeypatch.setenv("CNS_STATE_DIR", str(tmp_path / "ours"))
        assert main(["grade", "--query", "Q?", "--answer", "A.", "--timeout", "2"]) == 1
    err = capsys.readouterr().err
    assert "not a judge loop of this state folder" in err and "this folder's turns are not sent there" in err


def test_a_judge_loop_started_by_cns_run_stops_by_itself_when_cns_run_is_killed(tmp_path):
    """cns run starts `cns agents --exit-with-parent`: killed hard, cns run leaves no loop behind."""
    bus = _bus()
    env = _env(tmp_path / "state", bus)
    parent = subprocess.Popen([sys.executable, "-c", _PARENT, "--no-critic", "--exit-with-parent", "--grace", "3"],
                              cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    child = None
    try:
        child = psutil.Process(int(parent.stdout.readline()))
        while "press Ctrl-C" not in (line := parent.stdout.readline()):
            assert line, "cns agents ended early"
        parent.kill()
        parent.wait(timeout=10)
        try:
            child.wait(timeout=3.0 + 4.0)
        except psutil.TimeoutExpired:
            pytest.fail("cns agents --exit-with-parent outlived its parent")
    finally:
        if parent.poll() is None:
            parent.kill()
        if child is not None and child.is_running():
            child.kill()
    assert not _listening(bus.pub_port) and read_record(tmp_path / "state") is None


def test_two_judge_loops_started_at_the_same_instant_on_one_folder_one_refuses(tmp_path):
    """Issue 50 item 4: two `cns agents` started within milliseconds of each other on one state folder both ran
    (the record is written only once the proxy listens). The folder's loop lock is taken before anything opens."""
    env = _env(tmp_path / "state", _bus())
    argv = [sys.executable, "-m", "cns_core.cli", "agents", "--no-memory", "--no-critic", "--no-generator"]
    both = [subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            for _ in range(2)]
    try:
        refused = wait_for(lambda: [p for p in both if p.poll() is not None], 120, 0.2, "one of the two loops to refuse")
        assert len(refused) == 1
        [running] = [p for p in both if p is not refused[0]]
        out = refused[0].stdout.read()
        assert refused[0].returncode == 2, out
        assert "not starting a second judge loop for the state folder" in out and f"pid {running.pid}" in out
        assert "Traceback" not in out
        assert running.poll() is None
    finally:
        for proc in both:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=60)
    assert both[0].returncode is not None and running.returncode == 0
