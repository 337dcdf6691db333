"""An answer's Trust Score a reader would accept (issue 69 item 5), with the shipped models.

The demo memory's electron answer is word for word its reference; it showed Trust 0.00 because the Grounding
critic read the bare answer without its question, found the reference "contradicting" it, and the contradiction
cap (1 of 1 claims) set the score to 0. The answer's verdict is now its grounding: one judgement of whether the
answer is right.
"""

from __future__ import annotations

import pytest

from cns_core.judging.answer_trust import AnswerItem, AnswerScorer, TrustSettings

ELECTRON = "A negatively charged subatomic particle that surrounds the atomic nucleus."


@pytest.fixture(scope="module")
def scorer() -> AnswerScorer:
    return AnswerScorer(TrustSettings(profile="verification"))


def test_an_answer_that_states_its_reference_gets_a_high_trust_score(scorer):
    outcome = scorer.score(AnswerItem("electron", "What is an electron?", ELECTRON, reference=ELECTRON))
    assert outcome.error is None and outcome.verdict.verdict == "correct"
    assert outcome.trust_score == pytest.approx(outcome.verdict.score) and outcome.trust_score >= 0.85
    assert outcome.capped_from is None and outcome.complete


def test_a_vague_answer_stays_below_it_and_without_a_reference_there_is_nothing_to_judge(scorer):
    right = scorer.score(AnswerItem("e1", "What is an electron?", ELECTRON, reference=ELECTRON)).trust_score
    vague = scorer.score(AnswerItem("e2", "What is an electron?", "A tiny particle in atoms.", reference=ELECTRON))
    assert vague.verdict.verdict == "unverified" and vague.trust_score < right
    alone = scorer.score(AnswerItem("e3", "What is an electron?", "Electrons are tiny."))
    assert alone.trust_score is None and "nothing to judge" in alone.error
    assert "no reference or sources" in alone.error        # grey "no Trust" with the reason, never a red 0.04
