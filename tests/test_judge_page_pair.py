"""The Judge page's "Compare two answers" form against a real fake judge on 127.0.0.1: which answer won and why,
the comparison kept in the memory for preference pairs, and a judge that answers with a single score or not at
all said in words, never a traceback."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from cns_core.memory import MemoryService
from cns_core.memory.preferences import preference_pairs
from judge_loop_helpers import fake_ollama, free_port, lean_torch, ollama, warm_embedder  # noqa: F401  (fixtures)

QUESTION = "What is the capital of Australia?"
RIGHT = "Canberra is the capital of Australia. [fake-score:5]"
WRONG = "Sydney is the capital of Australia. [fake-score:2]"


@pytest.fixture
def judge_at(state_dir, monkeypatch, ollama):
    """No judge loop (free bus ports); the judge server is the fake."""
    monkeypatch.setenv("CNS_BUS_PUB_PORT", str(free_port()))
    monkeypatch.setenv("CNS_BUS_SUB_PORT", str(free_port()))
    monkeypatch.setenv("CNS_OLLAMA_URL", ollama.url)
    return ollama


def compare(a: str, b: str, *, keep: bool = True, question: str = QUESTION) -> AppTest:
    at = AppTest.from_file("../pages/judge.py", default_timeout=90).run()
    assert not at.exception
    at.text_area(key="cns_pair_question").input(question)
    at.text_area(key="cns_pair_a").input(a)
    at.text_area(key="cns_pair_b").input(b)
    at.checkbox(key="cns_pair_keep").set_value(keep)
    [button] = [b for b in at.button if b.label == "Compare the two answers"]
    button.click().run()
    assert not at.exception
    return at


def test_the_form_shows_which_answer_won_and_why_and_keeps_it(judge_at, warm_embedder, state_dir):
    at = compare(WRONG, RIGHT)
    assert [s.value for s in at.success] == ["Answer B won"]
    why = next(m.value for m in at.markdown if "cns-pair-why" in m.value)
    assert "Response A earns 2 and Response B earns 5" in why
    kept = next(c.value for c in at.caption if c.value.startswith("Kept in the memory: answer A is engram"))
    assert kept.endswith("(both stored now); preference pairs choose the winner.")
    assert len(judge_at.requests) == 2          # asked in both orders
    with MemoryService(path=state_dir / "chroma") as memory:
        (pair,) = preference_pairs(memory.iter_engrams(), memory.recall_settings)
    assert (pair.chosen, pair.rejected, pair.by) == (RIGHT, WRONG, "judge's comparison")


def test_a_single_score_judge_is_named_as_the_problem_and_nothing_is_kept(judge_at, state_dir):
    judge_at.mode = "single"
    at = compare(RIGHT, WRONG)
    failed = next(m.value for m in at.markdown if "cns-pair-failed" in m.value)
    assert "The judge named no winner: single_score: the judge answered a pairwise request with a single score" \
        in failed
    assert not at.success
    with MemoryService(path=state_dir / "chroma") as memory:       # the page's counts opened it: it is empty
        assert memory.size() == 0


def test_an_unreachable_judge_and_a_bad_form_are_said_in_words(judge_at, monkeypatch):
    monkeypatch.setenv("CNS_OLLAMA_URL", f"http://127.0.0.1:{free_port()}")
    at = compare(RIGHT, WRONG, keep=False)
    failed = next(m.value for m in at.markdown if "cns-pair-failed" in m.value)
    assert "unreachable: cannot reach Ollama" in failed
    at = compare(RIGHT, RIGHT, keep=False)
    assert [e.value for e in at.error] == ["Not sent: answer B: the same text as answer A; there is nothing to compare"]
