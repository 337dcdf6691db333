"""The thread every agent runs in: subscribe, prove the subscription, handle batches, survive errors.

An agent owns its ZeroMQ sockets inside its own thread (sockets are not thread
safe). Any exception while receiving or handling a batch is logged and counted; the
loop goes on (a loop that stopped silently would leave the process half alive). Should
the thread end anyway, :attr:`Agent.running` turns False and ``cns agents`` stops with
an error. ``stop()`` finishes the batch in hand and closes the sockets.

:attr:`Agent.caught_up` is set once the start-up step (``after_ready``: a MemoryAgent's
replay of the journal) is over, so work that depends on it (the pending grades' sweep)
waits for it; :meth:`Agent.on_idle` runs whenever no message came within ``poll_s``
(work held back for a retry); :meth:`Agent.before_batch` before each batch received live.
"""

from __future__ import annotations

import threading
from typing import Sequence

import zmq

from cns_core.agents.bus import BusConfig, BusError, Envelope, Publisher, Subscriber, bus_settings
from cns_core.bounds import logger

__all__ = ["Agent"]

log = logger(__name__)


class Agent:
    """Base class: set ``name``, ``subjects`` and ``max_batch``; implement :meth:`handle` or :meth:`handle_batch`."""

    name = "agent"
    subjects: tuple[str, ...] = ()
    max_batch = 1
    poll_s = 0.1

    def __init__(self, bus: BusConfig | None = None):
        self.bus = bus or bus_settings()
        self.publisher: Publisher | None = None
        self._stop = threading.Event()
        self._ready = threading.Event()
        self.caught_up = threading.Event()
        self._thread: threading.Thread | None = None
        self.startup_error: BaseException | None = None
        self.handled = 0
        self.failures = 0

    # ---------------------------------------------------------------- lifecycle

    def start(self, wait: bool = True, timeout: float | None = None) -> "Agent":
        """Start the thread; with ``wait``, return once the subscription is live (BusError if it is not)."""
        if self._thread is not None:
            return self
        self._stop.clear()
        self._ready.clear()
        self.caught_up.clear()
        self.startup_error = None
        self._thread = threading.Thread(target=self._run, name=f"cns-{self.name}", daemon=True)
        self._thread.start()
        if wait:
            if not self._ready.wait(timeout or self.bus.ready_timeout_s * 2 + 5):
                raise BusError(f"{self.name}: did not become ready")
            if self.startup_error is not None:
                self._thread = None
                raise BusError(f"{self.name}: could not start: {self.startup_error}") from self.startup_error
        return self

    def request_stop(self) -> None:
        """Ask the loop to stop after the batch in hand, without waiting (stop() waits)."""
        self._stop.set()

    def stop(self, timeout: float = 10.0) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join(timeout)
        self._thread = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def __enter__(self) -> "Agent":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---------------------------------------------------------------- hooks

    def before_subscribe(self) -> None:
        """Runs in the agent thread before the subscription exists."""

    def after_ready(self) -> None:
        """Runs in the agent thread once the subscription is live, before live messages are handled."""

    def on_idle(self) -> None:
        """Runs in the agent thread when no message arrived within ``poll_s``."""

    def before_batch(self, envelopes: Sequence[Envelope]) -> None:
        """Runs in the agent thread before a batch received live (not replayed) is handled; an error is
        logged and the batch handled anyway."""

    def on_stop(self) -> None:
        """Runs in the agent thread after a requested stop, before its sockets close (finish what is owed)."""

    def handle(self, envelope: Envelope) -> None:
        raise NotImplementedError

    def handle_batch(self, envelopes: Sequence[Envelope]) -> None:
        for envelope in envelopes:
            try:
                self.handle(envelope)
            except Exception:  # one bad message must not take the others down
                self.failures += 1
                log.exception("%s: failed to handle %s %s", self.name, envelope.subject, envelope.message_id)

    # ---------------------------------------------------------------- the loop

    def _run(self) -> None:
        subscriber = None
        try:
            self.before_subscribe()
            self.publisher = Publisher(self.bus, source=self.name)
            subscriber = Subscriber(self.subjects, self.bus)
            subscriber.wait_ready(self.publisher)
        except BaseException as exc:
            self.startup_error = exc
            log.error("%s: could not start: %s", self.name, exc)
            self._ready.set()
            for sock in (subscriber, self.publisher):
                if sock is not None:
                    sock.close()
            return
        self._ready.set()
        log.info("%s: listening to %s", self.name, ", ".join(self.subjects))
        try:
            try:
                self.after_ready()
            except Exception:
                self.failures += 1
                log.exception("%s: start-up step failed; continuing with live messages", self.name)
            finally:
                self.caught_up.set()
            while not self._stop.is_set():
                try:
                    batch = subscriber.recv_batch(self.max_batch, self.poll_s)
                    if not batch:
                        self.on_idle()
                        continue
                except zmq.ContextTerminated:
                    raise
                except Exception:  # noqa: BLE001 - a half-dead loop is worse than a logged error
                    self.failures += 1
                    log.exception("%s: receiving failed; going on", self.name)
                    self._stop.wait(self.poll_s)
                    continue
                try:
                    self.before_batch(batch)
                except Exception:  # noqa: BLE001 - the batch in hand must still be handled
                    self.failures += 1
                    log.exception("%s: the step before a batch failed; handling it anyway", self.name)
                try:
                    self.handle_batch(batch)
                except Exception:
                    self.failures += 1
                    log.exception("%s: failed to handle a batch of %d", self.name, len(batch))
                self.handled += len(batch)
            try:
                self.on_stop()
            except Exception:  # noqa: BLE001 - stopping goes on
                self.failures += 1
                log.exception("%s: the stop step failed", self.name)
        except zmq.ContextTerminated:
            log.info("%s: the bus context ended", self.name)
        finally:
            subscriber.close()
            self.publisher.close()
            log.info("%s: stopped", self.name)
