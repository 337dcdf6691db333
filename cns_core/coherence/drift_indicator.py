"""Spec section 13's ``drift_leading_indicator`` and ``chain_coherence_stability`` from the hook's log.

The spec defines the indicator as the "% drift facet contradictions preceding drift
spike" and the stability as the "rolling std of coherence_chain"; it does not say what a
drift spike is. Here, over the checked chains in log order:

* **drift chain**: a chain with at least one drift facet (a ``self_trait`` or
  ``goal_violation`` contradiction, spec section 8);
* **drift spike**: a chain whose ``coherence_chain`` falls below the mean of the
  ``window`` chains before it minus ``max(z * their std, min_drop)`` -- a drop the
  rolling std (the stability metric) says is unusual; a chain needs ``min_history``
  chains before it to be judged;
* **indicator**: the share of drift chains followed by a spike within the next
  ``horizon`` chains; **base rate**: the same share over every chain; **lift**:
  indicator / base rate (above 1: drift facets do lead coherence drops). Only chains
  whose whole horizon is in the log count, so the end of the log biases neither.
* **stability**: the std of the last ``window`` chains' coherence.

Chains that had nothing to compare (:attr:`ChainPoint.compared` False) have no coherence
to speak of and are skipped. A share over fewer than ``min_chains`` chains is reported
with its count and flagged as too few to read (:meth:`DriftIndicator.too_few`).

The numbers live in ``config/coherence.yaml`` (``drift.indicator``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from cns_core.coherence.log_view import ChainPoint
from cns_core.config import ConfigError, config_number, load_config

__all__ = ["IndicatorSettings", "DriftIndicator", "drift_indicator"]


@dataclass(frozen=True)
class IndicatorSettings:
    window: int = 50        # chains in the rolling mean / std
    z: float = 2.0          # a spike is this many rolling stds below the rolling mean ...
    min_drop: float = 0.10  # ... and at least this far below it (a flat window has std 0)
    horizon: int = 10       # a drift chain leads a spike within this many following chains
    min_history: int = 10   # chains needed before one can be called a spike
    min_chains: int = 10    # a share over fewer chains than this is shown as too few to read

    def __post_init__(self):
        """Each number through the settings' one checker (errors read ``coherence.yaml: drift.indicator.KEY: ...``)."""
        values = {name: getattr(self, name) for name in self.__dataclass_fields__}
        for name in ("window", "horizon", "min_history", "min_chains"):
            object.__setattr__(self, name, config_number(values, name, file="coherence.yaml", path="drift.indicator",
                                                         low=1, integer=True))
        for name in ("z", "min_drop"):
            object.__setattr__(self, name, config_number(values, name, file="coherence.yaml", path="drift.indicator",
                                                         low=0))
        if self.min_history > self.window:
            raise ConfigError(f"coherence.yaml: drift.indicator.min_history ({self.min_history}) must not exceed "
                              f"window ({self.window})")

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any] | None = None) -> "IndicatorSettings":
        cfg = load_config("coherence") if cfg is None else cfg
        section = ((cfg.get("drift") or {}).get("indicator") or {}) if isinstance(cfg, Mapping) else {}
        if not isinstance(section, Mapping):
            raise ValueError(f"drift.indicator: expected a mapping, got {type(section).__name__}")
        unknown = set(section) - set(cls.__dataclass_fields__)
        if unknown:
            raise ValueError(f"drift.indicator: unknown key(s) {', '.join(sorted(unknown))}")
        return cls(**dict(section))


@dataclass(frozen=True)
class DriftIndicator:
    chains: int
    spikes: tuple[int, ...]          # positions (in log order) of the spike chains
    drift_chains: int                # drift chains with their whole horizon in the log
    drift_followed: int              # ... of them followed by a spike within the horizon
    judged_chains: int               # every chain with its whole horizon in the log
    judged_followed: int             # ... of them followed by a spike within the horizon
    stability: float | None          # std of the last `window` chains' coherence
    uncompared: int = 0              # chains skipped: nothing to compare, so no coherence
    min_chains: int = 10             # fewer judged chains than this: too few to read

    def too_few(self, chains: int) -> bool:
        """True when a share over ``chains`` chains is too thin to read."""
        return chains < self.min_chains

    @property
    def indicator(self) -> float | None:
        return self.drift_followed / self.drift_chains if self.drift_chains else None

    @property
    def base_rate(self) -> float | None:
        return self.judged_followed / self.judged_chains if self.judged_chains else None

    @property
    def lift(self) -> float | None:
        ind, base = self.indicator, self.base_rate
        return ind / base if ind is not None and base else None


def _std(values: Sequence[float]) -> float:
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))


def drift_indicator(points: Sequence[ChainPoint], settings: IndicatorSettings | None = None) -> DriftIndicator:
    """The indicator over the compared chains of ``points`` (see the module docstring)."""
    s = settings or IndicatorSettings.from_config()
    skipped = sum(1 for p in points if not p.compared)
    points = [p for p in points if p.compared]
    values = [p.coherence for p in points]
    spikes = []
    for i in range(s.min_history, len(values)):
        before = values[max(0, i - s.window):i]
        mean = sum(before) / len(before)
        if values[i] < mean - max(s.z * _std(before), s.min_drop):
            spikes.append(i)
    spike_set = set(spikes)
    judged = range(len(points) - s.horizon)     # chains whose whole horizon is in the log
    followed = {i for i in judged if any(j in spike_set for j in range(i + 1, i + s.horizon + 1))}
    drift = [i for i in judged if points[i].drift]
    return DriftIndicator(chains=len(points), spikes=tuple(spikes), drift_chains=len(drift),
                          drift_followed=sum(1 for i in drift if i in followed),
                          judged_chains=len(judged), judged_followed=len(followed),
                          stability=_std(values[-s.window:]) if len(values) > 1 else None,
                          uncompared=skipped, min_chains=s.min_chains)
