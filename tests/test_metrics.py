"""cns_core.metrics: the one ROC AUC behind the agreement panel, the training reports and the benchmarks."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from cns_core.metrics import roc_auc


def test_auc_counts_ties_half_and_needs_both_kinds():
    assert roc_auc([0.9, 0.8, 0.1], [True, True, False]) == 1.0
    assert roc_auc([0.5, 0.5], [True, False]) == 0.5
    assert roc_auc([0.2, 0.9, 0.4, 0.6], [True, False, False, True]) == 0.25
    assert roc_auc([0.2], [True]) is None
    assert math.isnan(roc_auc([0.2, 0.3], [False, False], missing=float("nan")))


def test_auc_is_scikit_learns_on_tied_random_scores():
    rng = np.random.default_rng(3)
    scores = rng.integers(0, 12, size=400) / 11          # many ties
    positive = rng.random(400) < scores * 0.7 + 0.1
    assert roc_auc(scores, positive) == pytest.approx(roc_auc_score(positive, scores), abs=1e-12)
    assert roc_auc(scores, positive.astype(int)) == roc_auc(scores, positive)


def test_scores_and_labels_of_different_lengths_are_refused():
    with pytest.raises(ValueError, match="roc_auc: 3 scores for 2 labels"):
        roc_auc([0.1, 0.2, 0.3], [True, False])
