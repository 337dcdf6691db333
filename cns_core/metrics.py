"""Figures computed in several places (the people-agreement panel, training reports, benchmarks): one
definition each, so a figure means the same wherever it is shown."""

from __future__ import annotations

from typing import Sequence

import numpy as np

__all__ = ["roc_auc", "spearman"]


def roc_auc(scores: Sequence[float] | np.ndarray, positive: Sequence[bool] | np.ndarray,
            missing: float | None = None) -> float | None:
    """Area under the ROC curve: the probability that a positive outscores a negative, ties counting half
    (the Mann-Whitney rank-sum form; the same value as scikit-learn's ``roc_auc_score``, without its input
    checks, so a bootstrap can call it a thousand times). ``missing`` is returned without both classes."""
    from scipy.stats import rankdata

    scores = np.asarray(scores, dtype=np.float64)
    positive = np.asarray(positive, dtype=bool)
    if scores.shape != positive.shape:
        raise ValueError(f"roc_auc: {scores.shape[0] if scores.ndim else 0} scores for "
                         f"{positive.shape[0] if positive.ndim else 0} labels")
    n_pos = int(positive.sum())
    n_neg = len(positive) - n_pos
    if not n_pos or not n_neg:
        return missing
    ranks = rankdata(scores)
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def spearman(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> float:
    """Spearman's rank correlation of two paired sequences (ties share their mean rank); 0.0 when either is
    constant or shorter than two, where no order can be compared."""
    from scipy.stats import rankdata

    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.shape != y.shape:
        raise ValueError(f"spearman: {x.size} values against {y.size}")
    if x.size < 2:
        return 0.0
    rx, ry = rankdata(x), rankdata(y)
    if rx.std() == 0 or ry.std() == 0:
        return 0.0
    return float(np.corrcoef(rx, ry)[0, 1])
