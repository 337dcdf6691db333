"""The answer verdict fitted to one person's verdicts: p(right) recalibrated, and a threshold on that scale.

The verifier calls an answer correct when p(answer right) reaches ``verdict.correct_at`` of
config/memory.yaml, a threshold chosen on someone else's data. A person who marked enough answers can fit
the verdict to theirs (``cns calibrate``, the button on the Engrams page):

* a **Platt map** of the verifier's p(right) onto their verdicts (logistic on the logit): what p(right)
  then means is "how often this person calls such an answer right", and it is the p(right) every page,
  the export and the review queue show;
* the **threshold on that scale**, on the hundredths every surface shows (so a p(right) that reads 0.97
  reads the same verdict on every card), chosen for balanced accuracy against their verdicts;
* both **cross-validated by question** (answers to one question never sit on both sides), and adopted
  only when the cross-validated balanced accuracy rises; a fit that does not is stored but changes nothing.

Each fit is a numbered version under ``<state dir>/calibration/verdict/`` and becomes active; ``--revert``
goes back to the version before (or to the configuration). :class:`cns_core.judging.answer_verdict.VerdictSettings`
reads the active one, and the stored verdicts are decided again from their readings at once
(:func:`cns_core.people.calibrate.relabel_stored`), without the model.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from cns_core.config import ConfigError, replace_atomically, state_dir

__all__ = ["MIN_ANNOTATIONS", "UnscoredMarks", "Calibration", "fit_calibration", "balanced_accuracy", "calibration_dir",
           "save_calibration", "active_calibration", "fit_to_engrams", "revert_calibration", "platt"]

MIN_ANNOTATIONS = 20       # marked answers (correct or incorrect) needed to fit
MIN_QUESTIONS = 4          # ... to different questions (the cross-validation needs folds)
FOLDS = 5


class UnscoredMarks(ValueError):
    """Too few marked answers carry a p(answer right) to fit: the answer verdict has not scored the others yet.
    Its words give no remedy: the command line and the Engrams page each name their own."""


@dataclass(frozen=True)
class Calibration:
    """One fit: the threshold before and after, the Platt map, and the evidence for it.

    ``scale`` says where ``threshold`` lies: ``platt`` (on the calibrated p(right), the Platt map in force)
    or ``raw`` (a version stored before p(right) was recalibrated: the verifier's own p(right))."""

    base_threshold: float
    threshold: float
    platt_a: float
    platt_b: float
    n: int
    questions: int
    cv_before: float          # balanced accuracy of the base threshold, pooled over the question folds
    cv_after: float           # ... of the map and threshold fitted on the other folds
    adopted: bool             # False: the fit did not beat the base threshold; nothing changes
    version: int = 0
    created: float = 0.0
    scale: str = "raw"

    @property
    def p_map(self) -> tuple[float, float] | None:
        """The Platt map (a, b) p(right) goes through while this calibration is active (None: none)."""
        return (self.platt_a, self.platt_b) if self.adopted and self.scale == "platt" else None

    def threshold_for(self, configured: float) -> float:
        """The threshold of "correct" in force: the fitted one, or ``configured`` when the fit was not adopted."""
        return self.threshold if self.adopted else configured

    @property
    def raw_threshold(self) -> float:
        """The fitted threshold as the verifier's own p(right) (the Platt map undone)."""
        if self.p_map is None or self.platt_a <= 0:
            return self.threshold
        t = min(1 - 1e-6, max(1e-6, self.threshold))
        logit = (math.log(t / (1 - t)) - self.platt_b) / self.platt_a
        return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, logit))))

    def describe(self) -> str:
        evidence = (f"balanced accuracy cross-validated by question {self.cv_before:.3f} -> {self.cv_after:.3f} on "
                    f"{self.n} marked answers to {self.questions} questions")
        if not self.adopted:
            return (f"not adopted: the fit did not beat the threshold {self.base_threshold:.3f} ({evidence}); p(right) "
                    f"and the verdicts stay as configured (Platt a={self.platt_a:.3f} b={self.platt_b:.3f} unused)")
        if self.p_map is None:
            return f"threshold {self.base_threshold:.3f} -> {self.threshold:.3f}; {evidence}"
        return (f"p(right) recalibrated to the marked answers (Platt a={self.platt_a:.3f} b={self.platt_b:.3f}); "
                f"threshold {self.base_threshold:.3f} -> {self.threshold:.2f} on that scale (the verifier's "
                f"{self.raw_threshold:.3f}); {evidence}")


def balanced_accuracy(predicted: np.ndarray, right: np.ndarray) -> float:
    """Mean of the hit rates on right and on wrong answers (0.5 for a constant call)."""
    predicted, right = np.asarray(predicted, dtype=bool), np.asarray(right, dtype=bool)
    rates = [float((predicted[right == k] == k).mean()) for k in (True, False) if (right == k).any()]
    return float(np.mean(rates)) if rates else float("nan")


_GRID = np.round(np.arange(1, 100) / 100.0, 2)   # thresholds on the hundredths every surface shows


def _best_threshold(score: np.ndarray, right: np.ndarray, anchor: float) -> float:
    """The threshold on the hundredths with the highest balanced accuracy (ties: nearest ``anchor``)."""
    return float(max(_GRID, key=lambda t: (round(balanced_accuracy(score >= t, right), 12), -abs(t - anchor))))


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


def _map_and_threshold(score: np.ndarray, right: np.ndarray, base: float) -> tuple[float, float, float]:
    """(a, b, threshold on the calibrated scale) fitted on these answers."""
    a, b = _fit_platt(score, right)
    return a, b, _best_threshold(platt(score, a, b), right, float(platt(base, a, b)))


def fit_calibration(scores: Sequence[float], right: Sequence[bool], questions: Sequence[str],
                    base_threshold: float) -> Calibration:
    """Fit the Platt map and the threshold on its scale (see the module doc); ``scores`` are the verifier's own
    p(right), uncalibrated. ValueError naming what is missing."""
    if not len(scores) == len(right) == len(questions):
        raise ValueError(f"{len(scores)} scores, {len(right)} verdicts, {len(questions)} questions")
    score = np.asarray(scores, dtype=float)
    truth = np.asarray(right, dtype=bool)
    if not np.isfinite(score).all() or ((score < 0) | (score > 1)).any():
        raise ValueError("p(answer right) must be numbers between 0 and 1")
    groups = sorted(set(questions))
    if len(score) < MIN_ANNOTATIONS or len(groups) < MIN_QUESTIONS:
        raise ValueError(f"{len(score)} marked answers to {len(groups)} questions; at least "
                         f"{MIN_ANNOTATIONS} answers to {MIN_QUESTIONS} questions are needed")
    if truth.all() or not truth.any():
        raise ValueError("the marked answers are all " + ("correct" if truth.all() else "incorrect")
                         + "; mark some of each")
    fold_of = {q: i % FOLDS for i, q in enumerate(groups)}
    fold = np.array([fold_of[q] for q in questions])
    predicted = score >= base_threshold          # a fold that cannot be fitted keeps the configured call
    for k in range(min(FOLDS, len(groups))):
        train, test = fold != k, fold == k
        if test.any() and len(set(truth[train])) == 2:
            a, b, t = _map_and_threshold(score[train], truth[train], base_threshold)
            predicted[test] = platt(score[test], a, b) >= t if a > 0 else score[test] >= base_threshold
    cv_before = balanced_accuracy(score >= base_threshold, truth)
    cv_after = balanced_accuracy(predicted, truth)
    a, b, threshold = _map_and_threshold(score, truth, base_threshold)
    adopted = bool(cv_after > cv_before and a > 0)      # a map that turns p(right) around is never adopted
    return Calibration(float(base_threshold), threshold if adopted else float(base_threshold), a, b, len(score),
                       len(groups), cv_before, cv_after, adopted, scale="platt")


def fit_to_engrams(engrams: Sequence[Any], raw: Mapping[str, float], base_threshold: float) -> Calibration:
    """:func:`fit_calibration` on the engrams a person marked correct or incorrect that have a p(answer
    right) in ``raw`` (engram id -> the verifier's own p(right):
    :func:`cns_core.judging.answer_verdict.raw_scores`), grouped by question."""
    from cns_core.judging.agreement import person_labels
    from cns_core.engrams import question_key

    labelled = person_labels(engrams)
    rows = [(raw[e.id], right, question_key(e.query)) for e, right in labelled if e.id in raw]
    unscored = len(labelled) - len(rows)
    if unscored and len(rows) < MIN_ANNOTATIONS:   # say why, not "0 marked answers"
        raise UnscoredMarks(f"{len(labelled)} marked answer(s), {unscored} of them without a p(answer right) (the "
                            f"answer verdict has not scored them yet), so {len(rows)} can be used; at least "
                            f"{MIN_ANNOTATIONS} answers to {MIN_QUESTIONS} questions are needed")
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
        if cal.scale not in ("raw", "platt"):
            raise TypeError(f"scale {cal.scale!r} is not raw or platt")
    except TypeError as exc:
        raise ConfigError(f"{path}: not a calibration ({exc})") from None
    if not (math.isfinite(cal.threshold) and 0.0 <= cal.threshold <= 1.0):
        raise ConfigError(f"{path}: threshold {cal.threshold!r} is not between 0 and 1")
    if not all(isinstance(x, (int, float)) and math.isfinite(x) for x in (cal.platt_a, cal.platt_b)):
        raise ConfigError(f"{path}: the Platt map ({cal.platt_a!r}, {cal.platt_b!r}) must be two finite numbers")
    return cal


def revert_calibration() -> Calibration | None:
    """Go back to the calibration active before (None: the configuration's threshold); the file stays."""
    history = _history()
    if not history:
        raise ValueError("calibrate --revert: no calibration is active (the configured threshold is in use)")
    _write_history(history[:-1])
    return active_calibration()
