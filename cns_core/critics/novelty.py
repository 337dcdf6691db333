"""Novelty-Parsimony critic: how far the hypothesis is from every known one, minus complexity.

Score_N = clip(alpha * min_i ||H - H_i||_2 / 2 - beta * min(1, (|E|/|V|) / cap), 0, 1)
(CNS 2.0, section 2.2). H is ``sno.embedding`` when the SNO carries one, else the
embedding of its hypothesis text; H_i are the rows of ``context.population``. Both sides
are L2-normalised, so distances lie in [0, 2] and halving maps them to [0, 1]. The
distances to the whole population are one matrix-vector product.

With no population (the first SNO) there is nothing to be novel against: the critic abstains
(not applicable) rather than calling the SNO maximally novel.
``context.extra["population_ids"]`` (one id per row) lets a population that includes
this SNO itself leave its own row out.
"""

from __future__ import annotations

import numpy as np

from cns_core.critics.base import CriticContext, CriticResult, Issue
from cns_core.critics.common import ConfiguredCritic, embedder_of
from cns_core.sno import SNO

__all__ = ["NoveltyCritic", "sno_embedding", "min_distance"]


def _unit(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.where(norms > 0, norms, 1.0)


def sno_embedding(sno: SNO, context: CriticContext | None = None) -> tuple[np.ndarray, str]:
    """The SNO's unit embedding and where it came from ('sno' or 'hypothesis')."""
    if sno.embedding:
        return _unit(np.asarray(sno.embedding, dtype=np.float32)), "sno"
    vector = np.asarray(embedder_of(context).encode([sno.hypothesis_text]), dtype=np.float32)[0]
    return _unit(vector), "hypothesis"


def min_distance(h: np.ndarray, population: np.ndarray) -> tuple[float, int]:
    """Smallest Euclidean distance from unit ``h`` to the unit rows of ``population`` and its row.

    ||h - p||^2 = 2 - 2 h.p for unit vectors: one product over the whole matrix.
    """
    sims = _unit(population) @ h
    best = int(np.argmax(sims))
    return float(np.sqrt(max(0.0, 2.0 - 2.0 * float(sims[best])))), best


class NoveltyCritic(ConfiguredCritic):
    """alpha * novelty - beta * complexity, clipped to [0, 1]."""

    name = "novelty"
    version = 2          # 2: no population to compare with is an abstention, not "maximally novel"
    requires = frozenset({"embedder", "population"})

    def evaluate(self, sno: SNO, context: CriticContext | None = None) -> CriticResult:
        s = self.settings
        alpha, beta, cap = float(s["alpha"]), float(s["beta"]), float(s["complexity_cap"])
        h, origin = sno_embedding(sno, context)

        population = None if context is None else context.population
        ids = None if context is None else context.extra.get("population_ids")
        rows = np.zeros((0, h.shape[0]), dtype=np.float32)
        row_ids: list | None = None
        if population is not None and len(population):
            rows = np.asarray(population, dtype=np.float32)
            if rows.ndim != 2 or rows.shape[1] != h.shape[0]:
                raise ValueError(f"population: expected rows of {h.shape[0]} values, got shape {rows.shape}")
            if ids is not None:
                if len(ids) != len(rows):
                    raise ValueError(f"population_ids: {len(ids)} ids for {len(rows)} population rows")
                keep = np.array([i != sno.id for i in ids], dtype=bool)
                rows, row_ids = rows[keep], [i for i in ids if i != sno.id]

        issues: list[Issue] = []
        evidence: dict = {"population_size": int(len(rows)), "embedding": origin}
        if len(rows) == 0:
            evidence["min_distance"] = None
            return CriticResult.not_applicable(self.name, "no other SNO to compare the hypothesis with",
                                               evidence=evidence)
        dist, nearest = min_distance(h, rows)
        novelty = min(1.0, dist / 2.0)
        evidence.update(min_distance=dist, nearest=row_ids[nearest] if row_ids else nearest)
        where = f"min distance {dist:.3f} to population row {evidence['nearest']!r}"
        if dist < float(s["near_duplicate"]):
            issues.append(Issue("near_duplicate", f"The hypothesis nearly repeats a known SNO ({where}).",
                                (sno.hypothesis,), "medium"))

        g = sno.graph
        ratio = g.number_of_edges() / max(1, g.number_of_nodes())
        penalty = beta * min(1.0, ratio / cap)
        novelty_term = alpha * novelty
        score = float(np.clip(novelty_term - penalty, 0.0, 1.0))
        if ratio > float(s["high_complexity"]):
            issues.append(Issue("high_complexity", f"{ratio:.1f} relations per claim make the argument hard "
                                f"to follow.", (), "low"))
        evidence.update(novelty_term=novelty_term, parsimony_penalty=penalty, complexity_ratio=ratio)
        return CriticResult(
            critic=self.name, score=score, confidence=float(s["confidence"]),
            explanation=(f"Score {score:.3f} = alpha*novelty {novelty_term:.3f} - beta*complexity {penalty:.3f} "
                         f"({where}; {ratio:.2f} relations per claim)."),
            sub_scores={"novelty_score": novelty, "parsimony_score": 1.0 - min(1.0, ratio / cap)},
            evidence=evidence, issues=tuple(issues))
