"""Judge claims against their sources: retrieve passages, score them with NLI, fuse a verdict.

Relevance is measured twice: by embedding similarity (which passages are judged) and by
BM25 over every passage (a feature of the fusion; computed only when the fusion uses it).

A *problem* is a list of claims sharing a list of sources (an SNO's claims and its evidence;
or, in the development sets, one claim and the page it cites). Many problems are judged
together: every text is embedded in one call (the embedder caches by text, so a source
shared by several problems is embedded once) and every chosen (passage, claim) pair goes to
the NLI backend in one call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from cns_core.critics.grounding_passages import (Passage, build_passages, choose_passages, lexical_match, runs,
                                                 units_worth_embedding)
from cns_core.critics.grounding_verdict import Fusion, VerdictRule, claim_features
from cns_core.models.verifier import verifier_pair

__all__ = ["GroundingProblem", "JudgedPassage", "ClaimVerdict", "RetrievalSettings", "judge_problems"]


@dataclass(frozen=True)
class GroundingProblem:
    """Claims and the sources they are judged against; ``units[s]`` are source s's sentences
    (a short source is one unit). ``questions`` (parallel to ``claims``, empty for none) names the
    question a claim answers: the verifier then reads the claim as that question's answer."""

    claims: tuple[str, ...]
    units: tuple[tuple[str, ...], ...]
    questions: tuple[str, ...] = ()

    def question(self, i: int) -> str | None:
        return (self.questions[i] or None) if i < len(self.questions) else None


@dataclass(frozen=True)
class RetrievalSettings:
    max_run: int = 3          # passages are runs of 1..max_run adjacent sentences
    top_k: int = 6            # at most this many passages per claim go to the NLI model
    margin: float = 0.15      # ... and none whose similarity is this far below the claim's best
    max_pairs: int = 0        # a problem's claims share this many pairs (top_k shrinks, to 1 at least); 0: no cap
    embed_top: int = 0        # embed only each claim's embed_top sentences by BM25 and their run neighbours; 0: all

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> "RetrievalSettings":
        return cls(int(settings["max_run"]), int(settings["top_k"]), float(settings["margin"]),
                   int(settings.get("max_pairs") or 0), int(settings.get("embed_top") or 0))

    def top_k_for(self, n_claims: int) -> int:
        """The per-claim cap for a problem of ``n_claims`` claims (large SNOs get fewer pairs per claim)."""
        if self.max_pairs <= 0 or n_claims == 0:
            return self.top_k
        share = max(1, self.max_pairs // n_claims)
        return share if self.top_k <= 0 else min(self.top_k, share)


@dataclass(frozen=True)
class JudgedPassage:
    passage: Passage
    similarity: float
    entailment: float
    neutral: float
    contradiction: float


@dataclass(frozen=True)
class ClaimVerdict:
    """A claim's fused verdict, its probabilities (in VERDICTS order) and the passages behind it."""

    verdict: str
    probabilities: tuple[float, float, float]
    features: tuple[float, ...]
    passages: tuple[JudgedPassage, ...]     # best similarity first

    @property
    def p_supported(self) -> float:
        return self.probabilities[0]

    @property
    def p_contradicted(self) -> float:
        return self.probabilities[1]

    def strongest(self, column: str) -> JudgedPassage | None:
        """The passage with the highest ``entailment`` or ``contradiction`` (None without passages)."""
        return max(self.passages, key=lambda p: getattr(p, column), default=None)

    def read(self) -> JudgedPassage | None:
        """The passage the verdict rests on, the one every page names: the one contradicting the claim most
        for "contradicted", entailing it most for "supported", else (no label earned) the most similar."""
        if self.verdict == "contradicted":
            return self.strongest("contradiction")
        if self.verdict == "supported":
            return self.strongest("entailment")
        return self.passages[0] if self.passages else None


def judge_problems(problems: Sequence[GroundingProblem], nli: Any, embedder: Any, fusion: Fusion,
                   settings: RetrievalSettings = RetrievalSettings(),
                   rule: VerdictRule = VerdictRule()) -> list[list[ClaimVerdict]]:
    """Every claim's verdict, per problem (see the module docstring); ``rule`` labels the probabilities."""
    keeps = [units_worth_embedding(p.units, p.claims, settings.embed_top, settings.max_run) for p in problems]
    texts = list(dict.fromkeys([c for p in problems for c in p.claims] +
                               [u for p, keep in zip(problems, keeps) for source, mask in zip(p.units, keep)
                                for u, kept in zip(source, mask) if kept]))
    vectors = np.asarray(embedder.encode(texts), dtype=np.float32) if texts else np.zeros((0, 1), np.float32)
    row_of = {t: i for i, t in enumerate(texts)}

    def encode(batch: list[str]) -> np.ndarray:
        return vectors[[row_of[t] for t in batch]] if batch else np.zeros((0, vectors.shape[1]), np.float32)

    plans = []                                  # per problem: passages, chosen indices, their similarities
    pairs: list[tuple[str, str]] = []
    for problem, keep in zip(problems, keeps):
        found = build_passages(problem.units, encode, settings.max_run, keep)
        claim_vectors = encode(list(problem.claims))
        chosen, _ = choose_passages(claim_vectors, found.vectors, settings.top_k_for(len(problem.claims)),
                                    settings.margin)
        sims = [found.vectors[idx] @ claim_vectors[i] if len(idx) else np.zeros(0) for i, idx in enumerate(chosen)]
        if {"bm25", "bm25_per_token", "coverage"} & set(fusion.features):   # over every run, not only the embedded ones
            lexical = lexical_match([" ".join(source[a:b]) for source in problem.units
                                     for a, b in runs(len(source), settings.max_run)], problem.claims)
        else:
            lexical = np.zeros((len(problem.claims), 3))
        plans.append((found.passages, chosen, sims, lexical))
        for i, (claim, idx) in enumerate(zip(problem.claims, chosen)):
            pairs.extend(verifier_pair(found.passages[j].text, claim, problem.question(i)) for j in idx)

    scored = np.asarray(nli.predict(pairs), dtype=np.float64) if pairs else np.zeros((0, 3))
    if scored.shape != (len(pairs), 3) or not np.isfinite(scored).all():
        raise ValueError(f"NLI backend {getattr(nli, 'name', type(nli).__name__)!r} returned "
                         f"{scored.shape} values for {len(pairs)} pairs (expected ({len(pairs)}, 3) finite)")

    out: list[list[ClaimVerdict]] = []
    at = 0
    for passages, chosen, sims, lexical in plans:
        feature_rows, judged = [], []
        for idx, sim, lex in zip(chosen, sims, lexical):
            rows = scored[at:at + len(idx)]
            at += len(idx)
            feature_rows.append(claim_features(rows, sim, fusion.features, lex))
            judged.append(tuple(JudgedPassage(passages[j], float(s), float(r[0]), float(r[1]), float(r[2]))
                                for j, s, r in zip(idx, sim, rows)))
        probs = fusion.predict(np.array(feature_rows)) if feature_rows else np.zeros((0, 3))
        out.append([ClaimVerdict(rule.decide(p), tuple(float(x) for x in p), tuple(f), j)
                    for p, f, j in zip(probs, feature_rows, judged)])
    return out
