"""Passages of long sources and the ones worth judging for each claim.

A source (an evidence item) is split into sentences; its passages are runs of 1 to
``max_run`` adjacent sentences, because a claim is often entailed only by two or three
sentences together (WiCE's supporting sets). A short source (at most ``max_chars``) is one
passage. Each sentence is embedded once (the embedder caches by text) and a run's vector is
the normalised sum of its sentences' vectors, so runs cost no extra model call.

Embedding a long page's sentences is most of the cost, so only the sentences that could
matter are embedded (:func:`units_worth_embedding`): each claim's ``top_n`` sentences by
BM25 and the neighbours that make up the runs containing them.

For each claim only its most similar passages go to the NLI model: at most ``top_k``, and
none whose similarity is more than ``margin`` below the claim's best passage (they cannot
carry the verdict). All claims' chosen pairs are then scored in one batched call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

__all__ = ["Passage", "SourcePassages", "source_units", "runs", "units_worth_embedding", "build_passages",
           "choose_passages", "lexical_match"]

# Claims x passages similarities are computed this many claims at a time (a 5,000-claim SNO
# never holds a full claims x passages matrix).
_CLAIM_CHUNK = 512


@dataclass(frozen=True)
class Passage:
    """A run of sentences ``[start, end)`` of source ``source`` (an index into the evidence list)."""

    source: int
    start: int
    end: int
    text: str


@dataclass(frozen=True)
class SourcePassages:
    """Every passage of a set of sources, with unit vectors (one row per passage)."""

    passages: tuple[Passage, ...]
    vectors: np.ndarray


def source_units(text: str, max_chars: int, split: Callable[[str], list[str]]) -> list[str]:
    """The units a source is embedded in: itself when short, else its sentences."""
    if len(text) <= max_chars:
        return [text]
    return split(text) or [text]


def runs(n: int, max_run: int) -> list[tuple[int, int]]:
    """The ``[start, end)`` runs of 1..``max_run`` of ``n`` adjacent units, shortest first."""
    return [(start, start + length) for length in range(1, min(max_run, n) + 1) for start in range(n - length + 1)]


def units_worth_embedding(units: Sequence[Sequence[str]], claims: Sequence[str], top_n: int,
                          max_run: int) -> list[np.ndarray]:
    """Per source, a mask of the units to embed: all of a one-unit source; of the others each
    claim's ``top_n`` units by BM25 (over all the sources' sentences together) and the
    ``max_run - 1`` on each side of them, so every run containing a top unit can be built.

    ``top_n <= 0`` keeps everything; so does a claim with no BM25 token (nothing to rank by).
    """
    keep = [np.ones(len(source), dtype=bool) for source in units]
    ranked = [(s, i) for s, source in enumerate(units) if len(source) > 1 for i in range(len(source))]
    if top_n <= 0 or not claims or len(ranked) <= top_n:
        return keep
    import bm25s

    chosen = [np.zeros(len(source), dtype=bool) if len(source) > 1 else keep[s] for s, source in enumerate(units)]
    index = bm25s.BM25()
    index.index(bm25s.tokenize([units[s][i] for s, i in ranked], stopwords="en", show_progress=False),
                show_progress=False)
    reach = max(0, max_run - 1)
    for tokens in bm25s.tokenize(list(claims), stopwords="en", return_ids=False, show_progress=False):
        if not tokens:
            return keep
        scores = index.get_scores(tokens)
        for j in np.argsort(-scores, kind="stable")[:top_n]:
            s, i = ranked[int(j)]
            chosen[s][max(0, i - reach):i + reach + 1] = True
    return chosen


def build_passages(units: Sequence[Sequence[str]], encode: Callable[[list[str]], np.ndarray],
                   max_run: int, keep: Sequence[np.ndarray] | None = None) -> SourcePassages:
    """Runs of 1..``max_run`` adjacent units of each source, embedded through ``encode`` once per unit.

    With ``keep`` (per source, a mask of its units) only kept units are embedded and only runs
    made wholly of kept units are passages.
    """
    if max_run < 1:
        raise ValueError(f"max_run: must be at least 1 (got {max_run})")
    masks = [np.ones(len(source), dtype=bool) for source in units] if keep is None else list(keep)
    flat = [u for source, mask in zip(units, masks) for u, kept in zip(source, mask) if kept]
    vectors = np.asarray(encode(flat), dtype=np.float32) if flat else np.zeros((0, 1), dtype=np.float32)
    passages: list[Passage] = []
    rows: list[np.ndarray] = []
    offset = 0
    for s, (source, mask) in enumerate(zip(units, masks)):
        full = np.zeros((len(source), vectors.shape[1]), np.float32)
        full[mask] = vectors[offset:offset + int(mask.sum())]
        offset += int(mask.sum())
        cumulative = np.vstack([np.zeros((1, vectors.shape[1]), np.float32), np.cumsum(full, axis=0)])
        for start, end in runs(len(source), max_run):
            if mask[start:end].all():
                passages.append(Passage(s, start, end, " ".join(source[start:end])))
                rows.append(cumulative[end] - cumulative[start])
    matrix = np.asarray(rows, dtype=np.float32).reshape(len(rows), vectors.shape[1])
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return SourcePassages(tuple(passages), matrix / np.maximum(norms, 1e-12))


def choose_passages(claim_vectors: np.ndarray, passage_vectors: np.ndarray, top_k: int,
                    margin: float) -> tuple[list[np.ndarray], np.ndarray]:
    """Per claim, the indices of its chosen passages (best first) and its best similarity.

    A passage is chosen when it is among the claim's ``top_k`` most similar and its
    similarity is at least the best one's minus ``margin``. ``top_k <= 0`` means no cap.
    """
    n_claims, n_passages = claim_vectors.shape[0], passage_vectors.shape[0]
    chosen: list[np.ndarray] = []
    best = np.zeros(n_claims, dtype=np.float64)
    if n_passages == 0:
        return [np.zeros(0, dtype=np.int64) for _ in range(n_claims)], best
    k = n_passages if top_k <= 0 else min(top_k, n_passages)
    for lo in range(0, n_claims, _CLAIM_CHUNK):
        sims = claim_vectors[lo:lo + _CLAIM_CHUNK] @ passage_vectors.T
        if k < n_passages:
            top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        else:
            top = np.broadcast_to(np.arange(n_passages), (sims.shape[0], n_passages))
        top_sims = np.take_along_axis(sims, top, axis=1)
        order = np.argsort(-top_sims, axis=1, kind="stable")
        top, top_sims = np.take_along_axis(top, order, axis=1), np.take_along_axis(top_sims, order, axis=1)
        for row in range(sims.shape[0]):
            keep = top_sims[row] >= top_sims[row, 0] - margin
            chosen.append(top[row][keep].astype(np.int64))
            best[lo + row] = float(top_sims[row, 0])
    return chosen, best


def lexical_match(passages: Sequence[str], claims: Sequence[str]) -> np.ndarray:
    """``(claims, 3)``: each claim's best BM25 score over ``passages`` (bm25s, English stop words), that score
    per claim token, and its coverage: the largest share of the claim's words one passage holds.

    The embeddings miss what BM25 sees: a passage naming the claim's exact entities and numbers.
    On the dev sets it adds most where pages are long and noisy (WiCE; README). BM25's weights come
    from the passages themselves, so against two cited sentences its scores are a fraction of what
    the same words score in a page; coverage does not depend on how much evidence there is.
    """
    import bm25s

    out = np.zeros((len(claims), 3), dtype=np.float64)
    if not passages or not claims:
        return out
    corpus = bm25s.tokenize(list(passages), stopwords="en", show_progress=False)
    if not corpus.vocab:                 # only stop words and punctuation ("The Who"? "1"): nothing to match
        return out
    index = bm25s.BM25()
    index.index(corpus, show_progress=False)
    words = {i: w for w, i in corpus.vocab.items()}
    passage_words = [{words[i] for i in ids} for ids in corpus.ids]
    for i, tokens in enumerate(bm25s.tokenize(list(claims), stopwords="en", return_ids=False, show_progress=False)):
        if tokens:
            best = float(np.max(index.get_scores(tokens)))
            wanted = set(tokens)
            out[i] = (best, best / len(tokens), max(len(wanted & held) for held in passage_words) / len(wanted))
    return out
