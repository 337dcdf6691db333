"""The Engrams page's "what a generator would recall" panel (AppTest)."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from cns_core.memory import MemoryService
from judge_loop_helpers import lean_torch  # noqa: F401  (fixture)
from test_recall import QUESTION, judged_memory


def recall_table(at: AppTest):
    return next(d.value for d in at.dataframe if "left out unless asked" in d.value.columns)

pytestmark = pytest.mark.usefixtures("lean_torch")


def test_the_panel_shows_ranked_answers_with_reasons(state_dir):
    judged_memory(MemoryService()).close()
    at = AppTest.from_file("../pages/engrams.py", default_timeout=90).run()
    assert not at.exception
    at.text_input(key="cns_engrams_recall_q").input(QUESTION).run()
    assert not at.exception
    table = recall_table(at)
    assert list(table["answer"][:2]) == ["The capital of Australia is Canberra.", "Canberra is the capital of Australia."]
    assert table["why"][0].startswith("ana judged it correct")
    assert "Sydney is the capital of Australia." not in list(table["answer"])
    at.checkbox(key="cns_engrams_recall_wrong").check().run()
    table = recall_table(at)
    sydney = list(table["answer"]).index("Sydney is the capital of Australia.")
    assert table["left out unless asked"][sydney] == "its answer verdict is incorrect"
    at.number_input(key="cns_engrams_recall_k").set_value(1).run()
    assert len(recall_table(at)) == 1
