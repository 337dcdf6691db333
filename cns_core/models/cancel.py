"""Stopping model work that nobody waits for any more.

A critic runs in a thread, and a thread cannot be killed. Past the pipeline's deadline its
result is dropped, but the work would go on: grounding a 5,000-claim SNO computes for minutes,
holds the NLI backend's lock and both cores, and so makes the next SNO's critics time out too.
The pipeline runs each critic inside :func:`cancellable` with an event that it sets at the
deadline; the model backends call :func:`raise_if_cancelled` between batches, so abandoned
work stops within one batch and frees the model for the next caller.

At interpreter exit all work in a scope is abandoned and waited for (a few seconds at most):
a daemon thread still inside a torch kernel when the process tears down aborts it
("terminate called without an active exception") instead of letting it exit cleanly.
"""

from __future__ import annotations

import atexit
import threading
import time
from contextlib import contextmanager
from typing import Iterator, Protocol

__all__ = ["Cancelled", "Flag", "cancellable", "current_flag", "raise_if_cancelled"]

_scope = threading.local()
_in_scope: dict[int, threading.Thread] = {}      # threads working inside a scope, by ident
_in_scope_lock = threading.Lock()
_exiting = threading.Event()
_EXIT_WAIT_S = 5.0                              # in all, for every such thread


class Cancelled(RuntimeError):
    """Raised inside abandoned work; the caller that abandoned it has already moved on."""


class Flag(Protocol):
    """What marks work as abandoned: a ``threading.Event``, or anything with ``is_set``."""

    def is_set(self) -> bool: ...


@contextmanager
def cancellable(event: Flag) -> Iterator[None]:
    """Model calls made by this thread inside the block stop once ``event`` is set."""
    previous = getattr(_scope, "event", None)
    _scope.event = event
    thread = threading.current_thread()
    with _in_scope_lock:
        _in_scope[thread.ident] = thread
    try:
        yield
    finally:
        _scope.event = previous
        if previous is None:
            with _in_scope_lock:
                _in_scope.pop(thread.ident, None)


def current_flag() -> Flag | None:
    """The flag this thread's work is abandoned by, if it runs inside :func:`cancellable`."""
    return getattr(_scope, "event", None)


def raise_if_cancelled() -> None:
    """Raise :class:`Cancelled` when this thread's work has been abandoned (a no-op outside a scope)."""
    event = getattr(_scope, "event", None)
    if event is not None and (event.is_set() or _exiting.is_set()):
        raise Cancelled("abandoned: the deadline of the run that asked for it has passed")


@atexit.register
def _stop_work_at_exit() -> None:
    """Abandon work still in a scope and let it reach its next check before the process tears down."""
    _exiting.set()
    with _in_scope_lock:
        threads = [t for t in _in_scope.values() if t is not threading.current_thread()]
    deadline = time.monotonic() + _EXIT_WAIT_S
    for thread in threads:
        thread.join(timeout=max(0.0, deadline - time.monotonic()))
