"""The Meta-Critic's settings, read once from ``config/meta.yaml`` and validated.

Every threshold, target and table of the Meta-Critic lives in that file; this
module turns it into a frozen :class:`MetaConfig` so the pure functions can take
it as an argument and tests can hand in their own. Errors name the key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from cns_core.config import ConfigError, config_mapping, config_number, load_config
from cns_core.critics.base import CRITIC_NAMES

__all__ = ["QualityBand", "MetaConfig"]


@dataclass(frozen=True)
class QualityBand:
    """A quality level of Appendix B: scores from ``min_score`` up to ``upper`` (the next band's min).

    Whether a band accepts is not the band's to say: the quality gate decides, and the gate's
    threshold is always a band edge (:attr:`MetaConfig.gate_choices`), so a band lies wholly
    above or wholly below it. ``accept_action`` is what to do when the gate accepts the band,
    ``reject_action`` when it does not (empty where the gate can never do so: the top band is
    always accepted, the bottom one never).
    """

    name: str
    min_score: float
    accept_action: str
    reject_action: str
    upper: float | None = None

    @property
    def span(self) -> str:
        """``0.50-0.69``: the scores of the band as they are shown (two decimals)."""
        top = 1.0 if self.upper is None else self.upper - 0.01
        return f"{self.min_score:.2f}–{top:.2f}"


def _number(raw: Mapping[str, Any], key: str, path: str, lo: float = 0.0, hi: float = 1.0,
            default: float | None = None) -> float:
    return config_number(raw, key, file="meta.yaml", path=path.rstrip("."), default=default, low=lo, high=hi)


def _mapping(raw: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    return config_mapping(raw, key, file="meta.yaml")


def _critic(name: Any, where: str) -> str:
    if name not in CRITIC_NAMES:
        raise ConfigError(f"meta.yaml: {where}: unknown critic {name!r} (known: {', '.join(CRITIC_NAMES)})")
    return str(name)


def _texts(raw: Mapping[str, Any], key: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, text in _mapping(raw, key).items():
        if not isinstance(text, str) or not text.strip():
            raise ConfigError(f"meta.yaml: {key}.{name}: must be a non-empty string")
        out[str(name)] = text.strip()
    return out


def _bands(raw: Any) -> tuple[QualityBand, ...]:
    if not isinstance(raw, list) or not raw:
        raise ConfigError("meta.yaml: bands: must be a non-empty list")
    items = []
    for i, item in enumerate(raw):
        if not isinstance(item, Mapping):
            raise ConfigError(f"meta.yaml: bands[{i}]: must be a mapping")
        name = item.get("name")
        if not isinstance(name, str) or not name:
            raise ConfigError(f"meta.yaml: bands[{i}].name: must be a non-empty string")
        if "action" in item:
            raise ConfigError(f"meta.yaml: bands[{i}].action: replaced by accept and reject (the gate decides "
                              "which applies)")
        for key in ("accept", "reject"):
            if not isinstance(item.get(key, ""), str):
                raise ConfigError(f"meta.yaml: bands[{i}].{key}: must be a string")
        items.append((_number(item, "min", f"bands[{i}]."), name, str(item.get("accept", "")).strip(),
                      str(item.get("reject", "")).strip(), i))
    items.sort(key=lambda t: -t[0])
    if items[-1][0] != 0.0:
        raise ConfigError("meta.yaml: bands: the lowest band must start at min 0 so every score has a band")
    if len({t[1] for t in items}) != len(items):
        raise ConfigError("meta.yaml: bands: band names must be unique")
    if len({t[0] for t in items}) != len(items):
        raise ConfigError("meta.yaml: bands: two bands start at the same min")
    bands = []
    for k, (low, name, accept, reject, i) in enumerate(items):
        if k < len(items) - 1 and not accept:     # a gate at this band's min or lower accepts it
            raise ConfigError(f"meta.yaml: bands[{i}].accept: must say what to do when the gate accepts {name}")
        if k > 0 and not reject:                  # a gate above this band rejects it
            raise ConfigError(f"meta.yaml: bands[{i}].reject: must say what to do when the gate rejects {name}")
        bands.append(QualityBand(name, low, accept, reject, items[k - 1][0] if k else None))
    return tuple(bands)


@dataclass(frozen=True)
class MetaConfig:
    """Validated ``meta.yaml``; see the comments in that file for what each number means."""

    contexts: tuple[str, ...]
    default_context: str
    timeout_s: float
    conflict_threshold: float
    suggestion_below: float
    suggestion_listed: int
    cache_ttl_s: float
    cache_max_entries: int
    gate_threshold: float
    bands: tuple[QualityBand, ...]
    confidence_scale: float
    spread_scale: float
    target_score: float
    targets: dict[str, float]
    high_below: float
    medium_below: float
    interpretations: dict[tuple[str, str], str]
    suggestions: dict[str, str]
    fallback_suggestions: dict[str, str]

    @classmethod
    def load(cls) -> "MetaConfig":
        """The shipped defaults (``config/meta.yaml``, or ``CNS_CONFIG_DIR``)."""
        return cls.from_dict(load_config("meta"))

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> "MetaConfig":
        """Validate plain data shaped like ``meta.yaml``; a bad value raises ConfigError naming it."""
        if not isinstance(raw, Mapping):
            raise ConfigError("meta.yaml: expected a mapping at the top level")
        contexts = raw.get("contexts") or ["default"]
        if not isinstance(contexts, list) or not all(isinstance(c, str) and c for c in contexts):
            raise ConfigError("meta.yaml: contexts: must be a list of profile names")
        default_context = raw.get("default_context", contexts[0])
        if default_context not in contexts:
            raise ConfigError(f"meta.yaml: default_context: {default_context!r} is not one of contexts {contexts}")

        cache, gate = _mapping(raw, "cache"), _mapping(raw, "quality_gate")
        band, plan = _mapping(raw, "confidence_band"), _mapping(raw, "improvement_plan")
        max_entries = cache.get("max_entries", 1024)
        if isinstance(max_entries, bool) or not isinstance(max_entries, int) or max_entries < 1:
            raise ConfigError(f"meta.yaml: cache.max_entries: must be a whole number >= 1 (got {max_entries!r})")

        listed = raw.get("suggestion_listed", 3)
        if isinstance(listed, bool) or not isinstance(listed, int) or listed < 1:
            raise ConfigError(f"meta.yaml: suggestion_listed: must be a whole number >= 1 (got {listed!r})")

        targets = {_critic(name, f"improvement_plan.targets.{name}"):
                   _number(plan["targets"], name, "improvement_plan.targets.")
                   for name in _mapping(plan, "targets")}

        interpretations: dict[tuple[str, str], str] = {}
        for higher, row in _mapping(raw, "interpretations").items():
            _critic(higher, f"interpretations.{higher}")
            if not isinstance(row, Mapping):
                raise ConfigError(f"meta.yaml: interpretations.{higher}: must map lower critic -> text")
            for lower, text in row.items():
                where = f"interpretations.{higher}.{lower}"
                if _critic(lower, where) == higher:
                    raise ConfigError(f"meta.yaml: {where}: a critic cannot conflict with itself")
                if not isinstance(text, str) or not text.strip():
                    raise ConfigError(f"meta.yaml: {where}: must be a non-empty string")
                interpretations[(higher, lower)] = text.strip()

        fallbacks = _texts(raw, "fallback_suggestions")
        for name in fallbacks:
            _critic(name, f"fallback_suggestions.{name}")

        high_below = _number(plan, "high_below", "improvement_plan.", default=0.4)
        medium_below = _number(plan, "medium_below", "improvement_plan.", default=0.6)
        if high_below > medium_below:
            raise ConfigError("meta.yaml: improvement_plan.high_below: must not exceed medium_below")

        bands = _bands(raw.get("bands"))
        gate_threshold = _number(gate, "threshold", "quality_gate.", default=0.7)
        edges = tuple(b.min_score for b in bands if b.min_score > 0)
        if not any(abs(gate_threshold - e) < 1e-9 for e in edges):
            raise ConfigError(f"meta.yaml: quality_gate.threshold: must be the min of a band above the lowest "
                              f"({', '.join(f'{e:.2f}' for e in edges)}), so the gate accepts whole bands "
                              f"(got {gate_threshold!r})")

        return cls(
            contexts=tuple(contexts),
            default_context=default_context,
            timeout_s=_number(raw, "timeout_s", "", lo=0.001, hi=3600.0, default=30.0),
            conflict_threshold=_number(raw, "conflict_threshold", "", default=0.3),
            suggestion_below=_number(raw, "suggestion_below", "", default=0.6),
            suggestion_listed=listed,
            cache_ttl_s=_number(cache, "ttl_s", "cache.", hi=7 * 24 * 3600.0, default=300.0),
            cache_max_entries=max_entries,
            gate_threshold=gate_threshold,
            bands=bands,
            confidence_scale=_number(band, "confidence_scale", "confidence_band.", hi=10.0, default=0.5),
            spread_scale=_number(band, "spread_scale", "confidence_band.", hi=10.0, default=0.5),
            target_score=_number(plan, "target_score", "improvement_plan.", default=0.8),
            targets=targets,
            high_below=high_below,
            medium_below=medium_below,
            interpretations=interpretations,
            suggestions=_texts(raw, "suggestions"),
            fallback_suggestions=fallbacks,
        )

    @property
    def gate_choices(self) -> tuple[float, ...]:
        """The thresholds the gate may have, lowest first: the min of every band but the lowest.

        A gate at a band's min accepts that band and every band above it; one inside a band
        would accept the upper part of a band whose action says reject.
        """
        return tuple(sorted(b.min_score for b in self.bands if b.min_score > 0))

    def gate_threshold_of(self, threshold: Any) -> float:
        """``threshold`` checked against :attr:`gate_choices` (ValueError naming them otherwise)."""
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or threshold != threshold:
            raise ValueError(f"threshold: must be a number (got {threshold!r})")
        for edge in self.gate_choices:
            if abs(float(threshold) - edge) < 1e-9:
                return edge
        raise ValueError(f"threshold: must be where a band starts, one of "
                         f"{', '.join(f'{e:.2f}' for e in self.gate_choices)} (got {threshold!r}): the gate "
                         f"accepts whole quality bands")

    def band_at(self, threshold: float) -> QualityBand:
        """The lowest band a gate at ``threshold`` accepts."""
        edge = self.gate_threshold_of(threshold)
        return next(b for b in self.bands if abs(b.min_score - edge) < 1e-9)

    def target_for(self, critic: str) -> float:
        """The score the improvement plan aims a critic at."""
        return self.targets.get(critic, self.target_score)
