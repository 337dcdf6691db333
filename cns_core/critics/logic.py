"""Logic critic: the spec's Score_L = f_GNN(G; theta), a learned graph model, with the heuristic beside it.

:class:`LogicCritic` (the pipeline's ``logic``) scores the reasoning graph with the small
message-passing network of :mod:`cns_core.models.logic_gnn` (trained by ``cns train-logic``, see
``models/logic-gnn/MODEL_CARD.md``) and says which claims and relations lower the score most: each
is left out in turn and the graph scored again (leave-one-out attribution), and the costliest
become :class:`Issue` s ("c4 supports c2 only superficially"). Support cycles, which the heuristic
finds exactly, multiply the learned score down as they do the heuristic's. The heuristic runs too: its
sub-scores and structural findings stand beside the learned score, and it *is* the score when the
model cannot be loaded (the explanation then says why).

The heuristic, :class:`HeuristicLogicCritic`: Score_L = heuristic x structure, where

* heuristic = 0.5 orphan + 0.3 coherence + 0.2 parsimony (the spec's proxy):
  orphan = 1 - orphans / (claims - 1), coherence = max(0, 1 - mean out-degree / 3),
  parsimony = 1 - graph density. With our edge direction an orphan is a claim with no
  outgoing edge (see :mod:`cns_core.critics.structure`).
* structure = max(0, 1 - sum of penalties) for flaws a learned model should also catch:
  support cycles (circular reasoning, each cycle named), attacks on the hypothesis' side
  left unanswered, groups of claims cut off from the hypothesis, and claims about the same thing
  (one nearly restates the other, no relation joins them) that the verifier reads as contradicting
  each other both ways at its own threshold (one batched ``predict`` call). A premise is never
  "contradicted" by the conclusion it supports: a reason and what it is a reason for say different
  things by design, and the verifier's one-way "contradiction" between them is no conflict.

The graph features live in ``structure``.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from cns_core.critics import structure
from cns_core.critics.base import CriticContext, CriticResult, Issue
from cns_core.critics.common import ConfiguredCritic, contradiction_threshold, embedder_of, nli_of
from cns_core.models.nli import nli_identity
from cns_core.sno import SNO

__all__ = ["HeuristicLogicCritic", "LogicCritic"]

# How a single claim with evidence is treated: abstain (no reasoning to judge) or the model's score.
LONE_CLAIM_CHOICES = ("abstain", "learned")


class HeuristicLogicCritic(ConfiguredCritic):
    """Graph heuristics and structural flaws of the reasoning graph (the spec's proxy; the fallback and
    the sub-scores of :class:`LogicCritic`)."""

    name = "logic"
    version = 4          # 4: contradictions between claims about the same thing, not premise and conclusion;
                         # 3: a single claim is an abstention; 2: reports whether cycle enumeration was capped
    requires = frozenset({"nli", "embedder"})

    def _contradictory_claims(self, sno: SNO, context: CriticContext | None
                              ) -> tuple[list[tuple[str, str, float, float]], str | None, str | None]:
        """Pairs of claims about the same thing that the verifier reads as contradicting each other, the error
        that stopped the check, and the NLI that made it (None when no pair was checked).

        Two claims are about the same thing when their embeddings are at least ``restatement_similarity``
        apart (one nearly restates the other) and no relation joins them: a premise and the conclusion it
        supports say different things by design (the conclusion goes beyond its reason), and an attack
        already declares the disagreement, so neither is checked. A contradiction is symmetric, so the
        verifier must find it both ways, each at or above its own contradiction threshold
        (``calibration.json`` beside the shipped model): ``(a, b, p(a contradicts b), p(b contradicts a))``.
        Both NLI directions of every candidate go in one batched call. A failing backend does not fail the
        critic: the check is skipped and the error returned.
        """
        claims = list(sno.claims)
        if len(claims) < 2:
            return [], None, None
        joined = {frozenset((r.source, r.target)) for r in sno.relations}
        try:
            vectors = np.asarray(embedder_of(context).encode([c.text for c in claims]), dtype=np.float32)
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            vectors = vectors / np.where(norms > 0, norms, 1.0)
            same = vectors @ vectors.T >= float(self.settings["restatement_similarity"])
            candidates = [(a, b) for i, a in enumerate(claims) for j, b in enumerate(claims)
                          if i < j and same[i, j] and frozenset((a.id, b.id)) not in joined]
            candidates = candidates[:int(self.settings["max_contradiction_pairs"])]
            if not candidates:
                return [], None, None
            nli = nli_of(context)
            pairs = [(a.text, b.text) for a, b in candidates] + [(b.text, a.text) for a, b in candidates]
            probs = np.asarray(nli.predict(pairs), dtype=np.float64)
            if probs.shape != (len(pairs), 3) or not np.isfinite(probs).all():
                raise ValueError(f"NLI backend returned {probs.shape} values for {len(pairs)} pairs")
        except Exception as exc:  # degrade: the check is one signal among several
            return [], f"{type(exc).__name__}: {exc}", None
        threshold = contradiction_threshold(self.settings, nli)
        n = len(candidates)
        found = [(a.id, b.id, float(probs[k, 2]), float(probs[n + k, 2])) for k, (a, b) in enumerate(candidates)
                 if probs[k, 2] >= threshold and probs[n + k, 2] >= threshold]
        return found, None, nli_identity(nli)

    def evaluate(self, sno: SNO, context: CriticContext | None = None) -> CriticResult:
        s = self.settings
        g = sno.graph
        n = g.number_of_nodes()
        if n <= 1:
            return CriticResult.not_applicable(self.name, "a single claim has no argument structure to judge")

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
        contradictory, nli_error, nli_used = self._contradictory_claims(sno, context)
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
        texts = {c.id: " ".join(c.text.split()) for c in sno.claims}
        for a, b, p_ab, p_ba in contradictory:
            issues.append(Issue("contradictory_claims", f"{a} \"{texts[a]}\" and {b} \"{texts[b]}\" contradict each "
                                f"other (p(contradiction) {p_ab:.2f} and {p_ba:.2f}, each way).", (a, b), "high"))
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
        explanation = (f"Logic {score:.2f} = heuristics {heuristic:.2f} (orphans {len(orphans)}, mean out-degree "
                       f"{mean_out:.2f}, density {density:.2f}) x structure {structure_score:.2f} ({flaws}).")
        confidence = float(s["confidence"]) * (0.8 if nli_error else 1.0)
        evidence = {"orphans": orphans, "mean_out_degree": mean_out, "density": density,
                    "cycles": [list(c) for c in cycles], "cycles_capped": cycles_capped,
                    "unanswered_attacks": [{"attacker": a, "target": t, "relation": r} for a, t, r in unanswered],
                    "detached_components": [list(c) for c in detached],
                    "contradictory_claims": [{"a": a, "b": b, "contradiction": [p_ab, p_ba]}
                                             for a, b, p_ab, p_ba in contradictory],
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


# Loaded models by folder, shared by every critic of the process (None: loading failed, with why).
_MODELS: dict[str, tuple[Any, str | None]] = {}
_MODELS_LOCK = threading.Lock()


def load_model_cached(folder: str | None) -> tuple[Any, str | None]:
    """The loaded model of ``folder`` (relative to the project root) and None, or None and why not."""
    if not folder:
        return None, "no model configured (logic.model is null)"
    from cns_core.config import project_path

    path = project_path(folder)
    key = str(path)
    with _MODELS_LOCK:
        if key not in _MODELS:
            try:
                from cns_core.models.logic_gnn import load_logic_model

                _MODELS[key] = (load_logic_model(path), None)
            except Exception as exc:  # any failure to load means the heuristic, said plainly
                _MODELS[key] = (None, str(exc))
        return _MODELS[key]


def forget_models() -> None:
    """Drop loaded models (a retrained model is then read again)."""
    with _MODELS_LOCK:
        _MODELS.clear()


class LogicCritic(HeuristicLogicCritic):
    """The learned graph model's score, its leave-one-out attribution, and the heuristic beside it."""

    name = "logic"
    version = 4          # 4: abstains on one claim with evidence, claim-claim contradictions; 3: the learned model
    requires = frozenset({"nli", "embedder"})

    def config_key(self) -> str:
        """The settings' hash plus the weights' digest, so a retrained model invalidates cached scores."""
        if self._config_key is None:
            model, _ = load_model_cached(self.settings.get("model"))
            digest = model.digest[:12] if model is not None else "heuristic"
            self._config_key = f"{super().config_key()}/{digest}"
        return self._config_key

    def _fallback(self, heuristic: CriticResult, why: str) -> CriticResult:
        if not heuristic.applicable:      # nothing to judge for the heuristic either: the abstention stands
            return heuristic
        note = f" Heuristic score: the learned model is not used ({why})."
        return replace(heuristic, explanation=heuristic.explanation + note,
                       evidence={**heuristic.evidence, "model_error": why})

    def evaluate(self, sno: SNO, context: CriticContext | None = None) -> CriticResult:
        heuristic = super().evaluate(sno, context)
        lone = self.settings.get("lone_claim_with_evidence", "abstain")
        if lone not in LONE_CLAIM_CHOICES:
            raise ValueError(f"critics.yaml: logic.lone_claim_with_evidence: {lone!r} is not one of "
                             f"{', '.join(LONE_CLAIM_CHOICES)}")
        if len(sno.claims) == 1 and lone == "abstain":
            # One claim (a short answer, with or without its reference) has no reasoning to judge: Logic
            # abstains, neither rewarding a short confident answer nor calling it a broken argument; the
            # grounding critic and the answer's verdict judge it.
            return CriticResult.not_applicable(self.name, "a single claim has no reasoning to judge")
        model, why = load_model_cached(self.settings.get("model"))
        if model is None:
            return self._fallback(heuristic, str(why))
        try:
            embedder = embedder_of(context)
            if int(getattr(embedder, "dim", -1)) != model.cfg.emb_dim or \
                    getattr(embedder, "name", "") != model.cfg.embedder:
                return self._fallback(heuristic, f"it reads {model.cfg.embedder} embeddings "
                                      f"({model.cfg.emb_dim} dims); the embedder here is "
                                      f"{getattr(embedder, 'name', '?')} ({getattr(embedder, 'dim', '?')} dims)")
            vectors = np.asarray(embedder.encode([c.text for c in sno.claims]), dtype=np.float32)
            return self._learned(sno, vectors, model, heuristic)
        except Exception as exc:  # an embedder or model failure degrades to the heuristic, named
            return self._fallback(heuristic, f"{type(exc).__name__}: {exc}")

    def _learned(self, sno: SNO, vectors: np.ndarray, model: Any, heuristic: CriticResult) -> CriticResult:
        from cns_core.models.logic_gnn import graph_input

        s = self.settings
        base = graph_input(sno, vectors)
        (learned, p_sound, quality), = model.predict([base])
        # Support cycles are found exactly by the heuristic: each multiplies the score down as it does there.
        cycles = len(heuristic.evidence.get("cycles", ()))
        cycle_factor = max(0.0, 1.0 - float(s["penalties"]["circular_reasoning"]) * cycles)
        score = float(learned) * cycle_factor
        attribution, skipped = [], None
        if len(sno.claims) <= int(s["attribution_max_claims"]):
            attribution = self._leave_one_out(sno, vectors, model, float(learned), cycle_factor)
        else:
            skipped = (f"attribution skipped: {len(sno.claims)} claims (more than "
                       f"logic.attribution_max_claims = {s['attribution_max_claims']})")
        issues = self._issues(sno, base, attribution, float(score))
        costly = ", ".join(f"{a['label']} (-{a['delta']:.2f})" for a in attribution[:3]
                           if round(a["delta"], 2) > 0)      # "-0.00" costs nothing a reader can see
        explanation = (f"Logic {score:.2f} from the learned graph model (sound argument {p_sound:.2f}, "
                       f"quality {quality:.2f}"
                       + (f"; x {cycle_factor:.2f} for {cycles} support cycle(s)" if cycles else "") + "); "
                       + (f"costing most: {costly}." if costly else (skipped + "." if skipped
                                                                       else "no claim or relation costs much."))
                       + (f" Not counted, for comparison only: the heuristic's {heuristic.explanation}"
                          if heuristic.ok else ""))
        evidence = {**heuristic.evidence, "learned": {"score": float(learned), "sound": float(p_sound),
                                                      "cycle_factor": cycle_factor,
                                                      "quality": float(quality),
                                                      "model": str(self.settings.get("model")),
                                                      "weights_sha256": model.digest},
                    "attribution": attribution[:int(s["attribution_keep"])]}
        if skipped:
            evidence["attribution_skipped"] = skipped
        sub_scores = {**heuristic.sub_scores, **({"heuristic_logic": heuristic.score} if heuristic.ok else {}),
                      "learned_sound": float(p_sound), "learned_quality": float(quality)}
        return CriticResult(critic=self.name, score=float(np.clip(score, 0.0, 1.0)),
                            confidence=float(s["learned_confidence"]), explanation=explanation,
                            sub_scores=sub_scores, evidence=evidence, issues=tuple(issues) + heuristic.issues)

    @staticmethod
    def _leave_one_out(sno: SNO, vectors: np.ndarray, model: Any, learned: float,
                       factor: float = 1.0) -> list[dict[str, Any]]:
        """Each claim (not the hypothesis) and each relation left out in turn: how much the score rises
        without it (``delta`` > 0: it lowers the score), costliest first. One batched forward pass.
        ``factor`` (the support-cycle penalty) scales the model's scores to the critic's."""
        from cns_core.models.logic_gnn import graph_input

        parts: list[dict[str, Any]] = []
        inputs = []
        for c in sno.claims:
            if c.id != sno.hypothesis:
                parts.append({"kind": "claim", "id": c.id, "nodes": [c.id], "label": c.id})
                inputs.append(graph_input(sno, vectors, drop_claim=c.id))
        for r in sno.relations:
            if r.id:
                verb = "supports" if r.kind == "support" else (
                    "undercuts" if r.attack_type == "undercut" else "attacks")
                arrow = f"{r.source} {verb} {r.target}"
                parts.append({"kind": "relation", "id": r.id, "nodes": [r.source] + (
                    [r.target] if r.target in sno.claims_by_id else []), "label": arrow,
                    "relation_kind": r.kind})
                inputs.append(graph_input(sno, vectors, drop_relation=r.id))
        if not inputs:
            return []
        without = model.predict(inputs)[:, 0]
        for part, value in zip(parts, without):
            part["without"] = float(value) * factor
            part["delta"] = (float(value) - learned) * factor
        return sorted(parts, key=lambda p: -p["delta"])

    def _issues(self, sno: SNO, base: Any, attribution: list[dict[str, Any]], score: float) -> list[Issue]:
        """The costliest claims and relations, in words that say what is wrong with them."""
        s = self.settings
        if len(sno.claims) == 1:
            return [Issue("bare_assertion", f"{sno.hypothesis} stands alone: no reason supports it "
                          f"(Logic {score:.2f}).", (sno.hypothesis,), "medium")]
        sims = {}
        for (a, b), attr in zip(base.edges.tolist(), base.edge_attr):
            sims[(base.ids[a], base.ids[b])] = (float(attr[3]), float(attr[4]))
        restated, superficial = float(s["restatement_similarity"]), float(s["superficial_similarity"])

        def describe(source: str, target: str | None, kind: str | None, cost: str, generic: str) -> Issue:
            cos, overlap = sims.get((source, target), (0.0, 0.0))
            nodes = (source, target) if target else (source,)
            if target is None:
                return Issue("weak_claim", f"{source} argues about no other claim; {cost}.", nodes, "low")
            if kind == "support" and (cos >= restated or overlap >= 0.6):
                return Issue("restated_premise", f"{source} restates {target} rather than giving a reason for it "
                             f"(similarity {cos:.2f}); {cost}.", nodes, "high")
            if kind == "support" and cos < superficial:
                return Issue("superficial_support", f"{source} supports {target} only superficially "
                             f"(similarity {cos:.2f}); {cost}.", nodes, "medium")
            verb = "supports" if kind == "support" else "attacks"
            return Issue(generic, f"{source} {verb} {target}, and this weakens the argument; {cost}.", nodes, "medium")

        issues: list[Issue] = []
        named: set[tuple[str, ...]] = set()
        for part in attribution:
            if len(issues) >= int(s["top_issues"]) or part["delta"] < float(s["min_issue_delta"]):
                break
            cost = f"without it the Logic score would be {part['without']:.2f} instead of {score:.2f}"
            if part["kind"] == "claim":
                out = list(sno.graph.out_edges(part["id"], data=True))
                target, kind = (out[0][1], out[0][2].get("kind")) if out else (None, None)
            else:
                rel = sno.relations_by_id[part["id"]]
                target = rel.target if rel.target in sno.claims_by_id else None
                kind = rel.kind
                if target is None:      # an undercut: it attacks a relation, not a claim
                    issue = Issue("weak_relation", f"The relation {part['label']} weakens the argument; {cost}.",
                                  tuple(part["nodes"]), "medium")
                    if issue.nodes not in named:
                        named.add(issue.nodes)
                        issues.append(issue)
                    continue
                cost = f"without this relation the Logic score would be {part['without']:.2f} instead of {score:.2f}"
            source = part["id"] if part["kind"] == "claim" else rel.source
            issue = describe(source, target, kind, cost, "weak_claim" if part["kind"] == "claim" else "weak_relation")
            if issue.nodes in named:
                continue
            named.add(issue.nodes)
            issues.append(issue)
        return issues
