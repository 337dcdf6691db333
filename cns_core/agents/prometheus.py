"""Prometheus absolute- and relative-grading prompts, built from ``config/critic.yaml``.

The prompt texts and the default rubric live in the config (Prometheus 2's own
templates, with and without a reference answer; the relative ones compare answer A
with answer B); this module only fills them in.
A rubric is either the structured form (``criteria`` plus ``score1_description``
.. ``score5_description``, as in Prometheus' data) or a ready-made text.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Mapping

from cns_core.agents.chat import BACKENDS
from cns_core.config import ConfigError, env_override, load_config

__all__ = ["chat_client", "JudgeSettings", "GeneratorSettings", "critic_settings", "generator_settings", "render_rubric", "validate_rubric",
           "build_prompt", "build_messages", "build_pair_messages", "RUBRIC_KEYS"]

RUBRIC_KEYS = ("criteria",) + tuple(f"score{i}_description" for i in range(1, 6))


@dataclass(frozen=True)
class JudgeSettings:
    """Everything CriticAgent needs to call the judge."""

    url: str                  # Ollama's URL or the OpenAI-compatible base URL, by ``backend``
    model: str
    temperature: float
    num_ctx: int
    timeout: float
    rubric: Mapping[str, str] | str
    system: str
    rubric_template: str
    prompt: str
    prompt_with_reference: str
    backend: str = "ollama"
    api_key: str | None = field(default=None, repr=False)
    api_key_env: str = ""
    stream: bool = False
    relative_system: str = ""        # the relative-grading prompts ("" where a project's critic.yaml predates them)
    relative: str = ""
    relative_with_reference: str = ""
    both_orders: bool = True         # a comparison asks A-B and B-A; only a winner named both times counts


@dataclass(frozen=True)
class GeneratorSettings:
    url: str
    model: str
    temperature: float
    num_ctx: int
    timeout: float
    system: str
    backend: str = "ollama"
    api_key: str | None = field(default=None, repr=False)
    stream: bool = False
    recall_k: int = 0             # answers recalled from the memory before answering (0: none)
    recall_timeout_s: float = 2.0


@dataclass(frozen=True)
class _Server:
    """Where the chat models are served: the backend, its URL, the judge model there, key and streaming."""

    backend: str
    url: str
    model: str
    api_key: str | None
    api_key_env: str
    stream: bool


def _server(cfg: Mapping[str, Any]) -> _Server:
    """``backend`` (``CNS_JUDGE_BACKEND``) and its settings: ``ollama_url``/``model`` or the ``openai`` section."""
    backend = str(env_override(cfg.get("backend", "ollama"), "CNS_JUDGE_BACKEND"))
    if backend not in BACKENDS:
        raise ConfigError(f"critic.yaml: backend: {backend!r} is not one of {', '.join(BACKENDS)}")
    stream = cfg.get("stream", False)
    if not isinstance(stream, bool):
        raise ConfigError(f"critic.yaml: stream: expected true or false, got {stream!r}")
    if backend == "ollama":
        return _Server(backend, str(env_override(cfg.get("ollama_url", "http://127.0.0.1:11434"), "CNS_OLLAMA_URL")),
                       str(env_override(cfg.get("model", ""), "CNS_CRITIC_MODEL")), None, "", stream)
    section = cfg.get("openai") or {}
    if not isinstance(section, Mapping):
        raise ConfigError("critic.yaml: openai: expected a mapping (base_url, model, api_key_env)")
    key_env = str(section.get("api_key_env") or "")
    return _Server(backend, str(env_override(section.get("base_url", "http://127.0.0.1:8000/v1"), "CNS_OPENAI_BASE_URL")),
                   str(env_override(section.get("model", ""), "CNS_CRITIC_MODEL")),
                   os.environ.get(key_env) or None if key_env else None, key_env, stream)


def _number(cfg: Mapping[str, Any], key: str, cast: type, default: Any, section: str = "critic.yaml") -> Any:
    value = cfg.get(key, default)
    try:
        out = cast(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{section}: {key}: expected a {cast.__name__}, got {value!r}") from None
    if out < 0 if key == "temperature" else out <= 0:
        raise ConfigError(f"{section}: {key}: {value!r} is out of range")
    return out


def critic_settings(config: Mapping[str, Any] | None = None) -> JudgeSettings:
    """Judge settings from ``config/critic.yaml`` (``CNS_JUDGE_BACKEND``, ``CNS_OLLAMA_URL``,
    ``CNS_OPENAI_BASE_URL``, ``CNS_CRITIC_MODEL`` override)."""
    cfg = dict(config) if config is not None else load_config("critic")
    server = _server(cfg)
    prompts = cfg.get("prompts") or {}
    missing = [k for k in ("system", "rubric", "absolute", "absolute_with_reference") if not prompts.get(k)]
    if missing:
        raise ConfigError(f"critic.yaml: prompts.{missing[0]} is missing")
    rubric = cfg.get("rubric")
    validate_rubric(rubric, "critic.yaml: rubric")
    return JudgeSettings(
        url=server.url, model=server.model, backend=server.backend, api_key=server.api_key,
        api_key_env=server.api_key_env, stream=server.stream,
        temperature=_number(cfg, "temperature", float, 0.0), num_ctx=_number(cfg, "num_ctx", int, 4096),
        timeout=_number(cfg, "grade_timeout", float, 30.0), rubric=rubric, system=str(prompts["system"]),
        rubric_template=str(prompts["rubric"]), prompt=str(prompts["absolute"]),
        prompt_with_reference=str(prompts["absolute_with_reference"]),
        relative_system=str(prompts.get("relative_system") or ""), relative=str(prompts.get("relative") or ""),
        relative_with_reference=str(prompts.get("relative_with_reference") or ""),
        both_orders=_both_orders(cfg.get("pairwise") or {}))


def _both_orders(section: Any) -> bool:
    if not isinstance(section, Mapping):
        raise ConfigError("critic.yaml: pairwise: expected a mapping (both_orders)")
    unknown = sorted(set(section) - {"both_orders"})
    if unknown:
        raise ConfigError(f"critic.yaml: pairwise: unknown key(s) {', '.join(map(str, unknown))} (known: both_orders)")
    value = section.get("both_orders", True)
    if not isinstance(value, bool):
        raise ConfigError(f"critic.yaml: pairwise.both_orders: expected true or false, got {value!r}")
    return value


def generator_settings(config: Mapping[str, Any] | None = None) -> GeneratorSettings:
    """GeneratorAgent's settings (the ``generator`` section; ``CNS_GENERATOR_MODEL`` overrides the model)."""
    cfg = dict(config) if config is not None else load_config("critic")
    gen = dict(cfg.get("generator") or {})
    server = _server(cfg)
    return GeneratorSettings(
        url=server.url, backend=server.backend, api_key=server.api_key, stream=server.stream,
        model=str(env_override(gen.get("model", ""), "CNS_GENERATOR_MODEL")),
        temperature=_number(gen, "temperature", float, 0.7, "critic.yaml generator"),
        num_ctx=_number(gen, "num_ctx", int, 4096, "critic.yaml generator"),
        timeout=_number(gen, "timeout", float, 60.0, "critic.yaml generator"), system=str(gen.get("system", "")),
        recall_k=_recall_k(gen.get("recall_k", 0)),
        recall_timeout_s=_number(gen, "recall_timeout_s", float, 2.0, "critic.yaml generator"))


def _recall_k(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 20:
        raise ConfigError(f"critic.yaml generator: recall_k: expected an integer from 0 to 20, got {value!r}")
    return value


def chat_client(settings: JudgeSettings | GeneratorSettings, timeout: float | None = None) -> Any:
    """The chat client for the settings' backend and URL."""
    from cns_core.agents.backends import make_chat_client

    return make_chat_client(settings.backend, settings.url, settings.timeout if timeout is None else timeout,
                            settings.api_key)


def validate_rubric(rubric: Any, field: str = "rubric") -> Mapping[str, str] | str:
    """A rubric text, or a mapping with every key of :data:`RUBRIC_KEYS` as text; ValueError otherwise."""
    if isinstance(rubric, str):
        if not rubric.strip():
            raise ValueError(f"{field}: must not be empty")
        return rubric
    if not isinstance(rubric, Mapping):
        raise ValueError(f"{field}: expected text or a mapping with {', '.join(RUBRIC_KEYS)}")
    missing = [k for k in RUBRIC_KEYS if not isinstance(rubric.get(k), str) or not rubric[k].strip()]
    if missing:
        raise ValueError(f"{field}: {', '.join(missing)} missing or not text")
    return rubric


def render_rubric(rubric: Mapping[str, str] | str, settings: JudgeSettings) -> str:
    validate_rubric(rubric)
    if isinstance(rubric, str):
        return rubric
    return settings.rubric_template.format(**{k: rubric[k] for k in RUBRIC_KEYS})


def build_prompt(instruction: str, response: str, settings: JudgeSettings, *,
                 rubric: Mapping[str, str] | str | None = None, reference: str | None = None) -> str:
    """The Prometheus absolute-grading prompt; the reference-answer variant when ``reference`` is given."""
    if not isinstance(instruction, str) or not instruction.strip():
        raise ValueError("instruction: must be non-empty text")
    if not isinstance(response, str):
        raise ValueError("response: must be text")
    rubric_text = render_rubric(settings.rubric if rubric is None else rubric, settings)
    if reference is not None and reference.strip():
        return settings.prompt_with_reference.format(instruction=instruction, response=response,
                                                     reference_answer=reference, rubric=rubric_text)
    return settings.prompt.format(instruction=instruction, response=response, rubric=rubric_text)


def build_messages(instruction: str, response: str, settings: JudgeSettings, *,
                   rubric: Mapping[str, str] | str | None = None, reference: str | None = None) -> list[dict[str, str]]:
    """Chat messages for ``/api/chat``: Prometheus' system prompt, then the grading prompt."""
    return [{"role": "system", "content": settings.system},
            {"role": "user", "content": build_prompt(instruction, response, settings, rubric=rubric,
                                                     reference=reference)}]


def pair_criteria(rubric: Mapping[str, str] | str) -> str:
    """The rubric as relative grading reads it: the criteria alone (Prometheus compares two answers
    against a criterion, not against the five score descriptions)."""
    validate_rubric(rubric)
    return rubric if isinstance(rubric, str) else rubric["criteria"]


def build_pair_messages(instruction: str, response_a: str, response_b: str, settings: JudgeSettings, *,
                        rubric: Mapping[str, str] | str | None = None,
                        reference: str | None = None) -> list[dict[str, str]]:
    """Chat messages for Prometheus' relative grading of ``response_a`` against ``response_b``."""
    if not settings.relative or not settings.relative_with_reference or not settings.relative_system:
        missing = next(k for k in ("relative_system", "relative", "relative_with_reference")
                       if not getattr(settings, k))
        raise ValueError(f"critic.yaml: prompts.{missing} is missing (copy it from the package's "
                         "config/critic.yaml to compare two answers)")
    if not isinstance(instruction, str) or not instruction.strip():
        raise ValueError("question: must be non-empty text")
    for name, text in (("answer A", response_a), ("answer B", response_b)):
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"{name}: must be non-empty text")
    criteria = pair_criteria(settings.rubric if rubric is None else rubric)
    fields = dict(instruction=instruction, response_A=response_a, response_B=response_b, rubric=criteria)
    if reference is not None and reference.strip():
        prompt = settings.relative_with_reference.format(reference_answer=reference, **fields)
    else:
        prompt = settings.relative.format(**fields)
    return [{"role": "system", "content": settings.relative_system}, {"role": "user", "content": prompt}]
