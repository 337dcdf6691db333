"""The grounding fusion: per-claim features, the fitted verdict, and its YAML checked field by field."""

from __future__ import annotations

import numpy as np
import pytest

from cns_core.config import ConfigError
from cns_core.critics.grounding_verdict import VERDICTS, Fusion, claim_features, fusion_from_mapping

GOOD = {"features": ["entailment", "similarity"],
        "coef": {"supported": {"entailment": 1.0, "similarity": 2.0},
                 "contradicted": {"entailment": -1.0, "similarity": 0.5},
                 "not_enough_info": {"entailment": 0.0, "similarity": -2.0}},
        "intercept": {"supported": 0.0, "contradicted": -1.0, "not_enough_info": 1.0},
        "fitted": {"date": "2026-11-24"}}


def test_features_are_log_odds_of_the_best_passages_and_the_top_similarity():
    probs = np.array([[0.2, 0.7, 0.1],      # most similar passage first
                      [0.9, 0.05, 0.05],
                      [0.1, 0.1, 0.8]])
    sims = np.array([0.8, 0.6, 0.5])
    f = claim_features(probs, sims, ["entailment", "contradiction", "similarity", "top_entailment",
                                     "top_contradiction"])
    assert f == pytest.approx([np.log(0.9 / 0.1), np.log(0.8 / 0.2), 0.8, np.log(0.2 / 0.8), np.log(0.1 / 0.9)])
    # no passage at all: nothing entails or contradicts, nothing is similar
    empty = claim_features(np.zeros((0, 3)), np.zeros(0), ["entailment", "similarity"])
    assert empty[0] < -9 and empty[1] == 0.0


def test_fusion_is_a_softmax_of_the_linear_scores():
    fusion = fusion_from_mapping(GOOD)
    x = np.array([[2.0, 0.5], [-3.0, 0.0]])
    z = x @ np.array([[1.0, 2.0], [-1.0, 0.5], [0.0, -2.0]]).T + np.array([0.0, -1.0, 1.0])
    expected = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    assert fusion.predict(x) == pytest.approx(expected)
    assert [VERDICTS[i] for i in fusion.predict(x).argmax(1)] == ["supported", "contradicted"]


def test_fusion_round_trips_through_its_mapping():
    fusion = fusion_from_mapping(GOOD)
    again = fusion_from_mapping(fusion.to_mapping())
    assert again.features == fusion.features and again.fitted == {"date": "2026-11-24"}
    assert np.allclose(again.coef, fusion.coef) and np.allclose(again.intercept, fusion.intercept)


def _with(path: str, value):
    import copy

    data = copy.deepcopy(GOOD)
    node = data
    keys = path.split(".")
    for key in keys[:-1]:
        node = node[key]
    if value is _DELETE:
        del node[keys[-1]]
    else:
        node[keys[-1]] = value
    return data


_DELETE = object()


@pytest.mark.parametrize("path, value, message", [
    ("features", "entailment", "features: must be a non-empty list"),
    ("features", ["entailment", "vibes"], "features: unknown ['vibes']"),
    ("features", ["entailment", "entailment"], "features: names repeat"),
    ("coef", [1, 2], "coef: must map each verdict"),
    ("coef.contradicted", _DELETE, "coef.contradicted: missing"),
    ("coef.supported.similarity", "high", "coef.supported.similarity: must be a finite number"),
    ("coef.supported.similarity", float("nan"), "coef.supported.similarity: must be a finite number"),
    ("coef.supported.similarity", _DELETE, "coef.supported.similarity: missing"),
    ("coef.supported.bm25", 1.0, "coef.supported: weights for features not listed: ['bm25']"),
    ("intercept.not_enough_info", _DELETE, "intercept.not_enough_info: missing"),
    ("intercept.supported", True, "intercept.supported: must be a finite number"),
    ("fitted", "yesterday", "fitted: must be a mapping"),
    ("verdict", 0.6, "verdict: must map supported / contradicted"),
    ("verdict", {"contradicted": 1.5}, "verdict.contradicted: must be a number in (0, 1]"),
    ("verdict", {"red": 0.5}, "verdict: unknown key(s) ['red']"),
])
def test_bad_fusion_yaml_names_the_field(path, value, message):
    with pytest.raises(ConfigError) as err:
        fusion_from_mapping(_with(path, value), "grounding_fusion.yaml")
    assert message in str(err.value) and str(err.value).startswith("grounding_fusion.yaml: ")


def test_a_fusion_file_that_is_not_a_mapping_is_refused(tmp_path, monkeypatch):
    from cns_core.critics.grounding_verdict import load_fusion

    (tmp_path / "grounding_fusion.yaml").write_text("- just\n- a list\n", encoding="utf-8")
    monkeypatch.setenv("CNS_CONFIG_DIR", str(tmp_path))
    with pytest.raises(ConfigError, match="grounding_fusion.yaml"):
        load_fusion()


def test_the_shipped_fusion_loads_and_records_how_it_was_fitted():
    from cns_core.critics.grounding_verdict import load_fusion

    fusion = load_fusion()
    assert isinstance(fusion, Fusion) and fusion.coef.shape == (3, len(fusion.features))
    assert {"data", "date", "cross_validation"} <= set(fusion.fitted)
    # its contradiction threshold was chosen with it, where few supported claims read contradicted
    red = fusion.fitted["cross_validation"]["supported_called_contradicted"]
    assert 0.5 <= fusion.verdict["contradicted"] <= 0.95 and max(red.values()) <= fusion.fitted["cross_validation"]["max_red"]


def test_the_fitted_thresholds_hold_unless_the_critic_settings_override_them():
    from cns_core.critics.grounding import verdict_rule_of
    from cns_core.critics.grounding_verdict import VerdictRule

    fitted = {**GOOD, "verdict": {"contradicted": 0.7}}
    assert fusion_from_mapping(fitted).verdict == {"contradicted": 0.7}
    assert fusion_from_mapping(fusion_from_mapping(fitted).to_mapping()).verdict == {"contradicted": 0.7}
    assert verdict_rule_of({"fusion": fitted}) == VerdictRule(0.5, 0.7)
    assert verdict_rule_of({"fusion": fitted, "verdict": {"contradicted": 0.55}}) == VerdictRule(0.5, 0.55)
    assert verdict_rule_of({"fusion": GOOD}) == VerdictRule(0.5, 0.5)


def test_the_red_badge_threshold_is_the_lowest_that_keeps_supported_claims_off_red():
    from cns_core.training.grounding_fusion import DevClaim, red_badge_threshold

    def claim(dataset: str, verdict: str) -> DevClaim:
        return DevClaim(dataset, "g", verdict, verdict, "c", "s")

    claims = [claim("a", "supported")] * 4 + [claim("b", "supported")] * 2 + [claim("a", "contradicted")]
    # p(contradicted) of the supported claims: set a reads 0.1, 0.2, 0.3, 0.72; set b 0.58, 0.1
    probabilities = np.array([[0.1, p, 0.9 - p] for p in (0.1, 0.2, 0.3, 0.72, 0.58, 0.1)] + [[0.0, 0.9, 0.1]])
    threshold, red = red_badge_threshold(claims, probabilities, max_red=0.25)
    assert threshold == 0.6 and red == {"a": 0.25, "b": 0.0}       # 0.55 leaves half of set b red
    threshold, red = red_badge_threshold(claims, probabilities, max_red=0.0)
    assert threshold == 0.75 and red == {"a": 0.0, "b": 0.0}
    threshold, red = red_badge_threshold(claims[:1], np.array([[0.0, 0.99, 0.01]]), max_red=0.0)
    assert threshold == 0.95 and red == {"a": 1.0}                  # none reaches it: the grid's top


def test_bm25_features_come_from_the_lexical_match():
    f = claim_features(np.array([[0.5, 0.4, 0.1]]), np.array([0.3]), ["bm25", "bm25_per_token"], (3.0, 0.75))
    assert f == pytest.approx([np.log1p(3.0), 0.75])


def test_the_verdict_rule_labels_only_at_its_thresholds():
    from cns_core.critics.grounding_verdict import VerdictRule

    rule = VerdictRule()
    assert rule.decide((0.37, 0.30, 0.33)) == "not_enough_info"      # most probable, but below 0.5
    assert rule.decide((0.30, 0.37, 0.33)) == "not_enough_info"
    assert rule.decide((0.50, 0.30, 0.20)) == "supported"
    assert rule.decide((0.10, 0.60, 0.30)) == "contradicted"
    low = VerdictRule(supported=0.3, contradicted=0.3)
    assert low.decide((0.35, 0.40, 0.25)) == "contradicted"            # both earned: the larger wins
    assert VerdictRule.from_settings({"verdict": {"contradicted": 0.7}}) == VerdictRule(0.5, 0.7)
    for bad, field in (({"verdict": {"supported": 0}}, "grounding.verdict.supported"),
                       ({"verdict": {"contradicted": "high"}}, "grounding.verdict.contradicted"),
                       ({"verdict": {"maybe": 0.5}}, "unknown key"), ({"verdict": [0.5]}, "grounding.verdict")):
        with pytest.raises(ConfigError, match=field):
            VerdictRule.from_settings(bad)


def test_claim_grounding_reads_the_critics_record_and_names_its_label():
    from cns_core.critics.grounding_verdict import claim_grounding

    g = claim_grounding({"c1": {"verdict": "not_enough_info", "p_supported": 0.23, "p_contradicted": 0.1,
                                "max_contradiction": 0.4, "contradicted_by": "e2"}, "c2": {}})
    assert g["c1"].label == "not enough information" and g["c1"].contradicted_by == "e2"
    assert g["c1"].to_dict()["p_supported"] == 0.23 and g["c2"].label == "not scored"


def test_the_drivers_of_a_verdict_add_up_to_its_logit_over_the_others():
    """Issue 70 item 2: what else decided a verdict is the fusion's own arithmetic, not a guess."""
    from cns_core.critics.grounding_verdict import load_fusion

    fusion = load_fusion()
    rng = np.random.default_rng(3)
    for _ in range(20):
        x = rng.normal(size=len(fusion.features))
        z = fusion.coef @ x + fusion.intercept
        for i, verdict in enumerate(VERDICTS):
            others = [k for k in range(3) if k != i]
            every = fusion.drivers(x, verdict, top=len(fusion.features))
            lift = (fusion.coef[i] - fusion.coef[others].mean(axis=0)) * x
            assert [d[1] for d in every] == sorted((round(float(v), 3) for v in lift if v > 0), reverse=True)
            assert abs(lift.sum() + fusion.intercept[i] - fusion.intercept[others].mean()
                       - (z[i] - z[others].mean())) < 1e-9
            assert all(dict(zip(fusion.features, x))[name] == pytest.approx(value, abs=1e-4)
                       for name, _, value in every)
    assert fusion.drivers(np.zeros(len(fusion.features)), "supported") == []
    assert fusion.drivers(x, "unknown") == []


def test_a_verdict_its_passage_does_not_show_says_what_decided_it():
    """Issue 70 item 2: central bank h read "supported 0.51" beside "e1 · whole item · neither (entails 0.30,
    contradicts 0.02)"; the row and the passages note now say what decided it."""
    from cns_core.critics.grounding_verdict import claim_grounding
    from cns_core.views.graph_html import passages_note, verdict_reading

    record = {"verdict": "supported", "p_supported": 0.514, "p_contradicted": 0.18, "p_not_enough_info": 0.306,
              "reads": 0, "passages": [{"evidence": "e1", "text": "Rates rose.", "similarity": 0.77,
                                        "entailment": 0.30, "contradiction": 0.02}],
              "decided_by": [["similarity", 1.2, 0.77], ["top_contradiction", 0.4, -3.89]]}
    g = claim_grounding({"h": record})["h"]
    assert g.reading_differs
    said = verdict_reading(g, "Rates rose.")
    assert said == ("e1 · whole item · neither (entails 0.30, contradicts 0.02) · alone it does not say supported: "
                    "decided by how similar the closest passage is (0.77) and the closest passage's low "
                    "contradiction (0.02)")
    note = passages_note("h", g)
    assert "Here h's verdict (supported, p(supported) 0.51) reads e1, which on its own is neither (entails 0.30" in note
    assert note.endswith("decided by how similar the closest passage is (0.77) and the closest passage's low "
                         "contradiction (0.02).") and "0.71" not in note
    agreeing = claim_grounding({"c1": {**record, "passages": [{**record["passages"][0], "entailment": 0.99}]}})["c1"]
    assert not agreeing.reading_differs and verdict_reading(agreeing, "Rates rose.") == "e1 · whole item · entails 0.99"
    assert passages_note("c1", agreeing).endswith("reads e1, which on its own entails 0.99.")
