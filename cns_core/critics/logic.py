"""Logic critic: a transparent heuristic stand-in for the spec's GNN, f_GNN(G; theta).

Score_L = heuristic x structure, where

* heuristic = 0.5 orphan + 0.3 coherence + 0.2 parsimony (the spec's proxy):
  orphan = 1 - orphans / (claims - 1), coherence = max(0, 1 - mean out-degree / 3),
  parsimony = 1 - graph density. With our edge direction an orphan is a claim with no
  outgoing edge (see :mod:`cns_core.critics.structure`).
* structure = max(0, 1 - sum of penalties) for flaws a learned model should also catch:
  support cycles (circular reasoning, each cycle named), attacks on the hypothesis' side
  left unanswered, groups of claims cut off from the hypothesis, and supports between
  claims that the NLI backend reads as contradictory (one batched ``predict`` call).

A learned model replaces this class by implementing the same :class:`Critic` protocol
under the name ``logic``; the graph features live in ``structure`` for it to reuse.
"""

from __future__ import annotations

import networkx as nx
import numpy as np

from cns_core.critics import structure
from cns_core.critics.base import CriticContext, CriticResult, Issue
from cns_core.critics.common import ConfiguredCritic, contradiction_threshold, nli_of
from cns_core.models.nli import nli_identity
from cns_core.sno import SNO

__all__ = ["LogicCritic"]


class LogicCritic(ConfiguredCritic):
    """Graph heuristics and structural flaws of the reasoning graph."""

    name = "logic"
    version = 2          # 2: reports whether cycle enumeration was capped
    requires = frozenset({"nli"})

    def _contradictory_supports(self, sno: SNO, context: CriticContext | None
                                ) -> tuple[list[tuple], str | None, str | None]:
        """Support relations whose two claims the NLI backend reads as contradictory, the error
        that stopped the check, and the NLI that made it (None when no support was checked).

        A failing backend does not fail the critic: the check is skipped and the error
        returned, so the structural verdict still stands (with lower confidence).
        """
        supports = [r for r in sno.relations if r.kind == "support"]
        if not supports:
            return [], None, None
        texts = sno.claims_by_id
        try:
            nli = nli_of(context)
            probs = np.asarray(nli.predict([(texts[r.source].text, texts[r.target].text) for r in supports]),
                               dtype=np.float64)
            if probs.shape != (len(supports), 3) or not np.isfinite(probs).all():
                raise ValueError(f"NLI backend returned {probs.shape} values for {len(supports)} pairs")
        except Exception as exc:  # degrade: the NLI check is one signal among several
            return [], f"{type(exc).__name__}: {exc}", None
        threshold = contradiction_threshold(self.settings, nli)
        found = [(r.source, r.target, float(p)) for r, p in zip(supports, probs[:, 2]) if p >= threshold]
        return found, None, nli_identity(nli)

    def evaluate(self, sno: SNO, context: CriticContext | None = None) -> CriticResult:
        s = self.settings
        g = sno.graph
        n = g.number_of_nodes()
        if n <= 1:
            return CriticResult(critic=self.name, score=1.0, confidence=float(s["trivial_confidence"]),
                                explanation="A single claim has no argument structure to fault.",
                                sub_scores={"orphan_score": 1.0, "coherence_score": 1.0, "parsimony_score": 1.0,
                                            "heuristic_score": 1.0, "structure_score": 1.0})

        weights = s["heuristic_weights"]
        max_out = float(s["max_out_degree"])
        orphans = structure.orphan_claims(sno)
        orphan_score = 1.0 - len(orphans) / (n - 1)
        mean_out = g.number_of_edges() / n
        coherence_score = max(0.0, 1.0 - mean_out / max_out)
        density = nx.density(g)
        parsimony_score = 1.0 - density
        heuristic = (weights["orphan"] * orphan_score + weights["coherence"] * coherence_score
                     + weights["parsimony"] * parsimony_score) / sum(weights.values())

        sides = structure.claim_sides(sno)
        cycles, cycles_capped = structure.support_cycles_capped(sno, int(s["max_cycles"]))
        unanswered = structure.unanswered_attacks(sno, sides)
        detached = structure.detached_components(sno)
        contradictory, nli_error, nli_used = self._contradictory_supports(sno, context)
        unfocused = structure.unfocused_claims(sno, max_out)

        penalties = s["penalties"]
        counts = {"circular_reasoning": len(cycles), "unanswered_attack": len(unanswered),
                  "disconnected_component": len(detached), "contradiction": len(contradictory)}
        structure_score = max(0.0, 1.0 - sum(float(penalties[k]) * v for k, v in counts.items()))
        score = heuristic * structure_score

        issues: list[Issue] = []
        for cycle in cycles:
            issues.append(Issue("circular_reasoning", f"Circular reasoning: {structure.format_cycle(cycle)}.",
                                cycle, "high"))
        for source, target, _ in contradictory:
            issues.append(Issue("contradiction", f"{source} is said to support {target}, but the two contradict "
                                f"each other.", (source, target), "high"))
        for attacker, target, rel in unanswered:
            issues.append(Issue("unanswered_attack", f"{attacker} attacks {target} and nothing answers it.",
                                (attacker, target), "medium"))
        for comp in detached:
            issues.append(Issue("disconnected_component", f"Claims {', '.join(comp)} are cut off from the "
                                f"hypothesis.", comp, "medium"))
        for claim in orphans:
            issues.append(Issue("orphan_claim", f"Claim {claim} supports or attacks nothing.", (claim,), "low"))
        for claim in unfocused:
            issues.append(Issue("unfocused_claim", f"Claim {claim} argues about {g.out_degree(claim)} claims.",
                                (claim,), "low"))

        if cycles_capped:
            issues.append(Issue("cycles_capped", f"More than {len(cycles)} support cycles: only the first "
                                f"{len(cycles)} were enumerated and penalised (logic.max_cycles).", (), "medium"))
        flaws = ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in counts.items() if v) or "no structural flaws"
        if cycles_capped:
            flaws += f"; cycle enumeration capped at {len(cycles)}"
        explanation = (f"Logic {score:.3f} = heuristics {heuristic:.3f} (orphans {len(orphans)}, mean out-degree "
                       f"{mean_out:.2f}, density {density:.2f}) x structure {structure_score:.2f} ({flaws}).")
        confidence = float(s["confidence"]) * (0.8 if nli_error else 1.0)
        evidence = {"orphans": orphans, "mean_out_degree": mean_out, "density": density,
                    "cycles": [list(c) for c in cycles], "cycles_capped": cycles_capped,
                    "unanswered_attacks": [{"attacker": a, "target": t, "relation": r} for a, t, r in unanswered],
                    "detached_components": [list(c) for c in detached],
                    "contradictory_supports": [{"source": a, "target": b, "contradiction": p}
                                               for a, b, p in contradictory],
                    "sides": sides}
        if nli_error:
            evidence["nli_error"] = nli_error
        if nli_used:
            evidence["nli_backend"] = nli_used
        return CriticResult(
            critic=self.name, score=float(np.clip(score, 0.0, 1.0)), confidence=confidence, explanation=explanation,
            sub_scores={"orphan_score": orphan_score, "coherence_score": coherence_score,
                        "parsimony_score": parsimony_score, "heuristic_score": heuristic,
                        "structure_score": structure_score},
            evidence=evidence, issues=tuple(issues))
