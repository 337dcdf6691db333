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

Score = mean over causal claims of 1 - their penalties (clipped at 0). An SNO without
causal claims has nothing to judge here: the critic abstains (not applicable), neither
praising nor faulting it, and its weight goes to the critics that judged.

Linear in the SNO's size for the expensive parts: every text is scanned for cues once, the
supports of all claims come from one pass over the condensed support graph (ancestor sets
as bitsets), and what bears on a claim is a bitset too, so a long debate map with thousands
of causal claims does not rescan the same texts thousands of times.
"""

from __future__ import annotations

from typing import Any

import networkx as nx
import numpy as np

from cns_core.critics.base import CriticContext, CriticResult, Issue
from cns_core.critics.common import ConfiguredCritic, embedder_of
from cns_core.critics.cues import CueLexicon, load_cues
from cns_core.sno import SNO

__all__ = ["CausalCritic", "causal_claims", "ancestor_bits"]

_CUE_KINDS = ("correlational", "experimental", "mechanism", "temporal", "hedges")
_LISTED_SUPPORT = 20      # support ids listed per claim (the count is always given)

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


def ancestor_bits(graph: nx.DiGraph, order: list[str]) -> dict[str, int]:
    """For every node, the nodes with a path to it, as a bitset over ``order`` (what
    ``nx.ancestors`` gives, for all nodes in one pass).

    The pass runs over the condensation in topological order, so support cycles are handled:
    a component's ancestors are its predecessors' ancestors and members, plus its own
    members when it is a cycle.
    """
    index = {node: i for i, node in enumerate(order)}
    condensed = nx.condensation(graph)
    mapping = condensed.graph["mapping"]
    members = {c: condensed.nodes[c]["members"] for c in condensed.nodes}
    member_bits = {c: _bits([index[n] for n in nodes]) for c, nodes in members.items()}
    reach: dict[int, int] = {}
    for comp in nx.topological_sort(condensed):
        bits = member_bits[comp] if len(members[comp]) > 1 else 0
        for pred in condensed.predecessors(comp):
            bits |= reach[pred] | member_bits[pred]
        reach[comp] = bits
    return {node: reach[mapping[node]] & ~(1 << index[node]) for node in graph.nodes}


def _support_ids(supporters: int, related: int, names: list[str]) -> list[str]:
    """Graph supporters first (sorted), then other related claims and evidence in SNO order."""
    graph = sorted(names[i] for i in _indices(supporters))
    return graph + [names[i] for i in _indices(related & ~supporters)]


def _bits(indices) -> int:
    """A bitset with the given positions set."""
    positions = np.asarray(list(indices) if not isinstance(indices, np.ndarray) else indices, dtype=np.int64)
    if not len(positions):
        return 0
    mask = np.zeros(int(positions.max()) + 1, dtype=bool)
    mask[positions] = True
    return int.from_bytes(np.packbits(mask, bitorder="little").tobytes(), "little")


def _indices(bits: int) -> np.ndarray:
    """The positions set in a bitset, ascending."""
    if not bits:
        return np.zeros(0, dtype=np.int64)
    raw = np.frombuffer(bits.to_bytes((bits.bit_length() + 7) // 8, "little"), dtype=np.uint8)
    return np.flatnonzero(np.unpackbits(raw, bitorder="little"))


class CausalCritic(ConfiguredCritic):
    """Judges each causal claim by the kind of support it has."""

    name = "causal"
    version = 2          # 2: no causal claim is an abstention, not a perfect score
    requires = frozenset({"embedder"})

    def _related(self, sno: SNO, targets: list[str], position: dict[str, int],
                 context: CriticContext | None) -> tuple[dict[str, int], str | None]:
        """Evidence and claims close to each target claim (embedding cosine >= relevance), as bitsets over
        claims then evidence. One ``encode`` call for all texts; similarities in row chunks. Without an
        embedder only the graph counts."""
        claims, evidence = sno.claims, sno.evidence
        try:
            vectors = np.asarray(embedder_of(context).encode([c.text for c in claims] + [e.text for e in evidence]),
                                 dtype=np.float32)
        except Exception as exc:  # degrade to graph support only
            return {t: 0 for t in targets}, f"{type(exc).__name__}: {exc}"
        threshold = float(self.settings["relevance"])
        related: dict[str, int] = {}
        for start in range(0, len(targets), 512):
            chunk = targets[start:start + 512]
            sims = vectors[[position[t] for t in chunk]] @ vectors.T
            for row, target in zip(sims, chunk):
                related[target] = _bits(np.flatnonzero(row >= threshold)) & ~(1 << position[target])
        return related, None

    def evaluate(self, sno: SNO, context: CriticContext | None = None) -> CriticResult:
        s = self.settings
        cues = load_cues(str(s["cues_file"]))
        targets = causal_claims(sno, cues)
        if not targets:
            return CriticResult.not_applicable(self.name, "no causal claim to judge",
                                               sub_scores={"causal_share": 0.0}, evidence={"claims": {}})

        g = sno.graph
        support = nx.DiGraph()
        support.add_nodes_from(c.id for c in sno.claims)
        support.add_edges_from((u, v) for u, v, kind in g.edges(data="kind") if kind == "support"
                               and u in support and v in support)
        names = [c.id for c in sno.claims] + [e.id for e in sno.evidence]
        all_texts = [c.text for c in sno.claims] + [e.text for e in sno.evidence]
        cue_bits = {kind: _bits(i for i, t in enumerate(all_texts) if cues.has(kind, t)) for kind in _CUE_KINDS}
        supporters_of = ancestor_bits(support, names[:len(sno.claims)])
        position = {cid: i for i, cid in enumerate(names[:len(sno.claims)])}
        related, embed_error = self._related(sno, targets, position, context)
        penalties = s["penalties"]

        issues: list[Issue] = []
        per_claim: dict[str, dict[str, Any]] = {}
        flags_total: dict[str, int] = {k: 0 for k in _MESSAGES}
        for cid in targets:
            own = 1 << position[cid]
            backing = supporters_of[cid] | related[cid]
            has = {kind: bool(backing & bits) for kind, bits in cue_bits.items()}
            has_own = {kind: bool(own & bits) for kind, bits in cue_bits.items()}
            experimental = has["experimental"] or has_own["experimental"]
            flags = {
                "unsupported_causal_claim": not backing,
                "correlational_support": has["correlational"] and not experimental,
                "missing_mechanism": not (has["mechanism"] or has_own["mechanism"]),
                "missing_temporal_order": not experimental and not (has["temporal"] or has_own["temporal"]),
                "hedged_support": has["hedges"] and not has_own["hedges"],
            }
            claim_score = max(0.0, 1.0 - sum(float(penalties[k]) for k, on in flags.items() if on))
            fired = [k for k, on in flags.items() if on]
            listed = _support_ids(supporters_of[cid], related[cid], names)
            per_claim[cid] = {"score": claim_score, "flaws": fired, "causal_cues": cues.find("causal", all_texts[position[cid]]),
                              "support": listed[:_LISTED_SUPPORT], "support_count": len(listed),
                              "experimental": experimental}
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
