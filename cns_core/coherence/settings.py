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

__all__ = ["PURPOSES", "Thresholds", "RetrievalSettings", "LatencySettings", "CoherenceSettings"]


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
    k_question: int = 4
    m: int = 4
    min_similarity: float = 0.2
    intra_chain: bool = True
    engram_default_trust: float = 1.0
    trust_by_score: tuple[float, ...] = DEFAULT_TRUST_BY_SCORE
    temporal: bool = False
    self_search: bool = False


PURPOSES = ("pre_write", "sno_check")   # what a budget is for (``budgets`` in coherence.yaml)


@dataclass(frozen=True)
class LatencySettings:
    """Budgets by purpose (``budgets``) and the pre-write governor (``latency``).

    ``pre_write_ms`` is one chain checked before a memory write (spec section 11): the governor's
    budget, and the cut of that chain's model pass. ``sno_check_ms`` is a person waiting for the
    dashboard's SNO check or ``cns coherence-check --sno``: no model batch starts after it.
    Loading the model never counts against either (the hook is warmed at start).
    """

    pre_write_ms: float = 250.0
    sno_check_ms: float = 20_000.0
    max_model_pairs: int = 10
    pair_cache: int = 4096
    drop_model_factor: float = 1.2
    halve_k_factor: float = 1.5
    recover_factor: float = 0.8
    ewma_alpha: float = 0.3

    @property
    def budget_ms(self) -> float:
        """The governor's budget: the pre-write one."""
        return self.pre_write_ms

    def budget(self, purpose: str) -> float:
        """The budget in ms for ``purpose`` (``pre_write`` or ``sno_check``)."""
        if purpose not in PURPOSES:
            raise ValueError(f"purpose: expected one of {', '.join(PURPOSES)}, got {purpose!r}")
        return float(getattr(self, f"{purpose}_ms"))


def _latency(cfg: Mapping[str, Any]) -> LatencySettings:
    lat, budgets = _section(cfg, "latency"), _section(cfg, "budgets")
    for old in ("budget_ms", "model_timeout_ms"):
        if old in lat:
            raise ConfigError(f"coherence.yaml: latency.{old}: moved to budgets (pre_write_ms, sno_check_ms)")
    unknown = sorted(set(budgets) - {f"{p}_ms" for p in PURPOSES})
    if unknown:
        raise ConfigError(f"coherence.yaml: budgets.{unknown[0]}: unknown purpose (expected "
                          f"{', '.join(f'{p}_ms' for p in PURPOSES)})")
    values: dict[str, Any] = {}
    for purpose in PURPOSES:
        key = f"{purpose}_ms"
        values[key] = _num(budgets, key, getattr(LatencySettings, key), "budgets")
        if values[key] <= 0:
            raise ConfigError(f"coherence.yaml: budgets.{key}: must be > 0 (got {values[key]:g})")
    for key in ("max_model_pairs", "pair_cache"):
        values[key] = _num(lat, key, getattr(LatencySettings, key), "latency", integer=True)
    for key in ("drop_model_factor", "halve_k_factor", "recover_factor"):
        values[key] = _num(lat, key, getattr(LatencySettings, key), "latency")
    return LatencySettings(**values, ewma_alpha=_num(lat, "ewma_alpha", 0.3, "latency", low=0.0, high=1.0))


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
               for k in ("k_sem", "k_temp", "k_self", "k_question", "m")},
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
        latency = _latency(cfg)
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
