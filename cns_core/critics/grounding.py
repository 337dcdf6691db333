"""Grounding critic: is each claim entailed by some piece of evidence?

Score_G = mean over claims of max over evidence of p(entailment | evidence, claim)
(CNS 2.0, section 2.2). Unlike the spec's loop of one model call per claim over every
evidence item, each claim is paired only with its ``top_k`` evidence windows by embedding
similarity (the cross-encoder is the dear part; the bi-encoder embeds each text once), and
all those pairs go to the NLI backend in **one** ``predict`` call. The cost grows with
claims x k, not claims x evidence. A window outside a claim's top k counts as neutral for it.

Long evidence is split into windows of a few sentences (as MiniCheck and SummaC do) so a
model with a 256-token limit still sees all of it; an evidence item counts with its best
window. Only the claims x k scored pairs are held in memory, never a claims x windows matrix
(a 5,000 x 5,000 SNO would need gigabytes).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cns_core.critics.base import CriticContext, CriticResult, Issue
from cns_core.critics.common import ConfiguredCritic, contradiction_threshold, embedder_of, nli_of
from cns_core.models.nli import nli_identity
from cns_core.sno import SNO
from cns_core.text.segment import split_sentences

__all__ = ["GroundingCritic", "evidence_windows", "top_k_windows"]


def evidence_windows(text: str, max_chars: int, size: int, stride: int) -> list[str]:
    """The windows one evidence text is scored in: itself when short, else runs of sentences.

    Windows hold ``size`` sentences and start every ``stride`` sentences; the last window
    always reaches the end of the text.
    """
    if len(text) <= max_chars:
        return [text]
    sentences = split_sentences(text)
    if len(sentences) <= size:
        return [text]
    starts = list(range(0, len(sentences) - size + 1, stride))
    if starts[-1] + size < len(sentences):
        starts.append(len(sentences) - size)
    return [" ".join(sentences[i:i + size]) for i in starts]


def _entropy_confidence(rows: np.ndarray) -> float:
    """1 - mean normalised entropy of probability rows: sharp predictions, high confidence."""
    p = np.clip(rows, 1e-12, 1.0)
    entropy = -(p * np.log(p)).sum(axis=1) / np.log(p.shape[1])
    return float(np.clip(1.0 - entropy.mean(), 0.0, 1.0))


def top_k_windows(claim_vectors: np.ndarray, window_vectors: np.ndarray, k: int) -> np.ndarray:
    """``(claims, k)`` indices of each claim's most similar windows (unit vectors, cosine), best first.

    ``k <= 0`` or ``k >= windows`` keeps every window.
    """
    n_windows = window_vectors.shape[0]
    if k <= 0 or k >= n_windows:
        return np.broadcast_to(np.arange(n_windows), (claim_vectors.shape[0], n_windows))
    similarity = claim_vectors @ window_vectors.T
    top = np.argpartition(-similarity, k - 1, axis=1)[:, :k]
    order = np.argsort(-np.take_along_axis(similarity, top, axis=1), axis=1)
    return np.take_along_axis(top, order, axis=1)


class GroundingCritic(ConfiguredCritic):
    """Mean best entailment of each claim by the evidence, with per-claim details."""

    name = "grounding"
    version = 2
    requires = frozenset({"nli", "embedder"})

    def evaluate(self, sno: SNO, context: CriticContext | None = None) -> CriticResult:
        claims, evidence = list(sno.claims), list(sno.evidence)
        if not claims or not evidence:
            missing = "claims" if not claims else "evidence"
            return CriticResult(
                critic=self.name, score=0.0, confidence=1.0,
                explanation=f"No {missing} to evaluate: grounding is 0.",
                sub_scores={"validity_weighted": 0.0, "supported_share": 0.0},
                evidence={"claims": {}, "evidence": {}, "pairs": 0},
                issues=(Issue("no_evidence", f"The SNO has no {missing}; add evidence with sources.",
                              tuple(c.id for c in claims), "high"),))

        s = self.settings
        windows: list[str] = []
        owner: list[int] = []
        for j, item in enumerate(evidence):
            pieces = evidence_windows(item.text, int(s["max_window_chars"]), int(s["window_sentences"]),
                                      int(s["window_stride"]))
            windows.extend(pieces)
            owner.extend([j] * len(pieces))
        owner_arr = np.asarray(owner)
        n_claims, n_windows = len(claims), len(windows)

        nli = nli_of(context)
        k = int(s.get("top_k") or 0)
        if 0 < k < n_windows:
            vectors = embedder_of(context).encode([c.text for c in claims] + windows)
            chosen = top_k_windows(vectors[:n_claims], vectors[n_claims:], k)
        else:                                     # every window for every claim
            chosen = np.broadcast_to(np.arange(n_windows), (n_claims, n_windows))
        pairs = [(windows[w], claims[i].text) for i in range(n_claims) for w in chosen[i]]
        scored = np.asarray(nli.predict(pairs), dtype=np.float64)
        if scored.shape != (len(pairs), 3) or not np.isfinite(scored).all():
            raise ValueError(f"NLI backend {getattr(nli, 'name', type(nli).__name__)!r} returned "
                             f"{scored.shape} values for {len(pairs)} pairs (expected ({len(pairs)}, 3) finite)")
        # Only the (claims, k) chosen pairs are held; a window outside a claim's top k is neutral
        # (entailment and contradiction 0), so no maximum below is changed by leaving it out.
        probs = scored.reshape(n_claims, chosen.shape[1], 3)
        ent, neu, con = probs[..., 0], probs[..., 1], probs[..., 2]
        chosen_owner = owner_arr[chosen]                                  # (claims, k) evidence index

        rows = np.arange(n_claims)
        best = ent.argmax(axis=1)
        best_ent, best_con = ent[rows, best], con[rows, best]
        best_ev = chosen_owner[rows, best]
        worst = con.argmax(axis=1)
        worst_con, worst_ev = con[rows, worst], chosen_owner[rows, worst]
        validity = np.array([e.validity for e in evidence])
        weighted = (ent * validity[chosen_owner]).max(axis=1)
        relevance = np.zeros(len(evidence))                               # max over claims of 1 - p(neutral)
        np.maximum.at(relevance, chosen_owner.ravel(), 1.0 - neu.ravel())
        windows_of = np.bincount(owner_arr, minlength=len(evidence))

        score = float(best_ent.mean())
        threshold = contradiction_threshold(s, nli)
        weak, unsupported = float(s["weak_entailment"]), float(s["unsupported"])
        issues: list[Issue] = []
        per_claim: dict[str, dict[str, Any]] = {}
        for i, claim in enumerate(claims):
            best_id, worst_id = evidence[best_ev[i]].id, evidence[worst_ev[i]].id
            per_claim[claim.id] = {
                "best_evidence": best_id, "entailment": float(best_ent[i]), "contradiction": float(best_con[i]),
                "max_contradiction": float(worst_con[i]), "contradicted_by": worst_id,
                "validity_weighted": float(weighted[i]),
            }
            if worst_con[i] >= threshold:
                issues.append(Issue("contradiction", f"Evidence {worst_id} contradicts claim {claim.id} "
                                    f"(p={worst_con[i]:.2f}).", (claim.id, worst_id), "high"))
            if best_ent[i] < unsupported:
                issues.append(Issue("unsupported_claim", f"No evidence supports claim {claim.id} "
                                    f"(best entailment {best_ent[i]:.2f}, by {best_id}).", (claim.id,), "high"))
            elif best_ent[i] < weak:
                issues.append(Issue("weak_entailment", f"Claim {claim.id} is only weakly entailed "
                                    f"(best {best_ent[i]:.2f}, by {best_id}).", (claim.id, best_id), "medium"))
        per_evidence: dict[str, dict[str, Any]] = {}
        for j, item in enumerate(evidence):
            per_evidence[item.id] = {"validity": item.validity, "relevance": float(relevance[j]),
                                     "windows": int(windows_of[j])}
            if item.validity < float(s["low_validity"]):
                issues.append(Issue("low_validity", f"Evidence {item.id} has low validity ({item.validity:.2f})"
                                    f"{': ' + item.source if item.source else ''}.", (item.id,), "medium"))
            if relevance[j] < float(s["low_relevance"]):
                issues.append(Issue("low_relevance", f"Evidence {item.id} bears on no claim "
                                    f"(best 1 - p(neutral) {relevance[j]:.2f}).", (item.id,), "low"))

        contradicted = sum(1 for i in issues if i.code == "contradiction")
        supported = int(np.count_nonzero(best_ent >= weak))
        explanation = (f"Mean best entailment over {n_claims} claims and {len(evidence)} evidence items is "
                       f"{score:.3f}; {supported} claim(s) supported, {contradicted} contradicted by evidence.")
        return CriticResult(
            critic=self.name, score=float(np.clip(score, 0.0, 1.0)),
            confidence=_entropy_confidence(probs[rows, best]), explanation=explanation,
            sub_scores={"validity_weighted": float(weighted.mean()), "supported_share": supported / n_claims,
                        "contradicted_share": float(np.count_nonzero(worst_con >= threshold)) / n_claims},
            evidence={"claims": per_claim, "evidence": per_evidence, "pairs": len(pairs),
                      "windows_per_claim": int(chosen.shape[1]), "nli_backend": nli_identity(nli)},
            issues=tuple(issues))
