"""Causal critic: do the causal claims rest on more than correlation?

A claim is causal when it uses causal wording ("causes", "leads to", "because",
"increases the risk of", ... from ``cns_core/data/causal_cues.yaml``). Each causal claim
is judged by what bears on it: the claims that support it (directly or through a chain
of supports) and the evidence and other claims whose embedding is close to it (cosine
>= ``relevance``). It falls short, by a configured penalty each, when

* nothing bears on it (``unsupported_causal_claim``);
* that support reports co-occurrence (correlated, associated, survey, ...) and no
  experiment (randomised, controlled, placebo, ...) (``correlational_support``);
* no mechanism is given, in the claim or its support (``missing_mechanism``);
* no time order is given and no experiment fixes it (``missing_temporal_order``);
* the support is hedged while the claim is not (``hedged_support``).

Score = mean over causal claims of 1 - their penalties (clipped at 0); an SNO without
causal claims scores 1.0 at low confidence, as there is nothing to fault.
"""

from __future__ import annotations

from typing import Any

import networkx as nx
import numpy as np

from cns_core.critics.base import CriticContext, CriticResult, Issue
from cns_core.critics.common import ConfiguredCritic, embedder_of
from cns_core.critics.cues import CueLexicon, load_cues
from cns_core.sno import SNO

__all__ = ["CausalCritic", "causal_claims"]

_MESSAGES = {
    "unsupported_causal_claim": "nothing in the SNO bears on it",
    "correlational_support": "its support reports correlation, not an experiment",
    "missing_mechanism": "no mechanism is given",
    "missing_temporal_order": "nothing shows the cause comes first",
    "hedged_support": "its support is hedged while the claim is not",
}


def causal_claims(sno: SNO, cues: CueLexicon) -> list[str]:
    """Ids of the claims worded as cause and effect."""
    return [c.id for c in sno.claims if cues.has("causal", c.text)]


class CausalCritic(ConfiguredCritic):
    """Judges each causal claim by the kind of support it has."""

    name = "causal"
    requires = frozenset({"embedder"})

    def _related(self, sno: SNO, targets: list[str], context: CriticContext | None) -> tuple[dict, str | None]:
        """Evidence and claim texts close to each target claim (embedding cosine >= relevance).

        One ``encode`` call for all texts. Without an embedder only the graph counts.
        """
        claims, evidence = sno.claims, sno.evidence
        try:
            vectors = np.asarray(embedder_of(context).encode([c.text for c in claims] + [e.text for e in evidence]),
                                 dtype=np.float32)
        except Exception as exc:  # degrade to graph support only
            return {t: [] for t in targets}, f"{type(exc).__name__}: {exc}"
        index = {c.id: i for i, c in enumerate(claims)}
        sims = vectors[[index[t] for t in targets]] @ vectors.T
        names = [c.id for c in claims] + [e.id for e in evidence]
        texts = [c.text for c in claims] + [e.text for e in evidence]
        threshold = float(self.settings["relevance"])
        related: dict[str, list[tuple[str, str]]] = {}
        for row, target in zip(sims, targets):
            related[target] = [(names[k], texts[k]) for k in np.flatnonzero(row >= threshold)
                               if names[k] != target]
        return related, None

    def evaluate(self, sno: SNO, context: CriticContext | None = None) -> CriticResult:
        s = self.settings
        cues = load_cues(str(s["cues_file"]))
        targets = causal_claims(sno, cues)
        if not targets:
            return CriticResult(critic=self.name, score=1.0, confidence=float(s["no_causal_confidence"]),
                                explanation="No causal claims found: nothing to fault.",
                                sub_scores={"causal_share": 0.0}, evidence={"claims": {}})

        g = sno.graph
        support = nx.DiGraph()
        support.add_nodes_from(g.nodes)
        support.add_edges_from((u, v) for u, v, kind in g.edges(data="kind") if kind == "support")
        related, embed_error = self._related(sno, targets, context)
        penalties = s["penalties"]
        texts = sno.claims_by_id

        issues: list[Issue] = []
        per_claim: dict[str, dict[str, Any]] = {}
        flags_total: dict[str, int] = {k: 0 for k in _MESSAGES}
        for cid in targets:
            own = texts[cid].text
            supporters = sorted(nx.ancestors(support, cid))
            backing = [(k, texts[k].text) for k in supporters] + [r for r in related[cid] if r[0] not in supporters]
            backing_texts = [t for _, t in backing]
            experimental = cues.has("experimental", backing_texts + [own])
            flags = {
                "unsupported_causal_claim": not backing,
                "correlational_support": cues.has("correlational", backing_texts) and not experimental,
                "missing_mechanism": not cues.has("mechanism", backing_texts + [own]),
                "missing_temporal_order": not experimental and not cues.has("temporal", backing_texts + [own]),
                "hedged_support": cues.has("hedges", backing_texts) and not cues.has("hedges", own),
            }
            claim_score = max(0.0, 1.0 - sum(float(penalties[k]) for k, on in flags.items() if on))
            fired = [k for k, on in flags.items() if on]
            per_claim[cid] = {"score": claim_score, "flaws": fired, "causal_cues": cues.find("causal", own),
                              "support": [k for k, _ in backing], "experimental": experimental}
            for code in fired:
                flags_total[code] += 1
                severity = "high" if code in ("unsupported_causal_claim", "correlational_support") else "medium"
                issues.append(Issue(code, f"Causal claim {cid}: {_MESSAGES[code]}.", (cid,), severity))

        scores = np.array([per_claim[c]["score"] for c in targets])
        score = float(scores.mean())
        n = len(targets)
        short = [c for c in targets if per_claim[c]["flaws"]]
        explanation = (f"{n} causal claim(s), mean {score:.3f}; "
                       + (f"falling short: {', '.join(short)}." if short else "all backed by design, mechanism "
                          "and time order."))
        evidence: dict[str, Any] = {"claims": per_claim}
        if embed_error:
            evidence["embedder_error"] = embed_error
        return CriticResult(
            critic=self.name, score=score,
            confidence=float(s["confidence"]) * (0.8 if embed_error else 1.0), explanation=explanation,
            sub_scores={"causal_share": n / len(sno.claims),
                        "mechanism_coverage": 1.0 - flags_total["missing_mechanism"] / n,
                        "temporal_coverage": 1.0 - flags_total["missing_temporal_order"] / n,
                        "non_correlational_share": 1.0 - flags_total["correlational_support"] / n},
            evidence=evidence, issues=tuple(issues))
