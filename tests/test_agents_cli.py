"""``cns agents``, ``cns grade`` and ``cns replay``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from cns_core.agents.critic import CriticAgent
from cns_core.cli import main
from fake_ollama import fake_grade
from judge_loop_helpers import (  # noqa: F401  (fixtures)
    bus_config, fake_ollama, free_port, judge_settings, ollama, proxy, wait_for,
)


@pytest.fixture
def bus_env(bus_config, monkeypatch):
    """Point the CLI's bus settings at the test's ports."""
    for name, port in (("PUB", bus_config.pub_port), ("SUB", bus_config.sub_port),
                       ("JOURNAL", bus_config.journal_port)):
        monkeypatch.setenv(f"CNS_BUS_{name}_PORT", str(port))
    return bus_config


def test_grade_prints_the_critique(bus_env, proxy, judge_settings, capsys):
    with CriticAgent(bus_env, settings=judge_settings):
        code = main(["grade", "--query", "What is 2+2?", "--answer", "4", "--reference", "4", "--timeout", "10"])
    out = capsys.readouterr().out
    assert code == 0 and out.startswith(f"score: {fake_grade('4')}/5") and "feedback: The response" in out


def test_grade_reports_a_null_score_and_json(bus_env, proxy, judge_settings, ollama, capsys):
    ollama.mode = "error"
    with CriticAgent(bus_env, settings=judge_settings):
        code = main(["grade", "--query", "Q?", "--answer", "A", "--json", "--timeout", "10"])
    critique = json.loads(capsys.readouterr().out)
    assert code == 1 and critique["score"] is None and critique["error"].startswith("http_error")


def test_grade_without_agents_times_out_clearly(bus_env, proxy, capsys):
    assert main(["grade", "--query", "Q?", "--answer", "A", "--timeout", "0.5"]) == 1
    assert "no critique" in capsys.readouterr().err


def test_grade_without_a_proxy_is_one_clear_line(bus_env, state_dir, monkeypatch, capsys):
    import cns_core.agents.bus as bus

    settings = bus.bus_settings
    monkeypatch.setattr(bus, "bus_settings", lambda **kw: settings(**{"ready_timeout_s": 0.5, **kw}))
    monkeypatch.setenv("CNS_BUS_PUB_PORT", str(free_port()))
    assert main(["grade", "--query", "Q?", "--answer", "A"]) == 1
    err = capsys.readouterr().err
    assert "cns grade: error:" in err and "no bus proxy" in err and "Traceback" not in err


def test_replay_sends_good_lines_and_names_bad_ones(bus_env, proxy, judge_settings, tmp_path, capsys):
    lines = [
        json.dumps({"query": "Q1?", "answer": "A1", "query_id": "r1"}),
        "{not json",
        json.dumps({"instruction": "Q3?", "response": "A3", "reference_answer": "R3", "query_id": "r3",
                    "rubric": {"criteria": "ok?", **{f"score{i}_description": str(i) for i in range(1, 6)}}}),
        "",
        json.dumps({"query": "Q5?"}),
        json.dumps(["a", "list"]),
        json.dumps({"query": "Q7?", "answer": "A7"}),
    ]
    path = tmp_path / "turns.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with CriticAgent(bus_env, settings=judge_settings) as critic:
        code = main(["replay", str(path), "--wait", "--timeout", "20"])
    captured = capsys.readouterr()
    assert code == 1
    assert f"{path}:2: not JSON" in captured.err and f"{path}:5: answer: Field required" in captured.err
    assert f"{path}:6: expected a JSON object" in captured.err
    assert "sent 3 turn(s), skipped 3 bad line(s)" in captured.out and "graded 3, no score 0" in captured.out
    assert critic.graded == 3


def test_replay_of_a_missing_file(bus_env, capsys):
    assert main(["replay", "/nonexistent/turns.jsonl"]) == 1
    assert "no such file" in capsys.readouterr().err


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_cns_agents_runs_until_a_signal_and_stops_cleanly(bus_env, ollama, state_dir, tmp_path, sig):
    env = {**os.environ, "CNS_STATE_DIR": str(state_dir), "CNS_OLLAMA_URL": ollama.url,
           "CNS_BUS_PUB_PORT": str(bus_env.pub_port), "CNS_BUS_SUB_PORT": str(bus_env.sub_port),
           "CNS_BUS_JOURNAL_PORT": str(bus_env.journal_port), "ANONYMIZED_TELEMETRY": "False",
           "PYTHONUNBUFFERED": "1"}
    launcher = [sys.executable, "-c", "import sys; from cns_core.cli import main; sys.exit(main())"]
    out, err = tmp_path / "agents.out", tmp_path / "agents.err"
    with out.open("w") as stdout, err.open("w") as stderr:
        # a generous grace: on a loaded machine a stop may outlast the default (then the watchdog exits 1,
        # which is right for the product and not what this test is about)
        proc = subprocess.Popen([*launcher, "agents", "--no-memory", "--no-generator", "--grace", "45"],
                                stdout=stdout, stderr=stderr, text=True, env=env)
    try:
        wait_for(lambda: "press Ctrl-C" in out.read_text(), 120, what="cns agents to say 'press Ctrl-C'", proc=proc,
                 log=lambda: out.read_text() + err.read_text())
        assert "critic: running" in out.read_text()
        assert main(["grade", "--query", "Q?", "--answer", "Yes.", "--timeout", "30"]) == 0
        proc.send_signal(sig)
        code = proc.wait(timeout=60)
        assert code == 0, f"exit {code}; stdout:\n{out.read_text()}\nstderr:\n{err.read_text()}"
        assert "stopped" in err.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
