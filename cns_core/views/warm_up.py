"""The dashboard's models, loaded once per server process, in the background, as the server starts.

Why: on a cold server the first page a visitor opened paid for importing and loading every model
(19-26 s at a load of 6-10 on 2 cores), and a page that waited on them (Engrams, opening the memory)
showed nothing meanwhile. ``cns run`` starts the dashboard through :mod:`cns_core.views.serve`, which
calls :func:`start` before Streamlit serves anything; the router calls it too (idempotent), so
``streamlit run dashboard.py`` warms from its first visit on. Each stage takes the process-wide
instance the pages use (:func:`cns_core.models.get_nli_backend`, :func:`~cns_core.models.get_embedder`,
:func:`shared_pipeline`), so nothing is loaded twice: a page that needs a model before its stage is done
waits on the same lock. :func:`status` is what every page shows while the stages run.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence
from cns_core.bounds import logger

__all__ = ["WarmUp", "WarmUpStatus", "start", "status", "shared_pipeline", "reset_shared_pipeline", "default_stages",
           "WARM_UP"]

log = logger(__name__)
Stage = tuple[str, Callable[[], Any]]


@dataclass(frozen=True)
class WarmUpStatus:
    """Where the warm-up stands: ``done`` of ``total`` stages finished, ``stage`` the one running."""

    started: bool
    done: int
    total: int
    stage: str | None = None
    errors: tuple[str, ...] = ()
    elapsed_s: float = 0.0

    @property
    def finished(self) -> bool:
        return self.started and self.done >= self.total

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 1.0

    def line(self, seconds: str | None = None) -> str:
        """The progress line a page shows while the models load; ``seconds`` in place of the seconds so far
        (a page puts a counter there: :mod:`cns_core.views.progress_line`)."""
        now = f": {self.stage}" if self.stage else ""
        return (f"Loading the models in the background ({self.done} of {self.total} done{now}, "
                f"{seconds or f'{self.elapsed_s:.0f} s'}). This page fills in as soon as what it needs is loaded.")


class WarmUp:
    """Runs its stages once, in order, on a daemon thread; a failed stage is logged and the rest still run
    (the page that needs it then reports the failure itself)."""

    def __init__(self, stages: Callable[[], Sequence[Stage]] | Sequence[Stage] | None = None):
        self._stages = stages if stages is not None else default_stages
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._labels: list[str] = []
        self._done = 0
        self._stage: str | None = None
        self._errors: list[str] = []
        self._started_at = 0.0
        self._ended_at: float | None = None

    def start(self) -> "WarmUp":
        with self._lock:
            if self._thread is not None:
                return self
            stages = list(self._stages() if callable(self._stages) else self._stages)
            self._labels = [label for label, _ in stages]
            self._stage = self._labels[0] if self._labels else None
            self._started_at = time.monotonic()
            self._thread = threading.Thread(target=self._run, args=(stages,), name="cns-model-warm-up", daemon=True)
            self._thread.start()
        return self

    def _run(self, stages: Sequence[Stage]) -> None:
        for label, load in stages:
            with self._lock:
                self._stage = label
            try:
                load()
            except Exception as exc:  # noqa: BLE001 - a page that needs it reports the failure with its own words
                log.warning("model warm-up: %s failed: %s", label, exc)
                with self._lock:
                    self._errors.append(f"{label}: {exc}")
            with self._lock:
                self._done += 1
        with self._lock:
            self._stage = None
            self._ended_at = time.monotonic()

    def status(self) -> WarmUpStatus:
        with self._lock:
            end = self._ended_at if self._ended_at is not None else time.monotonic()
            return WarmUpStatus(self._thread is not None, self._done, len(self._labels), self._stage,
                                tuple(self._errors), end - self._started_at if self._thread is not None else 0.0)

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the stages (tests, scripts); True when they are done."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
        return self.status().finished


# ----- the dashboard's stages ---------------------------------------------------------
_pipeline_lock = threading.Lock()
_pipeline: Any = None


def shared_pipeline() -> Any:
    """The dashboard's critic pipeline (novelty against the bundled examples), one per process: the warm-up
    runs the default example through it, so the first Overview reads its results from the cache."""
    global _pipeline
    with _pipeline_lock:
        if _pipeline is None:
            from cns_core.pipeline import CriticPipeline
            from cns_core.views import ui_state

            _pipeline = ui_state.PopulationPipeline(CriticPipeline(), ui_state.load_examples())
        return _pipeline


def reset_shared_pipeline() -> None:
    """Forget the shared pipeline (a test that changes the NLI backend, or settings that change the critics)."""
    global _pipeline
    with _pipeline_lock:
        _pipeline = None


def _nli() -> None:
    from cns_core.models import get_nli_backend

    get_nli_backend().predict([("The sea is salty.", "The sea contains salt.")])


def _embeddings() -> None:
    from cns_core.models import get_embedder

    get_embedder().encode(["warming up"])


def _critics() -> None:
    from cns_core.views import ui_state

    examples = ui_state.load_examples()
    if examples:
        sno = next(iter(examples.values()))          # the example every page opens on
        shared_pipeline().run_critics(sno, population=ui_state.current_population({}, examples))


def default_stages() -> list[Stage]:
    return [("the NLI model", _nli), ("the sentence embeddings", _embeddings),
            ("the five critics on the default example", _critics)]


WARM_UP = WarmUp()


def start() -> WarmUpStatus:
    """Start the process's warm-up (once) and say where it stands."""
    return WARM_UP.start().status()


def status() -> WarmUpStatus:
    return WARM_UP.status()
