"""NLI backend ``ollama-minicheck``: a grounding model served by Ollama (e.g. Bespoke-MiniCheck).

The model reads ``Document: <premise>\\nClaim: <hypothesis>`` and answers Yes or
No. That is one probability, p(supported), taken from the answer's log-probs
when the server returns them, else from ``yes_probability`` for a plain answer.
It maps onto the three NLI columns as entailment = p, and the rest split by
``contradiction_share`` between neutral and contradiction: MiniCheck says
"not supported" without saying "contradicted", so by default a No leans
neutral. Requests run in a small thread pool; answers are cached per pair.

The chat client is given, not built here (a model backend knows no agent): any object with
``url``, ``has_model(model)`` and ``chat(model, messages, ...)`` whose failures are ``RuntimeError``
(the judge clients' ``ChatError``); :func:`cns_core.agents.ollama.minicheck_nli` builds one from config.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Mapping, Protocol, Sequence

import numpy as np

from cns_core.config import ConfigError, env_override
from cns_core.models.errors import ModelUnavailableError
from cns_core.bounds import logger

__all__ = ["MiniCheckNLI", "from_config"]

log = logger(__name__)
_REMEDY = ("Start Ollama (or set CNS_OLLAMA_URL), `ollama pull {model}`, or choose another nli.backend "
           "in config/models.yaml.")


class ChatClient(Protocol):
    """What the backend asks of a chat client (:class:`cns_core.agents.ollama.OllamaClient` is one)."""

    url: str

    def has_model(self, model: str, timeout: float | None = None) -> bool: ...

    def chat(self, model: str, messages: Sequence[Mapping[str, str]], **kwargs: Any) -> Any: ...


class MiniCheckNLI:
    """``predict(pairs) -> (n, 3)`` with columns (entailment, neutral, contradiction)."""

    name = "ollama-minicheck"

    def __init__(self, client: ChatClient, model: str, concurrency: int = 4,
                 yes_probability: float = 0.95, contradiction_share: float = 0.3, cache_size: int = 4096):
        if not 0.5 < yes_probability <= 1.0:
            raise ConfigError(f"nli.ollama_minicheck.yes_probability: {yes_probability} is not in (0.5, 1]")
        if not 0.0 <= contradiction_share <= 1.0:
            raise ConfigError(f"nli.ollama_minicheck.contradiction_share: {contradiction_share} is not in [0, 1]")
        self.client = client
        self.model = model
        self.concurrency = max(1, int(concurrency))
        self.yes_probability = float(yes_probability)
        self.contradiction_share = float(contradiction_share)
        self.cache_size = int(cache_size)
        self._cache: OrderedDict[tuple[str, str], float] = OrderedDict()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"MiniCheckNLI({self.client.url!r}, model={self.model!r})"

    def check(self) -> None:
        """Raise :class:`ModelUnavailableError` unless the server has the model."""
        try:
            present = self.client.has_model(self.model)
        except RuntimeError as exc:
            raise ModelUnavailableError(self.name, str(exc), _REMEDY.format(model=self.model)) from None
        if not present:
            raise ModelUnavailableError(self.name, f"model {self.model!r} is not pulled on {self.client.url}",
                                        _REMEDY.format(model=self.model))

    def _p_supported(self, pair: tuple[str, str]) -> float:
        premise, hypothesis = pair
        messages = [{"role": "user", "content": f"Document: {premise}\nClaim: {hypothesis}"}]
        try:
            result = self.client.chat(self.model, messages, temperature=0.0, logprobs=True, top_logprobs=5,
                                      options={"num_predict": 2})
        except RuntimeError as exc:
            raise ModelUnavailableError(self.name, str(exc), _REMEDY.format(model=self.model)) from None
        from_logprobs = _p_yes_from_logprobs(result.logprobs)
        if from_logprobs is not None:
            return from_logprobs
        answer = result.content.strip().lower()
        if answer.startswith("yes"):
            return self.yes_probability
        if answer.startswith("no"):
            return 1.0 - self.yes_probability
        log.warning("%s: answer %r is neither Yes nor No; treating the claim as undecided", self.name,
                    result.content[:40])
        return 0.5

    def predict(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        pairs = [(str(p), str(h)) for p, h in pairs]
        out = np.zeros((len(pairs), 3), dtype=np.float32)
        if not pairs:
            return out
        with self._lock:
            known = {pair: self._cache[pair] for pair in pairs if pair in self._cache}
        todo = list(dict.fromkeys(pair for pair in pairs if pair not in known))
        if todo:
            with ThreadPoolExecutor(max_workers=min(self.concurrency, len(todo))) as pool:
                fresh = dict(zip(todo, pool.map(self._p_supported, todo)))
            with self._lock:
                for pair, p in fresh.items():
                    self._cache[pair] = p
                while len(self._cache) > self.cache_size:
                    self._cache.popitem(last=False)
            known.update(fresh)
        p = np.array([known[pair] for pair in pairs], dtype=np.float32)
        out[:, 0] = p
        out[:, 2] = (1.0 - p) * self.contradiction_share
        out[:, 1] = 1.0 - out[:, 0] - out[:, 2]
        return out


def _p_yes_from_logprobs(logprobs: list[dict[str, Any]]) -> float | None:
    """p(Yes) from the first generated token's alternatives, renormalised over Yes and No."""
    if not logprobs:
        return None
    first = logprobs[0]
    alternatives = first.get("top_logprobs") or [first]
    mass = {"yes": 0.0, "no": 0.0}
    for alt in alternatives:
        token = str(alt.get("token", "")).strip().lower()
        if token in mass and isinstance(alt.get("logprob"), (int, float)):
            mass[token] += math.exp(float(alt["logprob"]))
    total = mass["yes"] + mass["no"]
    return mass["yes"] / total if total > 0 else None


def from_config(nli_cfg: Mapping[str, Any], make_client: Callable[[str, float], ChatClient]) -> MiniCheckNLI:
    """Build from the ``nli`` section of ``config/models.yaml`` (its ``ollama_minicheck`` part);
    ``make_client(url, timeout)`` makes the chat client (a ValueError there names a bad url)."""
    cfg = dict(nli_cfg.get("ollama_minicheck") or {})

    def number(key: str, cast: type, default: Any) -> Any:
        try:
            return cast(cfg.get(key, default))
        except (TypeError, ValueError):
            raise ConfigError(f"nli.ollama_minicheck.{key}: expected a {cast.__name__}, "
                              f"got {cfg.get(key)!r}") from None

    url = str(env_override(cfg.get("url", "http://127.0.0.1:11434"), "CNS_OLLAMA_URL"))
    timeout = number("timeout", float, 30)
    try:
        client = make_client(url, timeout)
    except ValueError as exc:
        raise ConfigError(f"nli.ollama_minicheck.url: {exc}") from None
    return MiniCheckNLI(
        client,
        model=str(env_override(cfg.get("model", "bespoke-minicheck"), "CNS_MINICHECK_MODEL")),
        concurrency=number("concurrency", int, 4),
        yes_probability=number("yes_probability", float, 0.95),
        contradiction_share=number("contradiction_share", float, 0.3), cache_size=number("cache_size", int, 4096))
