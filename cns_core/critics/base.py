"""What every critic returns and the interface every critic implements.

A critic judges one aspect of an SNO and explains itself: besides the score it
carries sub-scores, the evidence behind them (per-claim numbers, node ids) and
issue codes that the Meta-Critic turns into suggestions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Literal, Protocol

import numpy as np

from cns_core.sno import SNO

__all__ = ["CRITIC_NAMES", "in_critic_order", "Issue", "CriticResult", "CriticContext", "Critic"]

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


@dataclass(frozen=True)
class CriticResult:
    """One critic's verdict. ``status='failed'`` results carry ``error`` and no usable score."""

    critic: str
    score: float
    confidence: float
    explanation: str
    sub_scores: dict[str, float] = field(default_factory=dict)
    evidence: dict[str, Any] = field(default_factory=dict)
    issues: tuple[Issue, ...] = ()
    status: Literal["ok", "failed"] = "ok"
    error: str | None = None
    latency_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def issue_codes(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(i.code for i in self.issues))

    @classmethod
    def failed(cls, critic: str, error: str, latency_s: float = 0.0) -> "CriticResult":
        return cls(critic=critic, score=0.0, confidence=0.0, explanation=f"{critic} critic failed: {error}",
                   status="failed", error=error, latency_s=latency_s)


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
