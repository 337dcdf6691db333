"""``cns train-logic``: train the learned Logic critic (settings in ``config/logic_train.yaml``).

Drafts the human-judged texts and embeds every claim once (cached in ``cache_dir``, outside the
repository), trains with a fixed seed, writes ``model.safetensors``, ``config.json`` and
``training_report.json`` (per genre on its held-out part: flaw AUC per corpus and flaw type,
agreement with people on the IBM dev topics and the held-out Webis topics) to the output folder. A few minutes on 2 CPU cores once the cache is warm.
"""

from __future__ import annotations

import argparse

__all__ = ["register", "run"]


def register(subparsers) -> None:
    parser = subparsers.add_parser("train-logic", help="train the learned Logic critic shipped under models/",
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", help="model folder to write (default: output in the settings)")
    parser.add_argument("--data-dir", help="shared data folder (default: CNS_DATA_DIR)")
    parser.add_argument("--cache-dir", help="where drafted SNOs and embeddings are cached")
    parser.add_argument("--epochs", type=int)
    parser.add_argument("--seed", type=int)
    parser.add_argument("--threads", type=int, help="torch CPU threads")
    parser.add_argument("--leave-out", nargs="+", metavar="GENRE",
                        help="genres not trained on (microtexts abstrct cdcp ibm webis): a cross-genre check, "
                             "not the shipped recipe")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from cns_core.training.logic import load_logic_settings, train_and_save

    settings = load_logic_settings({"output": args.output, "data_dir": args.data_dir, "cache_dir": args.cache_dir,
                                    "epochs": args.epochs, "seed": args.seed, "threads": args.threads,
                                    "leave_out": args.leave_out})
    report = train_and_save(settings)
    flaw = report["held_out"]["flaw_auc"]
    print(f"model written to {settings.path(settings.output)}: held-out flaw AUC "
          + ", ".join(f"{c} {row['all']:.3f}" for c, row in flaw.items())
          + "".join(f"; {genre} held-out Spearman {report['held_out'][genre]['spearman']:.3f}"
                    for genre in ("ibm", "webis") if genre in report["held_out"]))
    return 0
