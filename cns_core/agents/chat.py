"""What every chat backend of the judge loop shares: typed errors, the result, HTTP plumbing.

Two backends speak it (``config/critic.yaml`` ``backend``): Ollama's own API
(:mod:`cns_core.agents.ollama`) and any OpenAI-compatible chat-completions server --
vLLM, llama.cpp's server, LM Studio, TGI (:mod:`cns_core.agents.openai_compat`).
Standard library only (urllib). Every failure is one :class:`ChatError` subclass
whose ``reason`` the CriticAgent publishes instead of crashing. Streamed replies
(Ollama's JSON lines, OpenAI's server-sent events) are read line by line under one
deadline for the whole reply.
"""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from http.client import HTTPResponse
from typing import Any, Iterator, Mapping, Protocol, Sequence

__all__ = ["stream_chunk", "ChatError", "ChatUnreachable", "ChatTimeout", "ChatModelMissing", "ChatHTTPError", "ChatBadResponse",
           "ChatResult", "ChatClient", "BACKENDS", "open_request", "read_json", "iter_lines"]

BACKENDS = ("ollama", "openai")


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
                 headers: Mapping[str, str] | None = None) -> HTTPResponse:
    """The open response of a GET (``body`` None) or a JSON POST; errors typed, messages naming ``server``."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method="GET" if body is None else "POST",
                                     headers={"Content-Type": "application/json", **(headers or {})})
    try:
        return urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as exc:
        detail = _error_text(exc)
        raise ChatHTTPError(f"{url} answered HTTP {exc.code}: {detail}", exc.code, detail) from None
    except (TimeoutError, socket.timeout):
        raise ChatTimeout(f"{url} gave no answer within {timeout:g} s") from None
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, (TimeoutError, socket.timeout)):
            raise ChatTimeout(f"{url} gave no answer within {timeout:g} s") from None
        raise ChatUnreachable(f"cannot reach {server} ({exc.reason})") from None
    except (ConnectionError, OSError) as exc:
        raise ChatUnreachable(f"connection to {server} failed ({exc})") from None


def read_json(resp: HTTPResponse, where: str, timeout: float) -> dict[str, Any]:
    """The whole body of a non-streamed reply as a JSON object."""
    try:
        with resp:
            payload = resp.read()
    except (TimeoutError, socket.timeout):
        raise ChatTimeout(f"{where} stopped answering within {timeout:g} s") from None
    except OSError as exc:
        raise ChatUnreachable(f"{where}: the connection broke ({exc})") from None
    return _json_object(payload, f"{where} returned", "non-JSON")


def iter_lines(resp: HTTPResponse, where: str, deadline: float, timeout: float) -> Iterator[str]:
    """Non-blank lines of a streamed reply; :class:`ChatTimeout` once the whole reply passes ``deadline``."""
    try:
        with resp:
            for raw in resp:
                if time.monotonic() > deadline:
                    raise ChatTimeout(f"{where}: the streamed reply did not finish within {timeout:g} s")
                line = raw.decode("utf-8", "replace").strip()
                if line:
                    yield line
    except (TimeoutError, socket.timeout):
        raise ChatTimeout(f"{where}: the streamed reply stalled (no data within {timeout:g} s)") from None
    except OSError as exc:
        raise ChatUnreachable(f"{where}: the connection broke mid-stream ({exc})") from None


def stream_chunk(text: str, where: str, what: str) -> dict[str, Any]:
    """One streamed JSON object (``what``: 'line' or 'event'); anything else is a bad response."""
    return _json_object(text, f"{where} streamed", f"a non-JSON {what}")


def _json_object(raw: str | bytes, said: str, non_json: str) -> dict[str, Any]:
    """``raw`` parsed as a JSON object; else :class:`ChatBadResponse` ("<where> returned non-JSON: ...")."""
    try:
        out = json.loads(raw)
    except ValueError:
        raise ChatBadResponse(f"{said} {non_json}: {raw[:120]!r}") from None
    if not isinstance(out, dict):
        raise ChatBadResponse(f"{said} {type(out).__name__}, expected an object")
    return out


def _error_text(exc: urllib.error.HTTPError) -> str:
    try:
        body = exc.read().decode("utf-8", "replace")
    except OSError:
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
