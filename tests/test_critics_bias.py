"""Bias critic: balance of perspectives, loaded wording, source diversity (1.0 = no bias)."""

from __future__ import annotations

import math

import pytest
from critic_doubles import build_sno

from cns_core.critics.bias import BiasCritic, source_diversity


@pytest.mark.parametrize("sources, expected", [
    (["A", "B"], 1.0),
    (["A", "A"], 0.0),
    (["A"], 0.0),
    (["A", "A", "B", "B"], math.log(2) / math.log(4)),
    (["Smith 2020, Nature.", "smith 2020 nature", "Jones"], (-(2 / 3) * math.log(2 / 3) - (1 / 3) * math.log(1 / 3))
     / math.log(3)),
])
def test_source_diversity(sources, expected):
    assert source_diversity(sources) == pytest.approx(expected)


def test_one_sided_neutral_piece_without_evidence():
    sno = build_sno({"h": "Tea contains caffeine.", "a": "Black tea is made from leaves."}, [("a", "h", "support")])
    result = BiasCritic().evaluate(sno)
    # balance 0.3 (no opposing claim), language 1.0, sources skipped: (0.4*0.3 + 0.4*1) / 0.8
    assert result.score == pytest.approx((0.4 * 0.3 + 0.4 * 1.0) / 0.8)
    assert result.issue_codes == ("one_sided",)
    assert "sources" not in result.sub_scores


def test_loaded_and_absolutist_wording_share():
    claims = {"h": "Remote work suits many teams.", "a": "The so-called experts are clueless.",
              "b": "Meetings always run long.", "c": "Commutes take time."}
    sno = build_sno(claims, [(k, "h", "support") for k in "abc"])
    result = BiasCritic().evaluate(sno)
    assert result.sub_scores["language"] == pytest.approx(1 - 1.0 * 1 / 4 - 0.6 * 1 / 4)
    loaded = next(i for i in result.issues if i.code == "loaded_language")
    assert loaded.nodes == ("a",) and "clueless" in loaded.message and "so-called" in loaded.message
    assert next(i for i in result.issues if i.code == "absolutist_language").nodes == ("b",)


def test_answered_opposition_is_balanced():
    claims = {"h": "Cities should add bike lanes.", "x": "Bike lanes slow down buses.",
              "y": "Bus times did not change on the new lanes."}
    answered = build_sno(claims, [("x", "h", "attack"), ("y", "x", "attack")],
                         [("e1", "Data.", "City A"), ("e2", "More data.", "City B")])
    result = BiasCritic().evaluate(answered)
    assert result.sub_scores == pytest.approx({"balance": 1.0, "language": 1.0, "sources": 1.0})
    assert result.score == pytest.approx(1.0) and result.issues == ()

    unanswered = build_sno({k: claims[k] for k in ("h", "x")}, [("x", "h", "attack")])
    result = BiasCritic().evaluate(unanswered)
    assert result.sub_scores["balance"] == pytest.approx(0.6)
    assert [(i.code, i.nodes) for i in result.issues] == [("unanswered_opposition", ("x",))]


def test_opponent_role_counts_even_when_detached():
    sno = build_sno({"h": "Solar is cheap.", "o": "Storage is expensive."}, roles={"o": "opponent"})
    assert BiasCritic().evaluate(sno).evidence["opposing"] == ["o"]


def test_single_source_is_flagged():
    sno = build_sno({"h": "Claim."}, evidence=[("e1", "x", "Blog"), ("e2", "y", "blog"), ("e3", "z", "BLOG!")])
    result = BiasCritic().evaluate(sno)
    assert result.sub_scores["sources"] == 0.0
    assert "sources 0.00" in result.explanation and "-0.00" not in result.explanation    # issue 70 item 6
    assert next(i for i in result.issues if i.code == "low_source_diversity").message.startswith("3 evidence item(s) from 1")
