"""``cns trust-backfill``: the critics' Trust Score for answers already in memory, idempotent."""

from __future__ import annotations

import re

import pytest

from cns_core.judging.answer_trust import AnswerScorer, TrustSettings, backfill
from cns_core.cli import main
from cns_core.memory import MemoryService
from judge_loop_helpers import lean_torch  # noqa: F401  (fixture)

pytestmark = pytest.mark.usefixtures("lean_torch")

TURNS = [
    {"query": "How many bones does an adult have?", "answer": "An adult human has 206 bones.",
     "metadata": {"reference": "An adult human has 206 bones."}},
    {"query": "How many bones does an adult have?", "answer": "An adult has 312 bones.",
     "metadata": {"reference": "An adult human has 206 bones.",
                  "sources": '["The adult skeleton has 206 bones.", "Babies have more, about 270."]'}},
    {"query": "Why is the sky blue?", "answer": "Because air scatters blue light more than red light, the sky "
                                                "looks blue."},
    {"query": "Anything?", "answer": " "},
]


@pytest.fixture
def memory(state_dir, monkeypatch):
    monkeypatch.delenv("CNS_CHROMA_URL", raising=False)
    m = MemoryService()
    m.write_episodic_many([{**t, "session_id": "old", "query_id": f"b{i}", "timestamp": 1_750_000_000 + i}
                           for i, t in enumerate(TURNS)])
    m.update_engram_score("b1", 5, "fooled")
    return m


def _counts(out: str) -> tuple[int, int, int, int, int]:
    """scored, nothing to judge, failed, already scored, engrams."""
    m = re.search(r"(\d+) scored, (\d+) with nothing to judge, (\d+) failed .*?, (\d+) already scored under these "
                  r"settings, of (\d+) engrams", out)
    assert m, out
    return tuple(int(g) for g in m.groups())


def test_backfill_scores_stored_answers_once(memory, capsys):
    assert all(e.trust_score is None for e in memory.get(["b0", "b1", "b2", "b3"]))
    assert main(["trust-backfill"]) == 0
    assert _counts(capsys.readouterr().out) == (3, 1, 0, 0, 4)   # the empty answer is no failure
    right, wrong, sky, empty = memory.get(["b0", "b1", "b2", "b3"])
    assert (right.answer_verdict, wrong.answer_verdict) == ("correct", "incorrect")   # against the reference
    assert right.trust_score > 0.6 > 0.5 > wrong.trust_score         # a verified-wrong answer is never accepted
    assert (right.metadata["trust_evidence"], wrong.metadata["trust_evidence"], sky.metadata["trust_evidence"]) == (
        2, 3, 0)       # reference (+ its sentence stating the right answer's figure), + 2 sources, none
    assert sky.metadata["trust_claims"] == 2                           # "because": a claim and its reason
    assert wrong.critic_score == 5 and wrong.feedback == "fooled"      # the grade is untouched
    assert empty.trust_score is None and empty.metadata["trust_error"] == "answer: empty, nothing to draft"
    before = {e.id: e.metadata for e in memory.get(["b0", "b1", "b2"])}

    assert main(["trust-backfill"]) == 0                               # idempotent: only the unscored one is tried again
    assert _counts(capsys.readouterr().out) == (0, 1, 0, 3, 4)
    assert {e.id: e.metadata for e in memory.get(["b0", "b1", "b2"])} == before

    assert main(["trust-backfill", "--force", "--limit", "2"]) == 0
    assert _counts(capsys.readouterr().out)[:3] == (2, 0, 0)


def test_other_settings_score_again(memory):
    first = AnswerScorer(TrustSettings(profile="verification"))
    assert backfill(memory, first).scored == 3
    other = AnswerScorer(TrustSettings(profile="default"))
    assert other.fingerprint != first.fingerprint
    report = backfill(memory, other, ids=["b0", "b2", "nobody"])
    assert (report.total, report.scored, report.skipped) == (2, 2, 0)
    assert memory.get(["b0"])[0].metadata["trust_profile"] == "default"
    assert memory.get(["b1"])[0].metadata["trust_profile"] == "verification"


def test_a_bad_limit_is_named(memory, capsys):
    assert main(["trust-backfill", "--limit", "0"]) == 1
    assert "cns trust-backfill: error: --limit must be at least 1 (got 0)" in capsys.readouterr().err


def test_a_new_drafter_scores_again(memory, monkeypatch):
    first = AnswerScorer(TrustSettings(profile="verification"))
    assert backfill(memory, first).scored == 3
    monkeypatch.setattr("cns_core.text.drafter_identity", lambda: "argument-miner:retrained")
    retrained = AnswerScorer(TrustSettings(profile="verification"))
    assert retrained.fingerprint != first.fingerprint
    assert backfill(memory, retrained, ids=["b0", "b1"]).scored == 2


def test_a_verifier_retrained_into_the_same_folder_scores_again(memory, monkeypatch):
    from cns_core.models import nli as nli_module

    first = AnswerScorer(TrustSettings(profile="verification"))
    assert backfill(memory, first).scored == 3
    same = nli_module.nli_fingerprint
    monkeypatch.setattr(nli_module, "nli_fingerprint", lambda backend: same(backend) + " weights=retrained")
    retrained = AnswerScorer(TrustSettings(profile="verification"))
    assert retrained.fingerprint != first.fingerprint
    assert backfill(memory, retrained, ids=["b0", "b1"]).scored == 2
