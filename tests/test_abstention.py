"""A critic with nothing to judge abstains (issue 69 item 3): no score, its weight goes to the critics that
judged, the score stays complete, and nothing downstream reads the abstention as praise or as a conflict.

Pure functions over hand-made results first (scoring, Meta-Critic, corpus row, CLI table), then the bundled
homework rant through the real critics, where the Causal critic has no causal claim to judge.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from cns_core.critics.base import CriticResult, abstentions, failures
from cns_core.engine.rows import evaluation_row
from cns_core.meta import MetaConfig, assess
from cns_core.scoring import load_profiles, weigh
from cns_core.sno import load_snos

CFG = MetaConfig.load()
DEFAULT = load_profiles()["default"]           # grounding .40 logic .30 novelty .15 causal .10 bias .05
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def judged(name: str, score: float) -> CriticResult:
    return CriticResult(critic=name, score=score, confidence=0.9, explanation="test")


def _results(**scores: float | None) -> dict[str, CriticResult]:
    """``None`` makes that critic abstain."""
    return {n: judged(n, s) if s is not None else CriticResult.not_applicable(n, f"nothing for {n} to judge")
            for n, s in scores.items()}


RANT = _results(grounding=0.14, logic=0.77, novelty=0.91, causal=None, bias=0.12)


def test_an_abstention_has_no_score_and_is_not_a_failure():
    r = CriticResult.not_applicable("causal", "no causal claim to judge")
    assert r.score is None and r.status == "not_applicable"
    assert not r.ok and not r.applicable and not r.broke
    assert r.abstention == "no causal claim to judge" and r.explanation.startswith("Not applicable")
    assert abstentions(RANT) == {"causal": "nothing for causal to judge"} and failures(RANT) == {}


def test_its_weight_goes_to_the_critics_that_judged_and_the_score_stays_complete():
    score = weigh(RANT, DEFAULT)
    judged_weight = 1.0 - DEFAULT["causal"]
    expected = sum(DEFAULT[n] * RANT[n].score for n in ("grounding", "logic", "novelty", "bias")) / judged_weight
    assert score.trust_score == pytest.approx(expected)
    assert score.weights["causal"] == 0.0 and score.weights["logic"] == pytest.approx(DEFAULT["logic"] / judged_weight)
    assert score.left_out == () and score.not_applicable == {"causal": "nothing for causal to judge"}
    assert score.abstention_note() == ("not applicable: Causal (nothing for causal to judge); its weight 0.10 went "
                                       "to the critics that judged")
    # the same SNO as if Causal had praised what it never saw: 1.0 lifted the score
    praised = weigh({**RANT, "causal": judged("causal", 1.0)}, DEFAULT).trust_score
    assert praised > score.trust_score


def test_the_meta_critic_never_reads_an_abstention_as_praise_or_as_a_conflict():
    ev = assess(RANT, DEFAULT, CFG)
    assert "causal" not in ev.critic_scores and ev.not_applicable == {"causal": "nothing for causal to judge"}
    assert ev.complete and ev.gate.complete and ev.failed == {}
    assert not any("causal" in c.critics for c in ev.conflicts)
    readings = [c.interpretation for c in ev.conflicts] + [b for s in ev.suggestions for b in s.because]
    assert not any("causal" in text.lower() for text in readings), readings
    assert all(s.critic != "causal" for s in ev.suggestions) and all(p.critic != "causal" for p in ev.plan)
    assert ev.weakest_dimension != "causal"
    assert ev.score == pytest.approx(weigh(RANT, DEFAULT).trust_score, abs=5e-4)
    assert ev.band.name == ev.gate.band.name      # the band and the gate read the score of what was judged
    data = ev.to_dict()
    assert data["not_applicable"] == {"causal": "nothing for causal to judge"} and data["complete"] is True
    assert "Causal" in data["abstention_note"] and "causal" not in data["critic_scores"]
    assert "not applicable: causal" in ev.as_critic_result().explanation


def test_a_critic_at_weight_zero_that_abstains_is_still_named():
    ev = assess(RANT, {**DEFAULT, "causal": 0.0}, CFG)
    assert ev.weighted.not_applicable == {} and "Causal (nothing for causal to judge)" in ev.abstention_note()


def test_a_failed_critic_stays_a_failure_beside_an_abstention():
    results = {**RANT, "logic": CriticResult.failed("logic", "model exploded")}
    ev = assess(results, DEFAULT, CFG)
    assert ev.failed == {"logic": "model exploded"} and not ev.complete and not ev.gate.passed
    assert ev.weighted.left_out == ("logic",) and set(ev.not_applicable) == {"causal"}


def test_the_corpus_row_leaves_the_score_empty_and_names_the_abstention():
    (sno,) = load_snos(EXAMPLES / "loaded_homework.yaml")
    row = evaluation_row(RANT, sno, "loaded_homework.yaml", "fp", {"default": DEFAULT})
    assert math.isnan(row["score_causal"]) and row["not_applicable"] == "causal"
    assert row["complete"] is True and row["incomplete_critics"] == "" and json.loads(row["failures"]) == {}
    assert row["trust_default"] == pytest.approx(weigh(RANT, DEFAULT).trust_score)
    assert not any(c["higher"] == "causal" or c["lower"] == "causal" for c in json.loads(row["conflicts"]))


def test_the_cli_table_and_json_say_not_applicable():
    from cns_core.cli.evaluate import evaluation_to_dict, format_table
    from cns_core.pipeline import Evaluation

    (sno,) = load_snos(EXAMPLES / "loaded_homework.yaml")
    ev = Evaluation(sno.id, sno.content_hash(), RANT, weigh(RANT, DEFAULT), "default")
    table = format_table(ev, sno)
    assert "causal        n/a" in table and "not applicable: nothing for causal to judge" in table
    assert "its weight 0.10 went to the critics that judged" in table and "incomplete" not in table
    data = evaluation_to_dict(ev, sno)
    assert data["critics"]["causal"]["score"] is None and data["critics"]["causal"]["status"] == "not_applicable"
    assert data["not_applicable"] == {"causal": "nothing for causal to judge"} and data["complete"] is True


def test_the_homework_rant_through_the_real_critics():
    """No causal claim in the rant: the Causal critic abstains, so "Careful causal reasoning but one-sided" and
    any "Causal 1.000 vs ..." conflict are gone (they read a perfect score it never earned)."""
    from cns_core.engine.population import Population
    from cns_core.pipeline import CriticPipeline

    (sno,) = load_snos(EXAMPLES / "loaded_homework.yaml")
    results = CriticPipeline().run_critics(sno, Population.examples().context())
    assert results["causal"].status == "not_applicable" and results["causal"].score is None
    ev = assess(results, DEFAULT, CFG)
    assert ev.complete and "causal" not in ev.critic_scores
    text = " ".join([c.describe() + c.interpretation for c in ev.conflicts] + [s.text for s in ev.suggestions]
                    + [b for s in ev.suggestions for b in s.because])
    assert "Causal" not in text and "causal reasoning" not in text.lower()
