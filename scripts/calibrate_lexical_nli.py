"""Fit the lexical NLI backend's logistic model on labelled pairs and write config/nli_lexical.yaml.

    .venv/bin/python scripts/calibrate_lexical_nli.py [DATA] [--out PATH] [--c 1.0] [--folds 5]

DATA defaults to ``<data_dir()>/sick_test/SICK_test.tsv`` (SICK .tsv or SNLI-style .jsonl).
Besides the fitted numbers the file records the date, the data and the figures of a
k-fold cross-validation (stratified; and grouped, so that no sentence of a test fold
was seen in training) at the configured contradiction threshold, so the README can
quote honest, out-of-sample numbers.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
from pathlib import Path

import numpy as np
import yaml

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from cns_core.config import config_dir, data_dir, load_config  # noqa: E402
from cns_core.models import get_embedder  # noqa: E402
from cns_core.models.lexical_nli import FEATURES, LexicalParams, pair_features  # noqa: E402
from cns_core.training.nli_metrics import NLIDataset, nli_report, read_nli_pairs  # noqa: E402

REPORTED = ("accuracy", "entailment AUC", "contradiction AUC", "contradiction precision", "contradiction recall")


def fit(features: np.ndarray, labels: np.ndarray, c: float, numeric_delta: float) -> LexicalParams:
    """L2-regularised multinomial logistic regression on standardised features, folded back to raw units."""
    from sklearn.linear_model import LogisticRegression

    mean = features.mean(axis=0)
    scale = features.std(axis=0)
    scale[scale == 0] = 1.0  # a cue that never fires in the data keeps weight 0
    model = LogisticRegression(C=c, max_iter=5000)
    model.fit((features - mean) / scale, labels)
    weights = np.zeros((3, features.shape[1]))
    intercept = np.zeros(3)
    for row, label in enumerate(model.classes_):
        weights[label] = model.coef_[row] / scale
        intercept[label] = model.intercept_[row] - np.sum(model.coef_[row] * mean / scale)
    return LexicalParams(weights, intercept, numeric_delta)


def sentence_groups(data: NLIDataset) -> np.ndarray:
    """Pairs that share a sentence (directly or through other pairs) get one group id."""
    parent: dict[str, str] = {}

    def root(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for premise, hypothesis in data.pairs:
        parent[root(premise)] = root(hypothesis)
    ids: dict[str, int] = {}
    return np.array([ids.setdefault(root(p), len(ids)) for p, _ in data.pairs])


def cross_validate(features, labels, folds, c, delta, threshold, groups=None, seed=0) -> dict[str, float]:
    """Pool the out-of-fold probabilities of ``folds`` fits and score them once."""
    from sklearn.model_selection import GroupKFold, StratifiedKFold

    splitter = (GroupKFold(n_splits=folds) if groups is not None
                else StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed))
    probs = np.zeros((len(labels), 3))
    for train, test in splitter.split(features, labels, groups):
        probs[test] = fit(features[train], labels[train], c, delta).probabilities(features[test])
    return nli_report(probs, labels, threshold)


def _figures(report: dict[str, float]) -> dict[str, float]:
    return {name: round(report[name], 4) for name in REPORTED}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data", nargs="?", type=Path, default=data_dir() / "sick_test" / "SICK_test.tsv")
    parser.add_argument("--out", type=Path, default=config_dir() / "nli_lexical.yaml")
    parser.add_argument("--c", type=float, default=1.0, help="inverse L2 strength (default 1.0)")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--numeric-delta", type=float, default=0.1)
    args = parser.parse_args(argv)

    try:
        data = read_nli_pairs(args.data)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    nli_cfg = load_config("models").get("nli", {})
    threshold = float((nli_cfg.get("lexical") or {}).get("contradiction_threshold",
                                                         nli_cfg.get("contradiction_threshold", 0.5)))
    print(f"{len(data)} pairs from {args.data}; embedding ...", file=sys.stderr)
    features = pair_features(data.pairs, get_embedder(), numeric_delta=args.numeric_delta)
    labels = data.labels

    params = fit(features, labels, args.c, args.numeric_delta)
    in_sample = nli_report(params.probabilities(features), labels, threshold)
    stratified = cross_validate(features, labels, args.folds, args.c, args.numeric_delta, threshold)
    groups = sentence_groups(data)
    grouped = (cross_validate(features, labels, args.folds, args.c, args.numeric_delta, threshold, groups)
               if len(set(groups.tolist())) >= args.folds else None)

    fitted = {
        "date": dt.date.today().isoformat(),
        "data": f"{args.data.name} ({len(data)} pairs; labels {np.bincount(labels, minlength=3).tolist()} "
                "entailment/neutral/contradiction)",
        "model": f"multinomial logistic regression, L2, C={args.c}, {len(FEATURES)} features",
        "contradiction_threshold": threshold,
        "in_sample": _figures(in_sample),
        f"cv_{args.folds}fold_stratified": _figures(stratified),
    }
    if grouped is not None:
        fitted[f"cv_{args.folds}fold_grouped_by_sentence"] = _figures(grouped)
    header = (
        "# Parameters of the lexical NLI backend (cns_core/models/lexical_nli.py).\n"
        "# Written by scripts/calibrate_lexical_nli.py -- do not edit by hand; re-run the script.\n"
        "# probabilities = softmax(features @ weights.T + intercept), columns entailment/neutral/contradiction.\n"
        "# 'fit' records the data and the figures (in-sample and cross-validated) at the\n"
        "# configured nli.contradiction_threshold; the loader ignores it.\n"
    )
    body = {"fit": fitted, **params.to_data()}
    args.out.write_text(header + yaml.safe_dump(body, sort_keys=False, width=100), encoding="utf-8")
    for name, figures in fitted.items():
        if isinstance(figures, dict):
            print(f"{name}: " + ", ".join(f"{k} {v:.3f}" for k, v in figures.items()))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
