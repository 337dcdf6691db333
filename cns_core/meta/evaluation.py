"""The Meta-Critic's verdict (spec 5.2 ``evaluation_result``) and how it is assembled.

:func:`assess` is pure: it takes critic results already computed (by the
pipeline, or cached) and weights, so re-weighting never re-runs a critic.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Mapping

from cns_core.critics.base import CriticResult, Issue, abstentions, failures, in_critic_order
from cns_core.meta.bands import confidence_band, quality_band
from cns_core.meta.conflicts import Conflict, detect_conflicts, ok_scores
from cns_core.meta.gate import GateDecision, decide
from cns_core.meta.plan import ImprovementStep, improvement_plan
from cns_core.meta.settings import MetaConfig, QualityBand
from cns_core.meta.suggestions import Suggestion, generate_suggestions
from cns_core.scoring import WeightedScore, trust_shown, weigh

__all__ = ["MetaEvaluation", "assess"]


@dataclass(frozen=True)
class MetaEvaluation:
    """Everything the Meta-Critic concluded about one SNO under one context.

    ``critic_scores`` holds the critics that judged; ``failed`` maps each critic
    that raised or timed out to its reason (its weight was redistributed, see
    ``weighted.left_out``); ``not_applicable`` each critic that had nothing to judge to why
    (no score, no conflict, no suggestion; its weight went to the others and the score stays complete). ``weights`` are the normalised weights actually used. ``score`` is
    the Trust Score as shown (three decimals): the band and the gate are read from it.
    ``gate`` is the quality gate at the threshold in force, ``plan`` the improvement plan
    under the same weights, so every surface shows the one decision and the one plan.
    """

    sno_id: str
    sno_hash: str
    context: str
    score: float
    band: QualityBand
    critic_scores: dict[str, float]
    issues: dict[str, tuple[Issue, ...]]
    conflicts: tuple[Conflict, ...]
    suggestions: tuple[Suggestion, ...]       # what to do and where, most costly first
    confidence_band: tuple[float, float]
    dominant_critic: str | None
    weakest_dimension: str | None
    failed: dict[str, str]
    weights: dict[str, float]
    weighted: WeightedScore
    results: dict[str, CriticResult]
    gate: GateDecision
    plan: tuple[ImprovementStep, ...] = ()
    not_applicable: dict[str, str] = field(default_factory=dict)

    def abstention_note(self, label: Callable[[str], str] = str.capitalize) -> str:
        """``not applicable: Causal (no causal claim to judge); its weight 0.10 went to the critics that judged``
        for the weighted critics that abstained, or ``Causal is not applicable (...)`` for one at weight 0;
        empty when every critic judged."""
        note = self.weighted.abstention_note(label)
        idle = {n: why for n, why in self.not_applicable.items() if n not in self.weighted.not_applicable}
        if idle:
            extra = "; ".join(f"{label(n)} ({why})" for n, why in idle.items())
            note = (note + "; also " if note else "not applicable: ") + extra + (
                "" if note else " (weight 0 in force)")
        return note

    @property
    def quality(self) -> str:
        return self.band.name

    @property
    def complete(self) -> bool:
        """True when every critic produced a score; an incomplete score is marked wherever it is shown."""
        return not self.failed

    def share_note(self, critic: str | None) -> str:
        """``weight 0.40 × score 0.391 = 0.156 of the Trust Score`` for one critic (empty without a score)."""
        if critic is None or critic not in self.critic_scores:
            return ""
        weight, score = self.weights.get(critic, 0.0), self.critic_scores[critic]
        return (f"weight {weight:.2f} × score {score:.3f} = {self.weighted.contributions.get(critic, 0.0):.3f} "
                "of the Trust Score")

    def roles_note(self, label: Callable[[str], str] = str.capitalize) -> str:
        """Why one critic can both carry the largest share of the Trust Score and score lowest (empty when two
        different critics hold those places): the share is weight times score, so a heavy weight wins it."""
        critic = self.dominant_critic
        if critic is None or critic != self.weakest_dimension:
            return ""
        return (f"{label(critic)} is both: it scores lowest, but its weight ({self.weights.get(critic, 0.0):.2f}) is "
                "large enough that weight × score is still the largest share, so raising its score moves the Trust "
                "Score most.")

    @property
    def all_issues(self) -> list[tuple[str, Issue]]:
        """Every issue as ``(critic, issue)``, critics in canonical order."""
        return [(name, issue) for name, issues in self.issues.items() for issue in issues]

    def as_critic_result(self) -> CriticResult:
        """The verdict in the critics' own result type (the spec's Meta "implements the Critic
        behaviour"), so an agent or table can list it beside the five critics.

        Confidence is ``1 - width of the confidence band``; each conflict becomes a
        ``critic_conflict`` issue naming the two critics.
        """
        lo, hi = self.confidence_band
        conflicts = tuple(Issue("critic_conflict", f"{c.higher} {c.high_score:.2f} over {c.lower} "
                                f"{c.low_score:.2f}: {c.interpretation}", c.critics) for c in self.conflicts)
        failed = f"; failed: {', '.join(self.failed)}" if self.failed else ""
        failed += f"; not applicable: {', '.join(self.not_applicable)}" if self.not_applicable else ""
        return CriticResult(
            critic="meta", score=self.score, confidence=round(max(0.0, 1.0 - (hi - lo)), 4),
            explanation=(f"{self.band.name}, gate {self.gate.verdict} ({self.gate.action}); "
                         f"{len(self.critic_scores)} critics, "
                         f"{len(self.conflicts)} conflict(s), weakest: {self.weakest_dimension}{failed}"),
            sub_scores=dict(self.critic_scores),
            evidence={"confidence_band": self.confidence_band, "dominant_critic": self.dominant_critic,
                      "weakest_dimension": self.weakest_dimension, "suggestions": [s.text for s in self.suggestions],
                      "failed": dict(self.failed), "not_applicable": dict(self.not_applicable),
                      "weights": dict(self.weights), "context": self.context},
            issues=tuple(issue for _, issue in self.all_issues) + conflicts)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data (results reduced to their scores, issues and errors)."""
        return {
            "sno_id": self.sno_id, "sno_hash": self.sno_hash, "context": self.context,
            "score": self.score, "quality": asdict(self.band), "gate": self.gate.to_dict(),
            "weighted_sum": self.weighted.weighted_sum, "capped": self.weighted.capped,
            "cap": None if self.weighted.cap is None else {
                "limit": self.weighted.cap.limit, "contradicted": list(self.weighted.cap.ids),
                "claims": self.weighted.cap.claims, "note": self.weighted.cap_note()},
            "critic_scores": dict(self.critic_scores),
            "issues": {n: [asdict(i) for i in issues] for n, issues in self.issues.items()},
            "conflicts": [{**asdict(c), "critics": list(c.critics)} for c in self.conflicts],
            "suggestions": [s.to_dict() for s in self.suggestions], "confidence_band": list(self.confidence_band),
            "dominant_critic": self.dominant_critic, "weakest_dimension": self.weakest_dimension,
            "failed": dict(self.failed), "weights": dict(self.weights),
            "not_applicable": dict(self.not_applicable), "abstention_note": self.abstention_note(),
            "left_out": list(self.weighted.left_out), "complete": self.complete,
            "incomplete_critics": in_critic_order(self.failed),
            "plan": [{"priority": p.priority, "critic": p.critic, "action": p.action,
                      "expected_impact": p.expected_impact, "current_score": p.current_score,
                      "target_score": p.target_score, "weight": p.weight, "nodes": list(p.nodes)}
                     for p in self.plan],
        }


def assess(results: Mapping[str, CriticResult], weights: Mapping[str, float], config: MetaConfig, *,
           sno_id: str = "", sno_hash: str = "", context: str = "custom",
           threshold: float | None = None) -> MetaEvaluation:
    """Aggregate critic results into a :class:`MetaEvaluation`; ``threshold``: the gate's (default: config).

    * score: :func:`cns_core.scoring.weigh` (failed and abstaining critics left out, their weight
      redistributed; contradicted claims cap it), as shown;
    * dominant critic: the one contributing most to the score (weight x score);
    * weakest dimension: the lowest-scoring critic that carries weight, ties in canonical order.
    """
    names = in_critic_order(results)
    weighted = weigh(results, weights)
    scores = ok_scores(results)
    conflicts = detect_conflicts(scores, config=config)
    contributions = weighted.contributions
    dominant = max(in_critic_order(contributions), key=lambda n: contributions[n], default=None)
    weighted_ok = [n for n in in_critic_order(scores) if weights.get(n, 0) > 0] or in_critic_order(scores)
    weakest = min(weighted_ok, key=lambda n: scores[n], default=None)
    failed = failures(results)
    failed.update({n: "no result from the pipeline" for n in weighted.left_out if n not in results})
    score = trust_shown(weighted.trust_score)
    return MetaEvaluation(
        sno_id=sno_id, sno_hash=sno_hash, context=context, score=score,
        band=quality_band(score, config),
        critic_scores={n: scores[n] for n in in_critic_order(scores)},
        issues={n: results[n].issues for n in names if results[n].issues},
        conflicts=tuple(conflicts),
        suggestions=tuple(generate_suggestions(results, conflicts, config, weights)),
        confidence_band=confidence_band(results, weights, config),
        dominant_critic=dominant, weakest_dimension=weakest,
        failed=failed,
        weights=dict(weighted.weights), weighted=weighted, results=dict(results),
        gate=decide(score, config.gate_threshold if threshold is None else threshold, config, failed),
        plan=tuple(improvement_plan(results, weights, config)),
        not_applicable=abstentions(results),
    )
