"""Novelty-Parsimony critic: alpha * min distance / 2 - beta * complexity, on hand-set embeddings."""

from __future__ import annotations

import numpy as np
import pytest
from critic_doubles import TableEmbedder, build_sno

from cns_core.critics.base import CriticContext
from cns_core.critics.novelty import NoveltyCritic, min_distance

PLAIN = {"alpha": 1.0, "beta": 0.0}


def _sno(embedding=(1.0, 0.0, 0.0), **kw):
    return build_sno({"h": "A hypothesis.", "a": "A premise.", "b": "Another."},
                     [("a", "h", "support"), ("b", "h", "support")], embedding=list(embedding), **kw)


def test_first_sno_has_nothing_to_be_novel_against_and_abstains():
    result = NoveltyCritic({"alpha": 1.0, "beta": 0.2, "complexity_cap": 5.0}).evaluate(_sno(), CriticContext())
    assert result.status == "not_applicable" and result.score is None
    assert result.evidence["min_distance"] is None and "no other SNO" in result.abstention
    # a population holding only the SNO itself is no population either
    alone = NoveltyCritic().evaluate(_sno(), CriticContext(population=np.array([[1.0, 0.0, 0.0]]),
                                                            extra={"population_ids": [_sno().id]}))
    assert not alone.applicable


def test_min_distance_to_population():
    population = np.array([[0.0, 1.0, 0.0], [0.6, 0.8, 0.0]])
    result = NoveltyCritic(PLAIN).evaluate(_sno(), CriticContext(population=population))
    expected = np.sqrt(0.4 ** 2 + 0.8 ** 2)          # row 1 is closer than row 0 (sqrt 2)
    assert result.evidence["min_distance"] == pytest.approx(expected, abs=1e-6)
    assert result.evidence["nearest"] == 1
    assert result.score == pytest.approx(expected / 2, abs=1e-6)


def test_vectors_are_normalised_before_measuring():
    population = np.array([[0.0, 3.0, 0.0]])
    result = NoveltyCritic(PLAIN).evaluate(_sno((5.0, 0.0, 0.0)), CriticContext(population=population))
    assert result.evidence["min_distance"] == pytest.approx(np.sqrt(2), abs=1e-6)


def test_vectorised_distance_matches_a_loop():
    rng = np.random.default_rng(0)
    population = rng.normal(size=(200, 8))
    population /= np.linalg.norm(population, axis=1, keepdims=True)
    h = rng.normal(size=8)
    h /= np.linalg.norm(h)
    dist, row = min_distance(h.astype(np.float32), population.astype(np.float32))
    loop = [np.linalg.norm(h - p) for p in population]
    assert dist == pytest.approx(min(loop), abs=1e-5) and row == int(np.argmin(loop))


def test_near_duplicate_scores_low_and_is_flagged():
    result = NoveltyCritic({"alpha": 1.4, "beta": 0.2}).evaluate(_sno(), CriticContext(
        population=np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])))
    assert result.score == 0.0
    assert result.issue_codes == ("near_duplicate",)


def test_population_ids_leave_the_sno_itself_out():
    population = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    ctx = CriticContext(population=population, extra={"population_ids": ["test-sno", "other"]})
    result = NoveltyCritic(PLAIN).evaluate(_sno(), ctx)
    assert result.evidence["population_size"] == 1 and result.evidence["nearest"] == "other"
    assert result.evidence["min_distance"] == pytest.approx(np.sqrt(2), abs=1e-6)


def test_hypothesis_is_embedded_when_the_sno_has_no_embedding():
    embedder = TableEmbedder({"A hypothesis.": [0.0, 0.0, 1.0]}, dim=3)
    sno = build_sno({"h": "A hypothesis."})
    result = NoveltyCritic(PLAIN).evaluate(sno, CriticContext(population=np.array([[0.0, 0.0, 1.0]]),
                                                              embedder=embedder))
    assert result.evidence["embedding"] == "hypothesis" and embedder.calls == 1
    assert result.evidence["min_distance"] == pytest.approx(0.0, abs=1e-6)


def test_parsimony_penalty_and_clipping():
    claims = {k: f"Claim {k}." for k in "habc"}
    rels = [(s, t, "support") for s in "abc" for t in "habc" if s != t]      # 9 edges over 4 claims
    sno = build_sno(claims, rels, embedding=[1.0, 0.0])
    far = np.array([[0.0, 1.0]])                     # orthogonal: distance sqrt 2, novelty sqrt(2) / 2
    result = NoveltyCritic({"alpha": 1.0, "beta": 0.5, "complexity_cap": 5.0, "high_complexity": 2.0}).evaluate(
        sno, CriticContext(population=far))
    assert result.evidence["complexity_ratio"] == pytest.approx(9 / 4)
    assert result.score == pytest.approx(np.sqrt(2) / 2 - 0.5 * (9 / 4) / 5)
    assert "high_complexity" in result.issue_codes


def test_population_of_another_size_is_an_error():
    with pytest.raises(ValueError, match="population"):
        NoveltyCritic().evaluate(_sno(), CriticContext(population=np.zeros((2, 4))))
