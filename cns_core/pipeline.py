"""The critic pipeline: run the five critics, cache their results, weigh them into a Trust Score.

* Critics run in parallel daemon threads with one deadline (``timeout_s``; when not given,
  sized to the SNO by ``config/pipeline.yaml``: :class:`TimeLimit`). A critic that
  raises, times out or returns an out-of-range score becomes
  ``CriticResult.failed(name, reason)``; :func:`cns_core.scoring.weigh` then leaves it out
  and redistributes its weight, flagged in ``WeightedScore.left_out``. A timed-out thread
  cannot be killed, but at the deadline its model calls are told to stop at their next batch
  (:mod:`cns_core.models.cancel`), so it frees the models and the cores for the next SNO; being
  a daemon it never blocks the process from exiting, and a late result is dropped.
* Successful results are cached in an LRU of SNOs (``cache_size`` SNOs, by content hash);
  within an SNO each result is keyed by the critic's ``config_key()`` and a fingerprint of
  what the critic ``requires`` besides the SNO (the NLI backend, the embedder, the novelty
  population with the SNO's own embedding), keeping the latest ``_VARIANTS_PER_SNO``. A
  critic without a ``requires`` attribute is keyed on all of them. Failures are never cached;
  abstentions (a critic with nothing to judge) are, like scores.
* Re-weighting is pure: :meth:`Evaluation.reweighted` calls ``weigh`` on the results it
  already holds, so moving a weight never re-runs a critic.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterable, Mapping

import numpy as np

from cns_core.config import ConfigError, config_file, config_mapping, config_number, load_config
from cns_core.critics import default_critics
from cns_core.critics.base import Critic, CriticContext, CriticResult, abstentions
from cns_core.models.cancel import cancellable
from cns_core.scoring import WeightedScore, load_profiles, weigh
from cns_core.sno import SNO

__all__ = ["TimeLimit", "CriticPipeline", "CriticStats", "Evaluation", "default_critics", "resolve_weights"]

_ALL_RESOURCES = frozenset({"nli", "embedder", "population"})
_VARIANTS_PER_SNO = 32   # results kept per SNO across settings, backends and populations


@dataclass(frozen=True)
class CriticStats:
    """Runs of one critic (cache hits not counted as runs): ``mean_score`` over the runs that judged;
    ``abstentions`` counts the runs with nothing to judge (neither a score nor a failure)."""

    count: int = 0
    mean_score: float = 0.0
    mean_latency_s: float = 0.0
    failures: int = 0
    cache_hits: int = 0
    abstentions: int = 0


@lru_cache(maxsize=4)
def _profiles_as_of(path: str, stamp: int | None) -> dict[str, dict[str, float]]:
    return load_profiles()


def _profiles() -> dict[str, dict[str, float]]:
    """The profiles, re-read only when ``profiles.yaml`` changes (a slider move must stay cheap)."""
    path = config_file("profiles.yaml")
    try:
        stamp: int | None = path.stat().st_mtime_ns
    except OSError:
        stamp = None
    return _profiles_as_of(str(path), stamp)


def resolve_weights(weights: str | Mapping[str, float]) -> tuple[dict[str, float], str | None]:
    """A profile name from ``config/profiles.yaml`` or explicit weights -> (weights, profile name or None)."""
    if isinstance(weights, str):
        profiles = _profiles()
        if weights not in profiles:
            raise ValueError(f"unknown weight profile {weights!r} (known: {', '.join(profiles)})")
        return dict(profiles[weights]), weights
    resolved: dict[str, float] = {}
    for name, value in weights.items():
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"weights: {name}={value!r} is not a number") from None
        if not math.isfinite(number) or number < 0:
            raise ValueError(f"weights: {name} must be a finite number >= 0 (got {value!r})")
        resolved[str(name)] = number
    return resolved, None


@dataclass(frozen=True)
class Evaluation:
    """All critic results for one SNO and their weighted Trust Score under ``profile``."""

    sno_id: str
    sno_hash: str
    results: dict[str, CriticResult]
    score: WeightedScore
    profile: str | None = None

    @property
    def trust_score(self) -> float:
        return self.score.trust_score

    @property
    def failed(self) -> tuple[str, ...]:
        return tuple(name for name, r in self.results.items() if r.broke)

    @property
    def not_applicable(self) -> dict[str, str]:
        """Critic -> why it abstained (nothing to judge); such a critic leaves the score complete."""
        return abstentions(self.results)

    @property
    def complete(self) -> bool:
        """False when any critic failed or timed out: the Trust Score then misses that part."""
        return not self.failed

    def reweighted(self, weights: str | Mapping[str, float]) -> "Evaluation":
        """The same results under other weights; pure, runs no critic."""
        resolved, profile = resolve_weights(weights)
        return dataclasses.replace(self, score=weigh(self.results, resolved), profile=profile)


def _backend_fingerprint(backend: Any) -> str:
    if backend is None:
        return "unavailable"
    kind = type(backend)
    return (f"{kind.__module__}.{kind.__qualname__}:{getattr(backend, 'name', '')}:"
            f"{getattr(backend, 'model_name', '')}:{id(backend):x}")


def _population_fingerprint(sno: SNO, context: CriticContext) -> str:
    digest = hashlib.blake2b(digest_size=16)
    known = context.extra.get("population_fingerprint")
    if known is not None:
        digest.update(f"given:{known}".encode())
    elif context.population is not None:
        rows = np.ascontiguousarray(context.population, dtype=np.float32)
        digest.update(f"{rows.shape}".encode())
        digest.update(memoryview(rows).cast("B"))
    ids = context.extra.get("population_ids")
    if ids is not None:
        digest.update(json.dumps([str(i) for i in ids]).encode())
        digest.update(f"self:{sno.id}".encode())
    if sno.embedding:
        digest.update(np.asarray(sno.embedding, dtype=np.float32).tobytes())
    return digest.hexdigest()


def _checked(result: Any, name: str, latency: float) -> CriticResult:
    """The critic's result with its latency, or a failure saying what was wrong with it."""
    if not isinstance(result, CriticResult):
        return CriticResult.failed(name, f"returned {type(result).__name__}, not a CriticResult", latency)
    if not result.ok:
        return dataclasses.replace(result, critic=name, latency_s=latency)
    for field in ("score", "confidence"):
        value = getattr(result, field)
        if not isinstance(value, (int, float)) or not math.isfinite(value) or not 0.0 <= value <= 1.0:
            return CriticResult.failed(name, f"returned {field} {value!r} outside [0, 1]", latency)
    return dataclasses.replace(result, critic=name, latency_s=latency)


@dataclass(frozen=True)
class TimeLimit:
    """The default time limit of one SNO: it grows with the SNO's size (``config/pipeline.yaml``).

    A fixed 30 s cut off every SNO of a few thousand claims however healthy its critics; a
    limit that grows with claims and evidence still stops a stuck critic on a small SNO.
    """

    base_s: float = 30.0
    per_claim_s: float = 0.03
    per_evidence_s: float = 0.01
    max_s: float = 900.0

    @classmethod
    def from_config(cls, raw: Mapping[str, Any] | None = None) -> "TimeLimit":
        """Read ``time_limit`` of ``config/pipeline.yaml`` (or ``raw``); errors name the field."""
        section = config_mapping(raw if raw is not None else load_config("pipeline"), "time_limit",
                                 file="pipeline.yaml")
        unknown = sorted(set(section) - {f.name for f in dataclasses.fields(cls)})
        if unknown:
            raise ConfigError(f"pipeline.yaml: time_limit: unknown field(s) {unknown}")
        values = {f.name: config_number(section, f.name, file="pipeline.yaml", path="time_limit", default=f.default,
                                        low=0.0) for f in dataclasses.fields(cls)}
        if values["base_s"] <= 0 or values["max_s"] <= 0:
            raise ConfigError("pipeline.yaml: time_limit.base_s and time_limit.max_s: must be positive")
        return cls(**values)

    def for_sno(self, sno: SNO) -> float:
        """Seconds the critics of ``sno`` may take together."""
        sized = self.base_s + self.per_claim_s * len(sno.claims) + self.per_evidence_s * len(sno.evidence)
        return float(min(self.max_s, max(self.base_s, sized)))


class CriticPipeline:
    """Runs critics on SNOs with caching, timeouts and per-critic statistics. Thread-safe.

    ``cache_size`` is the number of SNOs whose results are kept (least recently used go first).
    """

    def __init__(self, critics: Iterable[Critic] | None = None, *, nli: Any = None, embedder: Any = None,
                 timeout_s: float | None = None, cache_size: int = 4096, time_limit: TimeLimit | None = None):
        chosen = list(critics) if critics is not None else default_critics()
        self.critics: dict[str, Critic] = {}
        for critic in chosen:
            if critic.name in self.critics:
                raise ValueError(f"two critics are named {critic.name!r}")
            self.critics[critic.name] = critic
        if timeout_s is not None and timeout_s <= 0:
            raise ValueError(f"timeout_s must be positive (got {timeout_s})")
        self.nli = nli
        self.embedder = embedder
        # None: each SNO gets the limit its size calls for (TimeLimit, config/pipeline.yaml)
        self.timeout_s = None if timeout_s is None else float(timeout_s)
        self.time_limit = time_limit or (TimeLimit.from_config() if timeout_s is None else TimeLimit())
        self.cache_size = int(cache_size)
        self._cache: OrderedDict[str, OrderedDict[tuple, CriticResult]] = OrderedDict()
        self._requirements = {name: frozenset(getattr(c, "requires", _ALL_RESOURCES))
                              for name, c in self.critics.items()}
        self._needs = frozenset().union(*self._requirements.values())
        self._defaults: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._runs: dict[str, list[float]] = {name: [0, 0, 0.0, 0.0, 0, 0, 0] for name in self.critics}
        # per critic: runs, ok runs, score sum, latency sum, failures, cache hits, abstentions

    def limit_for(self, sno: SNO) -> float:
        """The time limit of ``sno``: the fixed ``timeout_s`` if one was given, else sized to the SNO."""
        return self.timeout_s if self.timeout_s is not None else self.time_limit.for_sno(sno)

    # ----- context and cache keys ---------------------------------------------
    def _context(self, context: CriticContext | None) -> CriticContext:
        """The caller's context with the pipeline's backends filled in (the configured defaults last)."""
        ctx = context or CriticContext()
        nli = ctx.nli if ctx.nli is not None else self.nli
        embedder = ctx.embedder if ctx.embedder is not None else self.embedder
        if nli is None and "nli" in self._needs:
            nli = self._default("nli")
        if embedder is None and self._needs & {"embedder", "population"}:
            embedder = self._default("embedder")
        return dataclasses.replace(ctx, nli=nli, embedder=embedder)

    def _default(self, kind: str) -> Any:
        """The configured backend (resolved once per pipeline), or None when it cannot be built:
        the critics needing it then fail on their own, with the reason."""
        from cns_core.models import get_embedder, get_nli_backend

        if kind not in self._defaults:
            try:
                self._defaults[kind] = get_nli_backend() if kind == "nli" else get_embedder()
            except Exception:
                return None
        return self._defaults[kind]

    def _keys(self, context: CriticContext, population: str | None) -> dict[str, tuple]:
        """Each critic's cache key within an SNO: its settings and what it requires."""
        nli, embedder = _backend_fingerprint(context.nli), _backend_fingerprint(context.embedder)
        keys = {}
        for name, critic in self.critics.items():
            needs = self._requirements[name]
            keys[name] = (name, critic.config_key(), nli if "nli" in needs else "",
                          embedder if needs & {"embedder", "population"} else "",
                          population if "population" in needs else "")
        return keys

    # ----- running --------------------------------------------------------------
    def _record(self, name: str, result: CriticResult) -> None:
        runs = self._runs.setdefault(name, [0, 0, 0.0, 0.0, 0, 0, 0])
        runs[0] += 1
        runs[3] += result.latency_s
        if result.ok:
            runs[1] += 1
            runs[2] += result.score
        elif result.broke:
            runs[4] += 1
        else:
            runs[6] += 1

    @staticmethod
    def _work(critic: Critic, sno: SNO, context: CriticContext, future: Future,
              abandoned: threading.Event) -> None:
        start = time.perf_counter()
        try:
            with cancellable(abandoned):
                result = critic.evaluate(sno, context)
        except BaseException as exc:  # reported as a failed result by run_critics
            future.set_exception(exc)
            return
        future.set_result(_checked(result, critic.name, time.perf_counter() - start))

    def run_critics(self, sno: SNO, context: CriticContext | None = None) -> dict[str, CriticResult]:
        """Every critic's result for ``sno``, from the cache or run now in parallel threads."""
        return self._run(sno, context, sno.content_hash())

    def _run(self, sno: SNO, context: CriticContext | None, sno_hash: str) -> dict[str, CriticResult]:
        ctx = self._context(context)
        population = _population_fingerprint(sno, ctx) if "population" in self._needs else None
        keys = self._keys(ctx, population)

        results: dict[str, CriticResult] = {}
        with self._lock:
            entry = self._cache.get(sno_hash)
            if entry is not None:
                self._cache.move_to_end(sno_hash)
                for name, key in keys.items():
                    hit = entry.get(key)
                    if hit is not None:
                        self._runs.setdefault(name, [0, 0, 0.0, 0.0, 0, 0, 0])[5] += 1
                        results[name] = hit
        futures: dict[str, tuple[Future, float, threading.Event]] = {}
        for name, critic in self.critics.items():
            if name in results:
                continue
            future: Future = Future()
            abandoned = threading.Event()
            thread = threading.Thread(target=self._work, args=(critic, sno, ctx, future, abandoned), daemon=True,
                                      name=f"critic-{name}")
            futures[name] = (future, time.perf_counter(), abandoned)
            thread.start()

        limit_s = self.limit_for(sno)
        deadline = time.monotonic() + limit_s
        fresh: dict[str, CriticResult] = {}
        for name, (future, started, abandoned) in futures.items():
            try:
                fresh[name] = future.result(timeout=max(0.0, deadline - time.monotonic()))
            except FutureTimeout:
                abandoned.set()          # its model calls stop at their next batch (models/cancel.py)
                fresh[name] = CriticResult.failed(name, f"timed out after {limit_s:g} s",
                                                  time.perf_counter() - started)
            except Exception as exc:
                fresh[name] = CriticResult.failed(name, f"{type(exc).__name__}: {exc}",
                                                  time.perf_counter() - started)
        with self._lock:
            for name, result in fresh.items():
                self._record(name, result)
            keep = {keys[name]: r for name, r in fresh.items() if not r.broke}
            if keep and self.cache_size > 0:
                entry = self._cache.setdefault(sno_hash, OrderedDict())
                entry.update(keep)
                while len(entry) > _VARIANTS_PER_SNO:
                    entry.popitem(last=False)
                self._cache.move_to_end(sno_hash)
                while len(self._cache) > self.cache_size:
                    self._cache.popitem(last=False)
        results.update(fresh)
        return {name: results[name] for name in self.critics}

    def evaluate(self, sno: SNO, weights: str | Mapping[str, float] = "default",
                 context: CriticContext | None = None) -> Evaluation:
        """Run (or fetch) every critic and weigh the results with a profile name or explicit weights."""
        resolved, profile = resolve_weights(weights)
        sno_hash = sno.content_hash()
        results = self._run(sno, context, sno_hash)
        return Evaluation(sno_id=sno.id, sno_hash=sno_hash, results=results,
                          score=weigh(results, resolved), profile=profile)

    # ----- introspection --------------------------------------------------------
    def statistics(self) -> dict[str, CriticStats]:
        """Count, mean score (successful runs), mean latency and failures per critic."""
        with self._lock:
            out = {}
            for name, (runs, ok, score_sum, latency_sum, failures, hits, abstained) in self._runs.items():
                out[name] = CriticStats(count=int(runs), mean_score=score_sum / ok if ok else 0.0,
                                        mean_latency_s=latency_sum / runs if runs else 0.0,
                                        failures=int(failures), cache_hits=int(hits), abstentions=int(abstained))
            return out

    def cache_len(self) -> int:
        """How many SNOs have cached results."""
        with self._lock:
            return len(self._cache)

    def clear_cache(self) -> None:
        with self._lock:
            self._cache.clear()
