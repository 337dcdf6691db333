"""The improvement plan: what to fix, in which order, and how much it would move the score.

Expected impact is measured, not guessed: the critic's cached result is replaced
by the same result at the target score and the weighted score is recomputed with
:func:`cns_core.scoring.weigh` under the same weights; the impact is the gain.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from cns_core.critics.base import CriticResult
from cns_core.meta.gain import PRIORITY_ORDER, Priority, expected_gain, priority_of, rank_key
from cns_core.meta.settings import MetaConfig
from cns_core.meta.suggestions import Suggestion, critic_suggestions
from cns_core.scoring import normalise

__all__ = ["Priority", "PRIORITY_ORDER", "ImprovementStep", "improvement_plan", "expected_gain"]


@dataclass(frozen=True)
class ImprovementStep:
    """One step of the plan (spec 5.2 ``step``) with the numbers behind it."""

    priority: Priority
    critic: str
    action: str
    expected_impact: float      # gain of the weighted score if the critic reached target_score
    current_score: float
    target_score: float
    issues: tuple[str, ...] = ()
    nodes: tuple[str, ...] = ()   # the claims, relation ends and evidence the action names, most costly first
    suggestions: tuple[Suggestion, ...] = ()   # the action piece by piece: what to do and where
    weight: float = 0.0          # the critic's share of the weights in force

    @property
    def note(self) -> str:
        """Why a step gains nothing: no weight in force, or the score is held down by something else."""
        if self.expected_impact > 0:
            return ""
        if self.weight <= 0:
            return "weight 0 in force: fixing it does not move the Trust Score"
        return "gains nothing while contradicted claims cap the Trust Score"


def improvement_plan(results: Mapping[str, CriticResult], weights: Mapping[str, float],
                     config: MetaConfig) -> list[ImprovementStep]:
    """One step per successful critic below its target, in :func:`~cns_core.meta.gain.rank_key` order
    (priority under the weights in force, then impact: the order of the suggestions too); its action
    says what to do and where (the same suggestions as :func:`~cns_core.meta.suggestions.generate_suggestions`).

    Failed critics get no step: their gain cannot be measured (the evaluation lists them).
    """
    share = normalise({n: float(w) for n, w in weights.items()}) if any(weights.values()) else {}
    keyed = []
    for name, result in results.items():
        target = config.target_for(name)
        if not result.ok or result.score >= target:
            continue
        gain = expected_gain(results, weights, name, target)
        suggestions = critic_suggestions(name, result, config, cost=gain)
        keyed.append((rank_key(name, result, gain, config), ImprovementStep(
            priority=priority_of(result, gain, config), critic=name,
            action="; ".join(s.short for s in suggestions),
            expected_impact=gain, current_score=result.score,
            target_score=target, issues=result.issue_codes,
            nodes=tuple(dict.fromkeys(n for s in suggestions for n in s.nodes)), suggestions=tuple(suggestions),
            weight=share.get(name, 0.0))))
    keyed.sort(key=lambda pair: pair[0])
    return [step for _, step in keyed]
