"""What every chat backend of the judge loop shares: typed errors, the result, HTTP plumbing.

Two backends speak it (``config/critic.yaml`` ``backend``): Ollama's own API
(:mod:`cns_core.agents.ollama`) and any OpenAI-compatible chat-completions server --
vLLM, llama.cpp's server, LM Studio, TGI (:mod:`cns_core.agents.openai_compat`).
Standard library only (urllib). Every failure is one :class:`ChatError` subclass
whose ``reason`` the CriticAgent publishes instead of crashing.

A reply is bounded before it is parsed, whatever the server does: one deadline (the call's
``timeout``) covers the whole exchange, headers and every read, so a server that drips a byte
a second is cut off there; at most :data:`MAX_REPLY_BYTES` are read; a body shorter than its
``Content-Length`` is a bad response, not an ``IncompleteRead`` escaping the client; JSON nested
deeper than :data:`MAX_REPLY_DEPTH` is refused by a flat scan before any parser recurses.
Streamed replies (Ollama's JSON lines, OpenAI's server-sent events) are read line by line
under the same deadline.
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from http.client import HTTPResponse
from typing import Any, Iterator, Mapping, Protocol, Sequence

from cns_core.bounds import excerpt, loads_json_bounded

__all__ = ["stream_chunk", "ChatError", "ChatUnreachable", "ChatTimeout", "ChatModelMissing", "ChatHTTPError", "ChatBadResponse",
           "ChatResult", "ChatClient", "BACKENDS", "Reply", "open_request", "read_json", "iter_lines",
           "MAX_REPLY_BYTES", "MAX_REPLY_DEPTH"]

BACKENDS = ("ollama", "openai")
MAX_REPLY_BYTES = 4_000_000     # a grade is a few KB (feedback is cut at 20,000 characters); logprobs add little
MAX_REPLY_DEPTH = 64            # a chat reply nests 4-5 levels (logprobs included)


class ChatError(RuntimeError):
    """Any failure talking to a chat server; ``reason`` is a short machine-friendly tag."""

    reason = "chat_error"


class ChatUnreachable(ChatError):
    reason = "unreachable"


class ChatTimeout(ChatError):
    reason = "timeout"


class ChatModelMissing(ChatError):
    reason = "model_missing"


class ChatHTTPError(ChatError):
    reason = "http_error"

    def __init__(self, message: str, status: int, detail: str = ""):
        super().__init__(message)
        self.status = status
        self.detail = detail


class ChatBadResponse(ChatError):
    reason = "bad_response"


@dataclass(frozen=True)
class ChatResult:
    content: str
    model: str
    latency_s: float
    raw: Mapping[str, Any] = field(repr=False, default_factory=dict)

    @property
    def logprobs(self) -> list[dict[str, Any]]:
        """Per-token log-probabilities when the server returned them (``logprobs: true``)."""
        value = self.raw.get("logprobs")
        return list(value) if isinstance(value, list) else []


class ChatClient(Protocol):
    url: str

    def chat(self, model: str, messages: Sequence[Mapping[str, str]], *, temperature: float = 0.0,
             num_ctx: int | None = None, timeout: float | None = None) -> ChatResult: ...

    def list_models(self, timeout: float | None = None) -> list[str]: ...

    def has_model(self, model: str, timeout: float | None = None) -> bool: ...


def open_request(url: str, body: Mapping[str, Any] | None, *, timeout: float, server: str,
                 headers: Mapping[str, str] | None = None) -> "Reply":
    """The open reply of a GET (``body`` None) or a JSON POST; errors typed, messages naming ``server``.

    ``timeout`` bounds the whole exchange, not each read: a deadline starts now and, when it passes,
    the connection is shut (a server that drips its headers or body a byte at a time is cut off there).
    """
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method="GET" if body is None else "POST",
                                     headers={"Content-Type": "application/json", **(headers or {})})
    deadline = _Deadline(timeout)
    opener = urllib.request.build_opener(_WatchedHTTP(deadline), _WatchedHTTPS(deadline))
    try:
        return Reply(opener.open(request, timeout=timeout), url, timeout, deadline)
    except urllib.error.HTTPError as exc:
        detail = _error_text(exc)
        deadline.cancel()
        raise ChatHTTPError(f"{url} answered HTTP {exc.code}: {detail}", exc.code, detail) from None
    except BaseException as exc:
        deadline.cancel()
        if deadline.fired or isinstance(exc, (TimeoutError, socket.timeout)) or (
                isinstance(exc, urllib.error.URLError) and isinstance(exc.reason, (TimeoutError, socket.timeout))):
            raise ChatTimeout(f"{url} gave no answer within {timeout:g} s") from None
        if isinstance(exc, urllib.error.URLError):
            raise ChatUnreachable(f"cannot reach {server} ({exc.reason})") from None
        if isinstance(exc, OSError):
            raise ChatUnreachable(f"connection to {server} failed ({exc})") from None
        if isinstance(exc, http.client.HTTPException):     # a status line or headers that are not HTTP
            raise ChatBadResponse(f"{url} did not answer in HTTP ({type(exc).__name__}: "
                                  f"{excerpt(str(exc), 120)})") from None
        raise


class _Deadline:
    """Shuts the watched socket when ``seconds`` have passed: a blocked read then returns at once."""

    def __init__(self, seconds: float):
        self.fired = False
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True
        self._timer.start()

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            self._sock = sock
            fired = self.fired
        if fired:
            _shut(sock)

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            sock = self._sock
        if sock is not None:
            _shut(sock)

    def cancel(self) -> None:
        self._timer.cancel()


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


class _Watched:
    """A urllib handler whose connections hand their socket to a :class:`_Deadline` once connected."""

    def __init__(self, deadline: _Deadline, **kwargs: Any):
        super().__init__(**kwargs)
        self.deadline = deadline

    def do_open(self, http_class: type, req: Any, **kwargs: Any) -> Any:
        deadline = self.deadline

        class Watched(http_class):     # type: ignore[misc, valid-type]
            def connect(self) -> None:
                super().connect()
                deadline.watch(self.sock)

        return super().do_open(Watched, req, **kwargs)    # type: ignore[misc]


class _WatchedHTTP(_Watched, urllib.request.HTTPHandler):
    pass


class _WatchedHTTPS(_Watched, urllib.request.HTTPSHandler):
    pass


@dataclass
class Reply:
    """An open reply: read at most :data:`MAX_REPLY_BYTES`, under the deadline set when it was asked for."""

    resp: HTTPResponse
    where: str
    timeout: float
    deadline: _Deadline

    def chunks(self) -> Iterator[bytes]:
        """The body in pieces as they arrive; typed errors for a reply that stalls past the deadline,
        breaks off before its announced length, or grows past the limit."""
        total = 0
        try:
            with self.resp:
                while True:
                    piece = self.resp.read1(65536)
                    if self.deadline.fired:
                        raise ChatTimeout(f"{self.where}: the reply did not finish within {self.timeout:g} s")
                    if not piece:
                        missing = self.resp.length
                        if missing:
                            raise ChatBadResponse(f"{self.where}: the reply broke off after {total:,} bytes, "
                                                  f"{missing:,} more announced")
                        return
                    total += len(piece)
                    if total > MAX_REPLY_BYTES:
                        raise ChatBadResponse(f"{self.where}: the reply is longer than {MAX_REPLY_BYTES:,} bytes")
                    yield piece
        except (TimeoutError, socket.timeout):
            raise ChatTimeout(f"{self.where}: the reply stalled (no data within {self.timeout:g} s)") from None
        except http.client.HTTPException as exc:     # IncompleteRead of a chunked reply, and the like
            raise ChatBadResponse(f"{self.where}: the reply broke off ({type(exc).__name__})") from None
        except OSError as exc:
            if self.deadline.fired:
                raise ChatTimeout(f"{self.where}: the reply did not finish within {self.timeout:g} s") from None
            raise ChatUnreachable(f"{self.where}: the connection broke ({exc})") from None
        finally:
            self.deadline.cancel()


def read_json(reply: Reply) -> dict[str, Any]:
    """The whole body of a non-streamed reply as a JSON object, its size and nesting bounded before parsing."""
    return _json_object(b"".join(reply.chunks()), f"{reply.where} returned", "non-JSON")


def iter_lines(reply: Reply) -> Iterator[str]:
    """Non-blank lines of a streamed reply, as they arrive (the reply's one deadline and size bound hold)."""
    pending = b""
    for piece in reply.chunks():
        pending += piece
        *lines, pending = pending.split(b"\n")
        for raw in lines:
            line = raw.decode("utf-8", "replace").strip()
            if line:
                yield line
    line = pending.decode("utf-8", "replace").strip()
    if line:
        yield line


def stream_chunk(text: str, where: str, what: str) -> dict[str, Any]:
    """One streamed JSON object (``what``: 'line' or 'event'); anything else is a bad response."""
    return _json_object(text, f"{where} streamed", f"a non-JSON {what}")


def _json_object(raw: str | bytes, said: str, non_json: str) -> dict[str, Any]:
    """``raw`` parsed as a JSON object, nesting bounded before the parser sees it (200,000 brackets never
    reach it); else :class:`ChatBadResponse` ("<where> returned non-JSON: ...")."""
    try:
        out = loads_json_bounded(raw, MAX_REPLY_DEPTH)
    except ValueError as exc:
        raise ChatBadResponse(f"{said} {non_json} ({exc}): {excerpt(raw[:120], 140)}") from None
    if not isinstance(out, dict):
        raise ChatBadResponse(f"{said} {type(out).__name__}, expected an object")
    return out


def _error_text(exc: urllib.error.HTTPError) -> str:
    try:
        body = exc.read(64_000).decode("utf-8", "replace")
    except (OSError, http.client.HTTPException):
        return exc.reason or ""
    try:
        parsed = json.loads(body)
    except ValueError:
        return body.strip()[:200] or str(exc.reason)
    if isinstance(parsed, dict):
        error = parsed.get("error")
        if isinstance(error, dict):      # OpenAI: {"error": {"message": ..., "type": ...}}
            error = error.get("message")
        if error:
            return str(error)[:300]
    return body.strip()[:200] or str(exc.reason)
