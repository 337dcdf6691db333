"""Training the argument miner on annotated argument graphs (``cns train-drafter``).

Each gold text is segmented exactly as drafting segments it (:func:`drafting_units`), its units
are matched to the annotated spans (half their words, as the benchmark matches them), and
labels follow from the match:

* unit role: ``main`` (the annotated main claim), ``attached`` (argues about another unit),
  ``root`` (an annotated unit that argues about nothing: a conclusion of its own, or a
  proposition no other is linked with), ``none`` (no annotated span: background, method,
  greeting);
* pair label for every candidate (unit, target) pair: ``support``, ``attack`` or ``none``.

Genres are weighted equally (each contributes the same total sample weight), so the large
abstract corpus does not drown the short texts. Settings: ``config/drafter_train.yaml``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from cns_core.text.annotated import GENRES, GoldText, align, read_genre
from cns_core.text.miner import PAIR_LABELS, UNIT_ROLES, ArgumentMiner, LinearModel
from cns_core.text.miner_features import TextUnits, candidate_pairs, describe_texts, pair_matrix, unit_rows

__all__ = ["MinerTrainSettings", "Example", "build_examples", "fit_miner", "load_miner_settings"]


class MinerTrainSettings(BaseModel):
    """What ``cns train-drafter`` trains (``config/drafter_train.yaml``)."""

    model_config = ConfigDict(extra="forbid")

    genres: list[str] = Field(default_factory=lambda: list(GENRES))
    seed: int = 13
    components: int = Field(32, ge=0, le=384)         # embedding directions the linear models see
    unit_c: float = Field(0.5, gt=0)                  # inverse regularisation strengths
    pair_c: float = Field(0.5, gt=0)
    max_distance: int = Field(12, ge=1)
    question_weight: float = Field(3.0, ge=0)
    attach_threshold: float = Field(0.25, ge=0, le=1)
    weak_link: float = Field(0.1, ge=0, le=1)         # drafted links below this p(link) are flagged "check it"
    tree: bool = True                                 # decode a tree (every argumentative unit attached)
    negative_share: float = Field(0.3, gt=0, le=1)    # share of unlinked pairs kept for the pair model (reweighted)
    max_iter: int = Field(3000, ge=100)
    output: str = "models/argument-miner"


def load_miner_settings(overrides: dict[str, Any] | None = None, path: str | Path | None = None
                        ) -> MinerTrainSettings:
    from pydantic import ValidationError

    from cns_core.config import config_file, load_yaml_file, settings_error

    file = Path(path) if path else config_file("drafter_train.yaml")
    data = load_yaml_file(file)
    data.update({k: v for k, v in (overrides or {}).items() if v is not None})
    unknown = [g for g in data.get("genres", []) if g not in GENRES]
    if unknown:
        raise ValueError(f"genres: unknown {unknown}; known: {', '.join(GENRES)}")
    try:
        return MinerTrainSettings.model_validate(data)
    except ValidationError as exc:
        raise settings_error(file.name, exc) from exc


@dataclass
class Example:
    """One gold text as the miner sees it: its described units and their labels."""

    gold: GoldText
    units: TextUnits
    unit_labels: np.ndarray
    pairs: list[tuple[int, int]] = field(default_factory=list)
    pair_labels: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))


def _unit_label(gold: GoldText, j: int | None) -> int:
    if j is None:
        return UNIT_ROLES.index("none")
    if j in gold.main:
        return UNIT_ROLES.index("main")
    if j in gold.sources:
        return UNIT_ROLES.index("attached")
    return UNIT_ROLES.index("root")


def labelled(gold: GoldText, tu: TextUnits, max_distance: int) -> Example:
    """A described text with its unit roles and candidate pairs labelled from the annotation."""
    match = align(tu.texts, gold.units)
    labels = np.array([_unit_label(gold, match.get(i)) for i in range(tu.n)], dtype=int)
    relation = {(s, t): kind for s, t, kind in gold.relations}
    pairs = candidate_pairs(tu.n, max_distance)
    pair_labels = np.array([PAIR_LABELS.index(relation.get((match.get(i), match.get(j)), "none"))
                            for i, j in pairs], dtype=int)
    return Example(gold, tu, labels, pairs, pair_labels)


def build_examples(golds: Sequence[GoldText], embedder: Any, max_distance: int) -> list[Example]:
    """Segment, describe (one embedding call) and label every gold text with at least two units."""
    from cns_core.text.draft import drafting_units

    segmented, kept = [], []
    for gold in golds:
        units, texts = drafting_units(gold.text)
        if len(units) >= 2:
            segmented.append((units, texts, None))
            kept.append(gold)
    return [labelled(gold, tu, max_distance) for gold, tu in zip(kept, describe_texts(segmented, embedder))]


def _genre_weights(genres: list[str]) -> np.ndarray:
    """Each genre's rows share the same total weight; the mean weight is 1."""
    names, counts = np.unique(genres, return_counts=True)
    per = {g: len(genres) / (len(names) * c) for g, c in zip(names, counts)}
    return np.array([per[g] for g in genres])


def _fit_linear(x: np.ndarray, y: np.ndarray, weights: np.ndarray, classes: int, c: float, seed: int,
                max_iter: int) -> LinearModel:
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    scaler = StandardScaler().fit(x)
    classifier = LogisticRegression(C=c, max_iter=max_iter, random_state=seed)
    classifier.fit(scaler.transform(x), y, sample_weight=weights)
    return LinearModel.from_sklearn(scaler, classifier, classes)


def _thinned(x: np.ndarray, y: np.ndarray, w: np.ndarray, share: float, seed: int
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Keep every linked pair and ``share`` of the unlinked ones, whose weight grows to make up for the rest."""
    if share >= 1.0:
        return x, y, w
    keep = (y != 0) | (np.random.default_rng(seed).random(len(y)) < share)
    w = np.where(y == 0, w / share, w)
    return x[keep], y[keep], w[keep]


def fit_miner(examples: Sequence[Example], settings: MinerTrainSettings) -> ArgumentMiner:
    """Fit the projection, the unit model and the pair model on ``examples``."""
    from sklearn.decomposition import PCA

    started = time.perf_counter()
    vectors = np.vstack([e.units.vectors for e in examples]).astype(np.float64)
    if settings.components:
        pca = PCA(n_components=settings.components, random_state=settings.seed).fit(vectors)
        projection, mean = pca.components_, pca.mean_
    else:
        projection, mean = np.zeros((0, vectors.shape[1])), vectors.mean(axis=0)
    unit_x, unit_y, unit_g, pair_x, pair_y, pair_g = [], [], [], [], [], []
    for e in examples:
        named = unit_rows(e.units)
        projected = (e.units.vectors - mean) @ projection.T
        unit_x.append(np.hstack([named, projected]))
        unit_y.append(e.unit_labels)
        unit_g += [e.gold.genre] * e.units.n
        pair_x.append(pair_matrix(e.units, e.pairs, named, projected))
        pair_y.append(e.pair_labels)
        pair_g += [e.gold.genre] * len(e.pairs)
    unit_model = _fit_linear(np.vstack(unit_x), np.concatenate(unit_y), _genre_weights(unit_g), len(UNIT_ROLES),
                             settings.unit_c, settings.seed, settings.max_iter)
    pair_x, pair_y, pair_w = _thinned(np.vstack(pair_x), np.concatenate(pair_y), _genre_weights(pair_g),
                                      settings.negative_share, settings.seed)
    pair_model = _fit_linear(pair_x, pair_y, pair_w, len(PAIR_LABELS), settings.pair_c, settings.seed,
                             settings.max_iter)
    counts = {g: sum(e.gold.genre == g for e in examples) for g in dict.fromkeys(e.gold.genre for e in examples)}
    info = {"texts": counts, "units": int(len(unit_g)), "pairs": int(len(pair_g)),
            "unit_labels": {r: int((np.concatenate(unit_y) == k).sum()) for k, r in enumerate(UNIT_ROLES)},
            "pair_labels": {r: int((pair_y == k).sum()) for k, r in enumerate(PAIR_LABELS)},
            "settings": settings.model_dump(exclude={"output"}), "fit_seconds": round(time.perf_counter() - started, 1)}
    return ArgumentMiner(unit_model, pair_model, projection, mean, settings.max_distance, settings.question_weight,
                         settings.attach_threshold, settings.tree, info, settings.weak_link)


def training_golds(settings: MinerTrainSettings, data: Path) -> list[GoldText]:
    return [g for genre in settings.genres for g in read_genre(genre, data)]


def refit_on_corrections(settings: MinerTrainSettings, golds: Sequence[GoldText], corrections: Path,
                         embedder: Any, output: Path, shipped: Path) -> ArgumentMiner:
    """Fit the miner on ``golds`` plus the person's corrections (one more genre, weighted as one) and write
    it to ``output``, which may not be the shipped model's folder. Raises ``ValueError`` naming the problem."""
    from cns_core.text.corrections import read_corrections

    if output.resolve() == shipped.resolve():
        raise ValueError(f"--output: {output} is the shipped model; a refit on corrections goes to the state folder")
    corrected = read_corrections(corrections)
    if not corrected:
        raise ValueError(f"--corrections: {corrections} holds no corrections (*.json) to learn from")
    miner = fit_miner(build_examples([*golds, *corrected], embedder, settings.max_distance), settings)
    miner.info["corrections"] = len(corrected)
    miner.save(output)
    return miner
