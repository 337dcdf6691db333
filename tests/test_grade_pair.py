"""Two answers compared (issue 68 part 4): Prometheus' relative grading through both judge backends against a
real HTTP server on 127.0.0.1 answering like Ollama and like an OpenAI-compatible server, ``cns grade --pair``,
and the comparison kept in the memory where preference pairs choose its winner."""

from __future__ import annotations

import dataclasses
import json

import pytest

from cns_core.agents.compare import compare_answers, keep_comparison
from cns_core.agents.prometheus import critic_settings
from cns_core.cli import main
from cns_core.memory import MemoryService, UnknownEngramError
from cns_core.memory.preferences import PAIR_KEY, preference_pairs
from fake_ollama import JUDGE_MODEL, fake_grade
from judge_loop_helpers import fake_ollama, free_port, lean_torch, ollama, warm_embedder  # noqa: F401  (fixtures)

QUESTION = "What is the capital of Australia?"
RIGHT = "Canberra is the capital of Australia. [fake-score:5]"
WRONG = "Sydney is the capital of Australia. [fake-score:2]"
BACKENDS = ["ollama", "openai"]


def settings_for(backend: str, server, **changes):
    url = server.url if backend == "ollama" else f"{server.url}/v1"
    return dataclasses.replace(critic_settings(), **{"backend": backend, "url": url, "model": JUDGE_MODEL,
                                                     "timeout": 2.0, **changes})


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("a, b, winner", [(RIGHT, WRONG, "A"), (WRONG, RIGHT, "B")], ids=["right-first", "right-second"])
def test_both_backends_name_the_better_answer_asked_in_both_orders(backend, a, b, winner, ollama):
    comparison = compare_answers(QUESTION, a, b, settings_for(backend, ollama), reference="Canberra.")
    assert comparison.error is None and comparison.winner == winner and comparison.orders == (winner, winner)
    assert "Response A earns" in comparison.feedback and "answers shown B first" in comparison.feedback
    first, second = ollama.requests
    system, user = first["messages"]
    assert system["content"].startswith("You are a fair judge assistant assigned to deliver insightful feedback")
    assert f"###Response A:\n{a}\n\n###Response B:\n{b}\n" in user["content"]
    assert "###Reference Answer:\nCanberra.\n" in user["content"]
    assert "###Score Rubric:\nIs the response accurate, helpful, and well-reasoned?" in user["content"]
    assert f"###Response A:\n{b}\n\n###Response B:\n{a}\n" in second["messages"][1]["content"]   # swapped
    assert first["model"] == JUDGE_MODEL


def test_one_order_only_when_configured_and_no_reference_section_without_one(ollama):
    comparison = compare_answers(QUESTION, WRONG, RIGHT, settings_for("ollama", ollama, both_orders=False),
                                 rubric="Which answer names the right city?")
    assert comparison.winner == "B" and comparison.orders == ("B",)
    (request,) = ollama.requests
    prompt = request["messages"][1]["content"]
    assert "###Reference Answer" not in prompt and "###Score Rubric:\nWhich answer names the right city?" in prompt


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_single_score_where_a_choice_was_asked_for_is_a_clear_error(backend, ollama):
    ollama.mode = "single"
    comparison = compare_answers(QUESTION, RIGHT, WRONG, settings_for(backend, ollama))
    assert comparison.winner is None and comparison.error.startswith("single_score:")
    assert "answered a pairwise request with a single score (4)" in comparison.error
    assert len(ollama.requests) == 1            # the first failure ends the comparison


def test_a_judge_that_chooses_by_position_gives_no_winner(ollama):
    ollama.mode = "position"
    comparison = compare_answers(QUESTION, RIGHT, WRONG, settings_for("ollama", ollama))
    assert comparison.winner is None and comparison.orders == ("A", "B")
    assert comparison.error.startswith("inconsistent: the judge preferred whichever answer was shown first")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode, reason", [("slow", "timeout"), ("error", "http_error"), ("noscore", "unparseable"),
                                          ("garbage", "bad_response"), ("unknown_model", "model_missing")])
def test_a_failing_judge_degrades_to_no_winner_with_the_reason(backend, mode, reason, ollama):
    ollama.mode, ollama.delay = mode, 3.0
    comparison = compare_answers(QUESTION, RIGHT, WRONG, settings_for(backend, ollama, timeout=1.0))
    assert comparison.winner is None and comparison.error.startswith(f"{reason}:"), comparison.error


def test_nothing_listening_is_unreachable():
    url = f"http://127.0.0.1:{free_port()}"
    settings = dataclasses.replace(critic_settings(), url=url, timeout=1.0)
    comparison = compare_answers(QUESTION, RIGHT, WRONG, settings)
    assert comparison.winner is None and comparison.error.startswith("unreachable:") and url in comparison.error


@pytest.mark.parametrize("question, a, b, reference, field", [
    ("  ", RIGHT, WRONG, None, "question: must not be empty"),
    (QUESTION, "", WRONG, None, "answer A: must not be empty"),
    (QUESTION, RIGHT, " " + RIGHT + "\n", None, "answer B: the same text as answer A"),
    (QUESTION, RIGHT, "x" * 100_001, None, "answer B: 100,001 characters, at most 100,000"),
    ("q" * 20_001, RIGHT, WRONG, None, "question: 20,001 characters, at most 20,000"),
    (QUESTION, RIGHT, WRONG, 42, "reference: expected text, got int"),
])
def test_bad_input_is_refused_naming_the_field_before_the_judge_is_asked(question, a, b, reference, field, ollama):
    with pytest.raises(ValueError, match=field):
        compare_answers(question, a, b, settings_for("ollama", ollama), reference=reference)
    assert ollama.requests == []


# ---------------------------------------------------------------- kept in the memory

@pytest.fixture
def memory(state_dir, warm_embedder):
    with MemoryService(path=state_dir / "chroma") as service:
        yield service


def test_a_kept_comparison_stores_the_answers_and_preference_pairs_choose_its_winner(memory, ollama):
    # the judge's grades alone would put the wrong answer first: the comparison decides the pair
    right_id = memory.write_episodic(QUESTION, RIGHT, "s1")
    memory.update_engram_score(right_id, 1, "graded low")
    comparison = compare_answers(QUESTION, WRONG, RIGHT, settings_for("ollama", ollama))
    kept = keep_comparison(memory, QUESTION, WRONG, RIGHT, comparison, session_id="cmp")
    assert kept.b_id == right_id and kept.stored_now == (kept.a_id,)     # the stored answer is found by its text
    (wrong,) = memory.get([kept.a_id])
    assert (wrong.query, wrong.answer, wrong.session_id, wrong.graded) == (QUESTION, WRONG, "cmp", False)
    memory.update_engram_score(kept.a_id, 5, "graded high")
    (pair,) = preference_pairs(memory.iter_engrams(), memory.recall_settings)
    assert (pair.chosen_id, pair.rejected_id, pair.by) == (right_id, kept.a_id, "judge's comparison")
    # the latest comparison of the two answers is the one that counts
    memory.record_pair_win(kept.a_id, right_id)
    (pair,) = preference_pairs(memory.iter_engrams(), memory.recall_settings)
    assert pair.chosen_id == kept.a_id
    assert memory.get([right_id])[0].metadata.get(PAIR_KEY) is None


def test_a_comparison_is_kept_only_between_answers_to_the_same_question(memory):
    one = memory.write_episodic(QUESTION, "Canberra.", "s")
    other = memory.write_episodic("Who wrote Hamlet?", "Shakespeare.", "s")
    with pytest.raises(ValueError, match="answer different questions"):
        memory.record_pair_win(one, other)
    with pytest.raises(UnknownEngramError, match="'nope'"):
        memory.record_pair_win(one, "nope")
    assert all(PAIR_KEY not in e.metadata for e in memory.get([one, other]))


# ---------------------------------------------------------------- cns grade --pair

def test_cns_grade_pair_prints_the_winner_and_why_and_keeps_it(state_dir, warm_embedder, ollama, monkeypatch, capsys):
    monkeypatch.setenv("CNS_OLLAMA_URL", ollama.url)
    code = main(["grade", "--pair", "--question", QUESTION, "--a", WRONG, "--b", RIGHT, "--reference", "Canberra."])
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.startswith(f"winner: answer B   judge: {JUDGE_MODEL}")
    assert "why: Response A earns 2 and Response B earns 5" in out and "kept in the memory" in out
    with MemoryService(path=state_dir / "chroma") as memory:
        (pair,) = preference_pairs(memory.iter_engrams(), memory.recall_settings)
        assert (pair.chosen, pair.rejected, pair.by) == (RIGHT, WRONG, "judge's comparison")
        a_id, b_id = memory.turn_ids(QUESTION, WRONG)[0], memory.turn_ids(QUESTION, RIGHT)[0]
    # two stored answers by id, as JSON, not kept
    code = main(["grade", "--pair", "--a-id", b_id, "--b-id", a_id, "--json", "--no-store"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["winner"] == "A" and out["kept"] is None and out["orders"] == ["A", "A"]


def test_cns_grade_pair_with_a_single_score_judge_says_so_without_a_traceback(state_dir, ollama, monkeypatch, capsys):
    monkeypatch.setenv("CNS_OLLAMA_URL", ollama.url)
    ollama.mode = "single"
    code = main(["grade", "--pair", "--question", QUESTION, "--a", RIGHT, "--b", WRONG])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err
    assert err.startswith("cns grade: error: the judge named no winner: single_score: the judge answered a pairwise "
                          "request with a single score (4)")
    assert not (state_dir / "chroma").exists()        # nothing stored without a winner: the memory was not opened


@pytest.mark.parametrize("argv, message", [
    (["--pair", "--a", RIGHT, "--b", WRONG], "--question: required with --pair"),
    (["--pair", "--question", QUESTION, "--a", RIGHT], "--b: required with --pair"),
    (["--pair", "--question", QUESTION, "--a", RIGHT, "--b", RIGHT], "answer B: the same text as answer A"),
    (["--pair", "--a-id", "x", "--a", RIGHT], "give two texts"),
    (["--question", QUESTION], "--answer: required"),
])
def test_cns_grade_pair_bad_arguments_get_one_clear_line(argv, message, state_dir, capsys):
    assert main(["grade", *argv]) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
