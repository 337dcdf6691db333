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


def test_pending_grades_count_the_memory_and_a_paused_judge_gives_no_next_retry(no_judge, state_dir):
    """The Judge page's pending count is the memory's (as Engrams counts it), not the last sweep's; a judge
    that does not answer pauses the retries, so no "next retry now" beside "paused"."""
    import json
    import time

    from cns_core.agents.pending import pending_count, schedule_path
    from cns_core.memory import MemoryService
    from cns_core.views.judge_feed import store_ungraded

    memory = MemoryService()
    for i in range(3):
        store_ungraded(memory, new_turn(f"question {i}?", f"answer {i}.", "dashboard", "stored"))
    assert pending_count(memory) == 3
    schedule_path(state_dir).write_text(json.dumps({      # the loop swept once, when only one turn waited
        "waiting": 1, "in_flight": 0, "turns": [{"query_id": "x", "next_at": time.time() - 5, "in_flight": False}],
        "reasons": {}, "updated": time.time(), "judge_up": False, "every_s": 15}), encoding="utf-8")
    at = page()
    at.run()
    assert not at.exception
    line = next(c.value for c in at.caption if c.value.startswith("Pending grades"))
    assert line.startswith("Pending grades: 3 turn(s) wait") and "paused" in line and "next retry" not in line
    url = next(c.value for c in at.caption if "backend ·" in c.value)
    assert "`http://127.0.0.1:" in url            # the unreachable judge's address as code, not a link


def test_an_ungraded_turn_shows_the_same_verdict_and_trust_as_on_engrams(no_judge, state_dir):
    """Issue 70 item 5: the Judge page's card showed no verdict or Trust Score for a turn the judge could not
    grade, while Engrams showed "unverified · Trust 0.15" for the same turn: both show the stored record now."""
    from cns_core.memory import MemoryService
    from cns_core.views.engram_view import badges_html, disagreement_rule

    turn = new_turn("What is the capital of Australia?", "Sydney.", "dashboard", "paste")
    turn.update(graded=True, score=None, feedback=UNREACHABLE)
    memory = MemoryService()
    memory.write_episodic(turn["query"], turn["answer"], "dashboard", turn["query_id"])
    memory.record_trust({turn["query_id"]: {"trust_score": 0.15, "trust_verdict": "unverified",
                                            "trust_verdict_score": 0.31, "trust_settings": "fp1"}})
    (engram,) = memory.get([turn["query_id"]])
    expected = badges_html(engram, disagreement_rule())
    assert "unverified" in expected and "Trust 0.15" in expected and 'data-grade="none"' in expected
    at = page()
    at.session_state["cns_judge_turns"] = [turn]
    at.run()
    assert not at.exception
    card = next(m.value for m in at.markdown if "could not grade this turn" in m.value)
    assert expected in card
    engrams = AppTest.from_file("../pages/engrams.py", default_timeout=60).run()
    assert not engrams.exception and any(expected in m.value for m in engrams.markdown)
