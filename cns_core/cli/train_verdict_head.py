"""``cns train-verdict-head``: fit the answer verdict's p(right) (settings in ``config/verdict_head_train.yaml``).

Runs the answer verdict (the shipped verifier, no head) over each training set and keeps every answer's
features in ``cache_dir`` (a stopped run resumes from the sets already done), fits a logistic regression
with each set weighing the same (seed fixed), and writes ``head.json`` and ``training_report.json`` (the
leave-one-set-out AUC per set beside the verifier's best support alone) to the output folder. The features
cost the verifier's time: about half an hour for the default sets on 2 busy CPU cores.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["register", "run"]


def register(subparsers) -> None:
    parser = subparsers.add_parser("train-verdict-head", help="fit the answer verdict's p(right) shipped under "
                                                              "models/answer-verdict",
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", help="model folder to write (default: output in the settings)")
    parser.add_argument("--data-dir", help="shared data folder (default: CNS_DATA_DIR)")
    parser.add_argument("--cache-dir", help="where each set's features are kept")
    parser.add_argument("--settings", help="a settings file (default: config/verdict_head_train.yaml)")
    parser.set_defaults(func=run)


def _features(name: str, limit: int, seed: int, root: Path, cache: Path):
    """One set's features, from the cache when it holds this sample, else computed and kept."""
    from cns_core.judging.answer_trust import AnswerItem
    from cns_core.judging.answer_verdict import VerdictSettings, judge_answers
    from cns_core.judging.verdict_head import FEATURES
    from cns_core.models import get_embedder, get_nli_backend
    from cns_core.training.answer_sets import answer_set
    from cns_core.training.verdict_head import FeatureSet, read_feature_set, write_feature_set

    import numpy as np

    path = cache / f"{name}-{limit}-{seed}.json"
    if path.is_file():
        return read_feature_set(path, len(FEATURES))
    turns = answer_set(name, limit, seed, root)
    items = [AnswerItem(f"{name}-{i}", t.question, t.answer, t.reference, t.sources) for i, t in enumerate(turns)]
    nli, embedder = get_nli_backend(), get_embedder()
    rows, right, ids = [], [], []
    for start in range(0, len(items), 25):
        chunk = items[start:start + 25]
        for item, turn, verdict in zip(chunk, turns[start:start + 25],
                                       judge_answers(chunk, nli, embedder, VerdictSettings(head=None))):
            if verdict.features:          # a refusal or an answer without evidence has none
                rows.append(verdict.features)
                right.append(turn.right)
                ids.append(item.query_id)
        print(f"train-verdict-head: {name} {min(start + 25, len(items))} of {len(items)}", file=sys.stderr, flush=True)
    result = FeatureSet(name, np.asarray(rows, dtype=np.float64).reshape(-1, len(FEATURES)), np.asarray(right, bool),
                        tuple(ids))
    cache.mkdir(parents=True, exist_ok=True)
    write_feature_set(path, result)
    return result


def run(args: argparse.Namespace) -> int:
    from cns_core.judging.verdict_head import FEATURES
    from cns_core.config import data_dir, project_dir
    from cns_core.training.verdict_head import fit_head, leave_one_set_out, load_head_settings, save_head

    settings = load_head_settings(args.settings, {"output": args.output, "data_dir": args.data_dir,
                                                  "cache_dir": args.cache_dir})

    def here(p: str) -> Path:
        return Path(p) if Path(p).is_absolute() else project_dir() / p

    root = Path(settings.data_dir) if settings.data_dir else data_dir()
    sets = [_features(name, limit, settings.seed, root, here(settings.cache_dir)) for name, limit in settings.sets.items()]
    head = fit_head(sets, FEATURES, settings.c, settings.seed)
    figures = leave_one_set_out(sets, FEATURES, settings.c)
    report = {"settings": settings.model_dump(), "counts": {s.name: int(len(s.right)) for s in sets},
              "right": {s.name: float(s.right.mean()) for s in sets}, "leave_one_set_out": figures,
              "weights": dict(zip(FEATURES, head["weights"]))}
    path = save_head(head, here(settings.output), report)
    print(f"train-verdict-head: {path} written; leave one set out, AUC of p(right) (the verifier's support alone):")
    for name, f in figures.items():
        print(f"  {name:18} n={f['n']:5d}  {f['auc_head']:.3f} ({f['auc_support']:.3f})")
    return 0
