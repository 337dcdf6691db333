"""A client for any OpenAI-compatible chat-completions server (vLLM, llama.cpp's server,
LM Studio, TGI, OpenAI itself): ``POST {base}/chat/completions`` and ``GET {base}/models``.

``base`` is the API root, usually ending in ``/v1``. The API key, when the server
wants one, comes from the environment variable named in ``config/critic.yaml``
(never from the file). ``stream=True`` reads server-sent events (``data: {...}``
lines with ``choices[0].delta.content``, ending with ``data: [DONE]``).
"""

from __future__ import annotations

import time
from typing import Any, Mapping, Sequence

from cns_core.agents.chat import (
    stream_chunk,
    ChatBadResponse,
    ChatHTTPError,
    ChatModelMissing,
    ChatResult,
    Reply,
    iter_lines,
    open_request,
    read_json,
)

__all__ = ["OpenAIClient"]


class OpenAIClient:
    """Blocking calls to one OpenAI-compatible server."""

    def __init__(self, base_url: str = "http://127.0.0.1:8000/v1", timeout: float = 30.0, api_key: str | None = None):
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ValueError(f"openai base_url {base_url!r}: expected http(s)://host:port/v1")
        self.url = base_url.rstrip("/")
        self.timeout = float(timeout)
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}

    def __repr__(self) -> str:
        return f"OpenAIClient({self.url!r})"

    def _open(self, path: str, body: Mapping[str, Any] | None, wait: float, model: str | None = None):
        try:
            return open_request(f"{self.url}{path}", body, timeout=wait, headers=self._headers,
                                server=f"the OpenAI-compatible server at {self.url}; is it running and "
                                       "openai.base_url (or CNS_OPENAI_BASE_URL) right?")
        except ChatHTTPError as exc:
            text = exc.detail.lower()
            if exc.status == 404 and model is not None and ("model" in text or "not found" in text):
                raise ChatModelMissing(f"model {model!r} is not served by {self.url} ({exc.detail}); start the "
                                       "server with that model or change openai.model in config/critic.yaml") from None
            if exc.status in (401, 403):
                raise ChatHTTPError(f"{self.url}{path} refused the request (HTTP {exc.status}: {exc.detail}); "
                                    "set the API key in the environment variable named by openai.api_key_env",
                                    exc.status, exc.detail) from None
            raise

    def chat(self, model: str, messages: Sequence[Mapping[str, str]], *, temperature: float = 0.0,
             num_ctx: int | None = None, timeout: float | None = None, stream: bool = False) -> ChatResult:
        """One chat completion (``num_ctx`` is the server's business here and is not sent)."""
        if not model:
            raise ChatModelMissing("no model configured")
        body = {"model": model, "messages": list(messages), "temperature": temperature, "stream": bool(stream)}
        wait = self.timeout if timeout is None else timeout
        start = time.monotonic()
        where = f"{self.url}/chat/completions"
        reply = self._open("/chat/completions", body, wait, model)
        if stream:
            content, served = self._read_stream(reply)
            raw: dict[str, Any] = {"model": served or model, "streamed": True}
        else:
            raw = read_json(reply)
            content = _message_content(raw, where)
        return ChatResult(content=content, model=str(raw.get("model") or model), latency_s=time.monotonic() - start,
                          raw=raw)

    def _read_stream(self, reply: Reply) -> tuple[str, str]:
        where = reply.where
        parts: list[str] = []
        model = ""
        for line in iter_lines(reply):
            if not line.startswith("data:"):
                continue                      # comments (": keep-alive"), event names
            data = line[5:].strip()
            if data == "[DONE]":
                return "".join(parts), model
            chunk = stream_chunk(data, where, "event")
            if chunk.get("error"):
                error = chunk["error"]
                detail = str(error.get("message") if isinstance(error, dict) else error)
                raise ChatHTTPError(f"{where} failed mid-stream: {detail}", 500, detail)
            model = str(chunk.get("model") or model)
            choices = chunk.get("choices")
            delta = choices[0].get("delta") if isinstance(choices, list) and choices and isinstance(
                choices[0], dict) else None
            if isinstance(delta, dict) and isinstance(delta.get("content"), str):
                parts.append(delta["content"])
        raise ChatBadResponse(f"{where}: the stream ended without data: [DONE]")

    def list_models(self, timeout: float | None = None) -> list[str]:
        """Ids of the models the server serves (``GET /models``)."""
        wait = self.timeout if timeout is None else timeout
        out = read_json(self._open("/models", None, wait))
        data = out.get("data")
        if not isinstance(data, list):
            raise ChatBadResponse(f"{self.url}/models answer has no data list: {str(out)[:160]}")
        return [str(m.get("id")) for m in data if isinstance(m, dict) and m.get("id")]

    def has_model(self, model: str, timeout: float | None = None) -> bool:
        return model in self.list_models(timeout)


def _message_content(out: Mapping[str, Any], where: str) -> str:
    choices = out.get("choices")
    message = choices[0].get("message") if isinstance(choices, list) and choices and isinstance(
        choices[0], dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, str):
        raise ChatBadResponse(f"{where} answer has no choices[0].message.content: {str(out)[:160]}")
    return content
