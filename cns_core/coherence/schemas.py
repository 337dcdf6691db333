"""Typed inputs and outputs of the coherence hook (spec sections 1-3).

Everything the hook hands back is a frozen dataclass so results can be cached,
logged and compared without defensive copies. ``PropTag`` and ``ChainMetrics``
carry exactly the fields of the spec's section 2 (plus a few diagnostics that
say *why*: raw scores, degradations, latency).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Mapping

import numpy as np

__all__ = [
    "CONFLICT_TYPES",
    "DRIFT_TYPES",
    "EVIDENCE_SOURCES",
    "Triplet",
    "Proposition",
    "EvidenceNode",
    "ModelCoverage",
    "ContextItem",
    "ThoughtChain",
    "PairScore",
    "PropTag",
    "ChainMetrics",
    "QuarantineDirective",
    "HookResult",
]

# Conflict types, in reporting order. The first five come from surface cues, ``semantic`` is a
# contradiction only the NLI model saw; the last three come from *where* the evidence was found.
CONFLICT_TYPES: tuple[str, ...] = (
    "negation", "antonym", "numeric", "temporal", "quantifier", "semantic",
    "self_trait", "goal_violation", "narrative",
)
# Types that flag a drift facet (spec section 8).
DRIFT_TYPES: frozenset[str] = frozenset({"self_trait", "goal_violation"})

EvidenceSource = Literal["semantic", "temporal", "self", "narrative", "goal", "chain", "claim", "evidence"]
EVIDENCE_SOURCES: tuple[str, ...] = ("semantic", "temporal", "self", "narrative", "goal", "chain", "claim",
                                     "evidence")


@dataclass(frozen=True)
class Triplet:
    """Subject-predicate-object with the words that qualify it (adverbs, time, place)."""

    subj: str
    pred: str
    obj: str
    modifiers: tuple[str, ...] = ()

    def as_list(self) -> list[Any]:
        return [self.subj, self.pred, self.obj, list(self.modifiers)]


@dataclass(frozen=True)
class Proposition:
    """One atomic statement of a chain, canonicalised by stage 0.

    ``tokens`` are the lower-cased, contraction-expanded tokens the heuristics compare
    ("isn't" -> "is", "not"); ``numbers`` are the values written in it, digits or words.
    ``polarity`` is -1 for a denial (odd count of negations), +1 otherwise.
    """

    id: str
    text: str
    subj: str = ""
    pred: str = ""
    obj: str = ""
    polarity: int = 1
    modifiers: tuple[str, ...] = ()
    numbers: tuple[float, ...] = ()
    tokens: tuple[str, ...] = ()
    importance: float | None = None

    @property
    def triplet(self) -> Triplet:
        return Triplet(self.subj, self.pred, self.obj, self.modifiers)


@dataclass(frozen=True)
class EvidenceNode:
    """A piece of evidence a proposition is compared with (an engram, a claim, a goal...).

    ``similarity`` is the retrieval cosine, ``trust`` scales what the evidence can prove
    (an engram graded 1/5 weighs less than one graded 5/5), ``facet`` names the self facet
    or goal it stands for, when it stands for one. ``question`` is the question an engram
    answered: two answers that differ only in their numbers contradict each other only when
    they answer the same question.
    """

    id: str
    text: str
    source: str = "semantic"
    similarity: float = 0.0
    recency: float | None = None
    trust: float = 1.0
    facet: str | None = None
    question: str | None = None


@dataclass(frozen=True)
class ContextItem:
    """A narrative or goal proposition handed in by the caller (spec: narrative_ctx, goals_ctx)."""

    id: str
    text: str


@dataclass(frozen=True)
class ThoughtChain:
    """The hook's input for one chain (spec section 1).

    Either ``text`` or ``propositions`` is given; ``importance`` gates blocking
    (only chains below theta_importance can be blocked). ``coherence_prev`` is the
    previous chain estimate the reward hint is measured against; when absent the
    hook uses its own running estimate.
    """

    id: str
    text: str | None = None
    propositions: tuple[Proposition, ...] | None = None
    importance: float | None = None
    narrative_ctx: tuple[ContextItem, ...] = ()
    goals_ctx: tuple[ContextItem, ...] = ()
    self_facets: Mapping[str, np.ndarray] | None = None
    coherence_prev: float | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PairScore:
    """Scores of one (proposition, evidence) pair through stages 2-6."""

    prop_id: str
    evidence: EvidenceNode
    entail_h: float
    contr_h: float
    types: tuple[str, ...]
    entail_m: float | None = None
    contr_m: float | None = None
    raw: tuple[float, float, float] = (0.0, 1.0, 0.0)          # fused (entail, neutral, contradict)
    calibrated: tuple[float, float, float] = (0.0, 1.0, 0.0)   # after stage 6


@dataclass(frozen=True)
class PropTag:
    """Per-proposition output (spec section 2)."""

    p_id: str
    text: str
    triplet: Triplet
    entail: float
    contradict: float
    neutral: float
    uncertainty: float
    support_evidence: tuple[tuple[str, float], ...]
    contradiction_evidence: tuple[tuple[str, float, str], ...]
    contradiction_types: tuple[str, ...]
    drift_facets: tuple[str, ...]
    confidence: float
    importance: float = 1.0

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["triplet"] = self.triplet.as_list()
        data["support_evidence"] = [list(x) for x in self.support_evidence]
        data["contradiction_evidence"] = [list(x) for x in self.contradiction_evidence]
        data["contradiction_types"] = list(self.contradiction_types)
        data["drift_facets"] = list(self.drift_facets)
        return data


@dataclass(frozen=True)
class ChainMetrics:
    """Per-chain output (spec section 2), with the pieces of the reward hint."""

    coherence_chain: float
    contradiction_density: float
    drift_risk: float
    reward_hint: float
    blocked: bool
    confidence: float = 0.0
    delta_coherence: float = 0.0
    n_props: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class QuarantineDirective:
    """What to do with a blocked chain: keep it apart and re-check it later."""

    chain_id: str
    reason: str
    props: tuple[str, ...]          # the propositions that triggered the block
    subjects: tuple[str, ...]       # what new evidence must be about to trigger a re-check


@dataclass(frozen=True)
class ModelCoverage:
    """Who judged an SNO's claims (or a stream's chains), how long it took and against which budget.

    For an SNO ``elapsed_ms`` is the check's time; for the engram stream the 95th percentile
    of the chains' times."""

    model: int = 0              # judged with the model's scores
    heuristics: int = 0         # had evidence, but the model did not score it (budget, timeout, no model)
    no_evidence: int = 0        # nothing to compare with: neither judge was needed
    elapsed_ms: float = 0.0
    budget_ms: float | None = None   # None: no time limit

    @property
    def judged(self) -> int:
        return self.model + self.heuristics

    def sentence(self, noun: str, *, p95: bool = False) -> str:
        """``The NLI model judged 6 of 7 claims; 1 fell back to heuristics. Took 420 ms of a 10.0 s
        budget.`` (the page and the CLI say it alike); ``p95``: the time is a 95th percentile."""
        text = (f"The NLI model judged {self.model:,} of {self.judged:,} {noun}; "
                f"{self.heuristics:,} fell back to heuristics")
        if self.no_evidence:
            text += f" ({self.no_evidence:,} more had nothing to compare with)"
        took = f"95% took at most {_duration(self.elapsed_ms)}" if p95 else f"Took {_duration(self.elapsed_ms)}"
        budget = "with no time limit" if self.budget_ms is None else f"of a {_duration(self.budget_ms)} budget"
        return f"{text}. {took} {budget}."


def _duration(ms: float) -> str:
    return f"{ms:.0f} ms" if ms < 1000 else f"{ms / 1000:.1f} s"


@dataclass(frozen=True)
class HookResult:
    """The hook's verdict on one chain (spec section 3 ``HookResult``).

    ``degraded`` lists what the latency budget or a failure switched off
    (``model_dropped``, ``model_timeout``, ``model_budget`` (a person's budget ran out
    before every batch), ``model_unavailable``, ``model_error``, ``k_halved``, ``parse_skipped``,
    ``error``); ``error`` is set only by the crash fail-safe.
    """

    chain_id: str
    blocked: bool
    prop_tags: tuple[PropTag, ...]
    chain_metrics: ChainMetrics
    quarantine: QuarantineDirective | None = None
    degraded: tuple[str, ...] = ()
    error: str | None = None
    latency_ms: float = 0.0
    tick: int = 0
    pairs: tuple[PairScore, ...] = field(default=(), repr=False, compare=False)

    @property
    def model_pairs(self) -> int:
        """Pairs the model scored for this chain."""
        return sum(1 for p in self.pairs if p.entail_m is not None)

    @property
    def model_used(self) -> bool:
        return not ({"model_dropped", "model_timeout", "model_budget", "model_unavailable", "model_error", "error"}
                    & set(self.degraded))

    def tags_metadata(self) -> dict[str, Any]:
        """Flat values to merge into an engram's metadata (ChromaDB accepts only scalars)."""
        m = self.chain_metrics
        types = sorted({t for tag in self.prop_tags for t in tag.contradiction_types})
        facets = sorted({f for tag in self.prop_tags for f in tag.drift_facets})
        return {
            "coherence_chain": round(m.coherence_chain, 4),
            "contradiction_density": round(m.contradiction_density, 4),
            "drift_risk": round(m.drift_risk, 4),
            "reward_hint": round(m.reward_hint, 4),
            "coherence_blocked": bool(self.blocked),
            "contradiction_types": ",".join(types),
            "drift_facets": ",".join(facets),
            "coherence_max_contradict": round(max((t.contradict for t in self.prop_tags), default=0.0), 4),
            "coherence_degraded": ",".join(self.degraded),
        }


