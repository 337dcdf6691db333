"""Feedback and fit (issue 35 item 11): the sidebar shows only what a page uses, count axes start at 0,
labels are not cut, long id lists are capped. (The critics' progress line: tests/test_browser_demo35.py.)"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from cns_core.critics.base import CriticResult, Issue
from cns_core.meta import MetaConfig
from cns_core.meta.suggestions import critic_suggestions
from cns_core.views import display

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def state(tmp_path_factory):
    """A private state folder holding three engrams (the Engrams page needs a memory that is not empty)."""
    from cns_core.memory import MemoryService

    folder = tmp_path_factory.mktemp("fit-state")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CNS_STATE_DIR", str(folder))
        mp.syspath_prepend(str(ROOT / "pages"))
        MemoryService().write_episodic_many([
            {"query": f"Question {i}?", "answer": f"Answer {i}.", "session_id": "s", "query_id": f"q{i}",
             "timestamp": time.time() - i} for i in range(3)])
        yield folder


def routed(page: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "dashboard.py"), default_timeout=120)
    at.run()
    at.switch_page(f"pages/{page}").run()
    assert not at.exception
    return at


@pytest.mark.parametrize("page,has_sno", [("engrams.py", False), ("judge.py", False), ("overview.py", True),
                                          ("weights.py", True)])
def test_the_sidebar_shows_the_sno_controls_only_where_a_page_uses_them(state, page, has_sno):
    at = routed(page)
    keys = {w.key for w in at.sidebar.selectbox}
    assert ("cns_sidebar_sno" in keys) == has_sno and ("cns_sidebar_profile" in keys) == has_sno
    assert any(c.value.startswith("NLI: **") for c in at.sidebar.caption)      # filled after the page


def test_an_empty_engram_histogram_counts_from_zero(state):
    at = routed("engrams.py")
    at.sidebar.text_input(key="cns_engrams_contains").input("nothing matches this").run()
    assert not at.exception
    chart = next(json.loads(c.proto.spec) for c in at.get("plotly_chart") if "Engrams per grade" in c.proto.spec)
    axis = chart["layout"]["yaxis"]
    assert axis["range"][0] == 0 and axis["dtick"] == 1 and axis["tickformat"] == ",d"
    assert all(v == 0 for v in chart["data"][0]["y"])


def test_count_axis_never_goes_below_zero_and_stays_whole():
    assert display.count_axis(0, "n")["range"] == [0, 1.15]
    assert "dtick" not in display.count_axis(40, "n") and display.count_axis(40, "n")["range"][0] == 0


@pytest.mark.parametrize("name", ["trust_default", "trust_verification", "score_novelty", "score_grounding"])
def test_results_columns_are_wide_enough_for_their_label(name):
    label = display.column_label(name)
    assert display.column_width(name) == ("small" if len(label) <= 9 else "medium"), label


def test_a_suggestion_names_at_most_eight_ids():
    many = tuple(f"c{i}" for i in range(1, 139))
    result = CriticResult("grounding", 0.1, 0.5, "x", issues=(
        Issue("unsupported_claim", "Claim c1 is unsupported", ("c1",)),
        Issue("unsupported_claim", "Claim c2 is unsupported", ("c2",)),
        Issue("unsupported_claim", "Claim c3 is unsupported", ("c3",)),
        Issue("unsupported_claim", "Many claims are unsupported", many)))
    [s] = critic_suggestions("grounding", result, MetaConfig.load())
    assert "c138" not in s.text and "and 130 more" in s.text
    assert "c138" not in s.node_list and s.node_list.endswith("and 130 more")
