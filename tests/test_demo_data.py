"""Issue 51 item 8, the first minute: ``make run`` serves at once and writes its demo data in the background.

``cns run --demo-data`` starts the dashboard, then a one-shot child that writes the demo memory and the demo
corpus run through the memory's server; ``<state dir>/demo_data.json`` says how far it has got, and the pages
that show the memory or the corpus read it for a progress line whose numbers and seconds advance.
"""

from __future__ import annotations

import io
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
from local_servers import free_port, stop_process, wait_for, wait_for_demo_data, wait_until_serving
from streamlit.testing.v1 import AppTest

from cns_core.cli.demo_progress import DemoProgress, progress_path, read_progress, write_progress

ROOT = Path(__file__).resolve().parent.parent
TURNS = 12                  # a small demo: the models still load, so the filler cannot beat the first answer
FILL_LIMIT_S = 600          # bounded waits on state (a loaded 2-core machine writes 12 turns in about a minute)


# ----- the record the pages read ---------------------------------------------------------------------
def test_the_progress_record_reads_back_and_says_where_the_demo_data_stands(state_dir):
    begun = write_progress(DemoProgress.begin(300))
    assert read_progress() == begun and begun.running and begun.pid == os.getpid()
    at_120 = write_progress(replace(begun.step("memory", turns_written=120), started=begun.started - 45))
    line = at_120.line(now=at_120.started + 45.4)
    assert line.startswith("Demo data: 120 of 300 turns written to the memory (45 s so far).")
    assert at_120.line(seconds="[counter]").startswith("Demo data: 120 of 300 turns written to the memory "
                                                       "([counter] so far)")
    corpus = at_120.step("corpus", turns_written=300, snos_done=2, snos_total=6)
    assert "300 of 300 turns written to the memory; evaluating the examples as a corpus run, 2 of 6 done" in corpus.line()
    done = corpus.step("done", snos_done=6)
    assert not done.running and not done.shown and done.finished is not None
    assert done.elapsed(now=done.finished + 999) == pytest.approx(done.finished - done.started)

    gone = replace(at_120, pid_started=at_120.pid_started - 3600)   # the same pid, another process: ours ended
    assert not gone.running and gone.shown
    assert gone.line() == ("Demo data stopped at 120 of 300 turns written to the memory: the `make run` that wrote "
                           "it ended. `make run` again finishes it.")
    failed = at_120.step("failed", error="cannot reach the Chroma server")
    assert failed.line().startswith("Demo data stopped at 120 of 300 turns written to the memory: cannot reach the "
                                    "Chroma server.")

    for damaged in (b"{not json", b'{"stage": "dancing"}', b"[1, 2]", b'{"stage": "memory"}', b" " * 20_000):
        progress_path().write_bytes(damaged)
        assert read_progress() is None, damaged[:20]


def test_a_progress_line_is_escaped_and_its_counter_starts_at_the_servers_figure():
    from cns_core.views.progress_line import lines_html, ticking_line

    failed = "Demo data stopped: <img src=x onerror=alert(1)> `make run` again ({seconds})"
    html = ticking_line(lambda s: failed.replace("{seconds}", s), 12.34, "cns-demo-data")
    assert "<img" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert '<code style="font-size:0.85em">make run</code>' in html
    assert '(<span data-cns-elapsed="12.3">12 s</span>)' in html
    assert lines_html([html, html]).count("<script>") == 1      # one script, however many lines


# ----- the pages ----------------------------------------------------------------------------------------
def _demo_lines(at: AppTest) -> list[str]:
    return [h.proto.body for h in at.html if 'data-testid="cns-demo-data"' in h.proto.body]


def _counter(body: str) -> float:
    return float(re.search(r'data-cns-elapsed="([\d.]+)"', body).group(1))


@pytest.fixture
def dashboard(state_dir, monkeypatch):
    """The router under AppTest with the models' warm-up done (only the demo data is under way)."""
    from cns_core.views import warm_up

    monkeypatch.setattr(warm_up, "WARM_UP", warm_up.WarmUp([]).start())
    monkeypatch.syspath_prepend(str(ROOT / "pages"))
    at = AppTest.from_file(str(ROOT / "dashboard.py"), default_timeout=120)
    at.run()
    return at


@pytest.mark.parametrize("page", ["engrams.py", "corpus.py"])
def test_the_memory_and_corpus_pages_follow_the_demo_data_with_advancing_numbers(dashboard, state_dir, page):
    at = dashboard
    begun = DemoProgress.begin(300)
    progress = write_progress(replace(begun.step("memory", turns_written=120), started=begun.started - 45))
    before = time.time()
    at.switch_page(f"pages/{page}").run()
    after = time.time()
    assert not at.exception
    (first,) = _demo_lines(at)
    assert "Demo data: 120 of 300 turns written to the memory (" in first and "so far)" in first
    assert before - progress.started - 0.1 <= _counter(first) <= after - progress.started + 0.1
    assert "setInterval" in first          # the seconds tick in the browser between two drawings
    assert any("`make run` is writing its demo data" in i.value for i in at.info)   # not "empty, run make run"

    progress = write_progress(progress.step(turns_written=180))
    before = time.time()
    at.run()
    after = time.time()
    (second,) = _demo_lines(at)
    assert "Demo data: 180 of 300 turns written to the memory (" in second
    assert _counter(first) <= _counter(second)      # as of this drawing: seconds never stand still or go back
    assert before - progress.started - 0.1 <= _counter(second) <= after - progress.started + 0.1

    write_progress(progress.step("corpus", turns_written=300, snos_done=3, snos_total=6))
    at.run()
    (third,) = _demo_lines(at)
    assert "300 of 300 turns written to the memory; evaluating the examples as a corpus run, 3 of 6 done" in third

    write_progress(progress.step("done", turns_written=300, snos_done=6, snos_total=6))
    at.run()
    assert _demo_lines(at) == []


def test_a_page_is_drawn_again_when_the_demo_data_moves_to_another_stage(state_dir, monkeypatch):
    from cns_core.views import progress_line, warm_up

    monkeypatch.setattr(warm_up, "WARM_UP", warm_up.WarmUp([]).start())
    progress = write_progress(DemoProgress.begin(300).step("memory", turns_written=15))
    drawn = progress_line.under_way(with_demo_data=True)
    assert drawn.moving and "Demo data: 15 of 300 turns" in drawn.html()
    progress = write_progress(progress.step(turns_written=120))
    assert not progress_line.under_way(True).changed_since(drawn)      # the line follows; the page stays
    progress = write_progress(progress.step("corpus", turns_written=300))
    assert progress_line.under_way(True).changed_since(drawn)          # the memory is complete: drawn again
    write_progress(progress.step("done"))
    done = progress_line.under_way(True)
    assert done.changed_since(drawn) and not done.moving and done.html() is None
    assert progress_line.under_way(with_demo_data=False).demo is None


def test_pages_about_an_sno_say_nothing_of_the_demo_data(dashboard, state_dir):
    write_progress(DemoProgress.begin(300).step("memory", turns_written=120))
    dashboard.switch_page("pages/weights.py").run()
    assert not dashboard.exception and _demo_lines(dashboard) == []


# ----- the supervisor's one-shot child -------------------------------------------------------------------
def test_a_one_shot_child_ends_nothing_and_is_not_stopped_twice(tmp_path):
    import threading

    from cns_core.cli.supervisor import ChildSpec, Supervisor

    done = ChildSpec("demo", [sys.executable, "-c", "print('written')"], one_shot=True)
    failing = ChildSpec("broken", [sys.executable, "-c", "raise SystemExit(3)"], one_shot=True)
    server = ChildSpec("dashboard", [sys.executable, "-u", "-c", "import time; print('up'); time.sleep(60)"])
    out = io.StringIO()
    sup = Supervisor([server, done, failing], grace_s=5, out=out, poll_s=0.1)

    def ctrl_c_once_both_ended() -> None:
        try:
            wait_for(lambda: len(sup.children) == 3 and all(c.ended for c in sup.children[1:]), 30, 0.05,
                     "both one-shot children to end")
        finally:
            sup._on_signal(signal.SIGINT, None)

    threading.Thread(target=ctrl_c_once_both_ended, daemon=True).start()
    assert sup.run() == 0
    text = out.getvalue()
    assert "[demo] written" in text and "[demo] exited (status 0)" in text
    assert "[broken] exited with status 3; the others go on" in text
    assert text.index("[broken] exited") < text.index("stopping (SIGINT)") < text.index("[dashboard] ended by SIGTERM")
    assert text.count("[demo] exited") == 1 and text.count("[broken] exited") == 1, text

    alone = Supervisor([ChildSpec("demo", [sys.executable, "-c", "pass"], one_shot=True)], out=io.StringIO(),
                       poll_s=0.1)
    assert alone.run() == 0            # nothing left to supervise: the run ends by itself


def test_cns_run_plans_the_filler_after_its_dashboard_and_writes_its_first_record_as_it_starts(state_dir, capsys):
    from cns_core.cli.run import demo_data_plan

    spec = demo_data_plan(40, {}, "0.0.0.0", 8765)
    assert spec.one_shot and not spec.restart
    assert spec.argv[-4:] == ["--turns", "40", "--after", "http://127.0.0.1:8765/_stcore/health"]
    assert demo_data_plan(40, {}, "::1", 8765).argv[-1] == "http://[::1]:8765/_stcore/health"
    assert "--after" not in demo_data_plan(40, {}, "127.0.0.1", None).argv     # no dashboard of ours: at once
    assert "in the background" in capsys.readouterr().out
    spec.on_start(os.getpid())          # the supervisor's call as the child starts
    first = read_progress()
    assert (first.stage, first.turns_total, first.pid) == ("waiting", 40, os.getpid()) and first.running


# ----- make run: serve first, then the demo data ------------------------------------------------------
@pytest.mark.browser
@pytest.mark.timeout(1500)
def test_cns_run_answers_before_the_demo_data_and_then_writes_all_of_it(tmp_path, monkeypatch):
    from test_browser import CHROMIUM, CHROMIUM_ARGS, FIRST_RENDER_MS, WARM_UP_MS

    from cns_core.memory import MemoryService

    state = tmp_path / "state"
    env = {**os.environ, "CNS_STATE_DIR": str(state), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "ANONYMIZED_TELEMETRY": "False", "CNS_OLLAMA_URL": f"http://127.0.0.1:{free_port()}",
           **{k: str(free_port()) for k in ("CNS_BUS_PUB_PORT", "CNS_BUS_SUB_PORT", "CNS_BUS_JOURNAL_PORT")}}
    web = free_port()
    base = f"http://127.0.0.1:{web}"
    log = tmp_path / "run.log"
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "cns_core.cli", "run", "--port", str(web), "--demo-data",
                                 str(TURNS)], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    monkeypatch.setenv("CNS_STATE_DIR", str(state))     # this process reads the record and the memory there too
    try:
        wait_until_serving(f"{base}/_stcore/health", proc, "cns run's dashboard", 300, log)
        at_first_answer = read_progress(state)
        assert at_first_answer is not None and at_first_answer.running and at_first_answer.stage != "done"
        with MemoryService() as memory:                   # through cns run's server (never embedded)
            assert memory.served is not None
            assert memory.count() + memory.count_quarantined() < TURNS

        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 900})
                page.goto(f"{base}/engrams")
                line = page.locator('[data-testid="cns-demo-data"]')
                line.wait_for(timeout=WARM_UP_MS)
                counter = '[data-testid="cns-demo-data"] [data-cns-elapsed]'
                # the page's script counts on between two drawings (and while the page's Python is busy)
                page.wait_for_function("(sel) => document.querySelector(sel)?.dataset.cnsShownAt", arg=counter,
                                       timeout=FIRST_RENDER_MS)
                shown = int(page.locator(counter).inner_text().split()[0])
                page.wait_for_function("([sel, s]) => parseInt(document.querySelector(sel)?.textContent) > s",
                                       arg=[counter, shown], timeout=FIRST_RENDER_MS)
                page.screenshot(path=str(tmp_path / "engrams-while-filling.png"))
                wait_for_demo_data(state, proc, FILL_LIMIT_S, log)
                line.wait_for(state="detached", timeout=FIRST_RENDER_MS)    # the page draws itself again
                page.get_by_text(re.compile(r"\bid demo-\d{4}\b")).first.wait_for(timeout=FIRST_RENDER_MS)
            finally:
                browser.close()
        finished = read_progress(state)
        assert finished.stage == "done", log.read_text()
        assert (finished.turns_written, finished.turns_total, finished.snos_done) == (TURNS, TURNS, 6)
        wait_for(lambda: "[demo] exited (status 0)" in log.read_text(), 120, 0.2, "the filler to exit", proc=proc,
                 log=log)
        with MemoryService() as memory:
            assert memory.count() + memory.count_quarantined() == TURNS
        assert proc.poll() is None                        # the filler's end stops nothing
        stopped = proc.send_signal(signal.SIGINT) or proc.wait(timeout=60)     # one Ctrl-C
    finally:
        stop_process(proc)
    text = log.read_text()
    assert stopped == 0, text
    assert text.index("[dashboard] started") < text.index("[demo] started"), text

    # a second make run finds it all there: no model is loaded for the memory, the corpus evaluates nothing
    again = subprocess.run([sys.executable, "-m", "cns_core.cli.demo_data", "--turns", str(TURNS)], cwd=ROOT,
                           env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    assert f"the memory holds the {TURNS} demo turns already; no model loaded for them" in again.stdout
    assert "demo memory: wrote" not in again.stdout and read_progress(state).stage == "done"
