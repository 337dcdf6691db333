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
* :class:`RecentEngramRetriever` -- temporal neighbours: the latest engrams.

:class:`MemoryAPI` groups them as the spec's ``mem_api`` (semantic, temporal, self).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Protocol, Sequence

import numpy as np

from cns_core.coherence.schemas import EvidenceNode

__all__ = [
    "Retriever",
    "MatrixRetriever",
    "FunctionRetriever",
    "EngramRetriever",
    "RecentEngramRetriever",
    "MemoryAPI",
    "engram_trust",
    "as_evidence",
]


class Retriever(Protocol):
    """Batched retrieval: one list of evidence (best first) per query text."""

    source: str

    def retrieve(self, texts: Sequence[str], vectors: np.ndarray | None, k: int) -> list[list[EvidenceNode]]:
        ...


def engram_trust(meta: Mapping[str, Any] | None, default: float = 0.8) -> float:
    """How far an engram can prove or refute: its judge grade 1..5 mapped to 0.2..1.0.

    Ungraded engrams get ``default``: better than a poor answer, worse than a good one.
    """
    score = (meta or {}).get("critic_score")
    try:
        value = float(score)
    except (TypeError, ValueError):
        return default
    if not math.isfinite(value):
        return default
    return float(min(1.0, max(0.2, 0.2 + 0.8 * (value - 1.0) / 4.0)))


def as_evidence(item: Any, source: str, rank: int = 0) -> EvidenceNode:
    """Coerce what a caller's retrieval function returns into an :class:`EvidenceNode`.

    Accepted: an EvidenceNode, a mapping with ``id`` and ``text`` (``similarity``/``score``,
    ``trust``, ``recency``, ``facet`` optional), a ``(id, text[, similarity])`` tuple, or a string.
    """
    if isinstance(item, EvidenceNode):
        return item
    if isinstance(item, str):
        return EvidenceNode(id=f"{source}:{rank}", text=item, source=source, similarity=0.0)
    if isinstance(item, Mapping):
        text = item.get("text", item.get("document"))
        if not isinstance(text, str):
            raise ValueError(f"{source} evidence #{rank}: text: missing or not a string")
        sim = item.get("similarity", item.get("score", 0.0))
        return EvidenceNode(id=str(item.get("id", f"{source}:{rank}")), text=text, source=source,
                            similarity=float(sim or 0.0), trust=float(item.get("trust", 1.0)),
                            recency=item.get("recency"), facet=item.get("facet"))
    if isinstance(item, (tuple, list)) and len(item) >= 2 and isinstance(item[1], str):
        sim = float(item[2]) if len(item) > 2 and item[2] is not None else 0.0
        return EvidenceNode(id=str(item[0]), text=item[1], source=source, similarity=sim)
    raise ValueError(f"{source} evidence #{rank}: expected an EvidenceNode, mapping, (id, text) tuple or "
                     f"string, got {type(item).__name__}")


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
        self.vectors = vectors.reshape(len(ids), -1) if len(ids) else np.zeros((0, 1), np.float32)
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
        sims = np.asarray(vectors, dtype=np.float32) @ self.vectors.T       # (queries, items)
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


def _distance_to_similarity(distance: float, space: str) -> float:
    if space == "cosine":
        return 1.0 - distance
    if space == "ip":
        return -distance
    return 1.0 - distance / 2.0          # squared L2 between unit vectors = 2 - 2 cos


class EngramRetriever:
    """Semantic search in the engram memory (ChromaDB), one query for the whole chain.

    ``memory`` is a :class:`cns_core.memory.MemoryService` (anything with a Chroma
    ``collection``; without one, its ``search_episodic(text, k, where)`` is called
    per text). ``where`` narrows the search (default: episodic engrams, so
    quarantined chains never count as evidence).
    """

    def __init__(self, memory: Any, *, source: str = "semantic", where: Mapping[str, Any] | None = None,
                 default_trust: float = 0.8, min_similarity: float = 0.0):
        self.memory = memory
        self.source = source
        self.where = dict(where) if where is not None else {"type": "episodic"}
        self.default_trust = default_trust
        self.min_similarity = min_similarity

    def _node(self, engram_id: str, document: str | None, meta: Mapping[str, Any] | None,
              similarity: float) -> EvidenceNode:
        meta = meta or {}
        text = meta.get("answer") if isinstance(meta.get("answer"), str) and meta.get("answer") else document
        recency = meta.get("timestamp")
        return EvidenceNode(id=str(engram_id), text=str(text or ""), source=self.source, similarity=similarity,
                            recency=float(recency) if isinstance(recency, (int, float)) else None,
                            trust=engram_trust(meta, self.default_trust),
                            facet=meta.get("facet") if isinstance(meta.get("facet"), str) else None)

    def retrieve(self, texts: Sequence[str], vectors: np.ndarray | None, k: int) -> list[list[EvidenceNode]]:
        if k <= 0 or not texts:
            return [[] for _ in texts]
        collection = getattr(self.memory, "collection", None)
        if collection is not None and vectors is not None:
            if collection.count() == 0:
                return [[] for _ in texts]
            space = (getattr(collection, "metadata", None) or {}).get("hnsw:space", "l2")
            res = collection.query(query_embeddings=np.asarray(vectors, dtype=np.float32).tolist(),
                                   n_results=k, where=self.where or None,
                                   include=["documents", "metadatas", "distances"])
            out = []
            for ids, docs, metas, dists in zip(res["ids"], res["documents"], res["metadatas"], res["distances"]):
                nodes = [self._node(i, d, m, _distance_to_similarity(float(dist), space))
                         for i, d, m, dist in zip(ids, docs, metas, dists)]
                out.append([n for n in nodes if n.similarity >= self.min_similarity])
            return out
        out = []
        for text in texts:
            hits = self.memory.search_episodic(text, k, where=self.where or None)
            out.append([self._hit(h, rank) for rank, h in enumerate(hits)])
        return out

    def _hit(self, hit: Any, rank: int) -> EvidenceNode:
        if isinstance(hit, Mapping):
            meta = hit.get("metadata") or hit.get("meta") or {}
            sim = hit.get("similarity")
            if sim is None and hit.get("distance") is not None:
                sim = 1.0 - float(hit["distance"])
            return self._node(hit.get("id", f"engram:{rank}"), hit.get("document", hit.get("text")), meta,
                              float(sim or 0.0))
        return as_evidence(hit, self.source, rank)


class RecentEngramRetriever:
    """Temporal neighbours: the ``k`` latest engrams (the same for every proposition of a chain)."""

    source = "temporal"

    def __init__(self, memory: Any, default_trust: float = 0.8):
        self.memory = memory
        self._nodes = EngramRetriever(memory, source="temporal", default_trust=default_trust)

    def retrieve(self, texts: Sequence[str], vectors: np.ndarray | None, k: int) -> list[list[EvidenceNode]]:
        if k <= 0 or not texts:
            return [[] for _ in texts]
        rows = self.memory.browse({}, 0, k, "newest")
        nodes = [self._nodes._hit(row, i) for i, row in enumerate(rows)]
        return [list(nodes) for _ in texts]


@dataclass
class MemoryAPI:
    """The spec's ``mem_api``: semantic retrievers (several stores), optional temporal and self."""

    semantic: tuple[Retriever, ...] = ()
    temporal: Retriever | None = None
    self_: Retriever | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_functions(cls, retrieve_semantic: Callable[[str, int], Iterable[Any]] | None = None,
                       retrieve_temporal: Callable[[str, int], Iterable[Any]] | None = None,
                       retrieve_self: Callable[[str, int], Iterable[Any]] | None = None) -> "MemoryAPI":
        """Build from the spec's three callables ``retrieve_*(p, k)``."""
        return cls(semantic=(FunctionRetriever(retrieve_semantic, "semantic"),) if retrieve_semantic else (),
                   temporal=FunctionRetriever(retrieve_temporal, "temporal") if retrieve_temporal else None,
                   self_=FunctionRetriever(retrieve_self, "self") if retrieve_self else None)

    @classmethod
    def from_memory(cls, memory: Any, *, temporal: bool = False, default_trust: float = 0.8) -> "MemoryAPI":
        """The engram store as semantic evidence, engrams marked ``self`` as self evidence."""
        return cls(semantic=(EngramRetriever(memory, default_trust=default_trust),),
                   temporal=RecentEngramRetriever(memory, default_trust) if temporal else None,
                   self_=EngramRetriever(memory, source="self", where={"self": True}, default_trust=default_trust))

    @property
    def needs_vectors(self) -> bool:
        return any(not isinstance(r, FunctionRetriever) for r in (*self.semantic, self.temporal, self.self_)
                   if r is not None)
