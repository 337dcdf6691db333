"""What the five critics share: their settings from ``config/critics.yaml`` and their backends.

Each critic is built from one section of the YAML (overridable per instance, so tests
and the dashboard can tune a critic without touching files). ``config_key()`` hashes
those settings together with a code version, so the pipeline's cache never hands out a
result computed under other settings.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, ClassVar, Mapping

from cns_core.config import ConfigError, load_config
from cns_core.critics.base import CriticContext

__all__ = ["ConfiguredCritic", "critic_settings", "nli_of", "embedder_of", "contradiction_threshold"]


def _merge(base: dict[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def critic_settings(name: str, overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The ``name`` section of ``config/critics.yaml`` with ``overrides`` merged in (nested keys too)."""
    section = load_config("critics").get(name)
    if not isinstance(section, dict):
        raise ConfigError(f"critics.yaml: {name}: expected a mapping of settings")
    return _merge(section, overrides or {})


def contradiction_threshold(settings: Mapping[str, Any], nli: Any = None) -> float:
    """Where p(contradiction) flags a contradiction, first found of: the critic's own setting,
    the threshold fitted with the NLI model (its ``calibration.json``), the backend's section
    of ``config/models.yaml``, and ``nli.contradiction_threshold``."""
    value = settings.get("contradiction_threshold")
    if value is None and nli is not None:
        value = getattr(nli, "contradiction_threshold", None)
    if value is None:
        nli_cfg = load_config("models").get("nli", {})
        name = getattr(nli, "name", None) or nli_cfg.get("backend", "")
        section = nli_cfg.get(str(name).replace("-", "_"))
        value = section.get("contradiction_threshold") if isinstance(section, dict) else None
        if value is None:
            value = nli_cfg.get("contradiction_threshold", 0.5)
    value = float(value)
    if not 0.0 < value <= 1.0:
        raise ConfigError(f"contradiction_threshold: must be in (0, 1] (got {value})")
    return value


class ConfiguredCritic:
    """Base for the built-in critics: a name, settings, and a cache fingerprint.

    ``requires`` names what besides the SNO the result depends on ("nli", "embedder",
    "population"), so the pipeline only keys a cached result on those.
    ``version`` is bumped when the critic's code changes what it computes.
    """

    name: ClassVar[str] = ""
    version: ClassVar[int] = 1
    requires: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, config: Mapping[str, Any] | None = None):
        self.settings = critic_settings(self.name, config)
        self._config_key: str | None = None

    def config_key(self) -> str:
        """Hash of the settings, computed once: settings are fixed when the critic is built
        (build a new critic to change them)."""
        if self._config_key is None:
            blob = json.dumps(self.settings, sort_keys=True, default=str)
            digest = hashlib.blake2b(blob.encode("utf-8"), digest_size=8).hexdigest()
            self._config_key = f"{self.name}/v{self.version}/{digest}"
        return self._config_key

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.config_key()})"


def nli_of(context: CriticContext | None):
    """The context's NLI backend, else the configured process-wide one."""
    if context is not None and context.nli is not None:
        return context.nli
    from cns_core.models import get_nli_backend

    return get_nli_backend()


def embedder_of(context: CriticContext | None):
    """The context's embedder, else the bundled MiniLM."""
    if context is not None and context.embedder is not None:
        return context.embedder
    from cns_core.models import get_embedder

    return get_embedder()
