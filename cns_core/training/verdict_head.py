"""Fitting the answer verdict's head: a logistic regression from the verifier's readings of an answer and
its surface cues (:data:`cns_core.judging.verdict_head.FEATURES`) to "the answer is right".

The features are computed by the answer verdict itself (``cns train-verdict-head`` runs it over the
training sets and keeps them per set, so a stopped run resumes); this module only weighs them. Every set
counts the same in total, whatever its size, so the head learns what holds across genres (short factoid
answers, exam answers, minimal edits of summaries, negations) rather than the largest set's habits.
Figures are cross-validated leave one set out: each set scored by a head fitted on the others.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

__all__ = ["FeatureSet", "VerdictHeadSettings", "load_head_settings", "fit_head", "leave_one_set_out", "save_head",
           "read_feature_set", "write_feature_set"]


class VerdictHeadSettings(BaseModel):
    """``config/verdict_head_train.yaml``."""

    model_config = ConfigDict(extra="forbid")
    output: str = "models/answer-verdict"
    data_dir: str | None = None
    cache_dir: str = "../cache/verdict-head"
    seed: int = 41
    c: float = Field(1.0, gt=0)
    sets: dict[str, int] = Field(default_factory=dict)

    @field_validator("sets")
    @classmethod
    def _training_sets_only(cls, sets: dict[str, int]) -> dict[str, int]:
        from cns_core.training.answer_sets import SET_NAMES

        allowed = [n for n in SET_NAMES if n.endswith("_train")]
        bad = sorted(set(sets) - set(allowed))
        if bad or not sets:
            raise ValueError(f"{bad or 'none given'}: each must be one of {', '.join(allowed)} (never a set the "
                             "benchmark scores)")
        if any(not 0 <= n <= 100_000 for n in sets.values()):
            raise ValueError("each count must be 0 (all) to 100,000")
        return sets


def load_head_settings(path: str | Path | None = None, overrides: Mapping[str, Any] | None = None) -> VerdictHeadSettings:
    """The settings file (default ``config/verdict_head_train.yaml``) with non-empty ``overrides``."""
    from cns_core.config import config_file, load_yaml_file, settings_error

    file = Path(path) if path else config_file("verdict_head_train.yaml")
    try:
        return VerdictHeadSettings(**{**load_yaml_file(file), **{k: v for k, v in (overrides or {}).items() if v}})
    except ValidationError as exc:
        raise settings_error(file.name, exc) from None


@dataclass(frozen=True)
class FeatureSet:
    """One training set's answers: their features (rows) and whether each is right."""

    name: str
    features: np.ndarray
    right: np.ndarray
    ids: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        if self.features.ndim != 2 or len(self.features) != len(self.right):
            raise ValueError(f"{self.name}: {self.features.shape} features for {len(self.right)} labels")


def _weights(sets: Sequence[FeatureSet]) -> np.ndarray:
    """Each set weighs the same in total; within a set, right and wrong answers weigh the same."""
    out = []
    for s in sets:
        w = np.ones(len(s.right))
        for value in (True, False):
            n = int((s.right == value).sum())
            if n:
                w[s.right == value] = 0.5 / n
        out.append(w / max(w.sum(), 1e-12))
    return np.concatenate(out) * sum(len(s.right) for s in sets) / max(len(sets), 1)


def fit_head(sets: Sequence[FeatureSet], names: Sequence[str], c: float = 1.0, seed: int = 41) -> dict[str, Any]:
    """The head as ``head.json`` stores it: logistic regression weights over ``names`` (mean 0 and scale 1:
    the features are used as they are)."""
    from sklearn.linear_model import LogisticRegression

    x = np.vstack([s.features for s in sets])
    y = np.concatenate([s.right for s in sets]).astype(int)
    if len(set(y)) < 2:
        raise ValueError("the training sets hold only right or only wrong answers")
    # Not standardised: every feature is a probability or a share in [0, 1], so a weight reads directly,
    # and a rare cue (a hedge on both sides) cannot be blown up by a tiny spread into a decisive one.
    mean, scale = np.zeros(x.shape[1]), np.ones(x.shape[1])
    model = LogisticRegression(C=c, max_iter=2000, random_state=seed)
    model.fit(x, y, sample_weight=_weights(sets))
    return {"features": list(names), "weights": [float(w) for w in model.coef_[0]],
            "bias": float(model.intercept_[0]), "mean": [float(m) for m in mean], "scale": [float(s) for s in scale]}


def _probability(head: Mapping[str, Any], x: np.ndarray) -> np.ndarray:
    z = (x - np.array(head["mean"])) / np.array(head["scale"])
    return 1.0 / (1.0 + np.exp(-(z @ np.array(head["weights"]) + head["bias"])))


def leave_one_set_out(sets: Sequence[FeatureSet], names: Sequence[str], c: float = 1.0) -> dict[str, dict[str, float]]:
    """Per set: AUC of p(right) from a head fitted on the other sets, beside the verifier's best support alone."""
    from cns_core.metrics import roc_auc

    out: dict[str, dict[str, float]] = {}
    for i, held in enumerate(sets):
        if len(set(held.right)) < 2:
            continue
        head = fit_head([s for j, s in enumerate(sets) if j != i], names, c)
        out[held.name] = {"n": len(held.right), "auc_head": roc_auc(_probability(head, held.features), held.right),
                          "auc_support": roc_auc(held.features[:, 0], held.right)}
    return out


def save_head(head: Mapping[str, Any], folder: str | Path, report: Mapping[str, Any]) -> Path:
    """Write ``head.json`` and ``training_report.json`` into ``folder`` (created)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "head.json").write_text(json.dumps(head, indent=1), encoding="utf-8")
    (folder / "training_report.json").write_text(json.dumps(report, indent=1, default=float), encoding="utf-8")
    return folder / "head.json"


def write_feature_set(path: str | Path, s: FeatureSet) -> None:
    """Keep one set's features (a stopped training run resumes from these)."""
    Path(path).write_text(json.dumps({"name": s.name, "features": s.features.tolist(), "right": s.right.tolist(),
                                      "ids": list(s.ids)}), encoding="utf-8")


def read_feature_set(path: str | Path, width: int) -> FeatureSet:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    features = np.asarray(data["features"], dtype=np.float64).reshape(-1, width)
    return FeatureSet(str(data["name"]), features, np.asarray(data["right"], dtype=bool), tuple(data.get("ids", ())))
