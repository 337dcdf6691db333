"""The engine behind :func:`cns_core.engine.batch.evaluate_corpus`: one scorer per worker, on Ray.

A :class:`CorpusScorer` builds the pipeline and loads the models once, then scores SNOs
in small batches. Within a batch the SNOs run side by side in threads and their model
calls meet in a :class:`CoalescingBackend`: NLI pairs and embedding texts that arrive
together go to the model in one call, so the model sees work from several SNOs at once.
The same class runs in this process (one worker, no Ray) or as a Ray actor (``--workers N``,
``--address`` / ``RAY_ADDRESS`` to join a cluster, ``--gpus-per-worker``).

Novelty's population is embedded once by the caller and handed to every actor through
the object store (``ray.put``), never re-embedded per worker.

A worker that dies (killed, out of memory) loses only the SNOs it had in flight: each is
tried once more alone on a fresh actor, and one that kills that too gets a row with its error.
"""

from __future__ import annotations

import os
import socket
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence
from urllib.parse import urlparse

import numpy as np

from cns_core.critics.base import Critic, CriticContext
from cns_core.models.cancel import Flag, cancellable, current_flag
from cns_core.sno import SNO

__all__ = ["CoalescingBackend", "CorpusScorer", "RayUnavailableError", "ScorerSettings", "check_address",
           "connect", "score_on_ray"]

CriticFactory = Callable[[], Sequence[Critic]]
Row = dict[str, Any]
Item = tuple[str, "dict[str, Any] | SNO"]   # (file, SNO as JSON data, or the SNO itself in this process)


class RayUnavailableError(RuntimeError):
    """Ray could not be reached or started; the message names the address."""


@dataclass
class _Request:
    items: list[Any]
    abandoned: Flag | None = None          # the caller's cancellation flag (models/cancel.py)
    done: threading.Event = field(default_factory=threading.Event)
    result: Any = None
    error: BaseException | None = None


@dataclass
class _AllAbandoned:
    """A shared model call is given up only when every caller in it has given up."""

    requests: list[_Request]

    def is_set(self) -> bool:
        return all(r.abandoned is not None and r.abandoned.is_set() for r in self.requests)


class CoalescingBackend:
    """Wraps a model backend so that calls made at the same time from several threads run as one.

    ``method`` (``predict`` for NLI, ``encode`` for embeddings) takes a list and returns one row
    per item. While one call runs, the others queue; the next caller runs everything queued in
    one model call and hands each caller its rows. Every other attribute is the wrapped backend's.
    """

    def __init__(self, inner: Any, method: str):
        self._inner, self._method = inner, method
        self._changed = threading.Condition()   # a model call ended: waiters look again
        self._running = False                   # a caller is running a model call now
        self._pending: list[_Request] = []
        self.calls = 0                     # model calls made: fewer than requests when calls met

    def __getattr__(self, name: str) -> Any:
        if name == self.__dict__.get("_method"):
            return self._call
        return getattr(self.__dict__["_inner"], name)

    def _call(self, items: Sequence[Any]) -> np.ndarray:
        request = _Request(list(items), current_flag())
        with self._changed:
            self._pending.append(request)
            while not request.done.is_set() and self._running:
                self._changed.wait()
            batch: list[_Request] = []
            if not request.done.is_set():   # nobody runs and ours is still queued: run all that is queued
                self._running = True
                batch, self._pending = self._pending, []
        if batch:
            try:
                self._run(batch)
            finally:
                with self._changed:
                    self._running = False
                    self._changed.notify_all()
        if request.error is not None:
            raise request.error
        return request.result

    def _run(self, batch: list[_Request]) -> None:
        try:
            flat = [item for request in batch for item in request.items]
            with cancellable(_AllAbandoned(batch)):
                out = np.asarray(getattr(self._inner, self._method)(flat)) if flat else None
            self.calls += 1
            start = 0
            for request in batch:
                n = len(request.items)
                request.result = out[start:start + n] if out is not None else np.zeros((0,))
                start += n
        except BaseException as exc:   # each caller gets the model's error as its own
            for request in batch:
                request.error = exc
        finally:
            for request in batch:
                request.done.set()


@dataclass
class ScorerSettings:
    """What every scorer needs besides the SNOs (sent once per actor)."""

    fingerprint: str
    profiles: dict[str, dict[str, float]]
    timeout_s: float | None = None      # None: sized to each SNO (pipeline.TimeLimit)
    threads: int | None = None          # torch/BLAS threads per worker (None: leave as is)
    critics: CriticFactory | None = None  # None: the default critics
    env: dict[str, str] = field(default_factory=lambda: _carried_env())   # the caller's model settings


def _carried_env() -> dict[str, str]:
    """The environment that picks backends and models (``CNS_*``, offline flags): actors run in
    processes Ray started earlier, so the caller's settings travel with the work."""
    keep = ("CNS_", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    return {k: v for k, v in os.environ.items() if k.startswith(keep)}


class CorpusScorer:
    """Builds the pipeline and models once; :meth:`score` evaluates a batch of SNOs into table rows."""

    def __init__(self, settings: ScorerSettings, context: CriticContext):
        if settings.threads is not None:
            _limit_threads(settings.threads)
        from cns_core.models import get_embedder, get_nli_backend
        from cns_core.pipeline import CriticPipeline

        self.settings, self.context = settings, context
        nli = embedder = None
        try:
            nli = CoalescingBackend(get_nli_backend(), "predict")
            nli.predict([("warm up", "warm up")])   # load before the first SNO: never counts against a critic
        except Exception:   # the critics needing it fail on their own, with the reason
            nli = None
        try:
            embedder = CoalescingBackend(get_embedder(), "encode")
            embedder.encode(["warm up"])
        except Exception:
            embedder = None
        critics = list(settings.critics()) if settings.critics is not None else None
        self.pipeline = CriticPipeline(critics, nli=nli, embedder=embedder, timeout_s=settings.timeout_s)
        self._threads = ThreadPoolExecutor(max_workers=8, thread_name_prefix="sno")

    def score(self, items: Sequence[Item]) -> list[Row]:
        """One row per (file, SNO data), in order; a failing SNO gets an error row, never an exception."""
        return list(self._threads.map(lambda item: self._one(*item), items))

    def _one(self, file: str, data: dict[str, Any] | SNO) -> Row:
        from cns_core.engine.rows import error_row, evaluation_row

        sno = data if isinstance(data, SNO) else SNO.model_validate(data)
        try:
            results = self.pipeline.run_critics(sno, self.context)
            return evaluation_row(results, sno, file, self.settings.fingerprint, self.settings.profiles)
        except Exception as exc:
            return error_row(file, f"evaluation failed: {type(exc).__name__}: {exc}", sno,
                              self.settings.fingerprint)


def _limit_threads(threads: int) -> None:
    """One worker per core: keep each worker's BLAS/torch pool from fighting the others."""
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = str(threads)
    import torch

    torch.set_num_threads(threads)


# ----- connecting -----------------------------------------------------------------

def check_address(address: str, timeout_s: float = 3.0) -> None:
    """Raise :class:`RayUnavailableError` naming ``address`` when nothing answers there.

    ``host:port`` and ``ray://host:port`` are tried with a TCP connect; ``auto`` is left to Ray.
    """
    if address == "auto":
        return
    parsed = urlparse(address if "://" in address else f"tcp://{address}")
    try:
        host, port = parsed.hostname, parsed.port
    except ValueError:
        host, port = None, None
    if not host or not port:
        raise RayUnavailableError(f"Ray address {address!r}: expected host:port, ray://host:port or auto")
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            pass
    except OSError as exc:
        raise RayUnavailableError(f"Ray not reachable at {address}: {exc.strerror or exc}") from None


def connect(address: str | None, num_cpus: int) -> bool:
    """Join the cluster at ``address`` or start a local Ray; True when this call started it
    (the caller shuts it down). An already running Ray in this process is used as it is."""
    import ray

    if address:
        check_address(address)
    if ray.is_initialized():
        return False
    if address:
        try:
            ray.init(address=address, log_to_driver=False, configure_logging=False)
        except Exception as exc:
            raise RayUnavailableError(f"Ray not reachable at {address}: {type(exc).__name__}: {exc}") from None
        return True
    start_local(num_cpus)
    return True


def start_local(num_cpus: int) -> None:
    """A local Ray that starts on this machine: loopback address, no dashboard, a short temp dir
    (its unix sockets have a path length limit)."""
    import ray

    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    os.environ.setdefault("RAY_agent_register_timeout_ms", "120000")   # a loaded machine starts agents slowly
    temp = Path(tempfile.gettempdir()) / f"cnsray-{os.getuid()}"
    if len(str(temp)) > 40:
        temp = Path("/tmp") / f"cnsray-{os.getuid()}"
    try:
        ray.init(num_cpus=num_cpus, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False,
                 configure_logging=False, _temp_dir=str(temp))
    except Exception as exc:
        raise RayUnavailableError(f"local Ray did not start: {type(exc).__name__}: {exc}") from None


# ----- running ----------------------------------------------------------------------

def score_on_ray(todo: Sequence[Item], settings: ScorerSettings, context: CriticContext, *, workers: int,
                 gpus_per_worker: float, batch_size: int, collect: Callable[[Row], None]) -> None:
    """Score ``todo`` on ``workers`` actors (Ray must be connected); ``collect`` gets each row as it comes.

    Each actor keeps two batches in flight. When an actor dies its batches' SNOs are queued again
    one by one (on a new actor), and each such second try runs alone on its actor, so an SNO that kills
    its worker cannot take another's second try down with it; an SNO whose second try dies too gets an
    error row.
    """
    import ray
    from ray.exceptions import OutOfMemoryError, RayActorError, WorkerCrashedError

    died = (RayActorError, OutOfMemoryError, WorkerCrashedError)   # killed, out of memory, crashed

    from cns_core.engine.rows import error_row

    remote = ray.remote(CorpusScorer).options(num_cpus=1, num_gpus=gpus_per_worker, max_restarts=0,
                                              runtime_env={"env_vars": settings.env})
    settings_ref, context_ref = ray.put(settings), ray.put(context)   # the population: sent once, shared
    queue: list[tuple[list[Item], int]] = [(list(todo[i:i + batch_size]), 0) for i in range(0, len(todo), batch_size)]
    queue.reverse()                                                    # pop() from the end keeps file order
    actors = [remote.remote(settings_ref, context_ref) for _ in range(workers)]
    in_flight: dict[Any, tuple[int, Any, list[Item], int]] = {}       # ref -> (slot, actor, batch, attempt)

    def submit(slot: int) -> None:
        batch, attempt = queue.pop()
        in_flight[actors[slot].score.remote(batch)] = (slot, actors[slot], batch, attempt)

    def can_take(slot: int) -> bool:
        """Two batches in flight per actor, but a second try only on an idle actor, and nothing beside it."""
        attempts = [attempt for s, _, _, attempt in in_flight.values() if s == slot]
        if any(attempts):
            return False
        return not attempts if queue[-1][1] else len(attempts) < 2

    def fill() -> None:
        for slot in range(workers):
            while queue and can_take(slot):
                submit(slot)

    try:
        fill()
        while in_flight:
            [ref], _ = ray.wait(list(in_flight), num_returns=1)
            slot, actor, batch, attempt = in_flight.pop(ref)
            try:
                rows = ray.get(ref)
            except died as exc:
                if actors[slot] is actor:     # its other batch in flight died with it: replace it once
                    actors[slot] = remote.remote(settings_ref, context_ref)
                for item in batch:
                    if attempt == 0:          # tried once more, alone, so it cannot take others down
                        queue.append(([item], 1))
                    else:
                        sno = SNO.model_validate(item[1])
                        collect(error_row(item[0], f"worker died twice on this SNO: {_short(exc)}", sno,
                                           settings.fingerprint))
                rows = []
            for row in rows:
                collect(row)
            fill()
    finally:
        for actor in actors:
            ray.kill(actor)


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]
