"""Issue 35 in Debian's chromium: the stakeholder demo without a wrong note.

A fresh server (nothing has visited it): the first Overview writes the critics' progress at once;
then Vitamin C's Overview (capped, band and gate agree), the Meta-Critic with custom weights and a
lowered gate that Overview keeps, the Reasoning graph of a drafted text with a contradicted claim, and
the Judge's ask mode. Screenshots go to ``test-artifacts/demo35-*.png`` for a human to look at.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from graph_geometry import graph_label_px
from local_servers import serve_dashboard, wait_for
from test_browser import (  # noqa: F401  (browser and page are fixtures)
    ARTIFACTS,
    FIRST_RENDER_MS,
    WARM_UP_MS,
    assert_clean,
    browser,
    go,
    open_page,
    page,
    settle,
    shoot,
    wait_for_graph,
    zero_weight,
)

from cns_core.views.graph_html import FLOOR_LABEL_PX

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent
TEXT = """Does vitamin C prevent colds?

Vitamin C prevents the common cold. Daily vitamin C supplements cut how often people catch colds by half. \
Large randomized trials have confirmed a preventive effect of vitamin C on colds.

Some say the evidence is weak. But people who take vitamin C every day feel healthier.

So everyone should take vitamin C every day.
"""
SOURCES = """A Cochrane review of 29 trials found that regular vitamin C supplements did not prevent colds in the \
general population. Daily vitamin C supplements did not reduce how often ordinary people caught colds. \
Large randomized trials have not confirmed a preventive effect of vitamin C on colds.
"""


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    """A dashboard nobody has visited yet (its first visit loads the models)."""
    with serve_dashboard(tmp_path_factory.mktemp("demo35-state")) as base:
        yield base


def _wait_for_metric(page, label: str, timeout: float = WARM_UP_MS) -> None:
    page.locator('[data-testid="stMetric"]', has_text=label).first.wait_for(timeout=timeout)


def test_the_first_overview_shows_progress_while_the_critics_run(fresh, page):
    """A fresh server's first Overview: the progress line, written at once, is on the page before the
    Trust Score (a delayed spinner showed only the example buttons for seconds)."""
    page.goto(f"{fresh}/")
    seen_progress = []

    def trust_score_shown() -> bool:
        if "Running the five critics" in page.locator("body").inner_text():
            seen_progress.append(True)
        return page.locator('[data-testid="stMetric"]', has_text="Trust Score").count() > 0

    wait_for(trust_score_shown, WARM_UP_MS / 1000, what="the first Trust Score")
    assert seen_progress, "no progress line before the Trust Score"
    settle(page)
    assert "Running the five critics" not in page.locator("body").inner_text()


def _open_example(page, base: str, word: str) -> None:
    open_page(page, base, "overview", "Overview")
    page.get_by_role("button", name=word).first.click()
    page.locator("h3", has_text=word).first.wait_for(timeout=WARM_UP_MS)
    settle(page)


def test_vitamin_c_overview_tells_one_story(fresh, page, vitamin_c_cap):
    _open_example(page, fresh, "Vitamin C prevents the common cold")
    _wait_for_metric(page, "Trust Score")
    body = page.locator("body").inner_text()
    assert "capped by contradictions" in body and vitamin_c_cap.describe() in body
    assert "Acceptable" not in body and "Fair" not in body
    assert "fails" in body and "Reject" in body
    assert_clean(page, "Overview (Vitamin C)")
    shoot(page, "demo35-overview-vitamin-c")


def test_meta_critic_with_custom_weights_and_a_gate_kept_for_the_session(fresh, page):
    # the circular forecasts: an example whose Logic is below its target, so the plan has a Logic step to zero
    _open_example(page, fresh, "The central bank's forecasts can be trusted")
    go(page, "Weights")
    zero_weight(page, "Logic")
    go(page, "Meta-Critic")
    body = page.locator("body").inner_text()
    assert "The central bank's forecasts can be trusted" in body
    assert "custom" in body and "Logic gains +0.000: weight 0 in force" in body
    # lower the gate to 0.50 on the select slider; the Overview then says the same
    slider = page.get_by_role("slider").first          # the gate's select slider, the page's only slider
    slider.focus()
    page.keyboard.press("ArrowLeft")
    page.locator('[data-testid="stAlert"]', has_text="threshold 0.50").first.wait_for(timeout=FIRST_RENDER_MS)
    settle(page)
    assert_clean(page, "Meta-Critic with custom weights")
    shoot(page, "demo35-meta-critic-custom-weights")
    go(page, "Overview")
    assert "the threshold 0.50" in page.locator("body").inner_text()


def test_reasoning_graph_of_a_drafted_text_shows_the_contradicted_claim(fresh, page, tmp_path):
    from cns_core.cli import main

    (tmp_path / "vitamin.md").write_text(TEXT, encoding="utf-8")
    (tmp_path / "vitamin_sources.txt").write_text(SOURCES, encoding="utf-8")
    assert main(["extract", str(tmp_path / "vitamin.md"), "--sources", str(tmp_path / "vitamin_sources.txt"),
                 "-o", str(tmp_path / "out")]) == 0
    drafted = (tmp_path / "out" / "vitamin.yaml").read_bytes()
    open_page(page, fresh, "author", "Author / Load")
    page.locator('[data-testid="stFileUploader"]', has_text="SNO file").locator('input[type="file"]').set_input_files(
        files=[{"name": "vitamin.yaml", "mimeType": "application/yaml", "buffer": drafted}])
    page.locator('[data-testid="stAlert"]', has_text="Loaded 1 SNO(s)").first.wait_for(timeout=FIRST_RENDER_MS)
    settle(page)
    go(page, "Reasoning graph")
    frame = page.frame_locator("iframe").first
    frame.locator("#cns-legend").wait_for(timeout=FIRST_RENDER_MS)
    assert frame.locator('#cns-legend [data-verdict="contradicted"]').count() == 1
    html = frame.locator("html").inner_html()
    assert '"verdict": "contradicted"' in html and "Daily vitamin C supplements" in html   # the drafted SNO
    wait_for_graph(page)             # vis-network lays the graph out after the page settles
    assert_clean(page, "Reasoning graph (drafted text)")
    shoot(page, "demo35-graph-drafted-contradicted")
    assert min(graph_label_px(page)) >= FLOOR_LABEL_PX - 1e-6      # the drafted graph opened at 0.58 (issue 51 item 2)


def test_judge_ask_mode_says_up_front_it_cannot_work(fresh, page):
    open_page(page, fresh, "judge", "Judge")
    page.get_by_text("Ask a question (GeneratorAgent answers)").click()
    page.locator('[data-testid="stAlert"]', has_text="Asking cannot work right now").first.wait_for(
        timeout=FIRST_RENDER_MS)
    settle(page)
    assert page.get_by_role("button", name="Send to the judge").is_disabled()
    sidebar = page.locator('[data-testid="stSidebar"]').inner_text()
    assert "Current SNO" not in sidebar
    assert_clean(page, "Judge (ask mode)")
    shoot(page, "demo35-judge-ask")


def test_a_first_visit_to_engrams_shows_the_models_loading_then_the_page(browser, tmp_path):  # noqa: F811
    """Issue 43 item 7: on a server nobody has visited, Engrams (no critic of its own to show progress for)
    says at once that the models are loading, and draws itself without the line once they are."""
    from cns_core.cli.demo_memory import main as demo_memory

    state = tmp_path / "state"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CNS_STATE_DIR", str(state))
        assert demo_memory(["--count", "6", "--no-hook", "--no-trust"]) == 0
    with serve_dashboard(state) as base:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        try:
            pg = context.new_page()
            pg.goto(f"{base}/engrams")
            line = pg.locator('[data-testid="cns-warm-up"]', has_text="Loading the models in the background")
            line.first.wait_for(timeout=FIRST_RENDER_MS)
            pg.locator("h1", has_text="Engrams").first.wait_for(timeout=FIRST_RENDER_MS)
            pg.get_by_text("engrams match").first.wait_for(timeout=WARM_UP_MS)
            line.first.wait_for(state="detached", timeout=WARM_UP_MS)       # gone once the models are loaded
            settle(pg)
            pg.screenshot(path=str(ARTIFACTS / "demo43-engrams-after-warm-up.png"), full_page=True)
            assert_clean(pg, "Engrams after the warm-up")
        finally:
            context.close()
