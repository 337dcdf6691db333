"""Meta-Critic rules as pure functions over CriticResult values (no critic is run here)."""

from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cns_core.config import ConfigError, load_config
from cns_core.critics.base import CRITIC_NAMES, CriticResult, Issue
from cns_core.meta import (
    MetaConfig, assess, confidence_band, decide, detect_conflicts, expected_gain, generate_suggestions,
    improvement_plan, ok_scores, quality_band,
)
from cns_core.scoring import load_profiles, weigh

CFG = MetaConfig.load()
DEFAULT = load_profiles()["default"]


def result(name: str, score: float, confidence: float = 0.9, codes: tuple[str, ...] = (),
           severity: str = "medium") -> CriticResult:
    issues = tuple(Issue(code, f"{code} found", ("c1",), severity) for code in codes)
    return CriticResult(critic=name, score=score, confidence=confidence, explanation="test", issues=issues)


def results(**scores: float) -> dict[str, CriticResult]:
    return {name: result(name, s) for name, s in scores.items()}


# ----- Appendix A: one row each, read by which critic is higher ----------------------------
# (higher critic, lower critic, the Appendix A reading). Bias rows use OUR bias semantics:
# bias 1.0 = no bias, so "biased framing despite evidence" is grounding HIGH and bias LOW.
APPENDIX_A = [
    ("logic", "grounding", "Coherent but ungrounded - needs evidence"),
    ("grounding", "logic", "Well-evidenced but reasoning flawed"),
    ("grounding", "novelty", "Derivative - restating known facts"),
    ("novelty", "grounding", "Original but speculative"),
    ("logic", "causal", "Logical but causal claims unsubstantiated"),
    ("causal", "logic", "Causal validity but logical gaps"),
    ("grounding", "bias", "Biased framing despite evidence"),
    ("bias", "grounding", "Neutral framing but weak evidence"),
    ("logic", "bias", "Sound logic but biased presentation"),
    ("novelty", "bias", "Novel perspective but potentially biased"),
]


@pytest.mark.parametrize("higher,lower,reading", APPENDIX_A, ids=[f"{h}>{lo}" for h, lo, _ in APPENDIX_A])
def test_appendix_a_row_fires(higher, lower, reading):
    scores = {higher: 0.9, lower: 0.2}
    [conflict] = detect_conflicts(scores, config=CFG)
    assert (conflict.higher, conflict.lower) == (higher, lower)
    assert conflict.interpretation == reading
    assert conflict.delta == pytest.approx(0.7)
    # The same row among all five critics (the others in between, so they conflict with neither end).
    full = {n: 0.55 for n in CRITIC_NAMES} | scores
    assert reading in [c.interpretation for c in detect_conflicts(full, config=CFG)]


def test_logic_over_grounding_is_reachable_whatever_the_name_order():
    # The spec's name1 < name2 ordering made this reading unreachable.
    for scores in ({"grounding": 0.1, "logic": 0.8}, {"logic": 0.8, "grounding": 0.1}):
        [conflict] = detect_conflicts(scores, config=CFG)
        assert conflict.critics == ("logic", "grounding")
        assert "needs evidence" in conflict.interpretation


def test_bias_readings_follow_our_bias_semantics():
    # Well grounded, bias critic found bias (low score): biased framing, not "neutral".
    [biased] = detect_conflicts({"grounding": 0.9, "bias": 0.1}, config=CFG)
    assert "Biased framing" in biased.interpretation
    # Bias critic found none (high score), grounding weak: neutral framing, weak evidence.
    [neutral] = detect_conflicts({"grounding": 0.1, "bias": 1.0}, config=CFG)
    assert "Neutral framing" in neutral.interpretation


def test_every_ordered_pair_has_its_own_reading():
    pairs = [(a, b) for a in CRITIC_NAMES for b in CRITIC_NAMES if a != b]
    assert set(CFG.interpretations) == set(pairs)
    for a, b in pairs:
        forward = detect_conflicts({a: 0.9, b: 0.1}, config=CFG)[0].interpretation
        backward = detect_conflicts({a: 0.1, b: 0.9}, config=CFG)[0].interpretation
        assert forward != backward, (a, b)
        assert forward == CFG.interpretations[(a, b)]


@pytest.mark.parametrize("high,low,threshold,fires", [
    (0.9, 0.6, None, False),     # exactly 0.3 apart (0.30000000000000004 in floats): not MORE than
    (0.9, 0.59, None, True),
    (0.9, 0.59, 0.5, False),     # configurable threshold
    (0.9, 0.39, 0.5, True),
    (0.5, 0.5, 0.0, False),
])
def test_conflict_threshold(high, low, threshold, fires):
    assert bool(detect_conflicts({"logic": high, "grounding": low}, threshold, CFG)) is fires


def test_conflict_threshold_from_config():
    strict = dataclasses.replace(CFG, conflict_threshold=0.1)
    assert detect_conflicts({"logic": 0.7, "novelty": 0.5}, config=strict)
    assert not detect_conflicts({"logic": 0.7, "novelty": 0.5}, config=CFG)


def test_conflicts_cover_every_pair_largest_gap_first():
    scores = {"grounding": 0.05, "logic": 0.95, "novelty": 0.5, "causal": 0.9, "bias": 0.1}
    conflicts = detect_conflicts(scores, config=CFG)
    gaps = {frozenset((a, b)) for a in scores for b in scores
            if a < b and abs(scores[a] - scores[b]) > 0.3}
    assert {frozenset(c.critics) for c in conflicts} == gaps
    assert [c.delta for c in conflicts] == sorted((c.delta for c in conflicts), reverse=True)


def test_failed_critics_take_no_part_in_conflicts():
    rs = results(grounding=0.9, logic=0.9)
    rs["bias"] = CriticResult.failed("bias", "boom")
    assert ok_scores(rs) == {"grounding": 0.9, "logic": 0.9}
    assert detect_conflicts(ok_scores(rs), config=CFG) == []


# ----- suggestions ---------------------------------------------------------------------------

def test_suggestions_from_issue_codes_of_weak_critics_only():
    rs = {"grounding": result("grounding", 0.2, codes=("no_evidence", "low_validity")),
          "logic": result("logic", 0.95, codes=("orphan_claim",)),        # strong: no advice
          "bias": result("bias", 0.5, codes=("loaded_language",))}
    out = generate_suggestions(rs, [], CFG)
    assert [s.advice for s in out] == [CFG.suggestions["no_evidence"], CFG.suggestions["low_validity"],
                                       CFG.suggestions["loaded_language"]]
    assert all(s.nodes == ("c1",) for s in out)


def test_suggestions_at_the_threshold_are_not_weak():
    rs = {"causal": result("causal", CFG.suggestion_below, codes=("missing_mechanism",))}
    assert generate_suggestions(rs, [], CFG) == []


def test_suggestions_fallback_for_unknown_code_and_for_no_issue():
    rs = {"logic": result("logic", 0.3, codes=("brand_new_code",)), "novelty": result("novelty", 0.2)}
    out = generate_suggestions(rs, [], CFG)
    assert [s.advice for s in out] == [CFG.fallback_suggestions["novelty"], CFG.fallback_suggestions["logic"]]
    # a new code still names its claim; no issue at all says the whole SNO is at stake
    assert out[1].text == f"{CFG.fallback_suggestions['logic']}: brand_new_code found (c1)"
    assert out[0].text.endswith("no single claim is named; novelty scores 0.20 for the SNO as a whole")


def test_conflicts_give_reasons_not_bare_address_lines():
    rs = {"grounding": result("grounding", 0.1, codes=("contradiction",)),
          "logic": result("logic", 0.5, codes=("contradiction", "circular_reasoning")),
          "novelty": result("novelty", 0.9)}
    conflicts = detect_conflicts(ok_scores(rs), config=CFG)
    out = generate_suggestions(rs, conflicts, CFG)
    assert not any(s.text.startswith("Address:") for s in out)
    assert len({s.text for s in out}) == len(out)
    [first] = [s for s in out if s.critic == "grounding"]
    assert first.because == ("grounding 0.10 trails novelty 0.90: Original but speculative",
                             "grounding 0.10 trails logic 0.50: Coherent but ungrounded - needs evidence")
    # the most costly critic first (grounding costs more Trust Score than logic); logic's contradiction
    # advice on the same place reads exactly as grounding's and is not repeated
    assert [(s.critic, s.advice) for s in out] == [("grounding", CFG.suggestions["contradiction"]),
                                                   ("logic", CFG.suggestions["circular_reasoning"])]
    assert out[0].cost > out[1].cost


def test_lower_critic_of_a_conflict_is_advised_even_above_the_weak_threshold():
    rs = {"logic": result("logic", 1.0), "causal": result("causal", 0.65, codes=("missing_mechanism",))}
    [s] = generate_suggestions(rs, detect_conflicts(ok_scores(rs), config=CFG), CFG)
    assert (s.critic, s.advice, s.nodes) == ("causal", CFG.suggestions["missing_mechanism"], ("c1",))
    assert s.because == ("causal 0.65 trails logic 1.00: Logical but causal claims unsubstantiated",)


def _graded(critic: str, score: float, issues: list[Issue], **evidence) -> CriticResult:
    return CriticResult(critic=critic, score=score, confidence=0.9, explanation="t", issues=tuple(issues),
                        evidence=evidence)


# (critic result, expected suggestion texts in order): the places named most costly first.
SUGGESTION_TABLE = [
    pytest.param(_graded("grounding", 0.2, [
        Issue("unsupported_claim", "No evidence supports claim c2 (p(supported) 0.30).", ("c2",), "high"),
        Issue("low_validity", "Evidence e1 has low validity (0.20).", ("e1",), "medium"),
        Issue("unsupported_claim", "No evidence supports claim c4 (p(supported) 0.05).", ("c4",), "high")],
        claims={"c2": {"p_supported": 0.30}, "c4": {"p_supported": 0.05}}),
        [f"{CFG.suggestions['unsupported_claim']}: No evidence supports claim c4 (p(supported) 0.05); "
         "No evidence supports claim c2 (p(supported) 0.30)",
         f"{CFG.suggestions['low_validity']}: Evidence e1 has low validity (0.20)"], id="cheapest-claim-last"),
    pytest.param(_graded("logic", 0.3, [
        Issue("orphan_claim", "Claim c9 supports or attacks nothing.", ("c9",), "low"),
        Issue("circular_reasoning", "Circular reasoning: c1 -> c3 -> c1.", ("c1", "c3"), "high")]),
        [f"{CFG.suggestions['circular_reasoning']}: Circular reasoning: c1 -> c3 -> c1",
         f"{CFG.suggestions['orphan_claim']}: Claim c9 supports or attacks nothing"], id="cycle-before-orphan"),
    # a code the table does not know (a learned Logic critic's): its relation is still named
    pytest.param(_graded("logic", 0.4, [
        Issue("weak_support", "c4 supports c2 only superficially.", ("c4", "c2"), "medium")]),
        [f"{CFG.fallback_suggestions['logic']}: c4 supports c2 only superficially"], id="new-code-named"),
    pytest.param(_graded("bias", 0.1, [
        Issue("loaded_language", "Loaded wording in 2 of 5 claims: clueless.", ("h", "c3"), "medium")]),
        [f"{CFG.suggestions['loaded_language']}: Loaded wording in 2 of 5 claims: clueless (h, c3)"],
        id="unsaid-ids-added"),
    pytest.param(_graded("grounding", 0.1, [
        Issue("unsupported_claim", f"No evidence supports claim c{i}.", (f"c{i}",), "high") for i in range(1, 6)]),
        [f"{CFG.suggestions['unsupported_claim']}: No evidence supports claim c1; No evidence supports claim c2; "
         "No evidence supports claim c3; and 2 more issues about c4, c5"], id="rest-by-id"),
    # issue 70 item 6: "and 2 more (h, e1, c3, e4)" counted issues and listed four ids; the count says what it counts
    pytest.param(_graded("grounding", 0.1, [
        *[Issue("unsupported_claim", f"No evidence supports claim c{i}.", (f"c{i}",), "high") for i in range(1, 4)],
        Issue("unsupported_claim", "No evidence supports claim h (closest e1).", ("h", "e1"), "high"),
        Issue("unsupported_claim", "No evidence supports claim c7 (closest e4).", ("c7", "e4"), "high")]),
        [f"{CFG.suggestions['unsupported_claim']}: No evidence supports claim c1; No evidence supports claim c2; "
         "No evidence supports claim c3; and 2 more issues about h, e1, c7, e4"], id="rest-counted-as-issues"),
]


@pytest.mark.parametrize("res,texts", SUGGESTION_TABLE)
def test_suggestion_table(res, texts):
    assert [s.text for s in generate_suggestions({res.critic: res}, [], CFG)] == texts


def test_failed_critic_gives_no_advice():
    rs = {"grounding": CriticResult.failed("grounding", "model missing")}
    assert generate_suggestions(rs, [], CFG) == []


def test_shipped_suggestion_table_covers_the_documented_codes():
    documented = {"no_evidence", "low_validity", "low_relevance", "contradiction", "weak_entailment",
                  "unsupported_claim", "circular_reasoning", "orphan_claim", "unanswered_attack",
                  "disconnected_component", "contradictory_support", "correlation_as_causation",
                  "missing_mechanism", "missing_temporal_order", "hedged_causal_claim", "one_sided",
                  "loaded_language", "absolutist_language", "low_source_diversity", "derivative",
                  "overly_complex"}
    assert documented <= set(CFG.suggestions)
    assert set(CFG.fallback_suggestions) == set(CRITIC_NAMES)


# ----- quality and confidence bands ----------------------------------------------------------

@pytest.mark.parametrize("score,band,passes", [
    (1.0, "excellent", True), (0.85, "excellent", True), (0.849, "good", True), (0.70, "good", True),
    (0.699, "fair", False), (0.50, "fair", False), (0.499, "poor", False), (0.30, "poor", False),
    (0.299, "unacceptable", False), (0.0, "unacceptable", False),
])
def test_quality_bands_and_the_default_gate(score, band, passes):
    """Appendix B's bands under the spec's gate (0.70): a band below the gate never says accept."""
    got = quality_band(score, CFG)
    gate = decide(score, CFG.gate_threshold, CFG)
    assert (got.name, gate.band.name, gate.passed) == (band, band, passes)
    assert gate.action == (got.accept_action if passes else got.reject_action) and gate.action
    assert gate.action.startswith("Accept") == passes


@pytest.mark.parametrize("threshold", CFG.gate_choices)
def test_band_and_gate_tell_one_story_at_every_threshold(threshold):
    """The gate accepts whole bands: the lowest one it accepts starts at the threshold."""
    for k in range(101):
        gate = decide(k / 100, threshold, CFG)
        assert gate.passed == (gate.band.min_score >= threshold)
        assert gate.action.startswith("Accept") == gate.passed
        assert gate.lowest_accepted.min_score == threshold


def test_a_gate_inside_a_band_is_refused():
    with pytest.raises(ValueError, match="0.30, 0.50, 0.70, 0.85"):
        decide(0.46, 0.45, CFG)
    with pytest.raises(ConfigError, match="quality_gate.threshold"):
        MetaConfig.from_dict(load_config("meta") | {"quality_gate": {"threshold": 0.45}})


def test_gate_compares_the_score_as_shown():
    """Issue 35 item 2: 0.695 fails 0.70 and says 0.695, never "0.70 is below the threshold 0.70"."""
    gate = decide(0.6951, 0.7, CFG)
    assert not gate.passed and gate.reason == "score 0.695 is below the threshold 0.70"
    assert decide(0.69951, 0.7, CFG).passed        # shown as 0.700: it reaches 0.70


def test_quality_band_rejects_nan():
    with pytest.raises(ValueError, match="score"):
        quality_band(math.nan, CFG)


def test_confidence_band_is_a_point_when_critics_agree_and_are_sure():
    rs = {n: result(n, 0.7, confidence=1.0) for n in CRITIC_NAMES}
    assert confidence_band(rs, DEFAULT, CFG) == (0.7, 0.7)


def test_confidence_band_widens_with_doubt_and_with_disagreement():
    sure = {n: result(n, 0.6, confidence=1.0) for n in CRITIC_NAMES}
    doubtful = {n: result(n, 0.6, confidence=0.5) for n in CRITIC_NAMES}
    lo, hi = confidence_band(doubtful, DEFAULT, CFG)
    # doubt = 0.5, half = confidence_scale * 0.5 = 0.25
    assert (lo, hi) == pytest.approx((0.6 - 0.25, 0.6 + 0.25))
    split = dict(sure, grounding=result("grounding", 0.1, 1.0), logic=result("logic", 1.0, 1.0))
    s_lo, s_hi = confidence_band(split, DEFAULT, CFG)
    centre = weigh(split, DEFAULT).trust_score
    assert s_lo < centre < s_hi and s_hi - s_lo > 0.1


def test_confidence_band_counts_failed_critic_as_unknown():
    rs = {n: result(n, 0.6, confidence=1.0) for n in CRITIC_NAMES}
    rs["grounding"] = CriticResult.failed("grounding", "timeout")
    lo, hi = confidence_band(rs, DEFAULT, CFG)
    # grounding carries 0.40 of the weight: it could have scored 0 or 1
    assert (lo, hi) == pytest.approx((0.6 * 0.6, 0.6 * 0.6 + 0.4))
    assert confidence_band({"grounding": CriticResult.failed("grounding", "x")}, DEFAULT, CFG) == (0.0, 1.0)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=5, max_size=5),
       st.lists(st.booleans(), min_size=5, max_size=5))
def test_confidence_band_always_holds_the_score(pairs, failed):
    rs = {n: (CriticResult.failed(n, "x") if f else result(n, s, c))
          for n, (s, c), f in zip(CRITIC_NAMES, pairs, failed)}
    lo, hi = confidence_band(rs, DEFAULT, CFG)
    assert 0.0 <= lo <= hi <= 1.0
    if not all(failed):
        assert lo - 1e-4 <= weigh(rs, DEFAULT).trust_score <= hi + 1e-4


# ----- improvement plan -----------------------------------------------------------------------

def test_expected_impact_is_the_measured_weighted_gain():
    rs = results(grounding=0.2, logic=0.5, novelty=0.9, causal=0.75, bias=0.3)
    plan = improvement_plan(rs, DEFAULT, CFG)
    by_critic = {s.critic: s for s in plan}
    assert set(by_critic) == {"grounding", "logic", "causal", "bias"}   # novelty is above target 0.8
    total = sum(DEFAULT.values())
    for step in plan:
        # with all critics usable the gain is w * (target - score) / sum(w)
        manual = DEFAULT[step.critic] * (CFG.target_score - rs[step.critic].score) / total
        assert step.expected_impact == pytest.approx(manual, abs=5e-4)
        assert step.expected_impact == pytest.approx(
            expected_gain(rs, DEFAULT, step.critic, CFG.target_score), abs=1e-4)


def test_plan_ordered_by_priority_then_impact():
    rs = results(grounding=0.55, logic=0.3, novelty=0.1, causal=0.75, bias=0.2)
    plan = improvement_plan(rs, DEFAULT, CFG)
    assert [s.priority for s in plan] == ["high", "high", "high", "medium", "low"]
    assert [s.critic for s in plan] == ["logic", "novelty", "bias", "grounding", "causal"]
    highs = [s.expected_impact for s in plan if s.priority == "high"]
    assert highs == sorted(highs, reverse=True)


def test_plan_uses_issue_advice_and_severity():
    rs = results(grounding=0.9, novelty=0.9, causal=0.9, bias=0.9)
    rs["logic"] = result("logic", 0.7, codes=("contradictory_support",), severity="high")
    [step] = improvement_plan(rs, DEFAULT, CFG)
    assert step.priority == "medium"          # 0.7 alone would be low; the high-severity issue lifts it
    assert step.action == f"{CFG.suggestions['contradictory_support']} (c1)"
    assert step.issues == ("contradictory_support",) and step.nodes == ("c1",)


def test_plan_targets_per_critic_and_failed_critics():
    cfg = dataclasses.replace(CFG, targets={"bias": 0.95})
    rs = results(grounding=0.9, logic=0.9, novelty=0.9, bias=0.85)
    rs["causal"] = CriticResult.failed("causal", "timeout")
    [step] = improvement_plan(rs, DEFAULT, cfg)
    assert (step.critic, step.target_score) == ("bias", 0.95)
    assert step.expected_impact == round(0.05 * 0.10 / 0.90, 3)      # one rounding: 3 decimals


def test_zero_weight_critic_has_zero_impact():
    exploration = load_profiles()["exploration"]     # causal and bias weigh 0
    rs = results(grounding=0.9, logic=0.9, novelty=0.9, causal=0.1, bias=0.9)
    [step] = improvement_plan(rs, exploration, CFG)
    assert (step.critic, step.expected_impact) == ("causal", 0.0)


# ----- aggregation ------------------------------------------------------------------------------

def test_assess_aggregates_and_reports_failures():
    rs = results(grounding=0.2, logic=0.9, novelty=0.6, causal=0.7)
    rs["bias"] = CriticResult.failed("bias", "TimeoutError: exceeded 0.2 s")
    ev = assess(rs, DEFAULT, CFG, sno_id="s1", sno_hash="h", context="default")
    assert ev.failed == {"bias": "TimeoutError: exceeded 0.2 s"}
    assert set(ev.critic_scores) == {"grounding", "logic", "novelty", "causal"}
    assert ev.score == round(weigh(rs, DEFAULT).trust_score, 3)
    assert ev.weighted.left_out == ("bias",) and not ev.complete
    assert ev.weights["bias"] == 0.0 and sum(ev.weights.values()) == pytest.approx(1.0)
    assert ev.dominant_critic == "logic"            # 0.30 * 0.9 beats 0.40 * 0.2
    assert ev.weakest_dimension == "grounding"
    assert ev.band == quality_band(ev.score, CFG)
    assert ev.confidence_band[0] <= ev.score <= ev.confidence_band[1]
    assert ev.to_dict()["failed"] == {"bias": "TimeoutError: exceeded 0.2 s"}


def test_meta_verdict_as_a_critic_result():
    rs = results(grounding=0.1, logic=0.9, novelty=0.6, causal=0.7, bias=0.9)
    ev = assess(rs, DEFAULT, CFG)
    as_result = ev.as_critic_result()
    lo, hi = ev.confidence_band
    assert (as_result.critic, as_result.score, as_result.ok) == ("meta", ev.score, True)
    assert as_result.confidence == pytest.approx(1 - (hi - lo), abs=1e-4)
    assert as_result.issue_codes == ("critic_conflict",)
    assert len(as_result.issues) == len(ev.conflicts) and as_result.sub_scores == ev.critic_scores
    assert ev.band.name in as_result.explanation


def test_assess_names_critics_missing_from_results():
    ev = assess(results(grounding=0.8, logic=0.8), DEFAULT, CFG)
    assert set(ev.failed) == {"novelty", "causal", "bias"}


# ----- configuration ------------------------------------------------------------------------------

@pytest.mark.parametrize("patch,message", [
    ({"conflict_threshold": 1.5}, "conflict_threshold"),
    ({"conflict_threshold": "high"}, "conflict_threshold"),
    ({"cache": {"ttl_s": -1}}, "cache.ttl_s"),
    ({"bands": [{"name": "ok", "min": 0.5, "accept": "x"}]}, "bands"),
    ({"interpretations": {"logic": {"wisdom": "x"}}}, "interpretations.logic.wisdom"),
    ({"interpretations": {"logic": {"logic": "x"}}}, "itself"),
    ({"improvement_plan": {"targets": {"luck": 0.9}}}, "improvement_plan.targets.luck"),
    ({"improvement_plan": {"high_below": 0.7, "medium_below": 0.5}}, "high_below"),
    ({"default_context": "poetic"}, "default_context"),
    ({"suggestions": {"no_evidence": ""}}, "suggestions.no_evidence"),
])
def test_bad_config_names_the_key(patch, message):
    raw = load_config("meta") | patch
    with pytest.raises(ConfigError, match=message):
        MetaConfig.from_dict(raw)
