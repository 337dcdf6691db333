"""A small client for Ollama's HTTP API (``/api/chat``, ``/api/tags``) with typed errors.

Standard library only (urllib): one blocking request per call, a timeout per
call, and every failure mapped to one :class:`OllamaError` subclass whose name
says what happened, so agents can publish the reason instead of crashing.
"""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

__all__ = ["OllamaError", "OllamaUnreachable", "OllamaTimeout", "OllamaModelMissing", "OllamaHTTPError",
           "OllamaBadResponse", "ChatResult", "OllamaClient"]


class OllamaError(RuntimeError):
    """Any failure talking to Ollama; ``reason`` is a short machine-friendly tag."""

    reason = "ollama_error"


class OllamaUnreachable(OllamaError):
    reason = "unreachable"


class OllamaTimeout(OllamaError):
    reason = "timeout"


class OllamaModelMissing(OllamaError):
    reason = "model_missing"


class OllamaHTTPError(OllamaError):
    reason = "http_error"

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


class OllamaBadResponse(OllamaError):
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


class OllamaClient:
    """Blocking calls to one Ollama server."""

    def __init__(self, url: str = "http://127.0.0.1:11434", timeout: float = 30.0):
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ValueError(f"ollama url {url!r}: expected http(s)://host:port")
        self.url = url.rstrip("/")
        self.timeout = float(timeout)

    def __repr__(self) -> str:
        return f"OllamaClient({self.url!r})"

    def _call(self, path: str, body: Mapping[str, Any] | None, timeout: float | None,
              model: str | None = None) -> dict[str, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"{self.url}{path}", data=data, method="GET" if body is None else "POST",
                                         headers={"Content-Type": "application/json"})
        wait = self.timeout if timeout is None else timeout
        try:
            with urllib.request.urlopen(request, timeout=wait) as resp:
                payload = resp.read()
        except urllib.error.HTTPError as exc:
            detail = _error_text(exc)
            if exc.code == 404 and model is not None and ("not found" in detail.lower() or "pull" in detail.lower()):
                raise OllamaModelMissing(f"model {model!r} is not available on {self.url} ({detail}); "
                                         f"run `ollama pull {model}` or change the model in the config") from None
            raise OllamaHTTPError(f"{self.url}{path} answered HTTP {exc.code}: {detail}", exc.code) from None
        except (TimeoutError, socket.timeout):
            raise OllamaTimeout(f"{self.url}{path} gave no answer within {wait:g} s") from None
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, (TimeoutError, socket.timeout)):
                raise OllamaTimeout(f"{self.url}{path} gave no answer within {wait:g} s") from None
            raise OllamaUnreachable(f"cannot reach Ollama at {self.url} ({exc.reason}); is `ollama serve` "
                                    "running and CNS_OLLAMA_URL right?") from None
        except (ConnectionError, OSError) as exc:
            raise OllamaUnreachable(f"connection to Ollama at {self.url} failed ({exc})") from None
        try:
            out = json.loads(payload)
        except ValueError:
            raise OllamaBadResponse(f"{self.url}{path} returned non-JSON: {payload[:120]!r}") from None
        if not isinstance(out, dict):
            raise OllamaBadResponse(f"{self.url}{path} returned {type(out).__name__}, expected an object")
        return out

    def chat(self, model: str, messages: Sequence[Mapping[str, str]], *, temperature: float = 0.0,
             num_ctx: int | None = None, timeout: float | None = None, options: Mapping[str, Any] | None = None,
             logprobs: bool = False, top_logprobs: int = 0) -> ChatResult:
        """One non-streamed chat completion."""
        if not model:
            raise OllamaModelMissing("no model configured")
        opts: dict[str, Any] = {"temperature": temperature, **(options or {})}
        if num_ctx:
            opts["num_ctx"] = int(num_ctx)
        body: dict[str, Any] = {"model": model, "messages": list(messages), "stream": False, "options": opts}
        if logprobs:
            body.update({"logprobs": True, "top_logprobs": int(top_logprobs)})
        start = time.monotonic()
        out = self._call("/api/chat", body, timeout, model=model)
        message = out.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, str):
            raise OllamaBadResponse(f"/api/chat answer has no message.content: {str(out)[:160]}")
        return ChatResult(content=content, model=str(out.get("model", model)), latency_s=time.monotonic() - start,
                          raw=out)

    def tags(self, timeout: float | None = None) -> list[str]:
        """Names of the models the server has (``ollama list``)."""
        out = self._call("/api/tags", None, timeout)
        models = out.get("models")
        if not isinstance(models, list):
            raise OllamaBadResponse(f"/api/tags answer has no models list: {str(out)[:160]}")
        return [str(m.get("name") or m.get("model")) for m in models if isinstance(m, dict)]

    def has_model(self, model: str, timeout: float | None = None) -> bool:
        """Whether ``model`` is installed (a name without a tag means ``:latest``)."""
        want = model if ":" in model else f"{model}:latest"
        return any(name == model or name == want for name in self.tags(timeout))


def _error_text(exc: urllib.error.HTTPError) -> str:
    try:
        body = exc.read().decode("utf-8", "replace")
    except OSError:
        return exc.reason or ""
    try:
        parsed = json.loads(body)
        if isinstance(parsed, dict) and parsed.get("error"):
            return str(parsed["error"])
    except ValueError:
        pass
    return body.strip()[:200] or str(exc.reason)
