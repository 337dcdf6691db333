"""The chat client for a backend name (``config/critic.yaml`` ``backend``).

Apart from :mod:`cns_core.agents.chat` so that the shared plumbing there never
imports the backends built on it (:mod:`~cns_core.agents.ollama`,
:mod:`~cns_core.agents.openai_compat`).
"""

from __future__ import annotations

from cns_core.agents.chat import BACKENDS, ChatClient
from cns_core.agents.ollama import OllamaClient
from cns_core.agents.openai_compat import OpenAIClient

__all__ = ["make_chat_client"]


def make_chat_client(backend: str, url: str, timeout: float, api_key: str | None = None) -> ChatClient:
    """The client for ``backend`` (one of :data:`~cns_core.agents.chat.BACKENDS`)."""
    if backend == "ollama":
        return OllamaClient(url, timeout=timeout)
    if backend == "openai":
        return OpenAIClient(url, timeout=timeout, api_key=api_key)
    raise ValueError(f"judge backend {backend!r}: expected one of {', '.join(BACKENDS)}")
