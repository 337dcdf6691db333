"""Stages 4-5: fusing heuristic and model scores, and typing the contradictions.

Fusion follows the spec's weighted max (section 6)::

    entail_raw  = max(w_h * entail_h, w_m * entail_m)
    contr_raw   = max(w_h * contr_h,  w_m * contr_m)
    neutral_raw = 1 - max(entail_raw, contr_raw)

with the weights divided by the largest weight of the passes that scored the
pair. With w_h = 0.4 and w_m = 0.6 a pair the model saw can reach at most
0.67 on the heuristics alone (below tau_c = 0.70: the model, trusted more, can
veto a surface cue), while a pair the model did not see -- model missing,
dropped for latency or timed out -- is scored by the heuristics at full
weight. Without that normalisation a dropped model would cap every
contradiction at w_h = 0.4 and the hook could never flag one in its
heuristics-only phase (phase A of the spec).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import numpy as np

from cns_core.coherence.schemas import CONFLICT_TYPES

__all__ = ["FusionWeights", "fuse", "conflict_types", "SELF_WORDS"]

SELF_WORDS = frozenset({"i", "me", "my", "mine", "myself", "we", "us", "our", "ours", "ourselves"})


@dataclass(frozen=True)
class FusionWeights:
    w_h: float = 0.4
    w_m: float = 0.6

    def __post_init__(self):
        if self.w_h < 0 or self.w_m < 0 or self.w_h + self.w_m <= 0:
            raise ValueError(f"weights: w_h and w_m must be >= 0 and not both 0 (got {self.w_h}, {self.w_m})")


def fuse(entail_h: np.ndarray, contr_h: np.ndarray, entail_m: np.ndarray, contr_m: np.ndarray,
         model_scored: np.ndarray, weights: FusionWeights) -> np.ndarray:
    """Raw fused ``(n, 3)`` scores in (entail, neutral, contradict) order."""
    entail_h = np.asarray(entail_h, dtype=np.float64)
    contr_h = np.asarray(contr_h, dtype=np.float64)
    scored = np.asarray(model_scored, dtype=bool)
    top = max(weights.w_h, weights.w_m)
    wh = np.where(scored, weights.w_h / top, 1.0 if weights.w_h > 0 else 0.0)
    wm = np.where(scored, weights.w_m / top, 0.0)
    em = np.where(scored, np.nan_to_num(np.asarray(entail_m, dtype=np.float64)), 0.0)
    cm = np.where(scored, np.nan_to_num(np.asarray(contr_m, dtype=np.float64)), 0.0)
    entail = np.clip(np.maximum(wh * entail_h, wm * em), 0.0, 1.0)
    contra = np.clip(np.maximum(wh * contr_h, wm * cm), 0.0, 1.0)
    neutral = 1.0 - np.maximum(entail, contra)
    return np.column_stack([entail, neutral, contra])


def fuse_parts(parts: dict[str, np.ndarray], weights: FusionWeights,
               model_scored: np.ndarray | None = None) -> np.ndarray:
    """:func:`fuse` over the stage 2-3 scores of ``CoherenceHook.score_parts`` (``model_scored``
    overrides which pairs count as model-scored: all False gives the heuristics alone)."""
    scored = parts["scored"] if model_scored is None else model_scored
    return fuse(parts["e_h"], parts["c_h"], parts["e_m"], parts["c_m"], scored, weights)


def conflict_types(cue_types: Iterable[str], source: str, *, self_referential: bool = False,
                   self_facet: bool = False) -> tuple[str, ...]:
    """Types of one contradiction: the cues that fired (or ``semantic`` when only the model saw it),
    plus where the evidence came from: a self statement (``self_trait``), an active goal
    (``goal_violation``) or the narrative context (``narrative``)."""
    types = [t for t in cue_types if t in CONFLICT_TYPES] or ["semantic"]
    if source == "goal":
        types.append("goal_violation")
    elif source == "self" or (self_referential and self_facet):
        types.append("self_trait")
    elif source == "narrative":
        types.append("narrative")
    return tuple(t for t in CONFLICT_TYPES if t in types)
