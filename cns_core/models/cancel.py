"""Stopping model work that nobody waits for any more.

A critic runs in a thread, and a thread cannot be killed. Past the pipeline's deadline its
result is dropped, but the work would go on: grounding a 5,000-claim SNO computes for minutes,
holds the NLI backend's lock and both cores, and so makes the next SNO's critics time out too.
The pipeline runs each critic inside :func:`cancellable` with an event that it sets at the
deadline; the model backends call :func:`raise_if_cancelled` between batches, so abandoned
work stops within one batch and frees the model for the next caller.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Iterator, Protocol

__all__ = ["Cancelled", "Flag", "cancellable", "current_flag", "raise_if_cancelled"]

_scope = threading.local()


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
    try:
        yield
    finally:
        _scope.event = previous


def current_flag() -> Flag | None:
    """The flag this thread's work is abandoned by, if it runs inside :func:`cancellable`."""
    return getattr(_scope, "event", None)


def raise_if_cancelled() -> None:
    """Raise :class:`Cancelled` when this thread's work has been abandoned (a no-op outside a scope)."""
    event = getattr(_scope, "event", None)
    if event is not None and event.is_set():
        raise Cancelled("abandoned: the deadline of the run that asked for it has passed")
