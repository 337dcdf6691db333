"""Where a score stands: its Appendix B quality band and its confidence band."""

from __future__ import annotations

import math
from typing import Mapping

from cns_core.critics.base import CriticResult
from cns_core.meta.settings import MetaConfig, QualityBand
from cns_core.scoring import trust_shown, weigh

__all__ = ["quality_band", "confidence_band"]


def quality_band(score: float, config: MetaConfig | None = None) -> QualityBand:
    """The band of Appendix B (excellent ... unacceptable) that ``score`` falls in, with its action."""
    if not isinstance(score, (int, float)) or math.isnan(score):
        raise ValueError(f"score: must be a number between 0 and 1 (got {score!r})")
    config = config or MetaConfig.load()
    for band in config.bands:  # highest first; the last starts at 0
        if score >= band.min_score:
            return band
    return config.bands[-1]


def confidence_band(results: Mapping[str, CriticResult], weights: Mapping[str, float],
                    config: MetaConfig) -> tuple[float, float]:
    """An interval around the weighted score that says how far to trust it.

    Over the critics that succeeded, with weights ``w`` renormalised among them and
    ``S`` the weighted score:

    * doubt  = sum w_i * (1 - confidence_i): what the critics themselves are unsure of;
    * spread = sqrt(sum w_i * (score_i - S)^2): how much they disagree with each other;
    * half   = sqrt((confidence_scale * doubt)^2 + (spread_scale * spread)^2), the two
      combined as independent errors, and the band is ``[S - half, S + half]`` clipped to [0, 1].

    A failed critic with requested weight share ``f`` could have scored anywhere in
    [0, 1], so the band becomes ``[(1-f) * lo, (1-f) * hi + f]``. With no usable critic
    it is the whole interval (0, 1). Contradicted claims that cap the Trust Score
    (:class:`cns_core.scoring.ContradictionCap`) scale the band down with the score (by
    cap / weighted sum), so it stays around the score the page shows and never claims more than
    the cap allows. Ends are Trust Score numbers, shown with three decimals.
    """
    requested = {n: float(w) for n, w in weights.items() if w > 0}
    total = sum(requested.values())
    usable = {n: w for n, w in requested.items() if n in results and results[n].ok}
    if total <= 0 or not usable:
        return (0.0, 1.0)
    failed_share = 1.0 - sum(usable.values()) / total
    norm = sum(usable.values())
    w = {n: v / norm for n, v in usable.items()}
    scores = {n: min(1.0, max(0.0, results[n].score)) for n in w}
    centre = sum(w[n] * scores[n] for n in w)
    doubt = sum(w[n] * (1.0 - min(1.0, max(0.0, results[n].confidence))) for n in w)
    spread = math.sqrt(sum(w[n] * (scores[n] - centre) ** 2 for n in w))
    half = math.hypot(config.confidence_scale * doubt, config.spread_scale * spread)
    lo, hi = max(0.0, centre - half), min(1.0, centre + half)
    lo, hi = (1 - failed_share) * lo, (1 - failed_share) * hi + failed_share
    weighted = weigh(results, weights)
    if weighted.capped and weighted.weighted_sum:
        assert weighted.cap is not None
        factor = weighted.cap.limit / weighted.weighted_sum
        lo, hi = lo * factor, min(hi * factor, weighted.cap.limit + (hi - lo) * factor / 2)
    return (trust_shown(lo), trust_shown(hi))
