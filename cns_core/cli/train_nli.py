"""``cns train-nli`` and ``cns train-verifier``: fine-tune the project's cross-encoder.

``train-nli`` reads ``config/nli_train.yaml`` (the generic NLI stages); ``train-verifier`` reads
``config/verifier_train.yaml``: the verifier's stage 3, trained on answers judged by people, claim
verification and fact swaps beside generic NLI; ``--settings config/verifier_train_joint.yaml`` makes stage 5
from it, and ``--settings config/verifier_train_stage8.yaml`` the shipped stage 8 from stage 5
(``models/nli-minilm-l6/MODEL_CARD.md``).

Resumable: the run checkpoints every ``checkpoint_every`` steps, and the same command
continues where it stopped (``--stop-after N`` ends an invocation on purpose, so a long
CPU run can be split). ``--no-resume`` starts over.
"""

from __future__ import annotations

import argparse

from cns_core.training.nli import calibrate_model, export_checkpoint, load_train_settings, train_nli

__all__ = ["register", "run"]


VERIFIER_SETTINGS = "config/verifier_train.yaml"


def register(subparsers) -> None:
    nli = subparsers.add_parser("train-nli", help="fine-tune the generic NLI cross-encoder (config/nli_train.yaml)",
                                description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    nli.add_argument("--settings", help="a training YAML instead of config/nli_train.yaml "
                     "(e.g. config/nli_train_negation.yaml, the second stage)")
    _add_arguments(nli)
    verifier = subparsers.add_parser("train-verifier",
                                     help="train the verifier (stage 3: config/verifier_train.yaml; the shipped "
                                          "stage 8: --settings config/verifier_train_stage8.yaml)",
                                     description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    verifier.add_argument("--settings", default=VERIFIER_SETTINGS,
                          help=f"a training YAML (default: {VERIFIER_SETTINGS})")
    _add_arguments(verifier)


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--output", help="model folder to write (default: output in the settings)")
    parser.add_argument("--base-model", help="model folder to start from (default: base_model in the settings); "
                        "a second round of mining starts from the first round's model")
    parser.add_argument("--data-dir", help="folder of the training TSV files (default: <CNS_DATA_DIR>/nli_train)")
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
