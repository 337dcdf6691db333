"""The judge loop's message bus: ZeroMQ publish/subscribe through an XSUB/XPUB proxy on loopback.

Publishers connect to the proxy's XSUB port, subscribers to its XPUB port, so
agents never need to know each other. Every message is an :class:`Envelope`
(subject, payload, message id, timestamp) sent as two frames: the subject, used
by ZeroMQ's prefix filter, and the envelope as JSON.

Two details make delivery dependable rather than best-effort:

* the proxy subscribes to everything on its XSUB side, so a publisher knows the
  proxy is listening when that subscription reaches its XPUB socket
  (:meth:`Publisher.wait_ready`) and never sends into the void;
* a subscriber proves its own subscription end-to-end with a ping through the
  proxy (:meth:`Subscriber.wait_ready`) before the caller relies on it.

The proxy also copies every message to the journal (:mod:`cns_core.agents.journal`)
so a restarted MemoryAgent can catch up on what it missed.
"""

from __future__ import annotations

import socket
import threading
import time
import uuid
from collections import deque
from typing import Any, Iterable, Sequence

import zmq
from pydantic import ValidationError

from cns_core.agents.wire import (
    BusConfig, BusError, Envelope, MalformedMessage, bind_socket, signal_and_join,
)
from cns_core.bounds import excerpt, logger
from cns_core.config import ConfigError, env_override, load_config

__all__ = [
    "RESPONSE", "CRITIQUE", "QUERY", "GRADE", "REWARD", "RECALL", "RECALLED", "SUBJECTS",
    "BusError", "MalformedMessage", "Envelope", "BusConfig", "bus_settings",
    "BusProxy", "Publisher", "Subscriber", "bind_socket", "signal_and_join", "proxy_reachable",
]

log = logger(__name__)

RESPONSE = "response.generation"   # GeneratorAgent -> CriticAgent, MemoryAgent
CRITIQUE = "critique.result"       # CriticAgent -> MemoryAgent, dashboard, `cns grade`
QUERY = "query.request"            # dashboard / CLI -> GeneratorAgent
GRADE = "critique.request"         # a stored, ungraded turn to grade (pending grades) -> CriticAgent
REWARD = "reward.signal"           # MemoryAgent -> trainers: a turn's reward, each time a grade or verdict lands
RECALL = "recall.request"          # an agent -> MemoryAgent: recall for a question (request)
RECALLED = "recall.reply"       # MemoryAgent -> the asking agent: the ranked answers (reply, by request_id)
SUBJECTS = (RESPONSE, CRITIQUE, QUERY, GRADE, REWARD, RECALL, RECALLED)
_PING = "bus.ping."
_HARD_CAP = 16      # times max_message_bytes: a message that large never enters the proxy


def bus_settings(**overrides: Any) -> BusConfig:
    """``config/bus.yaml`` with ``CNS_BUS_*`` environment overrides, then ``overrides``."""
    cfg = load_config("bus")
    journal = cfg.pop("journal", None) or {}
    values = {
        "host": env_override(cfg.get("host", "127.0.0.1"), "CNS_BUS_HOST"),
        "allow_non_loopback": cfg.get("allow_non_loopback", False),
        "pub_port": env_override(cfg.get("pub_port", 5581), "CNS_BUS_PUB_PORT", int),
        "sub_port": env_override(cfg.get("sub_port", 5582), "CNS_BUS_SUB_PORT", int),
        "journal_port": env_override(cfg.get("journal_port", 5583), "CNS_BUS_JOURNAL_PORT", int),
        "hwm": cfg.get("hwm", 100_000), "send_timeout_s": cfg.get("send_timeout_s", 5.0),
        "ready_timeout_s": cfg.get("ready_timeout_s", 5.0), "stop_grace_s": cfg.get("stop_grace_s", 8.0),
        "journal_enabled": journal.get("enabled", True), "journal_path": journal.get("path"),
        "journal_keep": journal.get("keep", 200_000), "replay_batch": journal.get("replay_batch", 2000),
        "max_message_bytes": cfg.get("max_message_bytes", 1_000_000),
        "max_json_depth": cfg.get("max_json_depth", 32),
    }
    values.update(overrides)
    try:
        return BusConfig(**values)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) + ': ' if e['loc'] else ''}"
                             f"{e['msg'].removeprefix('Value error, ')}" for e in exc.errors())
        raise ConfigError(f"bus.yaml: {problems}") from None


def proxy_reachable(bus: BusConfig, timeout: float = 0.3) -> bool:
    """True when something accepts connections on the proxy's publish and subscribe ports."""
    for port in (bus.pub_port, bus.sub_port):
        try:
            with socket.create_connection((bus.host, port), timeout=timeout):
                pass
        except OSError:
            return False
    return True


class BusProxy:
    """The XSUB/XPUB forwarder (and, when enabled, the journal) in a background thread."""

    def __init__(self, config: BusConfig | None = None, *, journal: bool | None = None,
                 context: zmq.Context | None = None):
        self.config = config or bus_settings()
        self._ctx = context or zmq.Context.instance()
        self._journal_wanted = self.config.journal_enabled if journal is None else journal
        self.journal = None
        self._thread: threading.Thread | None = None
        self._control: zmq.Socket | None = None

    def start(self) -> "BusProxy":
        if self._thread is not None:
            return self
        cfg, ctx = self.config, self._ctx
        tag = uuid.uuid4().hex[:8]
        xsub = ctx.socket(zmq.XSUB)
        xsub.setsockopt(zmq.RCVHWM, cfg.hwm)
        # a hard cap on what one message may make the proxy hold: a publisher sending more is cut off by
        # ZeroMQ; between max_message_bytes and this, the journal records the refusal and subscribers drop it
        xsub.setsockopt(zmq.MAXMSGSIZE, _HARD_CAP * cfg.max_message_bytes)
        xsub.setsockopt(zmq.SNDHWM, cfg.hwm)
        bind_socket(xsub, cfg.pub_address, "bus proxy (publisher side)")
        xpub = ctx.socket(zmq.XPUB)
        xpub.setsockopt(zmq.SNDHWM, cfg.hwm)
        xpub.setsockopt(zmq.RCVHWM, cfg.hwm)
        try:
            bind_socket(xpub, cfg.sub_address, "bus proxy (subscriber side)")
        except BusError:
            xsub.close(linger=0)
            raise
        xsub.send(b"\x01")            # subscribe to everything: publishers see the proxy is listening
        capture = None
        if self._journal_wanted:
            from cns_core.agents.journal import Journal

            self.journal = Journal(cfg, capture_endpoint=f"inproc://cns-capture-{tag}", context=ctx)
            try:
                self.journal.start()
            except BusError:
                xsub.close(linger=0)
                xpub.close(linger=0)
                raise
            capture = ctx.socket(zmq.PUSH)
            capture.setsockopt(zmq.SNDHWM, 0)     # never block the proxy on the journal
            capture.connect(self.journal.capture_endpoint)
        inner = ctx.socket(zmq.PAIR)
        inner.bind(f"inproc://cns-proxy-control-{tag}")
        self._control = ctx.socket(zmq.PAIR)
        self._control.connect(f"inproc://cns-proxy-control-{tag}")

        def run() -> None:
            try:
                zmq.proxy_steerable(xsub, xpub, capture, inner)
            except zmq.ContextTerminated:
                pass
            except zmq.ZMQError as exc:  # pragma: no cover - logged, the caller sees the thread end
                log.error("bus proxy stopped: %s", exc)
            finally:
                for sock in (xsub, xpub, capture, inner):
                    if sock is not None:
                        sock.close(linger=0)

        self._thread = threading.Thread(target=run, name="cns-bus-proxy", daemon=True)
        self._thread.start()
        log.info("bus proxy: publishers -> %s, subscribers -> %s", cfg.pub_address, cfg.sub_address)
        return self

    def stop(self) -> None:
        if self._thread is None:
            return
        assert self._control is not None
        signal_and_join(self._control, b"TERMINATE", self._thread)
        self._thread = None
        if self.journal is not None:
            self.journal.stop()
        # ZeroMQ frees a closed socket's port in its I/O thread, a moment after close(): wait for that, so
        # whoever asks next ("is a loop there?", a restart binding the port) sees it stopped
        deadline = time.monotonic() + 2.0
        while any(proxy_reachable(self.config.model_copy(update={"pub_port": p, "sub_port": p}), timeout=0.1)
                  for p in (self.config.pub_port, self.config.sub_port)) and time.monotonic() < deadline:
            time.sleep(0.02)

    @property
    def running(self) -> bool:
        """The forwarder runs, and so does the journal when there is one (the proxy stalls without it)."""
        alive = self._thread is not None and self._thread.is_alive()
        return alive and (self.journal is None or self.journal.running)

    def __enter__(self) -> "BusProxy":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class Publisher:
    """Sends envelopes into the proxy; waits until the proxy listens before the first send.

    An XPUB socket (not PUB) so that it can *see* the proxy's subscription; with
    ``XPUB_NODROP`` a full queue blocks (up to ``send_timeout_s``) instead of dropping.
    Safe to share between threads.
    """

    def __init__(self, config: BusConfig | None = None, *, source: str = "", context: zmq.Context | None = None):
        self.config = config or bus_settings()
        self.source = source
        ctx = context or zmq.Context.instance()
        self._sock = ctx.socket(zmq.XPUB)
        self._sock.setsockopt(zmq.SNDHWM, self.config.hwm)
        self._sock.setsockopt(zmq.XPUB_NODROP, 1)
        self._sock.setsockopt(zmq.SNDTIMEO, int(self.config.send_timeout_s * 1000))
        self._sock.setsockopt(zmq.LINGER, int(self.config.send_timeout_s * 1000))
        self._sock.connect(self.config.pub_address)
        self._lock = threading.Lock()
        self._ready = False
        self.sent = 0

    def wait_ready(self, timeout: float | None = None) -> bool:
        """True once the proxy's subscription arrived (it then receives everything we send)."""
        if self._ready:
            return True
        deadline = time.monotonic() + (self.config.ready_timeout_s if timeout is None else timeout)
        with self._lock:
            while not self._ready:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                if self._sock.poll(int(left * 1000) + 1, zmq.POLLIN):
                    frame = self._sock.recv()
                    self._ready = frame[:1] == b"\x01"
        return True

    def publish(self, subject: str, payload: dict[str, Any] | None = None, **fields: Any) -> Envelope:
        """Wrap ``payload`` in an envelope, send it, and return the envelope."""
        envelope = Envelope(subject=subject, payload=payload or {}, source=self.source, **fields)
        self.send(envelope)
        return envelope

    def send(self, envelope: Envelope) -> None:
        frames = envelope.encode()
        if len(frames[1]) > self.config.max_message_bytes:   # every subscriber would drop it: say so here
            raise ValueError(f"message {envelope.message_id} ({envelope.subject}): {len(frames[1]):,} bytes exceed "
                             f"the bus limit of {self.config.max_message_bytes:,} (config/bus.yaml "
                             "max_message_bytes)")
        if not self.wait_ready():
            raise BusError(f"no bus proxy at {self.config.pub_address} after {self.config.ready_timeout_s:g} s; "
                           "start it with `cns agents`")
        with self._lock:
            try:
                self._sock.send_multipart(frames)
            except zmq.Again as exc:
                raise BusError(f"bus queue full for {self.config.send_timeout_s:g} s; message "
                               f"{envelope.message_id} ({envelope.subject}) not sent") from exc
            self.sent += 1

    def send_many(self, envelopes: Iterable[Envelope]) -> int:
        n = 0
        for envelope in envelopes:
            self.send(envelope)
            n += 1
        return n

    def close(self) -> None:
        with self._lock:
            self._sock.close()

    def __enter__(self) -> "Publisher":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Subscriber:
    """Receives envelopes of the given subjects; malformed messages are logged, counted, dropped.

    Use from one thread only (ZeroMQ sockets are not thread-safe).
    """

    def __init__(self, subjects: Sequence[str], config: BusConfig | None = None, *,
                 context: zmq.Context | None = None):
        if isinstance(subjects, str) or not subjects:
            raise ValueError("subjects: expected a non-empty list of subjects")
        self.config = config or bus_settings()
        self.subjects = frozenset(subjects)
        ctx = context or zmq.Context.instance()
        self._sock = ctx.socket(zmq.SUB)
        self._sock.setsockopt(zmq.RCVHWM, self.config.hwm)
        self._sock.setsockopt(zmq.LINGER, 0)
        for subject in self.subjects:
            self._sock.setsockopt(zmq.SUBSCRIBE, subject.encode())
        self._sock.connect(self.config.sub_address)
        self._ping: str | None = None
        self._pinged = False
        self._buffer: deque[Envelope] = deque()
        self.dropped = 0

    def _read(self, timeout_ms: int) -> Envelope | None:
        """One frame set from the socket (None on timeout, on a dropped or a foreign message)."""
        if not self._sock.poll(timeout_ms, zmq.POLLIN):
            return None
        frames = self._sock.recv_multipart()
        try:
            env = Envelope.decode(frames, max_bytes=self.config.max_message_bytes,
                                  max_depth=self.config.max_json_depth)
        except MalformedMessage as exc:
            self.dropped += 1
            log.warning("bus: dropped a malformed message (subject frame %s): %s",
                        excerpt(bytes(frames[0]) if frames else b"", 80), exc)
            return None
        if env.subject == self._ping:
            self._pinged = True
            return None
        if env.subject not in self.subjects:   # a longer subject that shares our prefix
            return None
        return env

    def recv(self, timeout: float | None = None) -> Envelope | None:
        """The next envelope, waiting up to ``timeout`` seconds (None: forever); None on timeout."""
        if self._buffer:
            return self._buffer.popleft()
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = -1 if deadline is None else max(0, int((deadline - time.monotonic()) * 1000))
            env = self._read(left)
            if env is not None:
                return env
            if deadline is not None and time.monotonic() >= deadline:
                return None

    def recv_batch(self, max_messages: int, timeout: float) -> list[Envelope]:
        """Up to ``max_messages`` envelopes: waits up to ``timeout`` for the first, then takes what is queued."""
        out: list[Envelope] = []
        first = self.recv(timeout)
        if first is None:
            return out
        out.append(first)
        while len(out) < max_messages:
            if self._buffer:
                out.append(self._buffer.popleft())
                continue
            if not self._sock.poll(0, zmq.POLLIN):
                break
            env = self._read(0)
            if env is not None:
                out.append(env)
        return out

    def wait_ready(self, publisher: Publisher, timeout: float | None = None) -> None:
        """Ping ourselves through the proxy until a ping comes back: our subscription is live.

        Messages that arrive meanwhile are kept for :meth:`recv`.
        """
        self._ping = f"{_PING}{uuid.uuid4().hex}"
        self._pinged = False
        self._sock.setsockopt(zmq.SUBSCRIBE, self._ping.encode())
        deadline = time.monotonic() + (self.config.ready_timeout_s if timeout is None else timeout)
        try:
            while not self._pinged:
                if time.monotonic() > deadline:
                    raise BusError(f"subscriber on {self.config.sub_address} got no ping back in time; "
                                   "is the bus proxy running?")
                publisher.publish(self._ping, {})
                stop = time.monotonic() + 0.05
                while not self._pinged and time.monotonic() < stop:
                    env = self._read(10)
                    if env is not None:
                        self._buffer.append(env)
        finally:
            self._sock.setsockopt(zmq.UNSUBSCRIBE, self._ping.encode())

    def close(self) -> None:
        self._sock.close(linger=0)

    def __enter__(self) -> "Subscriber":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
