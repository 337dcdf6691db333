"""The answer verdict fitted to one person's verdicts: a decision threshold and a Platt calibration.

The verifier calls an answer correct when p(answer right) (``trust_verdict_score``) reaches
``verdict.correct_at`` of config/memory.yaml, a threshold chosen on someone else's data. A person who
marked enough answers can refit it to theirs (``cns calibrate``, the button on the Engrams page):

* the threshold that maximises balanced accuracy against their verdicts, **cross-validated by question**
  (answers to one question never sit on both sides), adopted only when the cross-validated balanced
  accuracy does not fall (else the configured threshold stays, and the report says so);
* a Platt map of p(answer right) onto their verdicts (logistic on the logit), for reading the number.

Each fit is a numbered version under ``<state dir>/calibration/verdict/`` and becomes active; ``--revert``
goes back to the version before (or to the configuration). :func:`active_threshold` is how
:class:`cns_core.agents.answer_verdict.VerdictSettings` reads it, so the verdict, the Trust settings
fingerprint and therefore the backfill all follow the active calibration.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from cns_core.config import ConfigError, replace_atomically, state_dir

__all__ = ["MIN_ANNOTATIONS", "Calibration", "fit_calibration", "balanced_accuracy", "calibration_dir",
           "save_calibration", "active_calibration", "fit_to_engrams", "active_threshold", "revert_calibration", "platt"]

MIN_ANNOTATIONS = 20       # marked answers (correct or incorrect) needed to fit
MIN_QUESTIONS = 4          # ... to different questions (the cross-validation needs folds)
FOLDS = 5


@dataclass(frozen=True)
class Calibration:
    """One fit: the threshold in use before and after, the Platt map, and the evidence for it."""

    base_threshold: float
    threshold: float
    platt_a: float
    platt_b: float
    n: int
    questions: int
    cv_before: float          # balanced accuracy of the base threshold, pooled over the question folds
    cv_after: float           # ... of thresholds fitted on the other folds
    adopted: bool             # False: the fit did not beat the base threshold, which is kept
    version: int = 0
    created: float = 0.0

    def describe(self) -> str:
        kept = "" if self.adopted else " (the fit did not beat it: the threshold is kept)"
        return (f"threshold {self.base_threshold:.3f} -> {self.threshold:.3f}{kept}; balanced accuracy "
                f"cross-validated by question {self.cv_before:.3f} -> {self.cv_after:.3f} on {self.n} marked "
                f"answers to {self.questions} questions; Platt a={self.platt_a:.3f} b={self.platt_b:.3f}")


def balanced_accuracy(predicted: np.ndarray, right: np.ndarray) -> float:
    """Mean of the hit rates on right and on wrong answers (0.5 for a constant call)."""
    predicted, right = np.asarray(predicted, dtype=bool), np.asarray(right, dtype=bool)
    rates = [float((predicted[right == k] == k).mean()) for k in (True, False) if (right == k).any()]
    return float(np.mean(rates)) if rates else float("nan")


def _best_threshold(score: np.ndarray, right: np.ndarray, base: float) -> float:
    """The threshold with the highest balanced accuracy (midpoints between scores; ties: nearest ``base``)."""
    values = np.unique(score)
    candidates = np.unique(np.concatenate([[base], (values[:-1] + values[1:]) / 2, [values[0], values[-1] + 1e-9]]))
    best = max(candidates, key=lambda t: (round(balanced_accuracy(score >= t, right), 12), -abs(t - base)))
    return float(min(1.0, max(0.0, best)))


def platt(score: Any, a: float, b: float) -> np.ndarray:
    """Calibrated p(right) of p(answer right) ``score`` under the Platt map (a, b)."""
    s = np.clip(np.asarray(score, dtype=float), 1e-4, 1 - 1e-4)
    return 1.0 / (1.0 + np.exp(-(a * np.log(s / (1 - s)) + b)))


def _fit_platt(score: np.ndarray, right: np.ndarray) -> tuple[float, float]:
    """Logistic regression of the person's verdict on logit(p(answer right)) (mildly regularised)."""
    from sklearn.linear_model import LogisticRegression

    s = np.clip(score, 1e-4, 1 - 1e-4)
    model = LogisticRegression(C=1.0).fit(np.log(s / (1 - s)).reshape(-1, 1), right.astype(int))
    return float(model.coef_[0, 0]), float(model.intercept_[0])


def fit_calibration(scores: Sequence[float], right: Sequence[bool], questions: Sequence[str],
                    base_threshold: float) -> Calibration:
    """Fit the threshold and the Platt map (see the module doc); ValueError naming what is missing."""
    if not len(scores) == len(right) == len(questions):
        raise ValueError(f"calibration: {len(scores)} scores, {len(right)} verdicts, {len(questions)} questions")
    score = np.asarray(scores, dtype=float)
    truth = np.asarray(right, dtype=bool)
    if not np.isfinite(score).all() or ((score < 0) | (score > 1)).any():
        raise ValueError("calibration: p(answer right) must be numbers between 0 and 1")
    groups = sorted(set(questions))
    if len(score) < MIN_ANNOTATIONS or len(groups) < MIN_QUESTIONS:
        raise ValueError(f"calibration: {len(score)} marked answers to {len(groups)} questions; at least "
                         f"{MIN_ANNOTATIONS} answers to {MIN_QUESTIONS} questions are needed")
    if truth.all() or not truth.any():
        raise ValueError("calibration: the marked answers are all " + ("correct" if truth.all() else "incorrect")
                         + "; mark some of each")
    fold_of = {q: i % FOLDS for i, q in enumerate(groups)}
    fold = np.array([fold_of[q] for q in questions])
    predicted = np.zeros(len(score), dtype=bool)
    for k in range(min(FOLDS, len(groups))):
        train, test = fold != k, fold == k
        if not test.any():
            continue
        t = _best_threshold(score[train], truth[train], base_threshold) if len(set(truth[train])) == 2 \
            else base_threshold
        predicted[test] = score[test] >= t
    cv_before = balanced_accuracy(score >= base_threshold, truth)
    cv_after = balanced_accuracy(predicted, truth)
    adopted = cv_after > cv_before
    threshold = _best_threshold(score, truth, base_threshold) if adopted else base_threshold
    a, b = _fit_platt(score, truth)
    return Calibration(float(base_threshold), threshold, a, b, len(score), len(groups), cv_before, cv_after, adopted)


def fit_to_engrams(engrams: Sequence[Any], base_threshold: float) -> Calibration:
    """:func:`fit_calibration` on the engrams a person marked correct or incorrect that have a p(answer
    right), grouped by question."""
    from cns_core.agents.agreement import person_labels
    from cns_core.engrams import question_key

    marked = [(e.metadata.get("trust_verdict_score"), right, question_key(e.query)) for e, right in person_labels(engrams)]
    rows = [(float(s), r, q) for s, r, q in marked if isinstance(s, (int, float)) and not isinstance(s, bool)]
    unscored = len(marked) - len(rows)
    if unscored and len(rows) < MIN_ANNOTATIONS:   # say why, not "0 marked answers"
        raise ValueError(f"calibration: {len(marked)} marked answer(s), {unscored} of them without a p(answer right) "
                         f"(the answer verdict has not scored them: run cns trust-backfill), so {len(rows)} can be "
                         f"used; at least {MIN_ANNOTATIONS} answers to {MIN_QUESTIONS} questions are needed")
    return fit_calibration([s for s, _, _ in rows], [r for _, r, _ in rows], [q for _, _, q in rows], base_threshold)


# ----- versions in the state folder -------------------------------------------------------------
def calibration_dir() -> Path:
    """Where the versions live; not created by a look (``--revert`` on a missing state folder leaves none)."""
    return state_dir(create=False) / "calibration" / "verdict"


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: unreadable calibration ({exc}); remove it or run cns calibrate --revert") from None


def _history() -> list[int]:
    path = calibration_dir() / "active.json"
    if not path.is_file():
        return []
    history = _read_json(path).get("history", [])
    if not isinstance(history, list) or not all(isinstance(v, int) for v in history):
        raise ConfigError(f"{path}: history must be a list of version numbers")
    return history


def _write_history(history: list[int]) -> None:
    with replace_atomically(calibration_dir() / "active.json") as tmp:
        tmp.write_text(json.dumps({"history": history}), encoding="utf-8")


def save_calibration(calibration: Calibration) -> Calibration:
    """Store the fit as the next version and make it active; returns it with its version and time."""
    folder = calibration_dir()
    folder.mkdir(parents=True, exist_ok=True)
    versions = [int(p.stem[1:]) for p in folder.glob("v*.json") if p.stem[1:].isdigit()]
    stored = Calibration(**{**asdict(calibration), "version": max(versions, default=0) + 1, "created": time.time()})
    with replace_atomically(folder / f"v{stored.version:04d}.json") as tmp:
        tmp.write_text(json.dumps(asdict(stored), indent=1), encoding="utf-8")
    _write_history(_history() + [stored.version])
    return stored


def active_calibration() -> Calibration | None:
    """The calibration in use, None when the configuration's threshold is."""
    history = _history()
    if not history:
        return None
    path = calibration_dir() / f"v{history[-1]:04d}.json"
    data = _read_json(path)
    try:
        cal = Calibration(**data)
    except TypeError as exc:
        raise ConfigError(f"{path}: not a calibration ({exc})") from None
    if not (math.isfinite(cal.threshold) and 0.0 <= cal.threshold <= 1.0):
        raise ConfigError(f"{path}: threshold {cal.threshold!r} is not between 0 and 1")
    return cal


def active_threshold(configured: float) -> float:
    """The threshold the verdict uses: the active calibration's, else ``configured``."""
    cal = active_calibration()
    return configured if cal is None else cal.threshold


def revert_calibration() -> Calibration | None:
    """Go back to the calibration active before (None: the configuration's threshold); the file stays."""
    history = _history()
    if not history:
        raise ValueError("calibrate --revert: no calibration is active (the configured threshold is in use)")
    _write_history(history[:-1])
    return active_calibration()
