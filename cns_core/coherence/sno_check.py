"""The hook's stages over an SNO, for the dashboard: claims against claims and evidence.

Each claim is compared with its ``k_sem`` most similar claims and pieces of
evidence (all of them in a small SNO), through the same heuristics, model pass,
fusion and calibration as a thought chain; nothing is blocked or logged. A
contradiction between two claims that an attack relation already joins is
``declared``: the argument states it itself, so the dashboard can tell a
rebuttal from an inconsistency.

A person is waiting for it, so it runs against ``budgets.sno_check_ms`` (seconds,
not the pre-write 250 ms): the model scores claim by claim in batches, starts no
batch after the budget, and the claims left over are judged by the heuristics;
the result counts both and says how long it took. ``unlimited=True`` is the
page's "check again without a time limit". Loading the models is done before the
clock starts (:meth:`CoherenceHook.warm_up`).

Claims against evidence are the Grounding critic's verdict, the one verdict every surface
shows: the dashboard passes the verdicts of the critic run it already has (``grounding``);
without them the hook computes them with the same function when it has an NLI model
(:func:`grounding_evidence_verdicts`). A claim's ``status`` is then that verdict
(supported, contradicted, not_enough_info; "not scored" where the critic gave none), and
claims that contradict each other are listed apart (``conflicts``), not folded into it.
The SNO's coherence and contradiction density are then read from those same verdicts and
pairs (:func:`_sno_metrics`), so the page's three numbers and its tables tell one story.
Heuristics-only hooks with no verdict keep their own check (supported / contradicted / neutral).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from typing import Any, Mapping

import numpy as np

from cns_core.coherence.decision import chain_metrics, tag_proposition
from cns_core.coherence.extract import make_proposition
from cns_core.coherence.fusion import conflict_types
from cns_core.coherence.retrieval import MatrixRetriever
from cns_core.coherence.schemas import ChainMetrics, ModelCoverage, PropTag

__all__ = ["ClaimCoherence", "ContradictionPair", "SNOCoherence", "check_sno"]


@dataclass(frozen=True)
class ClaimCoherence:
    claim_id: str
    status: str            # the grounding verdict (supported | contradicted | not_enough_info | not scored);
    tag: PropTag           # heuristics only, without a verdict: contradicted | supported | neutral
    verdict: Any = None    # the claim's ClaimGrounding when there is one
    conflicts: tuple[str, ...] = ()      # other claims it contradicts above tau_c


@dataclass(frozen=True)
class ContradictionPair:
    """Two SNO nodes that contradict each other; ``declared`` when an attack relation already says so."""

    a: str
    b: str
    score: float
    types: tuple[str, ...]
    kind: str              # claim-claim | claim-evidence
    declared: bool


@dataclass(frozen=True)
class SNOCoherence:
    sno_id: str
    claims: dict[str, ClaimCoherence]
    pairs: tuple[ContradictionPair, ...]
    metrics: ChainMetrics
    degraded: tuple[str, ...] = ()
    coverage: ModelCoverage = ModelCoverage()

    def partners(self, claim_id: str) -> tuple[str, ...]:
        """Every node (claim or evidence) that ``claim_id`` forms a contradiction pair with, strongest first:
        the page's "Conflicts with" reads the pairs table, so the two never disagree."""
        return tuple(p.b if p.a == claim_id else p.a for p in self.pairs if claim_id in (p.a, p.b))

    @property
    def contradicted_claims(self) -> tuple[str, ...]:
        """Claims in at least one contradiction pair (what the contradiction density counts)."""
        return tuple(c for c in self.claims if self.partners(c))


def _attacks(sno: Any) -> set[frozenset]:
    """Unordered node pairs an attack joins (an undercut counts against its relation's target)."""
    out = {frozenset((r.source, r.target)) for r in sno.relations if r.kind == "attack"}
    target_of = {r.id: r.target for r in sno.relations}
    for r in sno.relations:
        if r.kind == "attack" and r.target in target_of:
            out.add(frozenset((r.source, target_of[r.target])))
    return out


def check_sno(hook: Any, sno: Any, *, unlimited: bool = False,
              grounding: Mapping[str, Any] | None = None) -> SNOCoherence:
    """Per-claim tags and contradiction pairs of one SNO (see the module docstring); ``grounding``:
    the claims' verdicts (claim id -> ClaimGrounding) of a critic run the caller already has."""
    settings = hook.effective_settings()
    budget_ms = None if unlimited else settings.latency.budget("sno_check")
    hook.warm_up()
    deadline = math.inf if budget_ms is None else hook.clock() + budget_ms / 1000.0
    wall = time.perf_counter()
    claims, evidence = list(sno.claims), list(sno.evidence)
    if not claims:
        return SNOCoherence(sno.id, {}, (), ChainMetrics(0.0, 0.0, 0.0, 0.0, False),
                            coverage=ModelCoverage(budget_ms=budget_ms))
    props = tuple(make_proposition(c.id, c.text) for c in claims)
    texts = [c.text for c in claims]
    vectors = np.asarray(hook.embedder.encode(texts + [e.text for e in evidence]), dtype=np.float32)
    claim_vectors = vectors[:len(claims)]
    k = settings.retrieval.k_sem
    found = MatrixRetriever([c.id for c in claims], texts, claim_vectors, source="claim").retrieve(
        texts, claim_vectors, k + 1)
    if evidence:
        by_evidence = MatrixRetriever([e.id for e in evidence], [e.text for e in evidence], vectors[len(claims):],
                                      source="evidence", trust=[e.validity for e in evidence])
        for i, nodes in enumerate(by_evidence.retrieve(texts, claim_vectors, k)):
            found[i].extend(nodes)
    lists = [[n for n in nodes if n.id != claims[i].id and n.similarity >= settings.retrieval.min_similarity]
             for i, nodes in enumerate(found)]
    degraded: list[str] = []
    pair_scores = hook.score_evidence(props, lists, degraded=degraded, budgeted=False, deadline=deadline)
    tags = [tag_proposition(p, pairs, settings, importance=1.0) for p, pairs in zip(props, pair_scores)]
    tau_c = settings.thresholds.tau_c
    attacks, claim_ids = _attacks(sno), {c.id for c in claims}
    seen: dict[frozenset, ContradictionPair] = {}
    for pairs in pair_scores:
        for p in pairs:
            score = p.calibrated[2] * p.evidence.trust
            key = frozenset((p.prop_id, p.evidence.id))
            if score < tau_c or (key in seen and seen[key].score >= score):
                continue
            seen[key] = ContradictionPair(a=p.prop_id, b=p.evidence.id, score=float(score),
                                          types=conflict_types(p.types, p.evidence.source),
                                          kind="claim-claim" if p.evidence.id in claim_ids else "claim-evidence",
                                          declared=key in attacks)
    statuses = {t.p_id: ClaimCoherence(t.p_id, "contradicted" if t.contradict >= tau_c else
                                       "supported" if t.entail >= settings.thresholds.tau_support else "neutral", t,
                                       conflicts=_conflicts(t.p_id, seen))
                for t in tags}
    # Without the caller's verdicts they are one more model pass: started only while the budget lasts
    # (the claims then keep the hook's own claim-evidence findings, and the result says so).
    verdicts = dict(grounding) if grounding is not None else None
    if verdicts is None:
        out_of_time = hook.clock() >= deadline
        verdicts = None if out_of_time else grounding_evidence_verdicts(hook, sno)
        if out_of_time and evidence and hook.model is not None:
            degraded.append("model_budget")
    if verdicts is not None:
        statuses = _with_grounding_verdicts(statuses, seen, verdicts, sno)
    pairs = tuple(sorted(seen.values(), key=lambda p: -p.score))
    metrics = _sno_metrics(chain_metrics(tags, settings, chain_importance=1.0, coherence_prev=0.0), statuses, pairs)
    return SNOCoherence(sno.id, statuses, pairs, metrics,
                        tuple(dict.fromkeys(degraded)),
                        _coverage(pair_scores, (time.perf_counter() - wall) * 1000.0, budget_ms))


def _sno_metrics(hook_metrics: ChainMetrics, statuses: Mapping[str, ClaimCoherence],
                 pairs: tuple[ContradictionPair, ...]) -> ChainMetrics:
    """The SNO's coherence and contradiction density from what the page lists, so every number agrees.

    Density: the share of claims in at least one contradiction pair (the pairs table). Coherence: the mean
    over claims of p(supported) - p(contradicted) of the claim's verdict (the hook's entail - contradict
    where it has none), from -1 (every claim contradicted) to 1 (every claim supported).
    """
    if not statuses:
        return hook_metrics
    in_pairs = {x for p in pairs for x in (p.a, p.b)}
    density = sum(1 for c in statuses if c in in_pairs) / len(statuses)
    margins = []
    for cc in statuses.values():
        v = cc.verdict
        if v is not None and v.p_supported is not None and v.p_contradicted is not None:
            margins.append(v.p_supported - v.p_contradicted)
        else:
            margins.append(cc.tag.entail - cc.tag.contradict)
    coherence = float(np.clip(np.mean(margins), -1.0, 1.0))
    return replace(hook_metrics, coherence_chain=coherence, contradiction_density=density)


def _coverage(pair_scores: list[list[Any]], elapsed_ms: float, budget_ms: float | None) -> ModelCoverage:
    """Claims the model judged (any pair scored by it), claims left to the heuristics, claims with no evidence."""
    model = sum(1 for pairs in pair_scores if any(p.entail_m is not None for p in pairs))
    empty = sum(1 for pairs in pair_scores if not pairs)
    return ModelCoverage(model, len(pair_scores) - model - empty, empty, elapsed_ms, budget_ms)


def grounding_evidence_verdicts(hook: Any, sno: Any) -> dict[str, Any] | None:
    """Each claim's Grounding verdict against the SNO's evidence (claim id -> ClaimGrounding), as the
    critic records it (none without evidence), or None when the hook has no NLI model (heuristics only)."""
    backend = hook.model.backend if hook.model is not None else None
    if backend is None:
        return None
    if not sno.evidence:
        return {}             # the critic judges no claim without evidence: none has a verdict
    from cns_core.critics.grounding import GroundingCritic
    from cns_core.critics.base import CriticContext
    from cns_core.critics.grounding_verdict import claim_grounding

    result = GroundingCritic().evaluate(sno, CriticContext(nli=backend, embedder=hook.embedder))
    return claim_grounding(result.evidence.get("claims"))


def _with_grounding_verdicts(statuses: dict[str, ClaimCoherence], seen: dict[frozenset, ContradictionPair],
                             verdicts: Mapping[str, Any], sno: Any) -> dict[str, ClaimCoherence]:
    """Replace the hook's claim-evidence findings by the Grounding verdicts (in place for ``seen``).

    Each "contradicted" verdict is one claim-evidence pair (score: the unrounded p(contradicted) times
    the validity of the evidence the verdict reads, rounded only where it is shown; types as the hook found them plus
    "grounding"); a claim's status is its verdict ("not scored" without one) and the claims it
    contradicts are its ``conflicts``.
    """
    validity = {e.id: e.validity for e in sno.evidence}
    hook_pairs = {k: seen.pop(k) for k in [k for k, p in seen.items() if p.kind == "claim-evidence"]}
    for claim_id, verdict in verdicts.items():
        by = verdict.reads_evidence or verdict.contradicted_by     # the passage the verdict reads, as the graph names it
        if verdict.verdict != "contradicted" or by not in validity:
            continue
        key = frozenset((claim_id, by))
        hook_pair = hook_pairs.get(key)
        types = tuple(dict.fromkeys((*(hook_pair.types if hook_pair else ()), "grounding")))
        score = (verdict.p_contradicted or 0.0) * validity[by]     # from the numbers; rounded only to be shown
        seen[key] = ContradictionPair(claim_id, by, float(score), types, "claim-evidence", False)
    out = {}
    for claim_id, old in statuses.items():
        verdict = verdicts.get(claim_id)
        out[claim_id] = ClaimCoherence(claim_id, (verdict.verdict or "not scored") if verdict else "not scored",
                                       old.tag, verdict, old.conflicts)
    return out


def _conflicts(claim_id: str, seen: Mapping[frozenset, ContradictionPair]) -> tuple[str, ...]:
    """The other claims ``claim_id`` contradicts (claim-claim pairs above tau_c)."""
    return tuple(sorted({(p.b if p.a == claim_id else p.a) for p in seen.values()
                         if p.kind == "claim-claim" and claim_id in (p.a, p.b)}))
