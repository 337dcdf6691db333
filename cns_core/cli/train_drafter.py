"""``cns train-drafter``: train the argument miner that drafts SNOs from text.

Reads the annotated genres named in ``config/drafter_train.yaml`` from the shared data folder
(``--data`` or ``CNS_DATA_DIR``), fits the unit-role and pair models with a fixed seed and
writes ``models/argument-miner`` (``miner.npz`` + ``miner.json``). The same command on the same
data gives the same weights. Figures: ``python benchmarks/extract.py``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["register", "run"]


def register(subparsers) -> None:
    parser = subparsers.add_parser("train-drafter", help="train the argument miner shipped under models/ (or refit "
                                   "it on your corrections into the state folder)",
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--settings", help="a training YAML instead of config/drafter_train.yaml")
    parser.add_argument("--data", help="the shared data folder (default: CNS_DATA_DIR or ../shared/data)")
    parser.add_argument("--output", help="model folder to write (default: output in the settings)")
    parser.add_argument("--genres", nargs="+", help="train on these genres only (microtexts, cdcp, abstrct)")
    parser.add_argument("--corrections", help="also learn from these corrected drafts (the Author page keeps them "
                        "in <state>/drafter/corrections); the refit goes to <state>/drafter/refit and becomes the "
                        "active drafter, never over the shipped model")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from cns_core.config import data_dir, project_dir
    from cns_core.models import get_embedder
    from cns_core.training.drafter import build_examples, fit_miner, load_miner_settings, training_golds

    settings = load_miner_settings({"output": args.output, "genres": args.genres}, path=args.settings)
    data = Path(args.data) if args.data else data_dir()
    golds = training_golds(settings, data)
    if args.corrections:
        return _refit(args, settings, golds)
    examples = build_examples(golds, get_embedder(), settings.max_distance)
    miner = fit_miner(examples, settings)
    output = Path(settings.output)
    output = output if output.is_absolute() else project_dir() / output
    miner.save(output)
    info = miner.info
    print(f"argument miner written to {output}: {info['texts']} texts, {info['units']:,} units, "
          f"{info['pairs']:,} pairs, fitted in {info['fit_seconds']} s ({miner.identity})")
    return 0


def _refit(args: argparse.Namespace, settings, golds) -> int:
    """The shipped genres plus the corrections, into the state folder; the refit becomes the active drafter."""
    import sys

    from cns_core.config import project_path
    from cns_core.models import get_embedder
    from cns_core.text.corrections import CorrectionError, activate_refit, refit_dir
    from cns_core.training.drafter import refit_on_corrections

    shipped = project_path("models/argument-miner")
    output = Path(args.output) if args.output else refit_dir()
    try:
        miner = refit_on_corrections(settings, golds, Path(args.corrections), get_embedder(), output, shipped)
    except (CorrectionError, ValueError) as exc:
        print(f"cns train-drafter: {exc}", file=sys.stderr)
        return 2
    if not args.output:
        activate_refit()
    print(f"refit on {miner.info['corrections']} correction(s) written to {output} ({miner.identity})"
          + ("; it is now the active drafter (revert on the Author page)" if not args.output else ""))
    return 0
