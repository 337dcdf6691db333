"""Stage 1: collecting the evidence each proposition is checked against.

Three kinds of retriever share one batched interface, ``retrieve(texts,
vectors, k) -> one evidence list per text``, so the hook asks each store once
per chain rather than once per proposition:

* :class:`EngramRetriever` -- the engram memory in ChromaDB (through
  :class:`cns_core.memory.MemoryService`), one ``query`` call with every
  proposition's vector; also the self-referential search (a ``where`` filter);
* :class:`MatrixRetriever` -- an in-memory embedding matrix (an SNO's claims and
  evidence, self statements): one matrix product and an ``argpartition``;
* :class:`FunctionRetriever` -- the spec's ``retrieve(p, k)`` callables, for
  callers that bring their own store;
* :class:`RecentEngramRetriever` -- temporal neighbours: the latest engrams;
* :class:`QuestionRetriever` -- earlier answers to the same question, found by the question itself
  (a metadata match, not a nearest-neighbour search): in a busy memory two hundred answers that
  differ only in their numbers crowd the ``k_sem`` nearest out, and the one earlier answer to this
  very question, the one that matters most, is no longer among them.

:class:`MemoryAPI` groups them as the spec's ``mem_api`` (semantic, temporal, self, question).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Mapping, Protocol, Sequence

import numpy as np

from cns_core.coherence.schemas import EvidenceNode

__all__ = [
    "Retriever",
    "MatrixRetriever",
    "FunctionRetriever",
    "EngramRetriever",
    "RecentEngramRetriever",
    "QuestionRetriever",
    "MemoryAPI",
    "engram_trust",
    "DEFAULT_TRUST_BY_SCORE",
    "as_evidence",
]


class Retriever(Protocol):
    """Batched retrieval: one list of evidence (best first) per query text."""

    source: str

    def retrieve(self, texts: Sequence[str], vectors: np.ndarray | None, k: int) -> list[list[EvidenceNode]]:
        ...


DEFAULT_TRUST_BY_SCORE: tuple[float, ...] = (0.3, 0.6, 1.0, 1.0, 1.0)


def engram_trust(meta: Mapping[str, Any] | None, default: float = 1.0,
                 by_score: Sequence[float] = DEFAULT_TRUST_BY_SCORE) -> float:
    """How far an engram can prove or refute, from its judge grade 1..5 (``by_score[grade - 1]``).

    Poorly graded answers (1-2 of 5) weigh less; ungraded engrams get ``default``: no grade
    is no evidence against them.
    """
    score = (meta or {}).get("critic_score")
    try:
        value = float(score)
    except (TypeError, ValueError):
        return default
    if not math.isfinite(value) or value < 1:   # the memory marks ungraded engrams with -1
        return default
    return float(by_score[min(len(by_score), max(1, int(round(value)))) - 1])


def as_evidence(item: Any, source: str, rank: int = 0) -> EvidenceNode:
    """Coerce what a caller's retrieval function returns into an :class:`EvidenceNode`.

    Accepted: an EvidenceNode, a mapping with ``id`` and ``text`` (``similarity``/``score``,
    ``trust``, ``recency``, ``facet`` optional), a ``(id, text[, similarity])`` tuple, or a string.
    Without a similarity the item counts as fully relevant: the caller's retrieval chose it.
    """
    if isinstance(item, EvidenceNode):
        return item
    if isinstance(item, str):
        return EvidenceNode(id=f"{source}:{rank}", text=item, source=source, similarity=1.0)
    if isinstance(item, Mapping):
        text = item.get("text", item.get("document"))
        if not isinstance(text, str):
            raise ValueError(f"{source} evidence #{rank}: text: missing or not a string")
        sim = item.get("similarity", item.get("score", 1.0))
        return EvidenceNode(id=str(item.get("id", f"{source}:{rank}")), text=text, source=source,
                            similarity=float(sim or 0.0), trust=float(item.get("trust", 1.0)),
                            recency=item.get("recency"), facet=item.get("facet"))
    if isinstance(item, (tuple, list)) and len(item) >= 2 and isinstance(item[1], str):
        sim = float(item[2]) if len(item) > 2 and item[2] is not None else 1.0
        return EvidenceNode(id=str(item[0]), text=item[1], source=source, similarity=sim)
    raise ValueError(f"{source} evidence #{rank}: expected an EvidenceNode, mapping, (id, text) tuple or "
                     f"string, got {type(item).__name__}")


_controller = None


def _one_blas_thread():
    """A context that runs numpy's BLAS on one thread (threadpoolctl ships with scikit-learn)."""
    global _controller
    if _controller is None:
        from threadpoolctl import ThreadpoolController

        _controller = ThreadpoolController()
    return _controller.limit(limits=1, user_api="blas")


class MatrixRetriever:
    """Cosine top-k over an in-memory matrix of unit vectors (one matrix product per batch)."""

    def __init__(self, ids: Sequence[str], texts: Sequence[str], vectors: np.ndarray, *, source: str = "evidence",
                 trust: Sequence[float] | None = None, facets: Sequence[str | None] | None = None,
                 min_similarity: float = -1.0):
        vectors = np.asarray(vectors, dtype=np.float32)
        if len(ids) != len(texts) or len(ids) != len(vectors):
            raise ValueError(f"{source} matrix: {len(ids)} ids, {len(texts)} texts and {len(vectors)} vectors")
        self.ids = list(ids)
        self.texts = list(texts)
        self.vectors = np.ascontiguousarray(vectors.reshape(len(ids), -1)) if len(ids) else \
            np.zeros((0, 1), np.float32)
        self.source = source
        self.trust = list(trust) if trust is not None else [1.0] * len(ids)
        self.facets = list(facets) if facets is not None else [None] * len(ids)
        self.min_similarity = min_similarity

    @classmethod
    def from_texts(cls, ids: Sequence[str], texts: Sequence[str], embedder, **kwargs: Any) -> "MatrixRetriever":
        return cls(ids, texts, embedder.encode(list(texts)) if texts else np.zeros((0, 1)), **kwargs)

    def __len__(self) -> int:
        return len(self.ids)

    def retrieve(self, texts: Sequence[str], vectors: np.ndarray | None, k: int) -> list[list[EvidenceNode]]:
        if vectors is None:
            raise ValueError(f"{self.source} retrieval needs the propositions' vectors")
        if not len(self.ids) or k <= 0:
            return [[] for _ in texts]
        with _one_blas_thread():  # a small product: threads only spin against each other on a busy machine
            sims = (self.vectors @ np.asarray(vectors, dtype=np.float32).T).T   # (queries, items)
        k = min(k, sims.shape[1])
        top = np.argpartition(-sims, k - 1, axis=1)[:, :k] if k < sims.shape[1] else \
            np.tile(np.arange(sims.shape[1]), (len(sims), 1))
        out: list[list[EvidenceNode]] = []
        for row, cand in zip(sims, top):
            cand = cand[np.argsort(-row[cand])]
            out.append([EvidenceNode(id=self.ids[j], text=self.texts[j], source=self.source,
                                     similarity=float(row[j]), trust=float(self.trust[j]), facet=self.facets[j])
                        for j in cand if row[j] >= self.min_similarity])
        return out


class FunctionRetriever:
    """The spec's per-proposition ``retrieve(p, k)`` function behind the batched interface."""

    def __init__(self, fn: Callable[[str, int], Iterable[Any]], source: str = "semantic"):
        self.fn = fn
        self.source = source

    def retrieve(self, texts: Sequence[str], vectors: np.ndarray | None, k: int) -> list[list[EvidenceNode]]:
        return [[as_evidence(item, self.source, i) for i, item in enumerate(list(self.fn(text, k))[:k])]
                for text in texts]


class EngramRetriever:
    """Semantic search in the engram memory (ChromaDB through :class:`cns_core.memory.MemoryService`).

    The service's batched search (``search_episodic_many``, one Chroma query with every
    proposition's vector) is used when it has one, else ``search_episodic`` per text.
    The service always keeps to episodic engrams, so quarantined chains never count as
    evidence; ``where`` narrows further (``{"self": True}`` for self statements).
    """

    def __init__(self, memory: Any, *, source: str = "semantic", where: Mapping[str, Any] | None = None,
                 default_trust: float = 1.0, trust_by_score: Sequence[float] = DEFAULT_TRUST_BY_SCORE):
        self.memory = memory
        self.source = source
        self.where = dict(where) if where else None
        self.default_trust = default_trust
        self.trust_by_score = tuple(trust_by_score)

    def node(self, hit: Any, rank: int = 0) -> EvidenceNode:
        """An engram (``cns_core.memory.Engram`` or a mapping of the same fields) as evidence."""
        get = hit.get if isinstance(hit, Mapping) else (lambda name, default=None: getattr(hit, name, default))
        meta = get("metadata") or {}
        text = get("answer") or get("document") or get("text") or ""
        distance, given = get("distance"), get("similarity")     # an engram browsed by time has neither
        similarity = (1.0 - float(distance) if isinstance(distance, (int, float))
                      else float(given) if isinstance(given, (int, float)) else 0.0)
        timestamp = get("timestamp", meta.get("timestamp"))
        facet = meta.get("facet")
        question = get("query", meta.get("query"))
        return EvidenceNode(id=str(get("id", f"engram:{rank}")), text=str(text), source=self.source,
                            similarity=similarity,
                            recency=float(timestamp) if isinstance(timestamp, (int, float)) else None,
                            trust=engram_trust(meta, self.default_trust, self.trust_by_score),
                            facet=facet if isinstance(facet, str) and facet else None,
                            question=question if isinstance(question, str) and question.strip() else None)

    def retrieve(self, texts: Sequence[str], vectors: np.ndarray | None, k: int) -> list[list[EvidenceNode]]:
        if k <= 0 or not texts:
            return [[] for _ in texts]
        many = getattr(self.memory, "search_episodic_many", None)
        if callable(many):
            found = many(list(texts), k, where=self.where, embeddings=vectors)
        else:
            found = [self.memory.search_episodic(text, k, where=self.where) for text in texts]
        return [[self.node(hit, rank) for rank, hit in enumerate(hits)] for hits in found]


class RecentEngramRetriever:
    """Temporal neighbours: the ``k`` latest engrams (the same for every proposition of a chain)."""

    source = "temporal"

    def __init__(self, memory: Any, default_trust: float = 1.0,
                 trust_by_score: Sequence[float] = DEFAULT_TRUST_BY_SCORE):
        self.memory = memory
        self._engrams = EngramRetriever(memory, source="temporal", default_trust=default_trust,
                                        trust_by_score=trust_by_score)

    def retrieve(self, texts: Sequence[str], vectors: np.ndarray | None, k: int) -> list[list[EvidenceNode]]:
        if k <= 0 or not texts:
            return [[] for _ in texts]
        rows = self.memory.browse(None, 0, k, "newest")
        nodes = [self._engrams.node(row, i) for i, row in enumerate(rows)]
        if vectors is not None and nodes:  # similarity to each proposition, for the model's top-m choice
            from cns_core.models import get_embedder

            sims = np.asarray(vectors) @ np.asarray(get_embedder().encode([n.text for n in nodes])).T
            return [[_similar(n, float(s)) for n, s in zip(nodes, row)] for row in sims]
        return [list(nodes) for _ in texts]


class QuestionRetriever:
    """The engrams that answered exactly this question (the stored ``query``), newest first, as evidence
    for every proposition. Their similarity is 1: the question makes them relevant whatever the words of
    the answer (the numbers that differ, above all)."""

    source = "semantic"

    def __init__(self, memory: Any, default_trust: float = 1.0,
                 trust_by_score: Sequence[float] = DEFAULT_TRUST_BY_SCORE):
        self.memory = memory
        self._engrams = EngramRetriever(memory, default_trust=default_trust, trust_by_score=trust_by_score)

    @staticmethod
    def supports(memory: Any) -> bool:
        return all(callable(getattr(memory, name, None)) for name in ("ids_matching", "timestamps", "get"))

    def retrieve(self, question: str, k: int) -> list[EvidenceNode]:
        if k <= 0 or not isinstance(question, str) or not question.strip():
            return []
        ids = self.memory.ids_matching({"query": question.strip()}, None)
        if len(ids) > k:
            stamps = self.memory.timestamps(ids)
            ids = sorted(ids, key=lambda i: stamps.get(i, 0.0), reverse=True)[:k]
        return [_similar(self._engrams.node(e, rank), 1.0) for rank, e in enumerate(self.memory.get(ids))]


def _similar(node: EvidenceNode, similarity: float) -> EvidenceNode:
    return replace(node, similarity=similarity)


@dataclass
class MemoryAPI:
    """The spec's ``mem_api``: semantic retrievers (several stores), optional temporal and self."""

    semantic: tuple[Retriever, ...] = ()
    temporal: Retriever | None = None
    self_: Retriever | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    question: QuestionRetriever | None = None

    @classmethod
    def from_functions(cls, retrieve_semantic: Callable[[str, int], Iterable[Any]] | None = None,
                       retrieve_temporal: Callable[[str, int], Iterable[Any]] | None = None,
                       retrieve_self: Callable[[str, int], Iterable[Any]] | None = None) -> "MemoryAPI":
        """Build from the spec's three callables ``retrieve_*(p, k)``."""
        return cls(semantic=(FunctionRetriever(retrieve_semantic, "semantic"),) if retrieve_semantic else (),
                   temporal=FunctionRetriever(retrieve_temporal, "temporal") if retrieve_temporal else None,
                   self_=FunctionRetriever(retrieve_self, "self") if retrieve_self else None)

    @classmethod
    def from_memory(cls, memory: Any, *, temporal: bool = False, self_: bool = False, default_trust: float = 1.0,
                    trust_by_score: Sequence[float] = DEFAULT_TRUST_BY_SCORE) -> "MemoryAPI":
        """The engram store as semantic evidence; optionally the latest engrams as temporal
        neighbours and engrams marked ``self: true`` as self evidence (each costs a query)."""
        trust = dict(default_trust=default_trust, trust_by_score=trust_by_score)
        return cls(semantic=(EngramRetriever(memory, **trust),),
                   temporal=RecentEngramRetriever(memory, **trust) if temporal else None,
                   self_=EngramRetriever(memory, source="self", where={"self": True}, **trust) if self_ else None,
                   question=QuestionRetriever(memory, **trust) if QuestionRetriever.supports(memory) else None)

    @property
    def needs_vectors(self) -> bool:
        return any(not isinstance(r, FunctionRetriever) for r in (*self.semantic, self.temporal, self.self_)
                   if r is not None)
