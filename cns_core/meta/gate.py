"""The quality gate (spec 6.2): accept or reject, decided once per evaluation and threshold.

The gate and the quality bands tell one story (``bands`` in ``config/meta.yaml``): the
threshold is where a band starts, so the gate accepts whole bands, and the band's action is
the one for the gate's verdict. The gate compares the Trust Score as it is shown (three
decimals), so "0.695 is below 0.70" and never "0.70 is below 0.70".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from cns_core.meta.bands import quality_band
from cns_core.meta.settings import MetaConfig, QualityBand
from cns_core.scoring import incomplete_note, trust_shown

__all__ = ["GateDecision", "decide"]


@dataclass(frozen=True)
class GateDecision:
    """Why an SNO passed or failed the quality gate, and what to do about it."""

    passed: bool
    score: float
    threshold: float
    band: QualityBand          # the band the score falls in
    lowest_accepted: QualityBand   # the band the threshold starts: it and every band above pass
    reason: str
    complete: bool = True

    @property
    def verdict(self) -> str:
        return "passes" if self.passed else "fails"

    @property
    def action(self) -> str:
        """What to do: the band's action for the gate's verdict (an incomplete score: evaluate again)."""
        if not self.complete:
            return "Evaluate again once every critic has a score"
        return self.band.accept_action if self.passed else self.band.reject_action

    @property
    def rule(self) -> str:
        """``accepts Good and above (0.70)``: how the threshold reads beside the bands."""
        return f"accepts {self.lowest_accepted.name} and above ({self.threshold:.2f})"

    def to_dict(self) -> dict[str, object]:
        return {"passed": self.passed, "score": self.score, "threshold": self.threshold, "band": self.band.name,
                "lowest_accepted_band": self.lowest_accepted.name, "action": self.action, "reason": self.reason,
                "complete": self.complete}


def decide(score: float, threshold: float, config: MetaConfig, failed: Iterable[str] = ()) -> GateDecision:
    """Pass when every critic produced a score and the shown score reaches ``threshold`` (a band edge)."""
    threshold = config.gate_threshold_of(threshold)
    score = trust_shown(score)
    band = quality_band(score, config)
    failed = tuple(failed)
    if failed:
        passed, reason = False, (f"score {score:.3f} is {incomplete_note(failed)}; "
                                 f"the gate never passes an incomplete score")
    elif score >= threshold:
        passed, reason = True, f"score {score:.3f} reaches the threshold {threshold:.2f}"
    else:
        passed, reason = False, f"score {score:.3f} is below the threshold {threshold:.2f}"
    return GateDecision(passed, score, threshold, band, config.band_at(threshold), reason, not failed)
