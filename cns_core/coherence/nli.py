"""Stage 3: the model pass -- the configured NLI backend over the top-m evidence.

All (evidence, proposition) pairs chosen for a chain go to the backend in ONE
``predict`` call, run on a worker thread so that a slow or hung model costs at
most ``timeout_s`` (spec section 19: model timeout -> heuristics only). A
timed-out call is abandoned (:mod:`cns_core.models.cancel`: the backend stops at
its next batch); until it has stopped, later chains skip the model instead of
queueing behind it.

Which pairs: for each proposition the ``m`` pieces of evidence that matter
most -- those a heuristic cue already flags (the model confirms or vetoes
them), then the most similar ones. On the pre-write path a chain sends at
most ``max_pairs`` of them: the flagged ones, then every proposition's best,
then every proposition's second best, and so on (a long chain loses its least
relevant pairs, never a whole proposition first).

Answers are kept per (evidence, proposition) text pair (an LRU of
``cache_size``): a pair seen before is not scored again. For a person waiting
(the SNO check) :meth:`ModelPass.predict_until` scores in batches and starts
no batch after its deadline; what is left is reported as not scored.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor, TimeoutError as FutureTimeout
from typing import Callable, Sequence

import numpy as np

from cns_core.models.cancel import cancellable
from cns_core.models.errors import ModelUnavailableError

__all__ = ["ModelTimeout", "ModelPass", "select_top_m"]


class ModelTimeout(RuntimeError):
    """The NLI backend did not answer within the model timeout (or is still busy with an earlier call)."""


def select_top_m(groups: Sequence[Sequence[int]], similarity: np.ndarray, flagged: np.ndarray, m: int,
                 max_pairs: int | None = None) -> list[int]:
    """Indices of the pairs to send to the model: per group (proposition), flagged first, then most similar;
    with ``max_pairs``, the chain's most relevant ones (flagged, then by rank within their group)."""
    ranked: list[tuple[bool, int, float, int]] = []
    for group in groups:
        if not group or m <= 0:
            continue
        idx = np.asarray(group)
        order = np.lexsort((-similarity[idx], ~flagged[idx]))
        ranked.extend((not bool(flagged[i]), rank, -float(similarity[i]), int(i))
                      for rank, i in enumerate(idx[order[:m]]))
    if max_pairs is not None and len(ranked) > max_pairs:
        ranked = sorted(ranked)[:max(0, max_pairs)]
        ranked.sort(key=lambda r: r[3])
    return [r[3] for r in ranked]


def _abandonable_predict(backend, pairs: list[tuple[str, str]], abandoned: threading.Event):
    with cancellable(abandoned):
        return backend.predict(pairs)


class ModelPass:
    """Wraps an NLI backend (built lazily by ``factory``) with readiness and a timeout."""

    def __init__(self, factory: Callable[[], object] | None = None, backend: object | None = None,
                 cache_size: int = 4096):
        if factory is None and backend is None:
            from cns_core.models import get_nli_backend

            factory = get_nli_backend
        self._factory = factory
        self._backend = backend
        self.unavailable: str | None = None
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self._pending: Future | None = None
        self.cache_size = cache_size
        self._cache: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self.cache_hits = 0

    @property
    def backend(self) -> object | None:
        """The backend, or None (with :attr:`unavailable` saying why) when it cannot be built."""
        with self._lock:
            if self._backend is None and self.unavailable is None and self._factory is not None:
                try:
                    self._backend = self._factory()
                except ModelUnavailableError as exc:
                    self.unavailable = str(exc)
        return self._backend

    @property
    def ready(self) -> bool:
        return self.backend is not None

    @property
    def busy(self) -> bool:
        return self._pending is not None and not self._pending.done()

    def _ready_backend(self) -> object:
        backend = self.backend
        if backend is None:
            raise ModelUnavailableError("nli", self.unavailable or "no backend", "Check nli.backend in models.yaml.")
        return backend

    def _cached(self, pairs: Sequence[tuple[str, str]]) -> tuple[np.ndarray, list[int]]:
        """Rows known from the cache (NaN elsewhere) and the indices still to score (each text pair once)."""
        out = np.full((len(pairs), 3), np.nan)
        todo: list[int] = []
        with self._lock:
            for i, pair in enumerate(pairs):
                row = self._cache.get(pair)
                if row is None:
                    todo.append(i)
                else:
                    self._cache.move_to_end(pair)
                    out[i] = row
                    self.cache_hits += 1
        return out, todo

    def _remember(self, pairs: Sequence[tuple[str, str]], rows: np.ndarray) -> None:
        if self.cache_size <= 0:
            return
        with self._lock:
            for pair, row in zip(pairs, rows):
                self._cache[pair] = row
                self._cache.move_to_end(pair)
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)

    def predict(self, pairs: Sequence[tuple[str, str]], timeout_s: float | None) -> np.ndarray:
        """``(n, 3)`` (entailment, neutral, contradiction); raises :class:`ModelTimeout` past ``timeout_s``."""
        backend = self._ready_backend()
        pairs = [(str(a), str(b)) for a, b in pairs]
        out, todo = self._cached(pairs)
        if todo:
            missing = list(dict.fromkeys(pairs[i] for i in todo))
            rows = dict(zip(missing, self._scored(backend, missing, timeout_s)))
            self._remember(missing, list(rows.values()))
            for i in todo:
                out[i] = rows[pairs[i]]
        return out

    def predict_until(self, pairs: Sequence[tuple[str, str]], groups: Sequence[Sequence[int]],
                      deadline: float | None, clock: Callable[[], float], batch: int = 32
                      ) -> tuple[np.ndarray, np.ndarray]:
        """Score whole groups (a claim's pairs) batch by batch; no batch starts after ``deadline``
        (``clock()`` seconds; None: no limit). Returns the rows (NaN where not scored) and a mask
        of the pairs scored."""
        self._ready_backend()
        out = np.full((len(pairs), 3), np.nan)
        scored = np.zeros(len(pairs), dtype=bool)
        chunk: list[int] = []
        for g, group in enumerate(groups):
            chunk.extend(group)
            if len(chunk) < batch and g < len(groups) - 1:
                continue
            if deadline is not None and clock() >= deadline:
                break
            if chunk:
                out[chunk] = self.predict([pairs[i] for i in chunk], None)
                scored[chunk] = True
            chunk = []
        return out, scored

    def _scored(self, backend: object, pairs: list[tuple[str, str]], timeout_s: float | None) -> np.ndarray:
        if timeout_s is None:
            return self._checked(backend.predict(list(pairs)), len(pairs))
        with self._lock:
            if self.busy:
                raise ModelTimeout("the NLI backend is still busy with an earlier, timed-out call")
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="coherence-nli")
            abandoned = threading.Event()
            self._pending = self._executor.submit(_abandonable_predict, backend, list(pairs), abandoned)
            future = self._pending
        try:
            return self._checked(future.result(timeout=timeout_s), len(pairs))
        except FutureTimeout:
            abandoned.set()
            raise ModelTimeout(f"the NLI backend took longer than {timeout_s * 1000:.0f} ms") from None

    @staticmethod
    def _checked(probs, n: int) -> np.ndarray:
        out = np.asarray(probs, dtype=np.float64)
        if out.shape != (n, 3) or not np.all(np.isfinite(out)):
            raise ValueError(f"NLI backend returned shape {out.shape} (expected ({n}, 3)) or non-finite values")
        return np.clip(out, 0.0, 1.0)

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None
