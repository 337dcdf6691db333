"""The Judge page says what it can and cannot do before a turn is sent (issue 35 item 7).

* a turn the judge could not grade shows the judge's message as written: its `code` as code, its
  URL as plain text (no markdown escapes printed, no half-escaped link);
* "Ask a question" says up front, before a question is typed, when it cannot work and why.
"""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from cns_core.views.judge_feed import new_turn
from judge_loop_helpers import free_port

ASK = "Ask a question (GeneratorAgent answers)"
UNREACHABLE = ("cannot reach Ollama at http://127.0.0.1:11434; is `ollama serve` running and CNS_OLLAMA_URL "
               "right? ([Errno 111] Connection refused)")


@pytest.fixture
def no_judge(state_dir, monkeypatch):
    """No judge loop and no Ollama: free ports everywhere."""
    monkeypatch.setenv("CNS_BUS_PUB_PORT", str(free_port()))
    monkeypatch.setenv("CNS_BUS_SUB_PORT", str(free_port()))
    monkeypatch.setenv("CNS_OLLAMA_URL", f"http://127.0.0.1:{free_port()}")


def page() -> AppTest:
    return AppTest.from_file("../pages/judge.py", default_timeout=60)


def test_a_turn_the_judge_could_not_grade_shows_its_message_as_written(no_judge):
    at = page()
    turn = new_turn("What is the capital of Australia?", "Canberra.", "dashboard", "paste")
    turn.update(graded=True, score=None, feedback=UNREACHABLE)
    at.session_state["cns_judge_turns"] = [turn]
    at.run()
    assert not at.exception
    card = next(m.value for m in at.markdown if "could not grade this turn" in m.value)
    assert "http://127.0.0.1:11434" in card and "\\." not in card
    assert "<code>ollama serve</code>" in card and "`" not in card


def test_ask_mode_says_up_front_that_it_cannot_work(no_judge):
    at = page().run()
    assert not at.exception
    assert not any(w.value.startswith("Asking cannot work") for w in at.warning)
    assert at.text_area(key="cns_judge_answer")                      # paste mode: the answer box
    at.radio(key="cns_judge_mode").set_value(ASK).run()
    assert not at.exception
    warning = next(w.value for w in at.warning if w.value.startswith("Asking cannot work"))
    assert "judge loop" in warning and "`cns agents`" in warning
    assert not [t for t in at.text_area if t.key == "cns_judge_answer"]     # nothing to paste when asking
    [send] = [b for b in at.button if b.label == "Send to the judge"]
    assert send.disabled
