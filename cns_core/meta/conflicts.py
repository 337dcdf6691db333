"""Conflicts between critics: pairs whose scores differ by more than a threshold.

The spec enumerated pairs with ``name1 < name2`` and keyed each reading on that
order, so "logic above grounding" could never be read (``grounding < logic``).
Here every unordered pair is visited once and its reading is looked up by which
critic is HIGHER, so both directions of each pair have their own interpretation
(the table is ``interpretations`` in ``config/meta.yaml``). The Bias critic
scores 1.0 for no bias, so a high bias score reads as balanced framing.

The gap is taken between the unrounded scores (:func:`cns_core.scoring.score_gap`) and rounded
only to be shown: the conflict list, the matrix and "Novelty 0.905 vs Logic 0.155 (gap 0.750)" all
read one number (:meth:`Conflict.describe`). A critic with weight 0 in force still disagrees, but the
gap moves no Trust Score, and :meth:`Conflict.weight_note` says so wherever the conflict is listed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

from cns_core.critics.base import CriticResult, in_critic_order
from cns_core.meta.settings import MetaConfig
from cns_core.scoring import GAP_DIGITS, score_gap

__all__ = ["Conflict", "detect_conflicts", "interpret_conflict", "ok_scores"]

# Scores are floats from models: 0.9 - 0.6 must not count as "more than 0.3".
_EPS = 1e-9


@dataclass(frozen=True)
class Conflict:
    """Two critics that disagree: ``higher`` scored ``delta`` above ``lower``."""

    higher: str
    lower: str
    high_score: float
    low_score: float
    delta: float
    interpretation: str

    @property
    def critics(self) -> tuple[str, str]:
        """The pair, higher critic first (the spec's ``critics`` tuple)."""
        return (self.higher, self.lower)

    def involves(self, a: str, b: str) -> bool:
        return {a, b} == {self.higher, self.lower}

    def describe(self, label: Callable[[str], str] = str.capitalize) -> str:
        """``Novelty 0.905 vs Logic 0.155 (gap 0.750)``: both scores and the gap with the same decimals, so the
        numbers add up (``label`` names a critic)."""
        d = GAP_DIGITS
        return (f"{label(self.higher)} {self.high_score:.{d}f} vs {label(self.lower)} {self.low_score:.{d}f} "
                f"(gap {self.delta:.{d}f})")

    def weight_note(self, weights: Mapping[str, float], label: Callable[[str], str] = str.capitalize) -> str:
        """Empty, or why the gap moves no Trust Score under ``weights``: ``Logic has weight 0 in force: this gap
        does not move the Trust Score``."""
        idle = [n for n in self.critics if float(weights.get(n, 0.0)) <= 0.0]
        if not idle:
            return ""
        names = " and ".join(label(n) for n in idle)
        verb = "have" if len(idle) > 1 else "has"
        return f"{names} {verb} weight 0 in force: this gap does not move the Trust Score"


def ok_scores(results: Mapping[str, CriticResult]) -> dict[str, float]:
    """Scores of the critics that succeeded; a failed critic has no score to compare."""
    return {name: r.score for name, r in results.items() if r.ok}


def interpret_conflict(higher: str, lower: str, config: MetaConfig) -> str:
    """What it means that ``higher`` scores well above ``lower`` (generic when the table lacks the pair)."""
    text = config.interpretations.get((higher, lower))
    return text or f"{higher.capitalize()} strong but {lower} weak"


def detect_conflicts(scores: Mapping[str, float], threshold: float | None = None,
                     config: MetaConfig | None = None) -> list[Conflict]:
    """Every pair of critics whose scores differ by more than ``threshold``, largest gap first.

    ``scores`` maps critic name to score (use :func:`ok_scores` on pipeline results);
    ``threshold`` defaults to ``conflict_threshold`` of the config (0.3).
    """
    config = config or MetaConfig.load()
    threshold = config.conflict_threshold if threshold is None else float(threshold)
    names = in_critic_order(scores)
    found = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            gap = score_gap(scores[a], scores[b])
            if gap <= threshold + _EPS:
                continue
            higher, lower = (a, b) if scores[a] > scores[b] else (b, a)
            found.append(Conflict(higher, lower, float(scores[higher]), float(scores[lower]),
                                  gap, interpret_conflict(higher, lower, config)))
    found.sort(key=lambda c: -c.delta)
    return found
