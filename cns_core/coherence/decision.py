"""Stages 7-8: per-proposition tags, drift facets, the blocking rule, chain metrics and reward hint.

Pure functions over the scored pairs, so every rule of spec sections 2, 8, 9
and 10 can be tested with hand-made numbers.

* A proposition's ``entail`` / ``contradict`` are the strongest calibrated
  scores over its evidence, each scaled by the evidence's trust.
* ``uncertainty`` is the normalised entropy of the deciding pair's calibrated
  distribution (1.0 when there is no evidence at all); ``confidence`` is
  ``1 - uncertainty``.
* Drift (section 8): propositions whose contradiction types include
  ``self_trait`` or ``goal_violation`` flag facets; drift risk is the mean of
  their contradiction scores times ``log(1 + unique facets)``.
* Blocking (section 10): the chain is less important than theta_importance and
  one of its low-importance propositions is contradicted above tau_block --
  unless it is also supported above tau_support (that support is what a
  quarantine re-check waits for).
* Reward (section 9): ``alpha1 * (coherence - previous) - alpha2 * drift_risk``,
  zeroed when the chain's confidence (mean of max(entail, contradict)) is not
  above tau_conf_low, else scaled by it.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np

from cns_core.coherence.calibration import normalised_entropy
from cns_core.coherence.fusion import SELF_WORDS, conflict_types
from cns_core.coherence.schemas import DRIFT_TYPES, ChainMetrics, PairScore, Proposition, PropTag
from cns_core.coherence.settings import CoherenceSettings

__all__ = ["tag_proposition", "matching_facets", "drift_risk", "is_blocking", "chain_metrics"]

_MAX_EVIDENCE = 8


def matching_facets(vector: np.ndarray | None, self_facets: Mapping[str, np.ndarray] | None,
                    min_similarity: float) -> list[str]:
    """Self facets whose vector is at least ``min_similarity`` (cosine) from the proposition's, best first."""
    if vector is None or not self_facets:
        return []
    ids = list(self_facets)
    mat = np.stack([np.asarray(self_facets[i], dtype=np.float64).ravel() for i in ids])
    norms = np.linalg.norm(mat, axis=1) * max(float(np.linalg.norm(vector)), 1e-12)
    sims = mat @ np.asarray(vector, dtype=np.float64).ravel() / np.maximum(norms, 1e-12)
    order = np.argsort(-sims)
    return [ids[i] for i in order if sims[i] >= min_similarity]


def tag_proposition(prop: Proposition, pairs: Sequence[PairScore], settings: CoherenceSettings, *,
                    importance: float, vector: np.ndarray | None = None,
                    self_facets: Mapping[str, np.ndarray] | None = None) -> PropTag:
    """Stages 5 and 7 for one proposition: aggregate its pairs, type contradictions, flag drift facets."""
    th = settings.thresholds
    if not pairs:
        return PropTag(p_id=prop.id, text=prop.text, triplet=prop.triplet, entail=0.0, contradict=0.0,
                       neutral=1.0, uncertainty=1.0, support_evidence=(), contradiction_evidence=(),
                       contradiction_types=(), drift_facets=(), confidence=0.0, importance=importance)
    cal = np.array([p.calibrated for p in pairs], dtype=np.float64)
    trust = np.array([p.evidence.trust for p in pairs], dtype=np.float64)
    e_scores, c_scores = cal[:, 0] * trust, cal[:, 2] * trust
    entail, contradict = float(e_scores.max()), float(c_scores.max())
    deciding = int(c_scores.argmax()) if contradict >= th.tau_c or contradict > entail else int(e_scores.argmax())
    uncertainty = float(normalised_entropy(cal[deciding:deciding + 1])[0])
    self_ref = bool(SELF_WORDS & set(prop.tokens))
    facets = matching_facets(vector, self_facets, settings.facet_min_similarity) if self_ref else []

    support = sorted(((p.evidence.id, float(s)) for p, s in zip(pairs, e_scores) if s >= th.evidence_min),
                     key=lambda x: -x[1])[:_MAX_EVIDENCE]
    contra: list[tuple[str, float, str]] = []
    types: list[str] = []
    drift: list[str] = []
    if contradict >= th.tau_c:  # stage 5 is skipped below tau_c
        for p, s in sorted(zip(pairs, c_scores), key=lambda x: -x[1]):
            if s < th.tau_c:
                break
            kinds = conflict_types(p.types, p.evidence.source, self_referential=self_ref,
                                   self_facet=bool(facets or (p.evidence.facet and p.evidence.source == "self")))
            contra.append((p.evidence.id, float(s), kinds[0]))
            types.extend(kinds)
            if DRIFT_TYPES & set(kinds):
                if p.evidence.facet:
                    drift.append(p.evidence.facet)
                elif "goal_violation" in kinds:
                    drift.append(p.evidence.id)
                else:
                    drift.extend(facets[:1] or ["self"])
    return PropTag(
        p_id=prop.id, text=prop.text, triplet=prop.triplet, entail=entail, contradict=contradict,
        neutral=1.0 - max(entail, contradict), uncertainty=uncertainty,
        support_evidence=tuple(support), contradiction_evidence=tuple(contra[:_MAX_EVIDENCE]),
        contradiction_types=tuple(dict.fromkeys(types)), drift_facets=tuple(dict.fromkeys(drift)),
        confidence=1.0 - uncertainty, importance=importance)


def drift_risk(tags: Sequence[PropTag]) -> float:
    """``mean(contradict of the drifting propositions) * log(1 + unique facets)`` (0 without drift)."""
    drifting = [t for t in tags if t.drift_facets]
    if not drifting:
        return 0.0
    facets = {f for t in drifting for f in t.drift_facets}
    return float(np.mean([t.contradict for t in drifting]) * math.log(1 + len(facets)))


def is_blocking(tag: PropTag, settings: CoherenceSettings) -> bool:
    """A low-importance proposition contradicted above tau_block and not supported above tau_support."""
    th = settings.thresholds
    return tag.importance < th.theta_importance and tag.contradict > th.tau_block and tag.entail < th.tau_support


def chain_metrics(tags: Sequence[PropTag], settings: CoherenceSettings, *, chain_importance: float,
                  coherence_prev: float) -> ChainMetrics:
    """Section 2's chain metrics with the blocking rule and the confidence-scaled reward hint."""
    th = settings.thresholds
    n = len(tags)
    if n == 0:
        return ChainMetrics(0.0, 0.0, 0.0, 0.0, False, 0.0, 0.0, 0)
    coherence = float(sum(t.entail for t in tags) - sum(t.contradict for t in tags)) / n
    density = sum(1 for t in tags if t.contradict > th.tau_c) / n
    risk = drift_risk(tags)
    blocked = chain_importance < th.theta_importance and any(is_blocking(t, settings) for t in tags)
    delta = coherence - coherence_prev
    confidence = float(np.mean([max(t.entail, t.contradict) for t in tags]))
    reward = settings.alpha1 * delta - settings.alpha2 * risk
    reward = reward * confidence if confidence > th.tau_conf_low else 0.0
    return ChainMetrics(coherence_chain=coherence, contradiction_density=density, drift_risk=risk,
                        reward_hint=float(reward), blocked=bool(blocked), confidence=confidence,
                        delta_coherence=float(delta), n_props=n)
