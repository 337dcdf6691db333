"""Issue 43 item 7: the models load once, in the background, as the server starts, and every page says so
while they load (the Engrams page too, which showed nothing while its memory opened)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from cns_core.views import warm_up

ROOT = Path(__file__).resolve().parent.parent


def test_stages_run_once_in_order_and_a_failure_does_not_stop_the_rest():
    ran: list[str] = []
    gate = threading.Event()

    def boom() -> None:
        ran.append("b")
        raise OSError("no model here")

    w = warm_up.WarmUp([("a", lambda: ran.append("a") or gate.wait(5)), ("b", boom), ("c", lambda: ran.append("c"))])
    assert not w.status().started and not w.status().finished
    w.start()
    w.start()                                       # idempotent: one thread, one pass
    first = w.status()
    assert first.started and first.done == 0 and first.total == 3 and first.stage == "a"
    assert "0 of 3 done: a" in first.line()
    gate.set()
    assert w.join(5)
    done = w.status()
    assert ran == ["a", "b", "c"] and done.finished and done.fraction == 1.0 and done.stage is None
    assert done.errors == ("b: no model here",)


@pytest.fixture
def loading(state_dir, monkeypatch):
    """The process's warm-up replaced by one stuck in its first stage until the test lets it go."""
    release = threading.Event()
    stuck = warm_up.WarmUp([("the NLI model", lambda: release.wait(30))]).start()
    monkeypatch.setattr(warm_up, "WARM_UP", stuck)
    monkeypatch.syspath_prepend(str(ROOT / "pages"))
    yield release, stuck
    release.set()


def _progress(at: AppTest, testid: str = "cns-warm-up") -> list[str]:
    return [h.proto.body for h in at.html if f'data-testid="{testid}"' in h.proto.body]


@pytest.mark.parametrize("page", ["engrams.py", "judge.py", "weights.py"])
def test_every_page_shows_the_models_loading_until_they_are_done(loading, page):
    release, stuck = loading
    at = AppTest.from_file(str(ROOT / "dashboard.py"), default_timeout=120)
    at.run()
    at.switch_page(f"pages/{page}").run()
    assert not at.exception
    shown = _progress(at)
    assert shown and "Loading the models in the background (0 of 1 done: the NLI model" in shown[0]
    assert "data-cns-elapsed=" in shown[0] and "setInterval" in shown[0]    # its seconds count on in the browser
    release.set()
    assert stuck.join(5)
    at.run()
    assert _progress(at) == []


def test_cns_run_serves_the_dashboard_with_the_warm_up_started(monkeypatch):
    from streamlit.web import cli

    from cns_core.views import serve

    started = warm_up.WarmUp([("nothing", lambda: None)])
    monkeypatch.setattr(warm_up, "WARM_UP", started)
    calls: list[list[str]] = []

    def fake_main(args, prog_name, standalone_mode):
        calls.append(list(args))
        assert started.status().started            # the models load before the server serves anything
        raise SystemExit(0)

    monkeypatch.setattr(cli, "main", fake_main)
    assert serve.main(["dashboard.py", "--server.port", "1"]) == 0
    assert calls == [["run", "dashboard.py", "--server.port", "1"]]
    assert serve.main([]) == 2
    run_source = (ROOT / "cns_core" / "cli" / "run.py").read_text(encoding="utf-8")
    assert '"-m", "cns_core.views.serve", str(app)' in run_source


def test_the_dashboard_process_exits_cleanly_while_a_daemon_thread_is_inside_torch(tmp_path):
    """``cns run`` stopping a dashboard whose warm-up was still loading: an interpreter that finalizes with a
    daemon thread inside PyTorch aborts (status 134); :func:`cns_core.cli.process_exit.leave` exits with the
    status it is given, after the output it printed."""
    import subprocess
    import sys

    script = tmp_path / "stop_while_loading.py"
    script.write_text(
        "import sys, threading\n"
        "import torch\n"
        "busy = threading.Event()\n"
        "def load():\n"
        "    a = torch.randn(300, 300)\n"
        "    busy.set()\n"
        "    while True:\n"
        "        a = (a @ a).tanh()\n"
        "threading.Thread(target=load, daemon=True).start()\n"
        "busy.wait()\n"
        "print('  Stopping...')\n"
        "if sys.argv[1] == 'leave':\n"
        "    from cns_core.cli.process_exit import leave\n"
        "    leave(0)\n"
        "sys.exit(0)\n", encoding="utf-8")

    def run(how: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(script), how], cwd=ROOT, capture_output=True, text=True, timeout=120)

    finalized = run("exit")
    assert finalized.returncode != 0, "PyTorch no longer aborts at finalization: leave may not be needed"
    left = run("leave")
    assert left.returncode == 0, left.stderr
    assert left.stdout == "  Stopping...\n" and "Fatal Python error" not in left.stderr
