"""What every critic returns and the interface every critic implements.

A critic judges one aspect of an SNO and explains itself: besides the score it
carries sub-scores, the evidence behind them (per-claim numbers, node ids) and
issue codes that the Meta-Critic turns into suggestions.

A critic with nothing to judge (no causal claim, no evidence to read, a single claim, no other
SNO to compare with) *abstains*: :meth:`CriticResult.not_applicable` gives a result with status
``not_applicable``, no score (``score is None``) and the reason as its explanation. It is neither
praise nor fault: the Trust Score gives its weight to the critics that judged, the band and the gate
use what was judged, and the Meta-Critic never compares it with another critic. Only a failure
(status ``failed``) makes a Trust Score incomplete.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Literal, Mapping, Protocol

import numpy as np

from cns_core.sno import SNO

__all__ = ["CRITIC_NAMES", "in_critic_order", "Issue", "CriticResult", "CriticContext", "Critic", "Status",
           "abstentions", "failures"]

# The five critics in their canonical order (also the order of tables and charts).
CRITIC_NAMES: tuple[str, ...] = ("grounding", "logic", "novelty", "causal", "bias")


def in_critic_order(names: Iterable[str]) -> list[str]:
    """Critic names in canonical order (unknown names after, sorted), each once."""
    present = set(names)
    return [n for n in CRITIC_NAMES if n in present] + sorted(present - set(CRITIC_NAMES))


@dataclass(frozen=True)
class Issue:
    """A finding with a stable code (``no_evidence``, ``circular_reasoning``, ...)."""

    code: str
    message: str
    nodes: tuple[str, ...] = ()          # claim / evidence ids involved
    severity: Literal["high", "medium", "low"] = "medium"


Status = Literal["ok", "failed", "not_applicable"]


@dataclass(frozen=True)
class CriticResult:
    """One critic's verdict. ``status='failed'`` results carry ``error`` and no usable score;
    ``status='not_applicable'`` results carry no score at all and say why in ``explanation``."""

    critic: str
    score: float | None
    confidence: float
    explanation: str
    sub_scores: dict[str, float] = field(default_factory=dict)
    evidence: dict[str, Any] = field(default_factory=dict)
    issues: tuple[Issue, ...] = ()
    status: Status = "ok"
    error: str | None = None
    latency_s: float = 0.0

    @property
    def ok(self) -> bool:
        """True when the critic judged: it has a score to weigh, compare and show."""
        return self.status == "ok"

    @property
    def applicable(self) -> bool:
        """False when the critic abstained: it had nothing to judge in this SNO."""
        return self.status != "not_applicable"

    @property
    def broke(self) -> bool:
        """True when the critic failed or timed out (the Trust Score is then incomplete)."""
        return self.status == "failed"

    @property
    def issue_codes(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(i.code for i in self.issues))

    @classmethod
    def failed(cls, critic: str, error: str, latency_s: float = 0.0) -> "CriticResult":
        return cls(critic=critic, score=0.0, confidence=0.0, explanation=f"{critic} critic failed: {error}",
                   status="failed", error=error, latency_s=latency_s)

    @classmethod
    def not_applicable(cls, critic: str, reason: str, **extra: Any) -> "CriticResult":
        """The critic abstains: ``reason`` says what it found nothing of ("no causal claim to judge").
        ``extra`` may carry ``evidence``, ``sub_scores`` or ``issues`` worth showing beside it."""
        return cls(critic=critic, score=None, confidence=0.0, explanation=f"Not applicable: {reason}.",
                   status="not_applicable", **extra)

    @property
    def abstention(self) -> str:
        """Why the critic abstained (empty when it did not): its reason, without the "Not applicable" prefix."""
        if self.applicable:
            return ""
        return self.explanation.removeprefix("Not applicable: ").rstrip(".")


def abstentions(results: Mapping[str, CriticResult]) -> dict[str, str]:
    """Critic -> why it abstained, for the critics that had nothing to judge, in canonical order."""
    return {n: results[n].abstention for n in in_critic_order(results) if not results[n].applicable}


def failures(results: Mapping[str, CriticResult]) -> dict[str, str]:
    """Critic -> why it failed, for the critics that failed or timed out, in canonical order."""
    return {n: results[n].error or "failed" for n in in_critic_order(results) if results[n].broke}


@dataclass
class CriticContext:
    """What a critic may need beyond the SNO itself.

    ``population`` holds the hypothesis embeddings of the other SNOs known to the
    novelty critic, one row each. Backends are passed in so tests and the
    dashboard choose them; ``None`` means the configured default.
    """

    population: np.ndarray | None = None
    nli: Any = None          # cns_core.models.nli.NLIBackend
    embedder: Any = None     # cns_core.models.embeddings.EmbeddingBackend
    extra: dict[str, Any] = field(default_factory=dict)


class Critic(Protocol):
    """A critic: a name, a configuration fingerprint for caching, and ``evaluate``."""

    name: str

    def config_key(self) -> str:
        """A string that changes whenever a setting that changes the result changes."""
        ...

    def evaluate(self, sno: SNO, context: CriticContext) -> CriticResult:
        ...
