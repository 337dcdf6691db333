"""What the bus and its journal share: the envelope, the bus settings, socket helpers.

:mod:`cns_core.agents.bus` starts the journal (:mod:`cns_core.agents.journal`) and the
journal speaks the bus's envelopes on the bus's ports, so these live here, where both
import them without importing each other. Everyone else keeps importing them from
:mod:`cns_core.agents.bus`.
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any, Sequence

import zmq
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from cns_core.access import is_loopback
from cns_core.bounds import excerpt, json_depth_over
from cns_core.config import state_dir

__all__ = ["BusError", "MalformedMessage", "Envelope", "BusConfig", "bind_socket", "signal_and_join",
           "MAX_MESSAGE_BYTES", "MAX_JSON_DEPTH", "check_body"]

# The defaults of bus.yaml's max_message_bytes and max_json_depth. A turn's fields are bounded
# far below this (cns_core.agents.messages); an envelope nests three levels deep.
MAX_MESSAGE_BYTES = 1_000_000
MAX_JSON_DEPTH = 32

class BusError(RuntimeError):
    """The bus cannot be used: a port is taken, the proxy is not there, a queue stays full."""


class MalformedMessage(ValueError):
    """Frames that are not a valid envelope; subscribers log and drop them."""


class Envelope(BaseModel):
    """One message on the bus."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    subject: str = Field(pattern=r"^[a-z][a-z0-9_-]*(\.[a-z0-9_-]+)*$", max_length=200)
    payload: dict[str, Any] = Field(default_factory=dict)
    message_id: str = Field(default_factory=lambda: uuid.uuid4().hex, min_length=1, max_length=200)
    timestamp: float = Field(default_factory=time.time)
    source: str = ""

    def encode(self) -> list[bytes]:
        try:
            return [self.subject.encode(), self.model_dump_json().encode()]
        except (ValueError, TypeError) as exc:  # PydanticSerializationError is a ValueError
            raise ValueError(f"payload of {self.subject!r}: not JSON-serialisable ({exc})") from exc

    @classmethod
    def decode(cls, frames: Sequence[bytes], *, max_bytes: int = MAX_MESSAGE_BYTES,
               max_depth: int = MAX_JSON_DEPTH) -> "Envelope":
        """The envelope in ``frames``, or :class:`MalformedMessage` saying what is wrong.

        Size and nesting are checked before the JSON is parsed (:func:`check_body`).
        """
        if len(frames) != 2:
            raise MalformedMessage(f"expected 2 frames (subject, JSON), got {len(frames)}")
        check_body(frames[1], max_bytes, max_depth)
        try:
            env = cls.model_validate_json(frames[1])
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}" for e in exc.errors()[:3])
            raise MalformedMessage(problems) from None
        if env.subject.encode() != bytes(frames[0]):
            raise MalformedMessage(f"subject frame {excerpt(bytes(frames[0]), 60)} differs from envelope subject "
                                   f"{excerpt(env.subject, 60)}")
        return env


def check_body(body: bytes, max_bytes: int = MAX_MESSAGE_BYTES, max_depth: int = MAX_JSON_DEPTH) -> None:
    """MalformedMessage when a message body is larger than ``max_bytes`` or its JSON nests deeper than
    ``max_depth``: checked before parsing, so no message can make a parser recurse or a reader
    hold gigabytes."""
    size = len(body)
    if size > max_bytes:
        raise MalformedMessage(f"body: {size:,} bytes exceed the bus limit of {max_bytes:,} "
                               "(config/bus.yaml max_message_bytes)")
    if json_depth_over(body, max_depth):
        raise MalformedMessage(f"body: JSON nested more than {max_depth} levels deep "
                               "(config/bus.yaml max_json_depth)")


class BusConfig(BaseModel):
    """Where the proxy listens and how patient peers are (``config/bus.yaml``)."""

    model_config = ConfigDict(frozen=True)

    host: str = "127.0.0.1"
    allow_non_loopback: bool = False     # the bus has no authentication: another host only on purpose
    pub_port: int = Field(5581, ge=1, le=65535)
    sub_port: int = Field(5582, ge=1, le=65535)
    journal_port: int = Field(5583, ge=1, le=65535)
    hwm: int = Field(100_000, ge=1)
    send_timeout_s: float = Field(5.0, gt=0)
    ready_timeout_s: float = Field(5.0, gt=0)
    stop_grace_s: float = Field(8.0, gt=0)
    journal_enabled: bool = True
    journal_path: str | None = None
    journal_keep: int = Field(200_000, ge=100)
    replay_batch: int = Field(2000, ge=1)
    max_message_bytes: int = Field(MAX_MESSAGE_BYTES, ge=4096)
    max_json_depth: int = Field(MAX_JSON_DEPTH, ge=4, le=200)

    @model_validator(mode="after")
    def _loopback(self) -> "BusConfig":
        if not is_loopback(self.host) and not self.allow_non_loopback:
            raise ValueError(f"bus host {self.host!r}: the bus listens on loopback only (127.0.0.1, ::1, localhost): "
                             "anyone who reaches its ports could publish turns and grades, it has no "
                             "authentication. To listen there on purpose set allow_non_loopback: true in "
                             "config/bus.yaml")
        return self

    def address(self, port: int) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"tcp://{host}:{port}"

    @property
    def pub_address(self) -> str:
        return self.address(self.pub_port)

    @property
    def sub_address(self) -> str:
        return self.address(self.sub_port)

    @property
    def journal_address(self) -> str:
        return self.address(self.journal_port)

    def journal_file(self):
        from pathlib import Path

        return Path(self.journal_path) if self.journal_path else state_dir() / "bus_journal.sqlite"


def bind_socket(sock: zmq.Socket, address: str, what: str, settle_s: float = 1.0) -> None:
    """Bind, waiting up to ``settle_s`` for a port that a just-closed socket still holds.

    ZeroMQ releases a closed socket's port in its I/O thread, shortly after ``close``
    returns, so a proxy restarted at once would otherwise find its own old port taken.
    """
    deadline = time.monotonic() + settle_s
    while True:
        try:
            sock.bind(address)
            return
        except zmq.ZMQError as exc:
            if exc.errno == zmq.EADDRINUSE and time.monotonic() < deadline:
                time.sleep(0.05)
                continue
            sock.close(linger=0)
            raise BusError(f"{what}: cannot listen on {address} ({exc}); is another `cns agents` running? "
                           "Choose other ports in config/bus.yaml or CNS_BUS_*_PORT.") from exc


def signal_and_join(control: zmq.Socket, message: bytes, thread: threading.Thread, timeout: float = 5.0) -> None:
    """Tell a socket-owning thread to stop over its inproc control socket, wait, close the socket."""
    control.send(message)
    thread.join(timeout)
    control.close(linger=0)
