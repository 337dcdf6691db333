"""Pure pieces of the coherence hook: extraction, heuristic rules, fusion, typing, decision rules.

Every rule has must-fire and must-not-fire rows (hand-made pairs). No model, no embedder.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from cns_core.coherence.decision import chain_metrics, drift_risk, is_blocking, matching_facets, tag_proposition
from cns_core.coherence.extract import extract_propositions, make_proposition, subject_stems
from cns_core.text import split_sentences
from cns_core.coherence.fusion import FusionWeights, conflict_types, fuse
from cns_core.coherence.heuristics import HeuristicSettings, score_pair
from cns_core.coherence.latency import LatencyGovernor
from cns_core.coherence.quarantine import FileQuarantine, QuarantinedChain, matches_subjects
from cns_core.coherence.schemas import EvidenceNode, PairScore, PropTag, Triplet
from cns_core.coherence.settings import CoherenceSettings, LatencySettings
from cns_core.config import ConfigError
from cns_core.models.textcues import stem

TAU_C = CoherenceSettings().thresholds.tau_c

# (new proposition, evidence, cue that must fire or None when nothing may reach tau_c)
RULE_ROWS = [
    # negation: fires when what is denied is what the other side affirms
    ("The server is not running", "The server is running", "negation"),
    ("There is no man playing a guitar", "A man is playing a guitar", "negation"),
    ("Alice never drinks coffee", "Alice drinks coffee", "negation"),
    ("The report isn't finished", "The report is finished", "negation"),
    ("There is no woman slicing a potato", "A woman is slicing a carrot", None),  # a different thing denied
    ("The man is not playing the flute", "A man is playing the guitar", None),
    ("The cat is not sleeping", "The dog is running", None),                        # unrelated
    ("The man is not sitting", "The man is standing", None),                        # negation + antonym agree
    # antonym (lexicon kind 'word') with the rest of both texts aligned
    ("The door is open", "The door is closed", "antonym"),
    ("The tank is full", "The tank is empty", "antonym"),
    ("The man is laughing", "The woman is laughing", None),                         # 'person' kind: another subject
    ("The door is open", "The window is closed", None),                             # not the same thing
    # numeric: relative gap above delta_num about the same content
    ("The budget is 50 thousand dollars", "The budget is 20 thousand dollars", "numeric"),
    ("The dose is 500 mg", "The dose is 250 mg", "numeric"),
    ("Thirty dogs are barking", "Three dogs are barking", "numeric"),
    ("The budget is 52 thousand dollars", "The budget is 50 thousand dollars", None),  # gap 0.04 < 0.2
    ("The team has 5 engineers", "The office has 12 windows", None),
    # temporal: the same two events in opposite order
    ("The audit happened after the merger", "The audit happened before the merger", "temporal"),
    ("The merger came before the audit", "The audit came before the merger", "temporal"),
    ("The audit happened before the merger", "The audit happened before the merger", None),
    ("The audit happened before lunch", "The merger happened after dinner", None),
    # quantifier: a denial that is a quantifier's
    ("No students passed the exam", "All students passed the exam", "quantifier"),
    ("He is never late", "He is always late", "quantifier"),
    ("Not all students passed the exam", "No students passed the exam", None),
    # agreement
    ("A man is playing a guitar", "A man is playing a guitar loudly", None),
]


@pytest.mark.parametrize("new, old, cue", RULE_ROWS)
def test_heuristic_rule_rows(new, old, cue):
    score = score_pair(new, old)
    if cue is None:
        assert score.contradict < TAU_C, score
    else:
        assert cue in score.types, score
        assert score.contradict >= TAU_C, score
        assert score.entail == 0.0  # a contradicted overlap is not support


def test_entail_h_is_the_covered_share_of_the_new_text():
    assert score_pair("A man is playing a guitar", "A man is playing a guitar loudly").entail == 1.0
    partial = score_pair("A man is playing a red guitar", "A man is playing a guitar").entail
    assert 0.5 < partial < 1.0
    assert score_pair("The cat sleeps", "Stock prices fell").entail == 0.0


def test_delta_num_and_antonym_kinds_come_from_settings():
    loose = HeuristicSettings(delta_num=2.0)
    assert "numeric" not in score_pair("The budget is 50 thousand dollars", "The budget is 20 thousand dollars",
                                       loose).types
    with_person = HeuristicSettings(antonym_kinds=("word", "person"))
    assert "antonym" in score_pair("The man is laughing", "The woman is laughing", with_person).types


def test_alignment_ramps_between_low_and_high():
    # coverage 2/3 of the denied side: between align_low 0.5 and align_high 0.8
    s = score_pair("There is no woman slicing a potato", "A woman is slicing a carrot")
    assert 0.0 < s.contradict < 1.0
    strict = HeuristicSettings(align_low=0.7, align_high=0.9)
    assert score_pair("There is no woman slicing a potato", "A woman is slicing a carrot", strict).contradict == 0.0


# ----- stage 0 -------------------------------------------------------------

@pytest.mark.parametrize("text, triplet, polarity, numbers", [
    ("There is no man playing a guitar", ("man", "playing", "guitar"), -1, ()),
    ("The meeting was moved to 5 pm.", ("meeting", "was moved to", "5 pm"), 1, (5.0,)),
    ("Aspirin never causes bleeding in adults", ("aspirin", "causes", "bleeding"), -1, ()),
    ("She won't attend the meeting tomorrow", ("she", "will attend", "meeting"), -1, ()),
    ("Revenue rose twenty percent in 2023", ("revenue", "rose", "twenty percent"), 1, (20.0, 2023.0)),
    ("Nobody likes the new policy", ("nobody", "likes", "new policy"), -1, ()),
])
def test_extraction_rows(text, triplet, polarity, numbers):
    (p,) = extract_propositions(text, "c")
    assert (p.subj, p.pred, p.obj) == triplet
    assert p.polarity == polarity
    assert p.numbers == numbers


def test_modifiers_and_skipped_parse():
    p = make_proposition("x", "Dogs bark loudly at night")
    assert p.triplet == Triplet("dogs", "bark", "", ("loudly", "at night"))
    quick = make_proposition("x", "Dogs bark loudly at night", advanced=False)
    assert quick.subj == "" and quick.obj == "dogs bark loudly at night" and quick.polarity == 1


def test_sentence_split_keeps_abbreviations_and_decimals():
    assert split_sentences("Dr. Smith said the dose is 2.5 mg. It works; side effects are rare.\n- Take it daily",
                           semicolons=True) == [
        "Dr. Smith said the dose is 2.5 mg.", "It works", "side effects are rare.", "Take it daily"]
    assert split_sentences("   ") == []
    props = extract_propositions("A is true. B is false.", "chain-7")
    assert [p.id for p in props] == ["chain-7:0", "chain-7:1"]


def test_subject_stems_for_quarantine():
    props = extract_propositions("The reactor valve is closed. It was opened yesterday.", "c")
    assert stem("valve") in subject_stems(props[:1])
    assert matches_subjects(subject_stems(props[:1]), "Engineers inspected the valve this morning")
    assert not matches_subjects(subject_stems(props[:1]), "The budget was approved")


# ----- stages 4-5 ----------------------------------------------------------

def test_fusion_weighted_max_with_weights_normalised_over_passes_that_ran():
    w = FusionWeights(0.4, 0.6)
    raw = fuse(np.array([0.0, 0.0, 0.9]), np.array([1.0, 1.0, 0.0]), np.array([0.0, 0.1, 0.2]),
               np.array([0.9, 0.05, 0.1]), np.array([True, True, False]), w)
    # model saw pair 0 and agrees: model weight 1 wins
    assert raw[0, 2] == pytest.approx(0.9)
    # model saw pair 1 and disagrees: the heuristic alone reaches only w_h / w_m < tau_c
    assert raw[1, 2] == pytest.approx(0.4 / 0.6)
    assert raw[1, 2] < TAU_C
    # model did not see pair 2: heuristics at full weight
    assert raw[2, 0] == pytest.approx(0.9)
    assert np.allclose(raw[:, 1], 1 - np.maximum(raw[:, 0], raw[:, 2]))
    with pytest.raises(ValueError, match="w_h and w_m"):
        FusionWeights(0.0, 0.0)


@pytest.mark.parametrize("cues, source, self_ref, facet, expected", [
    (("negation",), "semantic", False, False, ("negation",)),
    ((), "semantic", False, False, ("semantic",)),
    (("numeric",), "goal", False, False, ("numeric", "goal_violation")),
    (("negation",), "self", False, False, ("negation", "self_trait")),
    (("antonym",), "semantic", True, True, ("antonym", "self_trait")),
    (("antonym",), "semantic", True, False, ("antonym",)),
    (("temporal",), "narrative", False, False, ("temporal", "narrative")),
])
def test_conflict_types(cues, source, self_ref, facet, expected):
    assert conflict_types(cues, source, self_referential=self_ref, self_facet=facet) == expected


# ----- stages 7-8 ----------------------------------------------------------

def _pair(prop_id, ev_id, cal, source="semantic", types=("negation",), trust=1.0, facet=None):
    return PairScore(prop_id=prop_id, evidence=EvidenceNode(ev_id, "x", source=source, trust=trust, facet=facet),
                     entail_h=0.0, contr_h=1.0, types=types, raw=cal, calibrated=cal)


def _tag(p_id, entail, contradict, facets=(), importance=0.5):
    return PropTag(p_id=p_id, text="", triplet=Triplet("", "", ""), entail=entail, contradict=contradict,
                   neutral=1 - max(entail, contradict), uncertainty=0.1, support_evidence=(),
                   contradiction_evidence=(), contradiction_types=(), drift_facets=tuple(facets),
                   confidence=0.9, importance=importance)


def test_tag_proposition_aggregates_and_types():
    s = CoherenceSettings()
    prop = make_proposition("p", "I always tell the truth")
    pairs = [_pair("p", "e1", (0.05, 0.05, 0.9), source="self", facet="honesty"),
             _pair("p", "e2", (0.8, 0.15, 0.05), types=()),
             _pair("p", "e3", (0.0, 0.1, 0.9), trust=0.5)]      # trust halves what it can refute
    tag = tag_proposition(prop, pairs, s, importance=0.4)
    assert tag.contradict == pytest.approx(0.9)
    assert tag.entail == pytest.approx(0.8)
    assert tag.contradiction_evidence == (("e1", pytest.approx(0.9), "negation"),)
    assert tag.contradiction_types == ("negation", "self_trait")
    assert tag.drift_facets == ("honesty",)
    assert tag.support_evidence == (("e2", pytest.approx(0.8)),)
    assert 0.0 < tag.uncertainty < 1.0 and tag.confidence == pytest.approx(1 - tag.uncertainty)
    empty = tag_proposition(prop, [], s, importance=0.4)
    assert (empty.entail, empty.contradict, empty.neutral, empty.uncertainty) == (0.0, 0.0, 1.0, 1.0)


def test_below_tau_c_no_typing():
    tag = tag_proposition(make_proposition("p", "x"), [_pair("p", "e", (0.2, 0.2, 0.6))], CoherenceSettings(),
                          importance=0.5)
    assert tag.contradict == pytest.approx(0.6)
    assert tag.contradiction_types == () and tag.contradiction_evidence == ()


def test_self_facets_matched_by_vector():
    facets = {"honesty": np.array([1.0, 0.0]), "courage": np.array([0.0, 1.0])}
    assert matching_facets(np.array([0.9, 0.1]), facets, 0.35) == ["honesty"]
    assert sorted(matching_facets(np.array([0.7, 0.7]), facets, 0.35)) == ["courage", "honesty"]
    assert matching_facets(np.array([-1.0, 0.0]), facets, 0.35) == []
    assert matching_facets(None, facets, 0.35) == []


def test_drift_risk_formula():
    tags = [_tag("a", 0, 0.9, ["honesty"]), _tag("b", 0, 0.7, ["goal:1", "honesty"]), _tag("c", 0.9, 0.0)]
    assert drift_risk(tags) == pytest.approx(0.8 * math.log(3))
    assert drift_risk([_tag("c", 0.9, 0.0)]) == 0.0


def test_blocking_rule_rows():
    s = CoherenceSettings()
    assert is_blocking(_tag("a", 0.0, 0.9, importance=0.5), s)
    assert not is_blocking(_tag("a", 0.0, 0.85, importance=0.5), s)     # not above tau_block
    assert not is_blocking(_tag("a", 0.0, 0.9, importance=0.7), s)      # important proposition
    assert not is_blocking(_tag("a", 0.75, 0.9, importance=0.5), s)     # supported: contested, not blocked
    tags = [_tag("a", 0.0, 0.95), _tag("b", 0.9, 0.0)]
    assert chain_metrics(tags, s, chain_importance=0.5, coherence_prev=0.0).blocked
    assert not chain_metrics(tags, s, chain_importance=0.6, coherence_prev=0.0).blocked


def test_chain_metrics_and_reward_hint():
    s = CoherenceSettings()
    tags = [_tag("a", 0.9, 0.0), _tag("b", 0.8, 0.1), _tag("c", 0.1, 0.8, ["goal:g"])]
    m = chain_metrics(tags, s, chain_importance=0.9, coherence_prev=0.2)
    assert m.coherence_chain == pytest.approx((1.8 - 0.9) / 3)
    assert m.contradiction_density == pytest.approx(1 / 3)
    assert m.drift_risk == pytest.approx(0.8 * math.log(2))
    confidence = (0.9 + 0.8 + 0.8) / 3
    assert m.confidence == pytest.approx(confidence)
    expected = (0.8 * (m.coherence_chain - 0.2) - 0.6 * m.drift_risk) * confidence
    assert m.reward_hint == pytest.approx(expected)
    # low confidence zeroes the hint
    weak = [_tag("a", 0.3, 0.1), _tag("b", 0.2, 0.2)]
    assert chain_metrics(weak, s, chain_importance=0.9, coherence_prev=-1.0).reward_hint == 0.0
    assert chain_metrics([], s, chain_importance=0.9, coherence_prev=0.0).n_props == 0


# ----- latency governor, settings, quarantine file ------------------------------

def test_governor_drops_model_then_halves_k_then_recovers():
    g = LatencyGovernor(LatencySettings(pre_write_ms=100, ewma_alpha=1.0))
    assert g.plan().use_model and not g.plan().halve_k
    g.observe(130)
    assert not g.plan().use_model and not g.plan().halve_k and not g.plan().advanced_parse
    g.observe(160)
    assert not g.plan().use_model and g.plan().halve_k
    g.observe(90)           # between recover (80) and budget: switches stay as they were
    assert not g.plan().use_model and g.plan().halve_k and g.plan().advanced_parse
    g.observe(50)
    assert g.plan().use_model and not g.plan().halve_k
    assert g.over_model_cut(121) and not g.over_model_cut(119)


def test_settings_validation_names_the_key():
    CoherenceSettings.from_config()  # the shipped file is valid
    with pytest.raises(ConfigError, match=r"thresholds.tau_c: must be between 0 and 1"):
        CoherenceSettings.from_config({"thresholds": {"tau_c": 1.7}})
    with pytest.raises(ConfigError, match=r"retrieval.k_sem: expected a whole number"):
        CoherenceSettings.from_config({"retrieval": {"k_sem": 2.5}})
    with pytest.raises(ConfigError, match=r"weights.w_m: expected a number"):
        CoherenceSettings.from_config({"weights": {"w_m": "high"}})
    with pytest.raises(ConfigError, match=r"calibration.method"):
        CoherenceSettings.from_config({"calibration": {"method": "platt"}})
    with pytest.raises(ConfigError, match=r"align_low: must be below"):
        CoherenceSettings.from_config({"heuristics": {"align_low": 0.9, "align_high": 0.8}})


def test_budgets_by_purpose_come_from_the_config():
    shipped = CoherenceSettings.from_config().latency
    assert shipped.budget("pre_write") == 250 and shipped.budget("sno_check") >= 1000   # a person waits seconds
    s = CoherenceSettings.from_config({"budgets": {"pre_write_ms": 80, "sno_check_ms": 3000},
                                       "latency": {"max_model_pairs": 6}}).latency
    assert (s.budget("pre_write"), s.budget("sno_check"), s.budget_ms, s.max_model_pairs) == (80, 3000, 80, 6)
    with pytest.raises(ValueError, match="purpose: expected one of pre_write, sno_check"):
        s.budget("dashboard")


@pytest.mark.parametrize("cfg, message", [
    ({"budgets": {"sno_check_ms": 0}}, r"budgets.sno_check_ms: must be > 0"),
    ({"budgets": {"pre_write_ms": "fast"}}, r"budgets.pre_write_ms: expected a number, got 'fast'"),
    ({"budgets": {"dashboard_ms": 5000}}, r"budgets.dashboard_ms: unknown purpose"),
    ({"budgets": [250]}, r"coherence.yaml: budgets: expected a mapping"),
    ({"latency": {"budget_ms": 100}}, r"latency.budget_ms: moved to budgets"),
    ({"latency": {"max_model_pairs": 2.5}}, r"latency.max_model_pairs: expected a whole number"),
])
def test_a_bad_budget_names_the_field(cfg, message):
    with pytest.raises(ConfigError, match=message):
        CoherenceSettings.from_config(cfg)


def test_file_quarantine_survives_a_torn_line(tmp_path):
    q = FileQuarantine(tmp_path / "q.jsonl")
    q.add(QuarantinedChain("c1", "The valve is open", ("valv",), reason="r"))
    q.add(QuarantinedChain("c2", "The door is closed", ("door",)))
    with open(tmp_path / "q.jsonl", "a", encoding="utf-8") as fh:
        fh.write('{"chain_id": "c3", "text": ')
    assert {i.chain_id for i in q.items()} == {"c1", "c2"}
    q.add(QuarantinedChain("c4", "The pump is off", ("pump",)))          # appended after the torn line
    assert {i.chain_id for i in q.items()} == {"c1", "c2", "c4"}
    assert q.release("c4") is not None
    assert q.release("c1").text == "The valve is open"
    assert q.release("c1") is None
    assert [i.chain_id for i in q.items()] == ["c2"]
