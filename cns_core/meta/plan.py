"""The improvement plan: what to fix, in which order, and how much it would move the score.

Expected impact is measured, not guessed: the critic's cached result is replaced
by the same result at the target score and the weighted score is recomputed with
:func:`cns_core.scoring.weigh` under the same weights; the impact is the gain.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Mapping

from cns_core.critics.base import CRITIC_NAMES, CriticResult
from cns_core.meta.gain import expected_gain
from cns_core.meta.settings import MetaConfig
from cns_core.meta.suggestions import Suggestion, critic_suggestions

__all__ = ["Priority", "PRIORITY_ORDER", "ImprovementStep", "improvement_plan", "expected_gain"]

Priority = Literal["high", "medium", "low"]
PRIORITY_ORDER: dict[str, int] = {"high": 0, "medium": 1, "low": 2}


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


def _priority(result: CriticResult, config: MetaConfig) -> Priority:
    """Low scores are urgent; a high-severity issue (e.g. a contradiction) is never merely low."""
    if result.score < config.high_below:
        return "high"
    if result.score < config.medium_below or any(i.severity == "high" for i in result.issues):
        return "medium"
    return "low"


def improvement_plan(results: Mapping[str, CriticResult], weights: Mapping[str, float],
                     config: MetaConfig) -> list[ImprovementStep]:
    """One step per successful critic below its target, ordered by priority, then impact; its action
    says what to do and where (the same suggestions as :func:`~cns_core.meta.suggestions.generate_suggestions`, most costly first).

    Failed critics get no step: their gain cannot be measured (the evaluation lists them).
    """
    rank = {name: i for i, name in enumerate(CRITIC_NAMES)}
    steps = []
    for name, result in results.items():
        target = config.target_for(name)
        if not result.ok or result.score >= target:
            continue
        gain = expected_gain(results, weights, name, target)
        suggestions = critic_suggestions(name, result, config, cost=gain)
        steps.append(ImprovementStep(
            priority=_priority(result, config), critic=name,
            action="; ".join(s.short for s in suggestions),
            expected_impact=round(max(0.0, gain), 4), current_score=result.score,
            target_score=target, issues=result.issue_codes,
            nodes=tuple(dict.fromkeys(n for s in suggestions for n in s.nodes)), suggestions=tuple(suggestions)))
    steps.sort(key=lambda s: (PRIORITY_ORDER[s.priority], -s.expected_impact, rank.get(s.critic, len(rank))))
    return steps
