"""Episodic memory on ChromaDB: engrams, their critic scores, pending critiques, a quarantine.

An *engram* is one answered turn. Its Chroma id is the turn's ``query_id`` so the
judge's score can land on it later (``update_engram_score``). Three collections
live side by side: ``<name>`` (engrams), ``<name>_pending`` (critiques that
arrived before their engram; persisted so no score is lost, even across a
restart) and ``<name>_quarantine`` (turns the coherence hook blocked).

The engram record, the browser's filters and time-ordered paging are in
:mod:`cns_core.engrams`; this module owns the store. Two families of metadata keys belong to
the memory, not to the writer of a turn: ``critic_*`` (the judge's grade) and ``trust_*`` (the
critics' Trust Score of the answer, :meth:`MemoryService.record_trust`). A rewrite of a turn with
the same text keeps its grade and Trust Score; a rewrite with another answer starts ungraded, and a
grade is applied only to the answer it judged (``critic_answer_digest``), never to another answer
that shares its query id.
"""

from __future__ import annotations

import math
import re
import time
import uuid
import weakref
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

from chromadb.api.types import Documents, EmbeddingFunction, Embeddings
from chromadb.utils.embedding_functions import register_embedding_function

from cns_core.config import ConfigError, env_override, load_config, state_dir
from cns_core.memory.access import REQUEST_TIMEOUT_S, MemoryStoreError, StoreBusyError, open_store
from cns_core.engrams import (
    answer_digest,
    turn_document,
    HUMAN_KEYS,
    HUMAN_PREFIX,
    ORDERS,
    Annotation,
    SCORE_BUCKETS,
    TRUST_KEYS,
    NO_VERDICT,
    TRUST_PREFIX,
    UNGRADED,
    UNTRUSTED,
    Engram,
    EngramFilters,
    TimePager,
    and_clauses,
    check_timestamp,
    range_clauses,
    time_keys,
    validate_score,
    validate_trust,
)
from cns_core.models import get_embedder
from cns_core.models.errors import ModelUnavailableError
from cns_core.bounds import logger

__all__ = [
    "CNSEmbeddingFunction",
    "Engram",
    "EngramFilters",
    "MemoryService",
    "MemoryStoreError",
    "StoreBusyError",
    "UnknownEngramError",
    "ORDERS",
    "UNGRADED",
    "CRITIC_PREFIX",
    "OWNED_PREFIXES",
    "memory_owned",
    "memory_settings",
    "validate_score",
]

log = logger(__name__)

CRITIC_PREFIX = "critic_"          # metadata keys owned by grading; a rewrite with the same text keeps them
_GET_CHUNK = 5000                  # rows per Chroma read (SQLite caps the variables of one query)
_RESERVED = frozenset({"type", "query", "session_id", "timestamp", "answer_start"})
OWNED_PREFIXES = (CRITIC_PREFIX, TRUST_PREFIX, HUMAN_PREFIX)   # key families the memory writes (grade, Trust
                                                               # Score, people's verdicts), never a turn
_NAME_RE = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9._-]{1,60}[a-zA-Z0-9]$")


class UnknownEngramError(ValueError):
    """An id names no engram (or no quarantined turn)."""


def memory_settings() -> dict[str, Any]:
    """``config/memory.yaml`` with ``CNS_CHROMA_URL``, ``CNS_CHROMA_PATH``, ``CNS_MEMORY_COLLECTION`` applied."""
    cfg = load_config("memory")
    cfg["url"] = env_override(cfg.get("url"), "CNS_CHROMA_URL")
    cfg["path"] = env_override(cfg.get("path"), "CNS_CHROMA_PATH")
    cfg["collection"] = env_override(cfg.get("collection", "engrams"), "CNS_MEMORY_COLLECTION")
    cfg.setdefault("browse", {})
    return cfg


# --------------------------------------------------------------------------- embedding function

@register_embedding_function
class CNSEmbeddingFunction(EmbeddingFunction[Documents]):
    """Chroma's view of :func:`cns_core.models.get_embedder` (registered, so a collection reopens with it).

    Chroma's default function downloads a model; ours is the bundled offline one.
    """

    def __init__(self, backend: str | None = None):
        self.backend = backend or get_embedder().name

    def __call__(self, input: Documents) -> Embeddings:
        embedder = get_embedder()
        if embedder.name != self.backend:
            raise ModelUnavailableError(
                "memory embedding", f"the collection was built with the {self.backend!r} embedder but "
                f"{embedder.name!r} is configured", "Use the same embedding.backend as when the memory was written.")
        return list(embedder.encode(list(input)))

    @staticmethod
    def name() -> str:
        return "cns-studio"

    def get_config(self) -> dict[str, Any]:
        return {"backend": self.backend}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> "CNSEmbeddingFunction":
        CNSEmbeddingFunction.validate_config(config)
        return CNSEmbeddingFunction(config["backend"])

    @staticmethod
    def validate_config(config: dict[str, Any]) -> None:
        if not isinstance(config.get("backend"), str) or not config["backend"]:
            raise ValueError(f"embedding function config {config!r}: 'backend' must be a non-empty string")

    def default_space(self) -> str:  # type: ignore[override]
        return "cosine"

    def supported_spaces(self) -> list[str]:  # type: ignore[override]
        return ["cosine", "l2", "ip"]


# --------------------------------------------------------------------------- validation helpers

def _similarity_setting(value: Any) -> float:
    """``browse.min_similarity`` of memory.yaml: a number in [0, 1], or ConfigError naming it."""
    try:
        return validate_trust(value, "memory.yaml: browse.min_similarity")
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def _text(value: Any, field_name: str, *, empty_ok: bool = False) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{field_name}: expected a string, got {type(value).__name__}")
    if not empty_ok and not value.strip():
        raise ValueError(f"{field_name}: must not be empty")
    return value


def _flat_metadata(meta: Mapping[str, Any], field_name: str = "metadata") -> dict[str, Any]:
    """Chroma metadata must be flat str/int/float/bool; None values are dropped."""
    out: dict[str, Any] = {}
    for key, value in meta.items():
        if not isinstance(key, str) or not key:
            raise ValueError(f"{field_name}: keys must be non-empty strings, got {key!r}")
        if value is None:
            continue
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{field_name}.{key}: {value!r} is not a finite number")
        if not isinstance(value, (str, bool, int, float)):
            raise ValueError(f"{field_name}.{key}: expected str, int, float or bool, got {type(value).__name__}")
        out[key] = value
    return out


def _no_trust() -> dict[str, Any]:
    """Trust metadata of an answer not scored yet: UNTRUSTED, and None (Chroma: delete) for the rest."""
    return {k: (UNTRUSTED if k == "trust_score" else None) for k in TRUST_KEYS}


def memory_owned(key: str) -> bool:
    """A metadata key the memory itself sets (a reserved field, a grade or Trust Score key): never a turn's."""
    return key in _RESERVED or key.startswith(OWNED_PREFIXES)


def _critic_key(key: str) -> str:
    return key if key.startswith(CRITIC_PREFIX) else CRITIC_PREFIX + key


# --------------------------------------------------------------------------- data

# --------------------------------------------------------------------------- the service

def _let_go(store: Any) -> None:
    """Close a service's Chroma client and give up its hold on the embedded folder's lock."""
    try:
        store.client.close()
    except Exception as exc:  # noqa: BLE001 - closing must not fail a caller that is done
        log.debug("memory: closing the Chroma client: %s", exc)
    if store.lock is not None:
        store.lock.release()


_document = turn_document
DIGEST_KEY = CRITIC_PREFIX + "answer_digest"   # the fingerprint of the text a grade judged (see answer_digest)


def _digest_of(document: str | None) -> str | None:
    """The fingerprint of a stored document (the query and the answer it holds)."""
    if document is None:
        return None
    query, sep, answer = document.partition("\n\n")
    return answer_digest(query, answer) if sep else None


def _judged_this(grade: Mapping[str, Any], document: str | None) -> bool:
    """Whether a grade judged this very document; a grade that names no text (an older critique, a
    person's import) is taken as judging what is stored."""
    digest = grade.get(DIGEST_KEY)
    return not digest or digest == _digest_of(document)


class MemoryService:
    """Engrams in Chroma with scores, pending critiques and a quarantine (see the module doc)."""

    def __init__(self, path: str | Path | None = None, url: str | None = None, collection: str | None = None,
                 *, config: Mapping[str, Any] | None = None, create: bool = True):
        cfg = dict(config) if config is not None else memory_settings()
        self.url = url or cfg.get("url") or None
        self.path = None if self.url else Path(path or cfg.get("path") or state_dir(create) / "chroma")
        if not create and self.path is not None and not (self.path / "chroma.sqlite3").is_file():
            raise MemoryStoreError(f"no memory at {self.path}: " + ("no such folder" if not self.path.exists() else
                                   "the folder holds no Chroma store") + "; give --path the memory's folder or set "
                                   "CNS_STATE_DIR (a command that only reads never creates one)")
        name = collection or cfg.get("collection") or "engrams"
        if not _NAME_RE.match(name):
            raise ConfigError(f"memory collection {name!r}: use 3-62 letters, digits, '.', '_' or '-'")
        self.name = name
        browse = dict(cfg.get("browse") or {})
        self.max_limit = int(browse.get("max_limit", 500))
        self.semantic_k = int(browse.get("semantic_k", 200))
        self.min_similarity = _similarity_setting(browse.get("min_similarity", 0.3))
        self.band_slack = int(browse.get("band_slack", 64))
        self.first_step_s = float(browse.get("first_step_s", 60.0))
        self.direct_limit = int(browse.get("direct_limit", 20_000))
        self.write_batch = int(cfg.get("write_batch", 256))
        self._space = str(cfg.get("space", "cosine"))
        self._recall_cfg = cfg.get("recall")
        self._recall = None
        store = open_store(self.path, self.url, allow_non_loopback=bool(cfg.get("allow_non_loopback", False)),
                           timeout_s=float(cfg.get("request_timeout_s", REQUEST_TIMEOUT_S)))
        self._closer = weakref.finalize(self, _let_go, store)
        self._closer.atexit = False          # at exit the kernel releases the lock; Chroma stops on its own
        self._client = store.client
        self.served = store.served           # the `cns run` server this process reaches the folder through
        self._ef = CNSEmbeddingFunction()
        try:
            self._engrams = self._open(name)
            self._pending = self._open(f"{name}_pending")
            self._quarantine = self._open(f"{name}_quarantine")
        except Exception:
            self.close()
            raise

    def close(self) -> None:
        """Let go of the store: the embedded folder's lock is released once every service of this process on
        it is closed or collected (a service kept open holds it while the process lives). Idempotent."""
        self._closer()

    def __enter__(self) -> "MemoryService":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _open(self, name: str):
        try:
            return self._client.get_or_create_collection(
                name, embedding_function=self._ef, configuration={"hnsw": {"space": self._space}})
        except ValueError as exc:
            raise MemoryStoreError(f"collection {name!r} cannot be opened with the CNS embedding function: {exc}. "
                                   "Point memory.collection at a new name or remove the old store.") from exc
        except Exception as exc:
            raise MemoryStoreError(f"cannot open collection {name!r} ({type(exc).__name__}: {exc})") from exc

    def __repr__(self) -> str:
        where = self.url or (f"{self.path} served at {self.served.url}" if self.served else self.path)
        return f"MemoryService({where}, collection={self.name!r})"

    # ---------------------------------------------------------------- low-level reads

    @staticmethod
    def _get(col, ids: Sequence[str] | None = None, where=None, where_document=None,
             include: Sequence[str] = ("metadatas", "documents")) -> dict[str, list]:
        """A Chroma ``get``: ids matching a filter in one call (cheap), then records by id in chunks
        (SQLite caps the variables of one statement, and an offset would re-run the filter per chunk)."""
        if ids is None:
            ids = col.get(where=where, where_document=where_document, include=[])["ids"]
            where = where_document = None
            if not include:
                return {"ids": list(ids), "metadatas": [None] * len(ids), "documents": [None] * len(ids)}
        out: dict[str, list] = {"ids": [], "metadatas": [], "documents": []}
        for start in range(0, len(ids), _GET_CHUNK):
            part = col.get(ids=list(ids[start:start + _GET_CHUNK]), where=where, where_document=where_document,
                           include=list(include))
            n = len(part["ids"])
            out["ids"].extend(part["ids"])
            for key in ("metadatas", "documents"):
                out[key].extend(part.get(key) or [None] * n)
        return out

    def _count_where(self, col, where, where_document=None) -> int:
        if where is None and where_document is None:
            return col.count()
        return len(self._get(col, where=where, where_document=where_document, include=())["ids"])

    # ---------------------------------------------------------------- writing engrams

    def _prepare(self, turn: Mapping[str, Any], label: str) -> tuple[str, str, dict[str, Any]]:
        query = _text(turn.get("query"), f"{label}query")
        answer = _text(turn.get("answer", ""), f"{label}answer", empty_ok=True)
        session_id = _text(turn.get("session_id", ""), f"{label}session_id", empty_ok=True)
        query_id = turn.get("query_id") or str(uuid.uuid4())
        query_id = _text(query_id, f"{label}query_id")
        ts = turn.get("timestamp")
        ts = time.time() if ts is None else check_timestamp(ts, f"{label}timestamp")
        extra = _flat_metadata(turn.get("metadata") or {}, f"{label}metadata")
        bad = sorted(k for k in extra if memory_owned(k))
        if bad:
            raise ValueError(f"{label}metadata: {', '.join(bad)} are set by the memory itself")
        meta = {**extra, "type": "episodic", "query": query, "session_id": session_id, "timestamp": ts,
                "answer_start": len(query) + 2, "critic_score": UNGRADED, **time_keys(UNGRADED, ts),
                **_no_trust(), **{k: None for k in HUMAN_KEYS}}   # None: Chroma deletes a person's old verdict
        return query_id, _document(query, answer), meta

    def already_stored(self, turns: Sequence[tuple[str, str, str]]) -> set[str]:
        """The ids of ``(query_id, query, answer)`` turns stored with this very text, as an engram or in the
        quarantine: a replayed message (nothing to do, and the coherence hook must not judge a turn a second
        time) as opposed to a rewrite of the turn."""
        wanted = {qid: _document(query, answer) for qid, query, answer in turns}
        if not wanted:
            return set()
        same: set[str] = set()
        for col in (self._engrams, self._quarantine):
            got = self._get(col, list(wanted), include=("documents",))
            same.update(i for i, doc in zip(got["ids"], got["documents"]) if doc == wanted[i])
        return same

    def write_episodic(self, query: str, answer: str, session_id: str, query_id: str | None = None,
                       *, timestamp: float | None = None, **meta: Any) -> str:
        """Store one turn with id ``query_id`` (uuid4 when absent) and return the id.

        Writing an id that exists replaces the turn's text and metadata; with the same text it keeps
        its ``critic_*`` keys (a replayed turn must not erase its score), with another answer it starts
        ungraded. A critique parked for this id is applied now if it judged this text.
        """
        return self.write_episodic_many([{"query": query, "answer": answer, "session_id": session_id,
                                          "query_id": query_id, "timestamp": timestamp, "metadata": meta}])[0]

    def write_episodic_many(self, turns: Iterable[Mapping[str, Any]]) -> list[str]:
        """Batch form of :meth:`write_episodic`: one embedding pass and a few Chroma calls per batch.

        Each turn is a mapping with query, answer, session_id and optional query_id,
        timestamp and metadata. Bad turns raise before anything is written.
        """
        prepared: dict[str, tuple[str, dict[str, Any]]] = {}
        order: list[str] = []
        for i, turn in enumerate(turns):
            if not isinstance(turn, Mapping):
                raise ValueError(f"turn {i}: expected a mapping, got {type(turn).__name__}")
            qid, doc, meta = self._prepare(turn, f"turn {i}: ")
            prepared[qid] = (doc, meta)
            order.append(qid)
        ids = list(prepared)
        for start in range(0, len(ids), self.write_batch):
            self._write_batch(ids[start:start + self.write_batch], prepared)
        return order

    def _write_batch(self, ids: list[str], prepared: dict[str, tuple[str, dict[str, Any]]]) -> None:
        old = self._get(self._engrams, ids)
        old_by_id = {i: (d, m or {}) for i, d, m in zip(old["ids"], old["documents"], old["metadatas"])}
        parked = self._get(self._pending, ids)
        parked_by_id = {i: m or {} for i, m in zip(parked["ids"], parked["metadatas"])}
        new_ids, new_docs, new_metas, same_ids, same_metas = [], [], [], [], []
        for qid in ids:
            doc, meta = prepared[qid]
            meta = dict(meta)
            # A grade belongs to the answer it judged: a rewrite with another answer starts ungraded (the
            # pending grader asks for it), and a parked grade of another answer is dropped.
            if qid in old_by_id and old_by_id[qid][0] == doc:
                meta.update({k: v for k, v in old_by_id[qid][1].items() if k.startswith(CRITIC_PREFIX)})
            elif qid in old_by_id:     # None: Chroma deletes the old answer's grade keys
                meta.update({k: None for k in old_by_id[qid][1] if k.startswith(CRITIC_PREFIX) and k not in meta})
            if qid in parked_by_id and _judged_this(parked_by_id[qid], doc):
                meta.update({k: v for k, v in parked_by_id[qid].items() if k.startswith(CRITIC_PREFIX)})
            meta.update(time_keys(int(meta.get("critic_score", UNGRADED)), meta["timestamp"]))
            if qid in old_by_id and old_by_id[qid][0] == doc:    # same text: its Trust Score and verdicts hold
                meta.update({k: v for k, v in old_by_id[qid][1].items() if k.startswith((TRUST_PREFIX, HUMAN_PREFIX))})
                same_ids.append(qid)
                same_metas.append(meta)
            else:
                new_ids.append(qid)
                new_docs.append(doc)
                new_metas.append(meta)
        if new_ids:
            self._engrams.upsert(ids=new_ids, documents=new_docs, metadatas=new_metas)
        if same_ids:
            self._engrams.update(ids=same_ids, metadatas=same_metas)
        if parked_by_id:
            self._pending.delete(ids=list(parked_by_id))   # applied, or a grade of another answer

    # ---------------------------------------------------------------- scores and pending critiques

    @staticmethod
    def _critique_meta(score: Any, feedback: Any, meta: Mapping[str, Any]) -> dict[str, Any]:
        out = {_critic_key(k): v for k, v in _flat_metadata(meta, "critique").items()}
        out.update({"critic_score": validate_score(score), "critic_feedback": _text(feedback, "feedback", empty_ok=True),
                    "critic_graded_at": time.time()})
        return out

    def update_engram_score(self, query_id: str, score: int, feedback: str = "", **meta: Any) -> bool:
        """Merge ``critic_score`` (int 1-5), ``critic_feedback`` and ``critic_<key>`` for each extra
        key into the engram's metadata; no key is dropped.

        Returns False (and logs) when no engram has this id yet; bad scores raise ValueError.
        """
        applied = self.apply_scores([{"query_id": query_id, "score": score, "feedback": feedback, **meta}])[0]
        if not applied:
            log.warning("memory: no engram %s; its score was not applied", query_id)
        return applied

    def apply_scores(self, critiques: Sequence[Mapping[str, Any]]) -> list[bool]:
        """Batch form of :meth:`update_engram_score`: one read and one write; later items win.

        A critique carrying ``answer_digest`` (:func:`cns_core.engrams.answer_digest` of the text it judged)
        is applied only to an engram holding that text; see :meth:`record_critiques`."""
        return [outcome == "applied" for outcome in self._apply_scores(critiques)]

    def _apply_scores(self, critiques: Sequence[Mapping[str, Any]]) -> list[str]:
        """"applied", "missing" (no engram has the id) or "stale" (the engram holds another answer) each."""
        merged: dict[str, dict[str, Any]] = {}
        for i, item in enumerate(critiques):
            extra = {k: v for k, v in item.items() if k not in ("query_id", "score", "feedback")}
            qid = _text(item.get("query_id"), f"critique {i}: query_id")
            try:
                merged[qid] = self._critique_meta(item.get("score"), item.get("feedback", ""), extra)
            except ValueError as exc:
                raise ValueError(f"critique {i} ({qid}): {exc}") from None
        if not merged:
            return []
        found = self._get(self._engrams, list(merged), include=("metadatas", "documents"))
        ids, metas, stale = [], [], set()
        for qid, meta, doc in zip(found["ids"], found["metadatas"], found["documents"]):
            if not _judged_this(merged[qid], doc):
                stale.add(qid)
                continue
            # Only the grade's own keys are written (Chroma merges them into the record): another process's
            # concurrent write of other keys (a Trust Score, a person's verdict) is never overwritten.
            ids.append(qid)
            metas.append({**merged[qid], **time_keys(merged[qid]["critic_score"], float((meta or {}).get("timestamp", 0.0)))})
        if ids:
            self._engrams.update(ids=ids, metadatas=metas)
        applied = set(ids)
        return ["applied" if item["query_id"] in applied else "stale" if item["query_id"] in stale else "missing"
                for item in critiques]

    def record_trust(self, trust: Mapping[str, Mapping[str, Any]]) -> list[str]:
        """Replace each engram's ``trust_*`` metadata (query id -> keys from ``TRUST_KEYS``; a key
        left out is deleted). One read and one write; returns the ids updated (unknown ids, e.g. a
        turn quarantined meanwhile, are skipped). Bad values raise ValueError naming the field."""
        clean: dict[str, dict[str, Any]] = {}
        for qid, keys in trust.items():
            qid = _text(qid, "trust: query_id")
            flat = _flat_metadata(keys, f"trust[{qid}]")
            unknown = sorted(set(flat) - set(TRUST_KEYS))
            if unknown:
                raise ValueError(f"trust[{qid}]: unknown key(s) {', '.join(unknown)} (known: {', '.join(TRUST_KEYS)})")
            score = flat.get("trust_score", UNTRUSTED)
            if score != UNTRUSTED:
                validate_trust(score, f"trust[{qid}].trust_score")
            clean[qid] = {**_no_trust(), "trust_verdict": NO_VERDICT, **flat, "trust_score": float(score)}
        if not clean:
            return []
        found = self._get(self._engrams, list(clean), include=())
        if found["ids"]:     # the trust keys alone (None deletes one): nothing else of the record is rewritten
            self._engrams.update(ids=found["ids"], metadatas=[clean[i] for i in found["ids"]])
        return list(found["ids"])

    def record_annotations(self, annotations: Sequence[Annotation], at: float | None = None) -> list[str]:
        """Store people's verdicts (:class:`cns_core.engrams.Annotation`) on their engrams: every id
        must name an engram, else UnknownEngramError naming them and nothing is written; then one read
        and one write. A later verdict on the same engram replaces the earlier one (all ``human_*`` keys)."""
        annotations = list(annotations)
        bad = [a for a in annotations if not isinstance(a, Annotation)]
        if bad:
            raise ValueError(f"annotations: expected Annotation objects, got {type(bad[0]).__name__}")
        by_id = {a.id: a for a in annotations}
        if not by_id:
            return []
        found = self._get(self._engrams, list(by_id), include=())
        known = set(found["ids"])
        missing = [i for i in by_id if i not in known]
        if missing:
            shown = ", ".join(map(repr, missing[:5])) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
            raise UnknownEngramError(f"id: no engram has the id {shown}; nothing was written")
        stamp = time.time() if at is None else check_timestamp(at, "at")
        self._engrams.update(ids=found["ids"], metadatas=[by_id[i].metadata(stamp) for i in found["ids"]])
        return list(found["ids"])

    def turn_ids(self, query: str, answer: str) -> list[str]:
        """The ids of the engrams holding this very question and answer (a comparison reuses them)."""
        document = _document(_text(query, "question"), _text(answer, "answer"))
        got = self._get(self._engrams, where={"query": query}, include=("documents",))
        return sorted(i for i, doc in zip(got["ids"], got["documents"]) if doc == document)

    def record_pair_win(self, winner_id: str, loser_id: str) -> None:
        """Keep the judge's comparison of two answers to the same question on their engrams
        (``critic_pair_wins``, :func:`cns_core.memory.preferences.with_pair_win`): preference pairs choose
        its winner. Both must be engrams of the same question, else an error naming the problem and
        nothing written. The key is a grade's: a rewrite of either answer with another text drops it."""
        from cns_core.engrams import question_key
        from cns_core.memory.preferences import PAIR_KEY, with_pair_win

        winner_id, loser_id = _text(winner_id, "winner id"), _text(loser_id, "loser id")
        if winner_id == loser_id:
            raise ValueError(f"loser id: {loser_id!r} is the winner itself; a comparison needs two answers")
        found = {e.id: e for e in self.get([winner_id, loser_id])}
        missing = [i for i in (winner_id, loser_id) if i not in found]
        if missing:
            raise UnknownEngramError(f"id: no engram has the id {', '.join(map(repr, missing))}; nothing was written")
        winner, loser = found[winner_id], found[loser_id]
        if question_key(winner.query) != question_key(loser.query):
            raise ValueError(f"the two answers answer different questions ({winner.query[:60]!r} and "
                             f"{loser.query[:60]!r}); a comparison is kept only between answers to the same question")
        wins, kept = with_pair_win(winner, loser)
        self._engrams.update(ids=[winner_id, loser_id], metadatas=[{PAIR_KEY: wins}, {PAIR_KEY: kept or None}])

    def unknown_ids(self, ids: Sequence[str]) -> list[str]:
        """Those of ``ids`` that name no engram (in the order given): one cheap read, nothing written."""
        ids = [_text(i, "ids[]") for i in ids]
        known = set(self._get(self._engrams, list(dict.fromkeys(ids)), include=())["ids"]) if ids else set()
        return [i for i in ids if i not in known]

    def trust_settings_of(self, ids: Sequence[str] | None = None) -> dict[str, str]:
        """``trust_settings`` of the engrams that hold a Trust Score (all, or these ids): what the
        backfill compares with its own settings to skip work already done."""
        where = {"trust_score": {"$gte": 0.0}}
        got = self._get(self._engrams, list(ids), where=where, include=("metadatas",)) if ids is not None else \
            self._get(self._engrams, where=where, include=("metadatas",))
        return {i: str((m or {}).get("trust_settings", "")) for i, m in zip(got["ids"], got["metadatas"])}

    def park_critique(self, query_id: str, score: int, feedback: str = "", **meta: Any) -> None:
        """Keep a critique whose engram is not written yet; :meth:`write_episodic` applies it."""
        self.park_critiques([{"query_id": query_id, "score": score, "feedback": feedback, **meta}])

    def park_critiques(self, critiques: Sequence[Mapping[str, Any]]) -> None:
        parked: dict[str, dict[str, Any]] = {}
        for i, item in enumerate(critiques):
            qid = _text(item.get("query_id"), f"critique {i}: query_id")
            extra = {k: v for k, v in item.items() if k not in ("query_id", "score", "feedback")}
            parked[qid] = self._critique_meta(item.get("score"), item.get("feedback", ""), extra)
            parked[qid].update({"query_id": qid, "parked_at": time.time()})
        ids, metas = list(parked), list(parked.values())
        if ids:
            self._pending.upsert(ids=ids, embeddings=[self._placeholder()] * len(ids), metadatas=metas,
                                 documents=[m["critic_feedback"] for m in metas])

    def record_critiques(self, critiques: Sequence[Mapping[str, Any]]) -> list[str]:
        """Apply each critique to its engram, or park it when the engram is not there yet.

        Returns "applied", "pending" (parked) or "stale" per critique: a stale critique judged another answer
        than the engram holds now (two turns sharing a query id); it is not stored, and the engram's own answer
        stays ungraded until the judge grades it. This is what MemoryAgent calls.
        """
        outcomes = self._apply_scores(critiques)
        waiting = [c for c, outcome in zip(critiques, outcomes) if outcome == "missing"]
        if waiting:
            self.park_critiques(waiting)
            log.info("memory: %d critique(s) arrived before their engrams; parked", len(waiting))
        stale = [c["query_id"] for c, outcome in zip(critiques, outcomes) if outcome == "stale"]
        if stale:
            log.info("memory: %d grade(s) judged another answer than their engram holds now (%s); not stored",
                     len(stale), ", ".join(map(str, stale[:3])))
        return ["pending" if outcome == "missing" else outcome for outcome in outcomes]

    def pending_critiques(self) -> list[dict[str, Any]]:
        """Every parked critique's metadata (score, feedback, query_id, parked_at, ...)."""
        return [m for m in self._get(self._pending, include=("metadatas",))["metadatas"] if m]

    def apply_pending(self) -> int:
        """Apply parked critiques whose engrams now exist (after a crash between write and apply)."""
        parked = self._get(self._pending, include=("metadatas",))
        if not parked["ids"]:
            return 0
        present_docs = self._get(self._engrams, parked["ids"], include=("documents",))
        present = dict(zip(present_docs["ids"], present_docs["documents"]))
        items, damaged, stale = [], [], []
        for qid, meta in zip(parked["ids"], parked["metadatas"]):
            try:
                validate_score((meta or {}).get("critic_score"), f"parked critique {qid}: critic_score")
            except ValueError as exc:
                damaged.append((qid, meta, str(exc)))
                continue
            if qid in present and not _judged_this(meta or {}, present[qid]):
                stale.append(qid)      # a grade of an answer the engram no longer holds
            elif qid in present:
                items.append({k: v for k, v in meta.items() if k.startswith(CRITIC_PREFIX)} | {"query_id": qid})
        if damaged:
            self._set_aside_parked(damaged)
        if stale:
            self._pending.delete(ids=stale)
        if not items:
            return 0
        found = self._get(self._engrams, [i["query_id"] for i in items], include=("metadatas",))
        metas = []
        by_id = {i["query_id"]: i for i in items}
        for qid, meta in zip(found["ids"], found["metadatas"]):
            grade = {k: v for k, v in by_id[qid].items() if k != "query_id"}
            metas.append({**grade, **time_keys(int(grade["critic_score"]), float((meta or {}).get("timestamp", 0.0)))})
        self._engrams.update(ids=found["ids"], metadatas=metas)
        self._pending.delete(ids=found["ids"])
        return len(found["ids"])

    def _set_aside_parked(self, damaged: Sequence[tuple[str, Any, str]]) -> None:
        """Parked critiques that cannot be applied (a damaged score): kept in a file beside the store, named in
        the log, and taken out of the pending collection so they never block the others."""
        import json

        from cns_core.bounds import excerpt

        folder = self.path if self.path is not None else state_dir()
        kept = Path(folder) / f"parked_critiques.damaged-{time.strftime('%Y%m%d-%H%M%S')}.jsonl"
        with open(kept, "a", encoding="utf-8") as out:
            for qid, meta, problem in damaged:
                out.write(json.dumps({"query_id": qid, "problem": problem, "metadata": meta}, default=str) + "\n")
        self._pending.delete(ids=[qid for qid, _, _ in damaged])
        log.error("memory: %d parked critique(s) of %s could not be applied (%s); kept them in %s",
                  len(damaged), self, excerpt(damaged[0][2], 200), kept)

    def _placeholder(self) -> list[float]:
        """Pending critiques and quarantined turns are never searched by meaning: a fixed unit vector."""
        dim = int(getattr(get_embedder(), "dim", 384))
        return [1.0] + [0.0] * (dim - 1)

    # ---------------------------------------------------------------- reading

    def get(self, ids: Sequence[str]) -> list[Engram]:
        """The engrams with these ids, in the order asked; unknown ids are left out."""
        if isinstance(ids, str):
            raise ValueError("ids: expected a list of ids, got one string")
        ids = [_text(i, "ids[]") for i in ids]
        found = self._get(self._engrams, list(dict.fromkeys(ids)))
        by_id = {i: Engram.from_chroma(i, d, m) for i, d, m in zip(found["ids"], found["documents"], found["metadatas"])}
        return [by_id[i] for i in ids if i in by_id]

    def iter_engrams(self, chunk: int = 1000) -> Iterator[Engram]:
        """Every engram, oldest first, read in chunks (the ids and times first: cheap)."""
        stamps = self.timestamps(self.ids_matching(None, None))
        ids = sorted(stamps, key=lambda i: (stamps[i], i))
        for start in range(0, len(ids), chunk):
            yield from self.get(ids[start:start + chunk])

    def search_episodic(self, text: str, k: int = 5, where: Mapping[str, Any] | None = None) -> list[Engram]:
        """The ``k`` engrams nearest in meaning to ``text`` (optionally filtered by a Chroma ``where``)."""
        return self.search_episodic_many([text], k, where=where)[0]

    def search_episodic_many(self, texts: Sequence[str], k: int = 5, where: Mapping[str, Any] | None = None,
                             embeddings: Any = None) -> list[list[Engram]]:
        """:meth:`search_episodic` for many texts in one Chroma query; ``embeddings`` (one row per
        text, from the same embedder) skips encoding them again."""
        if isinstance(texts, str):
            raise ValueError("texts: expected a list of texts, got one string")
        texts = [_text(t, "text") for t in texts]
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"k: expected a positive integer, got {k!r}")
        # No {"type": "episodic"} clause here: this collection holds nothing else ("type" is reserved;
        # pending critiques and the quarantine have their own collections), and a metadata filter
        # makes Chroma's query about 4x slower -- the coherence hook runs this before every write.
        return self._nearest(texts, k, and_clauses([dict(where)] if where else []), None, embeddings)

    def _nearest(self, texts: Sequence[str], k: int, where, where_document, embeddings: Any = None) -> list[list[Engram]]:
        total = self._engrams.count()
        if total == 0 or not texts:
            return [[] for _ in texts]
        query: dict[str, Any] = {"query_texts": list(texts)}
        if embeddings is not None:
            rows = [list(map(float, row)) for row in embeddings]
            if len(rows) != len(texts):
                raise ValueError(f"embeddings: {len(rows)} rows for {len(texts)} texts")
            query = {"query_embeddings": rows}
        res = self._engrams.query(**query, n_results=min(k, total), where=where, where_document=where_document,
                                  include=["metadatas", "documents", "distances"])
        return [[Engram.from_chroma(i, d, m, dist, self.similarity(dist)) for i, d, m, dist in zip(ids, docs, metas, dists)]
                for ids, docs, metas, dists in zip(res["ids"], res["documents"], res["metadatas"], res["distances"])]

    def similarity(self, distance: float | None) -> float | None:
        """Cosine similarity from the store's distance (the embeddings are unit vectors): ``cosine`` and
        ``ip`` distances are ``1 - cos``, ``l2`` is the squared distance ``2 - 2 cos``."""
        if distance is None:
            return None
        cos = 1.0 - float(distance) / 2.0 if self._space == "l2" else 1.0 - float(distance)
        return max(-1.0, min(1.0, cos))

    # ---------------------------------------------------------------- recall

    @property
    def recall_settings(self):
        """``recall`` of memory.yaml, read once per service (:mod:`cns_core.memory.recall`)."""
        from cns_core.memory.recall import RecallSettings

        if self._recall is None:
            self._recall = RecallSettings.from_config(self._recall_cfg)
        return self._recall

    def recall(self, query: str, k: int = 5, *, include_wrong: bool = False) -> list:
        """The ``k`` answers a generator should recall for ``query``: the nearest by meaning, re-ranked by how
        right each was judged (:mod:`cns_core.memory.recall`), each with the reasons of its place. Answers
        judged incorrect and quarantined turns are left out unless ``include_wrong`` (then marked).
        A bad query or k raises ValueError naming it, before anything is embedded."""
        from cns_core.memory.recall import check_recall_request, rank

        settings = self.recall_settings
        query, k = check_recall_request(query, k, settings)
        embedding = get_embedder().encode([query])
        hits = self._nearest([query], max(k, settings.candidates), None, None, embedding)[0]
        candidates = [(e, float(e.similarity), False) for e in hits
                      if e.similarity is not None and e.similarity >= settings.min_similarity]
        if include_wrong and settings.quarantine_scan:
            candidates += self._quarantined_near(embedding[0], settings)
        return rank(candidates, k, settings, include_wrong=include_wrong)

    def _quarantined_near(self, query_vector: Any, settings: Any) -> list:
        """Quarantined turns (kept without a searchable vector: the quarantine stays small) compared with the
        question directly; the ``quarantine_scan`` most recently blocked."""
        import numpy as np

        rows = self.list_quarantined(limit=settings.quarantine_scan)
        if not rows:
            return []
        vectors = np.asarray(get_embedder().encode([f"{e.query}\n\n{e.answer}" for e in rows]), dtype=float)
        sims = vectors @ np.asarray(query_vector, dtype=float)
        return [(e, float(s), True) for e, s in zip(rows, sims) if s >= settings.min_similarity]

    # ---------------------------------------------------------------- browsing

    def _pager(self, filters: EngramFilters, newest_first: bool) -> TimePager:
        return TimePager(self, filters, newest_first, first_step_s=self.first_step_s, band_slack=self.band_slack,
                         direct_limit=self.direct_limit)

    # EngramSource, for TimePager
    def ids_matching(self, where, where_document) -> list[str]:
        return self._get(self._engrams, where=where, where_document=where_document, include=())["ids"]

    def timestamps(self, ids: Sequence[str]) -> dict[str, float]:
        got = self._get(self._engrams, list(ids), include=("metadatas",))
        return {i: float((m or {}).get("timestamp", 0.0)) for i, m in zip(got["ids"], got["metadatas"])}

    def fetch(self, ids: Sequence[str]) -> list[Engram]:
        return self.get(ids)

    def size(self) -> int:
        return self._engrams.count()

    def lower_bound(self) -> float | None:
        """A time just before the oldest engram: the oldest of a few engrams sampled across the
        insertion order, stepped back until nothing is older, then bisected up while few are older.
        Cached while the store grows by less than a tenth (a stale value only costs speed)."""
        size = self._engrams.count()
        if size == 0:
            return None
        cached = getattr(self, "_lower_bound", None)
        if cached is not None and abs(size - cached[1]) <= size // 10:
            return cached[0]
        stamps = []
        for offset in sorted({0, *(size * k // 8 for k in range(1, 8))}):
            metas = self._engrams.get(limit=1, offset=offset, include=["metadatas"]).get("metadatas") or []
            stamps += [float(m["timestamp"]) for m in metas if m and isinstance(m.get("timestamp"), (int, float))]
        if not stamps:
            return None

        def older(t: float) -> int:      # costs in proportion to the answer, which stays small here
            return len(self._engrams.get(where={"timestamp": {"$lt": t}}, include=[])["ids"])

        low = high = min(stamps)
        n_high, back = older(high), max(60.0, time.time() - high)
        while low > 0 and older(low):
            low, back = max(0.0, high - back), back * 4
        for _ in range(40):             # older(low) == 0; narrow until a handful are older than high
            if high - low < 1.0 or n_high <= self.band_slack:
                break
            mid = (low + high) / 2
            n_mid = older(mid)
            if n_mid:
                high, n_high = mid, n_mid
            else:
                low = mid
        self._lower_bound = (low, size)
        return low

    def count(self, filters: EngramFilters | None = None) -> int:
        """How many engrams ``browse`` can page through with these filters."""
        filters = filters or EngramFilters()
        where = and_clauses(range_clauses(filters, None, None))
        if filters.similar_to:
            return len(self._semantic_hits(filters))
        return self._count_where(self._engrams, where, filters.where_document())

    def browse(self, filters: EngramFilters | None = None, offset: int = 0, limit: int = 50,
               order: str = "newest") -> list[Engram]:
        """One page of engrams: ``order`` is newest | oldest | score (best first, then newest,
        ungraded last) | relevance (needs ``filters.similar_to``)."""
        filters = filters or EngramFilters()
        if not isinstance(filters, EngramFilters):
            raise ValueError(f"filters: expected EngramFilters, got {type(filters).__name__}")
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ValueError(f"offset: expected an integer >= 0, got {offset!r}")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= self.max_limit:
            raise ValueError(f"limit: expected an integer 1-{self.max_limit}, got {limit!r}")
        if order not in ORDERS:
            raise ValueError(f"order: expected one of {', '.join(ORDERS)}, got {order!r}")
        if order == "relevance" and not filters.similar_to:
            raise ValueError("order 'relevance' needs a semantic text search (filters.similar_to)")
        if filters.similar_to:
            return self._browse_semantic(filters, offset, limit, order)
        if order == "score":
            return self._browse_by_score(filters, offset, limit)
        return self._pager(filters, order == "newest").page(offset, limit)

    def _semantic_hits(self, filters: EngramFilters) -> list[Engram]:
        """The ``semantic_k`` nearest engrams that pass the filters and reach the similarity cut-off,
        most similar first."""
        where = and_clauses(range_clauses(filters, None, None))
        hits = self._nearest([filters.similar_to or ""], self.semantic_k, where, filters.where_document())[0]
        cut = self.min_similarity if filters.min_similarity is None else filters.min_similarity
        return [h for h in hits if h.similarity is not None and h.similarity >= cut]

    def _browse_semantic(self, filters: EngramFilters, offset: int, limit: int, order: str) -> list[Engram]:
        hits = self._semantic_hits(filters)
        if order == "newest":
            hits.sort(key=lambda e: (-e.timestamp, e.id))
        elif order == "oldest":
            hits.sort(key=lambda e: (e.timestamp, e.id))
        elif order == "score":
            hits.sort(key=lambda e: (-(e.critic_score or 0), -e.timestamp, e.id))
        return hits[offset:offset + limit]

    def _browse_by_score(self, filters: EngramFilters, offset: int, limit: int) -> list[Engram]:
        out: list[Engram] = []
        for s in filters.buckets or SCORE_BUCKETS:
            bucket = replace(filters, min_score=s if s > 0 else None, max_score=s if s > 0 else None,
                             ungraded_only=s == UNGRADED)
            pager = self._pager(bucket, newest_first=True)
            rows = pager.page(offset, limit - len(out))
            out.extend(rows)
            if len(out) >= limit:
                break
            offset = max(0, offset - pager.total())
        return out

    # ---------------------------------------------------------------- quarantine

    def write_quarantined(self, query: str, answer: str, session_id: str, query_id: str | None = None,
                          *, timestamp: float | None = None, reason: str = "", **meta: Any) -> str:
        """Keep a turn the coherence hook blocked, out of the engrams, until released or discarded."""
        qid, doc, m = self._prepare({"query": query, "answer": answer, "session_id": session_id,
                                     "query_id": query_id, "timestamp": timestamp, "metadata": meta}, "")
        m = {k: v for k, v in m.items() if not k.startswith((TRUST_PREFIX, HUMAN_PREFIX))}   # a blocked turn is not scored
        m.update({"type": "quarantined", "quarantine_reason": _text(reason, "reason", empty_ok=True),
                  "quarantined_at": time.time()})
        self._quarantine.upsert(ids=[qid], documents=[doc], metadatas=[m], embeddings=[self._placeholder()])
        return qid

    def count_quarantined(self) -> int:
        return self._quarantine.count()

    def count_released(self) -> int:
        """Engrams the coherence hook blocked and a later re-check released (they carry ``released_at``)."""
        return self._count_where(self._engrams, {"released_at": {"$gt": 0}})

    def list_quarantined(self, offset: int = 0, limit: int | None = None) -> list[Engram]:
        """Quarantined turns, most recently blocked first (the quarantine stays small); all by default."""
        got = self._get(self._quarantine)
        rows = [Engram.from_chroma(i, d, m) for i, d, m in zip(got["ids"], got["documents"], got["metadatas"])]
        rows.sort(key=lambda e: (-float(e.metadata.get("quarantined_at", 0.0)), e.id))
        return rows[offset:] if limit is None else rows[offset:offset + limit]

    def release_quarantined(self, query_id: str) -> str:
        """Move a quarantined turn into the engrams (a critique parked for it is applied)."""
        got = self._get(self._quarantine, [_text(query_id, "query_id")])
        if not got["ids"]:
            raise UnknownEngramError(f"query_id {query_id!r}: no quarantined turn has this id")
        engram = Engram.from_chroma(got["ids"][0], got["documents"][0], got["metadatas"][0])
        keep = {k: v for k, v in engram.metadata.items()
                if not memory_owned(k) and k != "quarantined_at"}
        keep["released_at"] = time.time()
        self.write_episodic_many([{"query": engram.query, "answer": engram.answer, "session_id": engram.session_id,
                                   "query_id": engram.id, "timestamp": engram.timestamp, "metadata": keep}])
        self._quarantine.delete(ids=[engram.id])
        return engram.id

    def discard_quarantined(self, query_id: str) -> None:
        """Drop a quarantined turn for good."""
        if not self._get(self._quarantine, [_text(query_id, "query_id")], include=())["ids"]:
            raise UnknownEngramError(f"query_id {query_id!r}: no quarantined turn has this id")
        self._quarantine.delete(ids=[query_id])


