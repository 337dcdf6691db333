"""Grounding critic: one calibrated verdict per claim against the SNO's evidence.

CNS 2.0 (section 2.2) scores a claim by its best entailment over the evidence. Against long
real sources that ranks claims poorly (SciFact / WiCE development figures in the README), so
each claim now gets a fused verdict (:mod:`cns_core.critics.grounding_judge`): its most similar
passages (runs of 1-3 adjacent sentences, :mod:`cns_core.critics.grounding_passages`) are judged
by the NLI model in one batched call, and a fitted logistic fusion of entailment, contradiction
and relevance (:mod:`cns_core.critics.grounding_verdict`) gives p(supported), p(contradicted)
and p(not enough information). Score_G is the mean p(supported) over claims; the issues, the
graph's per-claim evidence and the coherence hook's claim-evidence check read the same verdict.

Only the claims x top_k chosen pairs are scored and held, never a claims x passages matrix.
``evidence_windows`` and ``top_k_windows`` are the previous windowing, kept as the baseline
``benchmarks/grounding_real.py`` compares against.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from cns_core.critics.base import CriticContext, CriticResult, Issue
from cns_core.critics.common import ConfiguredCritic, embedder_of, nli_of
from cns_core.critics.grounding_judge import ClaimVerdict, GroundingProblem, RetrievalSettings, judge_problems
from cns_core.critics.grounding_passages import source_units
from cns_core.critics.grounding_verdict import (Fusion, VerdictRule, fusion_from_mapping, load_fusion,
                                               shown_probability)
from cns_core.models.nli import nli_identity
from cns_core.sno import SNO
from cns_core.text.segment import split_sentences

__all__ = ["GroundingCritic", "evidence_windows", "top_k_windows", "text_problem",
           "grounding_verdicts", "fusion_of", "verdict_rule_of"]


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


def fusion_of(settings: Mapping[str, Any]) -> Fusion:
    """The critic's fusion: ``settings["fusion"]`` is a config file name or the mapping itself."""
    value = settings.get("fusion", "grounding_fusion")
    return fusion_from_mapping(value, "grounding.fusion") if isinstance(value, Mapping) else load_fusion(str(value))


def verdict_rule_of(settings: Mapping[str, Any]) -> VerdictRule:
    """The critic's verdict thresholds: those fitted with its fusion, overridden by ``settings["verdict"]``."""
    return VerdictRule.from_settings(settings, fusion_of(settings).verdict)


def text_problem(claims: Sequence[str], evidence: Sequence[str], max_chars: int) -> GroundingProblem:
    """Claims against evidence texts, a text longer than ``max_chars`` split into sentences."""
    return GroundingProblem(tuple(claims), tuple(tuple(source_units(t, max_chars, split_sentences)) for t in evidence))


def grounding_verdicts(sno: SNO, nli: Any, embedder: Any, settings: Mapping[str, Any]) -> list[ClaimVerdict]:
    """Each claim's verdict against the SNO's evidence, in claim order (the critic's and the
    coherence hook's one computation)."""
    if not sno.claims or not sno.evidence:
        return []
    problem = text_problem([c.text for c in sno.claims], [e.text for e in sno.evidence],
                           int(settings["max_window_chars"]))
    return judge_problems([problem], nli, embedder, fusion_of(settings), RetrievalSettings.from_settings(settings),
                          verdict_rule_of(settings))[0]


def _passage_rows(verdict: ClaimVerdict, evidence: list[Any]) -> list[dict[str, Any]]:
    return [{"evidence": evidence[p.passage.source].id, "sentences": [p.passage.start, p.passage.end],
             "text": p.passage.text, "similarity": p.similarity, "entailment": p.entailment,
             "contradiction": p.contradiction} for p in verdict.passages]


class GroundingCritic(ConfiguredCritic):
    """Mean p(supported) of each claim's fused verdict, with the passages behind it."""

    name = "grounding"
    version = 5           # 4: each claim names the passage its verdict reads ("reads"); 5: and "decided_by"
    requires = frozenset({"nli", "embedder"})

    def __init__(self, config: Mapping[str, Any] | None = None):
        super().__init__(config)
        # The fusion's weights join the settings, so a refit changes config_key() (no stale cache).
        self.settings["fusion"] = fusion_of(self.settings).to_mapping()
        verdict_rule_of(self.settings)       # a bad threshold is refused here, naming the field

    def evaluate(self, sno: SNO, context: CriticContext | None = None) -> CriticResult:
        claims, evidence = list(sno.claims), list(sno.evidence)
        if not claims or not evidence:
            # Nothing to read: the critic abstains (its weight goes to the critics that judged) rather than
            # score 0 what it never saw. The suggestion to add evidence stays.
            missing = "claims" if not claims else "evidence"
            return CriticResult.not_applicable(
                self.name, f"no {missing} to read",
                evidence={"claims": {}, "evidence": {}, "pairs": 0},
                issues=(Issue("no_evidence", f"The SNO has no {missing}; add evidence with sources.",
                              tuple(c.id for c in claims), "high"),))

        s = self.settings
        nli = nli_of(context)
        fusion = fusion_of(s)
        verdicts = grounding_verdicts(sno, nli, embedder_of(context), s)
        validity = np.array([e.validity for e in evidence])
        relevance = np.zeros(len(evidence))                               # max over claims of 1 - p(neutral)
        unsupported = float(s["unsupported"])
        issues: list[Issue] = []
        per_claim: dict[str, dict[str, Any]] = {}
        weighted = np.zeros(len(claims))
        for i, (claim, v) in enumerate(zip(claims, verdicts)):
            best, worst, read = v.strongest("entailment"), v.strongest("contradiction"), v.read()
            for p in v.passages:
                relevance[p.passage.source] = max(relevance[p.passage.source], 1.0 - p.neutral)
                weighted[i] = max(weighted[i], p.entailment * validity[p.passage.source])
            best_id = evidence[best.passage.source].id if best else None
            worst_id = evidence[worst.passage.source].id if worst else None
            per_claim[claim.id] = {
                "verdict": v.verdict, "p_supported": v.probabilities[0], "p_contradicted": v.probabilities[1],
                "p_not_enough_info": v.probabilities[2],
                "best_evidence": best_id, "entailment": best.entailment if best else 0.0,
                "contradiction": best.contradiction if best else 0.0,
                "max_contradiction": worst.contradiction if worst else 0.0, "contradicted_by": worst_id,
                "validity_weighted": float(weighted[i]), "passages": _passage_rows(v, evidence),
                "reads": None if read is None else v.passages.index(read),
                "decided_by": [list(d) for d in fusion.drivers(v.features, v.verdict)],
            }
            if v.verdict == "contradicted":
                issues.append(Issue("contradiction", f"Evidence {worst_id} contradicts claim {claim.id} "
                                    f"(p(contradicted)={shown_probability(v.p_contradicted):.2f}).", (claim.id, worst_id), "high"))
            elif v.verdict == "not_enough_info" and v.p_supported < unsupported:
                issues.append(Issue("unsupported_claim", f"No evidence supports claim {claim.id} "
                                    f"(p(supported) {shown_probability(v.p_supported):.2f}; closest {best_id}).", (claim.id,), "high"))
            elif v.verdict == "not_enough_info":
                issues.append(Issue("weak_entailment", f"Claim {claim.id} is only weakly supported "
                                    f"(p(supported) {shown_probability(v.p_supported):.2f}, by {best_id}).", (claim.id, best_id),
                                    "medium"))
        per_evidence: dict[str, dict[str, Any]] = {}
        passages_of = np.bincount([p.passage.source for v in verdicts for p in v.passages], minlength=len(evidence))
        for j, item in enumerate(evidence):
            per_evidence[item.id] = {"validity": item.validity, "relevance": float(relevance[j]),
                                     "passages_judged": int(passages_of[j])}
            if item.validity < float(s["low_validity"]):
                issues.append(Issue("low_validity", f"Evidence {item.id} has low validity ({item.validity:.2f})"
                                    f"{': ' + item.source if item.source else ''}.", (item.id,), "medium"))
            if relevance[j] < float(s["low_relevance"]):
                issues.append(Issue("low_relevance", f"Evidence {item.id} bears on no claim "
                                    f"(best 1 - p(neutral) {relevance[j]:.2f}).", (item.id,), "low"))

        probs = np.array([v.probabilities for v in verdicts])
        score = float(probs[:, 0].mean())
        n_claims = len(claims)
        counts = {name: sum(1 for v in verdicts if v.verdict == name)
                  for name in ("supported", "contradicted", "not_enough_info")}
        pairs = int(sum(len(v.passages) for v in verdicts))
        explanation = (f"Mean p(supported) over {n_claims} claims and {len(evidence)} evidence items is "
                       f"{score:.3f}; {counts['supported']} claim(s) supported, {counts['contradicted']} "
                       f"contradicted, {counts['not_enough_info']} without enough information.")
        return CriticResult(
            critic=self.name, score=float(np.clip(score, 0.0, 1.0)),
            confidence=_entropy_confidence(probs), explanation=explanation,
            sub_scores={"validity_weighted": float(weighted.mean()), "supported_share": counts["supported"] / n_claims,
                        "contradicted_share": counts["contradicted"] / n_claims},
            evidence={"claims": per_claim, "evidence": per_evidence, "pairs": pairs,
                      "passages_per_claim": pairs / n_claims, "nli_backend": nli_identity(nli),
                      "fusion": {"features": list(fusion.features), "fitted": fusion.fitted.get("date")}},
            issues=tuple(issues))
