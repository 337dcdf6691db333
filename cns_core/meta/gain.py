"""What fixing a critic is worth: the measured Trust Score gain if it reached a target score,
and how urgent that makes it.

Shared by the improvement plan (its expected impact and priority) and the suggestions (their
order), so both rank by one key computed one way (:func:`rank_key`), rounded once
(:data:`cns_core.scoring.TRUST_DIGITS`) and shown the same on every surface.

Grounding at its target counts as grounding whose contradictions are resolved: its claim
verdicts are dropped with the old score, so the contradiction cap
(:class:`cns_core.scoring.ContradictionCap`) lifts too. Without that, no fix would ever seem
worth anything while contradicted claims cap the score.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Literal, Mapping

from cns_core.critics.base import CRITIC_NAMES, CriticResult
from cns_core.meta.settings import MetaConfig
from cns_core.scoring import trust_shown, weigh

__all__ = ["expected_gain", "Priority", "PRIORITY_ORDER", "priority_of", "rank_key"]

Priority = Literal["high", "medium", "low"]
PRIORITY_ORDER: dict[str, int] = {"high": 0, "medium": 1, "low": 2}


def _at_target(critic: str, result: CriticResult, target: float) -> CriticResult:
    """``result`` at ``target``; grounding without its claim verdicts (module docstring)."""
    if critic == "grounding":
        return replace(result, score=target, evidence={k: v for k, v in (result.evidence or {}).items()
                                                       if k != "claims"})
    return replace(result, score=target)


def expected_gain(results: Mapping[str, CriticResult], weights: Mapping[str, float],
                  critic: str, target: float) -> float:
    """Trust Score gain (as shown, never negative) if ``critic`` scored ``target`` with everything else unchanged."""
    before = weigh(results, weights).trust_score
    after = weigh({**results, critic: _at_target(critic, results[critic], target)}, weights).trust_score
    return max(0.0, trust_shown(after - before))


def priority_of(result: CriticResult, gain: float, config: MetaConfig) -> Priority:
    """Low scores are urgent and a high-severity issue (a contradiction) is never merely low, but only
    while fixing the critic moves the Trust Score: under the weights in force a critic whose fix gains
    nothing (weight 0, or a score held down by something else) is low, whatever its score."""
    if gain <= 0:
        return "low"
    if result.score < config.high_below:
        return "high"
    if result.score < config.medium_below or any(i.severity == "high" for i in result.issues):
        return "medium"
    return "low"


def rank_key(critic: str, result: CriticResult, gain: float, config: MetaConfig) -> tuple:
    """The one order of the plan and of the suggestions: priority, then gain, then score, then critic order."""
    rank = CRITIC_NAMES.index(critic) if critic in CRITIC_NAMES else len(CRITIC_NAMES)
    return (PRIORITY_ORDER[priority_of(result, gain, config)], -gain, result.score, rank, critic)
