"""The hook's settings, read once from ``config/coherence.yaml`` and validated.

A wrong value names its key (``thresholds.tau_c: must be between 0 and 1``)
instead of surfacing later as a strange verdict.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping

from cns_core.coherence.fusion import FusionWeights
from cns_core.coherence.heuristics import HeuristicSettings
from cns_core.coherence.retrieval import DEFAULT_TRUST_BY_SCORE
from cns_core.config import ConfigError, config_mapping, config_number, load_config, state_dir

__all__ = ["Thresholds", "RetrievalSettings", "LatencySettings", "CoherenceSettings"]


def _num(section: Mapping[str, Any], key: str, default: float, where: str, *, low: float | None = 0.0,
         high: float | None = None, integer: bool = False) -> Any:
    return config_number(section, key, file="coherence.yaml", path=where, default=default, low=low, high=high,
                         integer=integer)


def _section(cfg: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    return config_mapping(cfg, name, file="coherence.yaml")


def _trust_table(value: Any) -> tuple[float, ...]:
    if not (isinstance(value, (list, tuple)) and len(value) == 5
            and all(not isinstance(v, bool) and isinstance(v, (int, float)) and 0 <= v <= 1 for v in value)):
        raise ConfigError(f"coherence.yaml: retrieval.trust_by_score: expected five numbers in [0, 1] "
                          f"(trust of engrams graded 1..5), got {value!r}")
    return tuple(float(v) for v in value)


@dataclass(frozen=True)
class Thresholds:
    tau_c: float = 0.70
    tau_block: float = 0.85
    theta_importance: float = 0.60
    tau_conf_low: float = 0.55
    delta_num: float = 0.20
    tau_support: float = 0.70
    evidence_min: float = 0.50


@dataclass(frozen=True)
class RetrievalSettings:
    k_sem: int = 8
    k_temp: int = 4
    k_self: int = 4
    m: int = 4
    min_similarity: float = 0.2
    intra_chain: bool = True
    engram_default_trust: float = 1.0
    trust_by_score: tuple[float, ...] = DEFAULT_TRUST_BY_SCORE
    temporal: bool = False
    self_search: bool = False


@dataclass(frozen=True)
class LatencySettings:
    budget_ms: float = 100.0
    drop_model_factor: float = 1.2
    halve_k_factor: float = 1.5
    recover_factor: float = 0.8
    ewma_alpha: float = 0.3
    model_timeout_ms: float = 250.0


@dataclass(frozen=True)
class CoherenceSettings:
    """Everything tunable about the hook; ``from_config()`` reads coherence.yaml."""

    thresholds: Thresholds = field(default_factory=Thresholds)
    retrieval: RetrievalSettings = field(default_factory=RetrievalSettings)
    weights: FusionWeights = field(default_factory=FusionWeights)
    alpha1: float = 0.8
    alpha2: float = 0.6
    heuristics: HeuristicSettings = field(default_factory=HeuristicSettings)
    latency: LatencySettings = field(default_factory=LatencySettings)
    facet_min_similarity: float = 0.35
    default_importance: float = 0.5
    prev_smoothing: float = 0.2
    calibration: Mapping[str, Any] = field(default_factory=dict)
    adaptive: Mapping[str, Any] = field(default_factory=dict)
    quarantine: Mapping[str, Any] = field(default_factory=dict)
    log: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any] | None = None) -> "CoherenceSettings":
        cfg = load_config("coherence") if cfg is None else cfg
        if not isinstance(cfg, Mapping):
            raise ConfigError("coherence.yaml: expected a mapping at the top level")
        t = _section(cfg, "thresholds")
        unit = dict(low=0.0, high=1.0)
        thresholds = Thresholds(**{k: _num(t, k, getattr(Thresholds, k), "thresholds", **unit)
                                   for k in ("tau_c", "tau_block", "theta_importance", "tau_conf_low",
                                             "tau_support", "evidence_min")},
                                delta_num=_num(t, "delta_num", Thresholds.delta_num, "thresholds"))
        r = _section(cfg, "retrieval")
        retrieval = RetrievalSettings(
            **{k: _num(r, k, getattr(RetrievalSettings, k), "retrieval", integer=True)
               for k in ("k_sem", "k_temp", "k_self", "m")},
            min_similarity=_num(r, "min_similarity", RetrievalSettings.min_similarity, "retrieval", low=-1.0,
                                high=1.0),
            intra_chain=bool(r.get("intra_chain", True)),
            engram_default_trust=_num(r, "engram_default_trust", 1.0, "retrieval", **unit),
            trust_by_score=_trust_table(r.get("trust_by_score", RetrievalSettings.trust_by_score)),
            temporal=bool(r.get("temporal", False)), self_search=bool(r.get("self_search", False)))
        w = _section(cfg, "weights")
        try:
            weights = FusionWeights(_num(w, "w_h", 0.4, "weights", **unit), _num(w, "w_m", 0.6, "weights", **unit))
        except ValueError as exc:
            raise ConfigError(f"coherence.yaml: {exc}") from None
        h = _section(cfg, "heuristics")
        for key in ("align_low", "align_high"):
            _num(h, key, 0.5, "heuristics", **unit)
        if float(h.get("align_low", 0.5)) >= float(h.get("align_high", 0.8)):
            raise ConfigError("coherence.yaml: heuristics.align_low: must be below heuristics.align_high")
        for key, value in (h.get("cue_strength") or {}).items():
            _num({key: value}, key, 1.0, "heuristics.cue_strength")
        lat = _section(cfg, "latency")
        latency = LatencySettings(**{k: _num(lat, k, getattr(LatencySettings, k), "latency")
                                     for k in ("budget_ms", "drop_model_factor", "halve_k_factor",
                                               "recover_factor", "model_timeout_ms")},
                                  ewma_alpha=_num(lat, "ewma_alpha", 0.3, "latency", low=0.0, high=1.0))
        if latency.budget_ms <= 0:
            raise ConfigError("coherence.yaml: latency.budget_ms: must be > 0")
        cal = dict(_section(cfg, "calibration"))
        if cal.get("method", "temperature") not in ("temperature", "isotonic"):
            raise ConfigError(f"coherence.yaml: calibration.method: expected temperature or isotonic, "
                              f"got {cal.get('method')!r}")
        return cls(thresholds=thresholds, retrieval=retrieval, weights=weights,
                   alpha1=_num(w, "alpha1", 0.8, "weights"), alpha2=_num(w, "alpha2", 0.6, "weights"),
                   heuristics=HeuristicSettings.from_config(cfg), latency=latency,
                   facet_min_similarity=_num(_section(cfg, "drift"), "facet_min_similarity", 0.35, "drift",
                                             low=-1.0, high=1.0),
                   default_importance=_num(_section(cfg, "importance"), "default", 0.5, "importance", **unit),
                   prev_smoothing=_num(_section(cfg, "reward"), "prev_smoothing", 0.2, "reward", **unit),
                   calibration=cal, adaptive=dict(_section(cfg, "adaptive")),
                   quarantine=dict(_section(cfg, "quarantine")), log=dict(_section(cfg, "log")))

    def with_thresholds(self, **changes: float) -> "CoherenceSettings":
        return replace(self, thresholds=replace(self.thresholds, **changes))

    def state_path(self, section: Mapping[str, Any], key: str, default: str) -> Path:
        """A file named in a section, resolved against the state folder unless absolute."""
        path = Path(str(section.get(key) or default))
        return path if path.is_absolute() else state_dir() / path
