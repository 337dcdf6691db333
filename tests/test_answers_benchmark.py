"""benchmarks/answers.py's paired comparison of two verifiers: a development set's AUC change comes with
the interval its sampling noise allows, so a candidate is not rejected (or shipped) on noise."""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from cns_core.config import PROJECT_ROOT

ROUNDS = 300   # resamples per interval: enough to place it, few enough for the suite


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("answers_benchmark", PROJECT_ROOT / "benchmarks" / "answers.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _answers(n: int = 200, seed: int = 3) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    right = rng.random(n) < 0.5
    informative = np.where(right, 0.7, 0.3) + rng.normal(0, 0.15, n)
    noise = rng.random(n)
    return right, informative, noise


def test_the_same_scores_change_nothing_and_the_interval_is_zero(bench):
    right, informative, _ = _answers()
    assert bench.auc_change(informative, informative, right, rounds=ROUNDS) == (0.0, 0.0, 0.0)


def test_a_better_score_gains_auc_with_an_interval_above_zero(bench):
    right, informative, noise = _answers()
    change, low, high = bench.auc_change(noise, informative, right, rounds=ROUNDS)
    assert change == pytest.approx(bench.auc(informative, right) - bench.auc(noise, right))
    assert change > 0.2 and 0 < low < change < high


def test_a_worse_score_loses_auc_with_an_interval_below_zero(bench):
    right, informative, noise = _answers()
    change, low, high = bench.auc_change(informative, noise, right, rounds=ROUNDS)
    assert change < -0.2 and low < change < high < 0


def test_a_small_change_on_few_answers_has_an_interval_across_zero(bench):
    right, informative, _ = _answers(n=40)
    nudged = informative + np.random.default_rng(5).normal(0, 0.05, len(informative))
    change, low, high = bench.auc_change(informative, nudged, right, rounds=ROUNDS)
    assert low < 0 < high and abs(change) < 0.05


def test_the_interval_is_seeded(bench):
    right, informative, noise = _answers()
    first = bench.auc_change(noise, informative, right, seed=1, rounds=ROUNDS)
    assert bench.auc_change(noise, informative, right, seed=1, rounds=ROUNDS) == first


def test_the_auc_is_scikit_learns_ties_and_missing_scores_included(bench):
    from sklearn.metrics import roc_auc_score

    right, informative, _ = _answers()
    tied = np.round(informative, 1)
    tied[::17] = np.nan
    ok = np.isfinite(tied)
    assert bench.auc(tied, right) == pytest.approx(roc_auc_score(right[ok], tied[ok]))
    assert np.isnan(bench.auc(informative, np.ones_like(right)))
