"""A small client for Ollama's HTTP API (``/api/chat``, ``/api/tags``) with typed errors.

One blocking request per call, a timeout per call, every failure one
:class:`~cns_core.agents.chat.ChatError` subclass (the ``Ollama*`` names below are
the same classes, for callers that name them). ``stream=True`` reads Ollama's
streamed reply (one JSON object per line, the last with ``done: true``).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from cns_core.agents.chat import (
    stream_chunk,
    ChatBadResponse,
    ChatError,
    ChatHTTPError,
    ChatModelMissing,
    ChatResult,
    ChatTimeout,
    ChatUnreachable,
    Reply,
    iter_lines,
    open_request,
    read_json,
)

if TYPE_CHECKING:
    from cns_core.models.minicheck import MiniCheckNLI

__all__ = ["OllamaError", "OllamaUnreachable", "OllamaTimeout", "OllamaModelMissing", "OllamaHTTPError",
           "OllamaBadResponse", "ChatResult", "OllamaClient", "minicheck_nli"]

OllamaError = ChatError
OllamaUnreachable = ChatUnreachable
OllamaTimeout = ChatTimeout
OllamaModelMissing = ChatModelMissing
OllamaHTTPError = ChatHTTPError
OllamaBadResponse = ChatBadResponse


class OllamaClient:
    """Blocking calls to one Ollama server."""

    def __init__(self, url: str = "http://127.0.0.1:11434", timeout: float = 30.0):
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ValueError(f"ollama url {url!r}: expected http(s)://host:port")
        self.url = url.rstrip("/")
        self.timeout = float(timeout)

    def __repr__(self) -> str:
        return f"OllamaClient({self.url!r})"

    def _open(self, path: str, body: Mapping[str, Any] | None, wait: float, model: str | None = None):
        try:
            return open_request(f"{self.url}{path}", body, timeout=wait,
                                server=f"Ollama at {self.url}; is `ollama serve` running and CNS_OLLAMA_URL right?")
        except ChatHTTPError as exc:
            text = exc.detail.lower()
            if exc.status == 404 and model is not None and ("not found" in text or "pull" in text):
                raise ChatModelMissing(f"model {model!r} is not available on {self.url} ({exc.detail}); "
                                       f"run `ollama pull {model}` or change the model in the config") from None
            raise

    def _call(self, path: str, body: Mapping[str, Any] | None, timeout: float | None,
              model: str | None = None) -> dict[str, Any]:
        wait = self.timeout if timeout is None else timeout
        return read_json(self._open(path, body, wait, model))

    def chat(self, model: str, messages: Sequence[Mapping[str, str]], *, temperature: float = 0.0,
             num_ctx: int | None = None, timeout: float | None = None, options: Mapping[str, Any] | None = None,
             logprobs: bool = False, top_logprobs: int = 0, stream: bool = False) -> ChatResult:
        """One chat completion (streamed when ``stream``; the result is the whole reply either way)."""
        if not model:
            raise ChatModelMissing("no model configured")
        opts: dict[str, Any] = {"temperature": temperature, **(options or {})}
        if num_ctx:
            opts["num_ctx"] = int(num_ctx)
        body: dict[str, Any] = {"model": model, "messages": list(messages), "stream": bool(stream), "options": opts}
        if logprobs:
            body.update({"logprobs": True, "top_logprobs": int(top_logprobs)})
        wait = self.timeout if timeout is None else timeout
        start = time.monotonic()
        reply = self._open("/api/chat", body, wait, model)
        out = self._read_stream(reply) if stream else read_json(reply)
        message = out.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, str):
            raise ChatBadResponse(f"/api/chat answer has no message.content: {str(out)[:160]}")
        return ChatResult(content=content, model=str(out.get("model", model)), latency_s=time.monotonic() - start,
                          raw=out)

    def _read_stream(self, reply: Reply) -> dict[str, Any]:
        """Join a streamed ``/api/chat`` reply into the shape of a non-streamed one."""
        where = reply.where
        parts: list[str] = []
        last: dict[str, Any] = {}
        for line in iter_lines(reply):
            chunk = stream_chunk(line, where, "line")
            if chunk.get("error"):
                raise ChatHTTPError(f"{where} failed mid-stream: {chunk['error']}", 500, str(chunk["error"]))
            message = chunk.get("message")
            if isinstance(message, dict) and isinstance(message.get("content"), str):
                parts.append(message["content"])
            last = chunk
            if chunk.get("done"):
                return {**chunk, "message": {"role": "assistant", "content": "".join(parts)}}
        raise ChatBadResponse(f"{where}: the stream ended without done: true ({str(last)[:120]})")

    def tags(self, timeout: float | None = None) -> list[str]:
        """Names of the models the server has (``ollama list``)."""
        out = self._call("/api/tags", None, timeout)
        models = out.get("models")
        if not isinstance(models, list):
            raise ChatBadResponse(f"/api/tags answer has no models list: {str(out)[:160]}")
        return [str(m.get("name") or m.get("model")) for m in models if isinstance(m, dict)]

    list_models = tags

    def has_model(self, model: str, timeout: float | None = None) -> bool:
        """Whether ``model`` is installed (a name without a tag means ``:latest``)."""
        want = model if ":" in model else f"{model}:latest"
        return any(name == model or name == want for name in self.tags(timeout))


def minicheck_nli(nli_cfg: Mapping[str, Any]) -> MiniCheckNLI:
    """The ``ollama-minicheck`` NLI backend (``config/models.yaml``) talking through an :class:`OllamaClient`."""
    from cns_core.models.minicheck import from_config

    return from_config(nli_cfg, lambda url, timeout: OllamaClient(url, timeout=timeout))
