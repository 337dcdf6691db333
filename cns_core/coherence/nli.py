"""Stage 3: the model pass -- the configured NLI backend over the top-m evidence.

All (evidence, proposition) pairs chosen for a chain go to the backend in ONE
``predict`` call, run on a worker thread so that a slow or hung model costs at
most ``timeout_s`` (spec section 19: model timeout -> heuristics only). A
timed-out call is abandoned (:mod:`cns_core.models.cancel`: the backend stops at
its next batch); until it has stopped, later chains skip the model instead of
queueing behind it.

Which pairs: for each proposition the ``m`` pieces of evidence that matter
most -- those a heuristic cue already flags (the model confirms or vetoes
them), then the most similar ones.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor, TimeoutError as FutureTimeout
from typing import Callable, Sequence

import numpy as np

from cns_core.models.cancel import cancellable
from cns_core.models.errors import ModelUnavailableError

__all__ = ["ModelTimeout", "ModelPass", "select_top_m"]


class ModelTimeout(RuntimeError):
    """The NLI backend did not answer within the model timeout (or is still busy with an earlier call)."""


def select_top_m(groups: Sequence[Sequence[int]], similarity: np.ndarray, flagged: np.ndarray, m: int) -> list[int]:
    """Indices of the pairs to send to the model: per group (proposition), flagged first, then most similar."""
    chosen: list[int] = []
    for group in groups:
        if not group or m <= 0:
            continue
        idx = np.asarray(group)
        order = np.lexsort((-similarity[idx], ~flagged[idx]))
        chosen.extend(int(i) for i in idx[order[:m]])
    return chosen


def _abandonable_predict(backend, pairs: list[tuple[str, str]], abandoned: threading.Event):
    with cancellable(abandoned):
        return backend.predict(pairs)


class ModelPass:
    """Wraps an NLI backend (built lazily by ``factory``) with readiness and a timeout."""

    def __init__(self, factory: Callable[[], object] | None = None, backend: object | None = None):
        if factory is None and backend is None:
            from cns_core.models import get_nli_backend

            factory = get_nli_backend
        self._factory = factory
        self._backend = backend
        self.unavailable: str | None = None
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self._pending: Future | None = None

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

    def predict(self, pairs: Sequence[tuple[str, str]], timeout_s: float | None) -> np.ndarray:
        """``(n, 3)`` (entailment, neutral, contradiction); raises :class:`ModelTimeout` past ``timeout_s``."""
        backend = self.backend
        if backend is None:
            raise ModelUnavailableError("nli", self.unavailable or "no backend", "Check nli.backend in models.yaml.")
        if not pairs:
            return np.zeros((0, 3), dtype=np.float64)
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
