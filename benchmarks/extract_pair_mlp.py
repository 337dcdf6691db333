"""An MLP pair scorer against the shipped linear one, leave one genre out (issue 42, item 4).

    python benchmarks/extract_pair_mlp.py --cache /tmp/described.pkl [--hidden 64] [--alpha 0.01]

The unit model, projection and decoding are the linear miner's (``fit_miner``); only the pair
scorer is replaced by a one-hidden-layer MLP (scikit-learn, seeded) over the same inputs: the named
pair features, both units' named features and the product of their projected MiniLM embeddings.
Training rows, thinning and genre weights are those of ``fit_miner``. The cache is the one
``benchmarks/extract.py --cache`` writes; the linear figures are that script's.
"""

from __future__ import annotations

import argparse
import pickle
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import extract  # noqa: E402
from cns_core.text.annotated import GENRES  # noqa: E402
from cns_core.text.miner_features import pair_matrix, unit_rows  # noqa: E402
from cns_core.training import drafter  # noqa: E402


class MLPPairs:
    """The pair scorer's ``probabilities`` over a fitted scaler and MLP (experiment only: not saved)."""

    def __init__(self, scaler, classifier):
        self.scaler, self.classifier = scaler, classifier
        self.coef = classifier.coefs_[0]       # what the miner's fingerprint reads

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        out = np.zeros((x.shape[0], 3))
        if x.shape[0]:
            out[:, self.classifier.classes_.astype(int)] = self.classifier.predict_proba(self.scaler.transform(x))
        return out


def fit_pairs(examples, miner, settings, hidden: int, alpha: float) -> MLPPairs:
    from sklearn.neural_network import MLPClassifier
    from sklearn.preprocessing import StandardScaler

    xs, ys, genres = [], [], []
    for e in examples:
        projected = (e.units.vectors - miner.projection_mean) @ miner.projection.T
        xs.append(pair_matrix(e.units, e.pairs, unit_rows(e.units), projected))
        ys.append(e.pair_labels)
        genres += [e.gold.genre] * len(e.pairs)
    x, y, w = drafter._thinned(np.vstack(xs), np.concatenate(ys), drafter._genre_weights(genres),
                               settings.negative_share, settings.seed)
    scaler = StandardScaler().fit(x)
    classifier = MLPClassifier(hidden_layer_sizes=(hidden,), alpha=alpha, max_iter=60, random_state=settings.seed)
    classifier.fit(scaler.transform(x), y, sample_weight=w)
    return MLPPairs(scaler, classifier)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--alpha", type=float, default=0.01)
    args = parser.parse_args()
    from cns_core.models import get_embedder

    settings = drafter.load_miner_settings()
    with args.cache.open("rb") as handle:          # a file benchmarks/extract.py wrote, outside the repository
        examples = {g: [drafter.labelled(e.gold, e.units, settings.max_distance) for e in es]
                    for g, es in pickle.load(handle).items()}
    embedder = get_embedder()
    for genre in GENRES:
        started = time.perf_counter()
        train = [e for g in GENRES if g != genre for e in examples[g]]
        texts = [e.gold for e in examples[genre]]
        miner = drafter.fit_miner(train, settings)
        miner.pair_model = fit_pairs(train, miner, settings, args.hidden, args.alpha)
        snos = [d.sno for d in extract.draft_snos([g.text for g in texts], sno_ids=[g.name for g in texts],
                                                  miner=miner, embedder=embedder)]
        print(extract.row(f"miner, MLP pairs ({args.hidden}, alpha {args.alpha}), leave-one-genre-out", genre,
                          extract.score(snos, texts)), f"({time.perf_counter() - started:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
