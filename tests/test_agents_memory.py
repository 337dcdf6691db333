"""MemoryAgent on the bus: writes, scores, the pre-write hook and quarantine, bad messages,
and catching up after a restart."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest

from cns_core.agents.bus import CRITIQUE, RESPONSE, Publisher
from cns_core.agents.memory_agent import MemoryAgent
from cns_core.agents.state_machine import MemoryState
from cns_core.memory import MemoryService
from judge_loop_helpers import bus_config, lean_torch, proxy, wait_for, warm_embedder  # noqa: F401  (fixtures)

pytestmark = pytest.mark.usefixtures("warm_embedder")


@dataclass
class HookResult:
    blocked: bool
    metadata: dict = field(default_factory=dict)
    reason: str = ""


def turn(qid: str, answer: str = "An answer.") -> dict:
    return {"query": f"Question {qid}?", "answer": answer, "session_id": "m", "query_id": qid}


@pytest.fixture
def memory(state_dir):
    return MemoryService(path=state_dir / "chroma")


def test_turns_are_written_and_scores_merged(bus_config, proxy, memory):
    with MemoryAgent(bus_config, memory) as agent, Publisher(bus_config) as pub:
        pub.publish(RESPONSE, {**turn("w1"), "model": "llama3.2:3b", "reference": "Ref.", "metadata": {"intent": "x"}})
        pub.publish(CRITIQUE, {"query_id": "w1", "score": 4, "feedback": "Solid.", "judge_model": "j", "latency_s": 1.25})
        pub.publish(CRITIQUE, {"query_id": "w1", "score": None, "error": "timeout: slow"})   # ignored
        engram = wait_for(lambda: next((e for e in memory.get(["w1"]) if e.graded), None), what="scored engram")
        wait_for(lambda: agent.handled >= 3, what="all three messages handled")
    assert (engram.critic_score, engram.feedback) == (4, "Solid.")
    assert engram.metadata["critic_judge_model"] == "j" and engram.metadata["critic_latency_s"] == 1.25
    assert engram.metadata["model"] == "llama3.2:3b" and engram.metadata["intent"] == "x"
    assert engram.metadata["has_reference"] is True and engram.metadata["type"] == "episodic"
    assert memory.get(["w1"])[0].critic_score == 4      # the null critique changed nothing
    assert {s for s, _, _ in agent.machine.history} >= {MemoryState.WRITING, MemoryState.UPDATING_SCORE}


def test_the_hook_quarantines_blocked_turns_and_annotates_the_rest(bus_config, proxy, memory):
    seen = []

    def hook(query_id, query, answer, metadata):
        seen.append((query_id, query, answer, dict(metadata)))
        if "flat" in answer:
            return HookResult(True, {"coherence": 0.1, "nested": {"dropped": 1}}, "contradicts memory")
        if "crash" in answer:
            raise RuntimeError("hook bug")
        return HookResult(False, {"coherence": 0.93, "checked": True})

    with MemoryAgent(bus_config, memory, pre_write_hook=hook) as agent, Publisher(bus_config) as pub:
        pub.publish(RESPONSE, turn("h-ok", "Water is wet."))
        pub.publish(RESPONSE, turn("h-block", "The earth is flat."))
        pub.publish(RESPONSE, turn("h-crash", "Please crash."))
        wait_for(lambda: agent.written + agent.quarantined >= 3, what="three turns handled")
    assert [q for q, *_ in seen] == ["h-ok", "h-block", "h-crash"]
    assert seen[0][1:3] == ("Question h-ok?", "Water is wet.")
    ok, crashed = memory.get(["h-ok", "h-crash"])
    assert (ok.metadata["coherence"], ok.metadata["checked"]) == (0.93, True)
    assert "coherence" not in crashed.metadata
    assert memory.get(["h-block"]) == []
    (held,) = memory.list_quarantined()
    assert (held.id, held.metadata["quarantine_reason"], held.metadata["coherence"]) == (
        "h-block", "contradicts memory", 0.1)
    assert "nested" not in held.metadata


def test_malformed_payloads_are_dropped_and_the_agent_goes_on(bus_config, proxy, memory, caplog):
    with MemoryAgent(bus_config, memory) as agent, Publisher(bus_config) as pub:
        pub.publish(RESPONSE, {"answer": "no query"})
        pub.publish(CRITIQUE, {"query_id": "x", "score": 2.5})
        pub.publish(CRITIQUE, {"query_id": "x", "score": 9})
        pub.publish(RESPONSE, turn("after-bad"))
        wait_for(lambda: memory.get(["after-bad"]), what="the good turn after the bad ones")
        assert agent.running
    assert caplog.text.count("memory: dropped") == 3
    assert memory.pending_critiques() == []


def test_a_restarted_agent_catches_up_on_what_it_missed(bus_config, proxy, memory, state_dir):
    checkpoint = state_dir / "memory_agent.checkpoint.json"
    with Publisher(bus_config) as pub:
        with MemoryAgent(bus_config, memory) as first:
            assert "after_seq" in json.loads(checkpoint.read_text())      # where the journal was at first start
            pub.publish(RESPONSE, turn("r1"))
            wait_for(lambda: first.written == 1, what="r1 written")
        # down: these only reach the journal
        pub.publish(CRITIQUE, {"query_id": "r1", "score": 3, "feedback": "ok"})
        pub.publish(CRITIQUE, {"query_id": "r2", "score": 5, "feedback": "early"})
        pub.publish(RESPONSE, turn("r2"))
        wait_for(lambda: memory.count() == 1 and len(json.loads(checkpoint.read_text())) == 1,
                 what="a checkpoint")
        with MemoryAgent(bus_config, MemoryService(path=memory.path)) as second:
            wait_for(lambda: [e.critic_score for e in memory.get(["r1", "r2"])] == [3, 5], timeout=60,
                     what="both engrams scored after the restart")
            assert second.replayed == 3
            pub.publish(RESPONSE, turn("r3"))                              # live again
            wait_for(lambda: memory.get(["r3"]), what="a live turn after catching up")


# ----- the critics' Trust Score beside the judge's grade -------------------------------
REFERENCE = "An adult human has 206 bones."


@pytest.fixture(scope="module")
def scorer():
    """The real drafting and critics, under memory.yaml's trust settings (models loaded once)."""
    from cns_core.judging.answer_trust import AnswerScorer

    return AnswerScorer()


def _graded_and_scored(memory, ids):
    engrams = memory.get(ids)
    done = len(engrams) == len(ids) and all(e.graded and e.trust_score is not None for e in engrams)
    return engrams if done else None


def test_the_agent_stores_the_trust_score_beside_the_grade(bus_config, proxy, memory, scorer, caplog):
    with MemoryAgent(bus_config, memory, trust=scorer) as agent, Publisher(bus_config) as pub:
        pub.publish(RESPONSE, {**turn("t-right", "An adult human has 206 bones."), "reference": REFERENCE,
                               "sources": ["Bones of the skeleton: an adult has 206 of them.", "  "]})
        pub.publish(RESPONSE, {**turn("t-wrong", "An adult has 312 bones."), "reference": REFERENCE,
                               "metadata": {"trust_score": 1.0, "critic_score": 5, "intent": "x"}})
        pub.publish(CRITIQUE, {"query_id": "t-right", "score": 4, "feedback": "Right."})
        pub.publish(CRITIQUE, {"query_id": "t-wrong", "score": 5, "feedback": "The judge was fooled."})
        right, wrong = wait_for(lambda: _graded_and_scored(memory, ["t-right", "t-wrong"]),
                                what="two graded and scored engrams")
        assert agent.running and (agent.trust_scored, agent.trust_failed) == (2, 0)
    assert (right.critic_score, wrong.critic_score) == (4, 5)
    assert (right.answer_verdict, wrong.answer_verdict) == ("correct", "incorrect")   # 312 contradicts 206
    assert right.trust_score > 0.6 > 0.5 > wrong.trust_score
    assert wrong.metadata["trust_verdict_claim"] == "An adult has 312 bones."
    # the reference (+ the source), and for a claim stating a figure each sentence that states it (the drafter's)
    assert right.metadata["trust_evidence"] == 4 and wrong.metadata["trust_evidence"] == 1
    assert right.metadata["trust_settings"] == scorer.fingerprint and right.metadata["trust_profile"] == "verification"
    assert right.metadata["reference"] == REFERENCE and json.loads(right.metadata["sources"]) == [
        "Bones of the skeleton: an adult has 206 of them."]                # kept for a backfill
    assert wrong.metadata["intent"] == "x" and wrong.metadata["critic_feedback"] == "The judge was fooled."
    assert "turn t-wrong: metadata critic_score, trust_score dropped (set by the memory itself)" in caplog.text
    # the judge was fooled (5); the verdict catches it, so the page marks the disagreement
    assert scorer.settings.rule.verdict(wrong.critic_score, wrong.trust_score, wrong.answer_verdict) == "judge higher"


@pytest.mark.parametrize("reference", ["Canberra is the capital city of Australia.",   # issue 49's wording
                                       "Canberra is the capital of Australia."])       # the demo memory's
def test_the_popular_wrong_capital_reads_incorrect_in_the_memory_path(scorer, reference):
    """Issue 49: the answer people commonly give (Sydney) is contradicted by the reference as surely as an obscure
    one, with the shipped verifier in the memory's own scoring; the right answer beside it stays correct."""
    from cns_core.judging.answer_trust import AnswerItem

    question = "What is the capital of Australia?"
    wrong, right = scorer.verdicts([AnswerItem("wrong", question, "Sydney is the capital of Australia.", reference),
                                    AnswerItem("right", question, "Canberra is the capital of Australia.", reference)])
    assert (wrong.verdict, right.verdict) == ("incorrect", "correct"), (wrong, right)
    assert wrong.score < right.score


class _BrokenPipeline:
    """A critic pipeline that cannot score (a model that went away)."""

    critics: dict = {}
    nli = embedder = "broken"

    def evaluate(self, sno, weights):
        raise RuntimeError("the NLI model is gone")


def test_a_failed_scoring_stores_the_turn_without_a_score(bus_config, proxy, memory, caplog):
    from cns_core.judging.answer_trust import AnswerScorer

    with MemoryAgent(bus_config, memory, trust=AnswerScorer(pipeline=_BrokenPipeline())) as agent, \
            Publisher(bus_config) as pub:
        pub.publish(RESPONSE, turn("f-broken", "Water boils at 100 degrees at sea level."))
        pub.publish(RESPONSE, turn("f-empty", "   "))
        wait_for(lambda: agent.trust_failed == 2, what="two failed scorings")
        pub.publish(CRITIQUE, {"query_id": "f-broken", "score": 3, "feedback": "ok"})
        wait_for(lambda: memory.get(["f-broken"])[0].graded, what="a grade after the failures")
        assert agent.running and agent.failures == 0
    broken, empty = memory.get(["f-broken", "f-empty"])
    assert broken.trust_score is None and empty.trust_score is None
    assert broken.metadata["trust_error"] == "scoring failed: RuntimeError: the NLI model is gone"
    assert empty.metadata["trust_error"] == "answer: empty, nothing to draft"
    assert "trust: answer f-broken not scored: scoring failed" in caplog.text


def test_a_store_that_refuses_the_scores_costs_only_the_scores(bus_config, proxy, memory, scorer, monkeypatch, caplog):
    def refuse(trust):
        raise RuntimeError("chroma is read-only")

    monkeypatch.setattr(memory, "record_trust", refuse)
    with MemoryAgent(bus_config, memory, trust=scorer) as agent, Publisher(bus_config) as pub:
        pub.publish(RESPONSE, turn("s1", "An adult human has 206 bones."))
        wait_for(lambda: agent.trust_failed == 1, what="the scores refused")
        pub.publish(RESPONSE, turn("s2"))
        wait_for(lambda: memory.get(["s2"]), what="the next turn")
        assert agent.running and agent.failures == 0
    assert memory.get(["s1"])[0].trust_score is None
    assert "Trust Scores of 1 answer(s) could not be stored" in caplog.text
