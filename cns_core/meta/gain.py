"""What fixing a critic is worth: the measured Trust Score gain if it reached a target score.

Shared by the improvement plan (its expected impact) and the suggestions (their order,
most costly first), so both rank by one number computed one way.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Mapping

from cns_core.critics.base import CriticResult
from cns_core.scoring import weigh

__all__ = ["expected_gain"]


def expected_gain(results: Mapping[str, CriticResult], weights: Mapping[str, float],
                  critic: str, target: float) -> float:
    """Weighted-score gain if ``critic`` scored ``target`` with everything else unchanged."""
    before = weigh(results, weights).trust_score
    after = weigh({**results, critic: replace(results[critic], score=target)}, weights).trust_score
    return after - before
