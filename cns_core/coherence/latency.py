"""The latency budget of spec section 11: what to switch off when the hook runs late.

The governor keeps a running (exponentially weighted) estimate of recent hook
times and turns it into a plan for the next chain:

* recent time above ``drop_model_factor`` x budget (1.2): no model pass;
* above ``halve_k_factor`` x budget (1.5): retrieval k halved too;
* above the budget itself: stage 0 skips the subject-predicate-object parse.

Each switch comes back on once the recent time falls below ``recover_factor``
x budget (hysteresis, so the hook does not flap on every chain). Within one
chain the hook also skips the model pass when the chain alone has already
used 1.2 x budget before reaching it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from cns_core.coherence.settings import LatencySettings

__all__ = ["LatencyPlan", "LatencyGovernor"]


@dataclass(frozen=True)
class LatencyPlan:
    use_model: bool = True
    halve_k: bool = False
    advanced_parse: bool = True


class LatencyGovernor:
    """Running hook time -> :class:`LatencyPlan` (thread-safe)."""

    def __init__(self, settings: LatencySettings):
        self.settings = settings
        self.recent_ms: float | None = None
        self.model_dropped = False
        self.k_halved = False
        self._lock = threading.Lock()

    @property
    def pressure(self) -> float:
        """Recent hook time as a multiple of the budget (0 before the first chain)."""
        return (self.recent_ms or 0.0) / self.settings.budget_ms

    def observe(self, elapsed_ms: float) -> None:
        s = self.settings
        with self._lock:
            if self.recent_ms is None:
                self.recent_ms = float(elapsed_ms)
            else:
                self.recent_ms += s.ewma_alpha * (float(elapsed_ms) - self.recent_ms)
            ratio = self.recent_ms / s.budget_ms
            if ratio > s.drop_model_factor:
                self.model_dropped = True
            elif ratio < s.recover_factor:
                self.model_dropped = False
            if ratio > s.halve_k_factor:
                self.k_halved = True
            elif ratio < s.recover_factor:
                self.k_halved = False

    def plan(self) -> LatencyPlan:
        with self._lock:
            return LatencyPlan(use_model=not self.model_dropped, halve_k=self.k_halved,
                               advanced_parse=self.pressure <= 1.0)

    def over_model_cut(self, elapsed_ms: float) -> bool:
        """This chain alone has used more than drop_model_factor x budget already."""
        return elapsed_ms > self.settings.drop_model_factor * self.settings.budget_ms
