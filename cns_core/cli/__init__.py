"""The ``cns`` command line. Each sub-module registers its own sub-commands.

A sub-module exposes ``register(subparsers)`` and sets ``func(args) -> int`` on
each parser it adds; ``main`` turns expected errors into one clear line and a
non-zero exit instead of a traceback, and runs the command with its project and state folder
pinned in the environment (:func:`cns_core.config.pinned_for_children`), so that every process
it starts uses the same ones.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

from cns_core.bounds import printable
from cns_core.cli.quiet import offline_and_quiet
from cns_core.config import pinned_for_children

# One module per family of commands, in help order.
_COMMAND_MODULES = ("run", "project", "evaluate", "meta", "extract", "importer", "coherence", "agents", "trust",
                    "train_verifier", "train_drafter", "train_logic", "train_verdict_head", "people", "recall")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cns", description="CNS Studio: dialectical evaluation of SNOs.")
    parser.add_argument("--project", metavar="DIR",
                        help="project folder whose config/, models/ and examples/ win over the package's own, file "
                             "by file, and whose .cns/ holds the state (as CNS_PROJECT_DIR; `cns project` shows what "
                             "is used)")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _COMMAND_MODULES:
        importlib.import_module(f"cns_core.cli.{name}").register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    offline_and_quiet()
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        with pinned_for_children(args.project):     # every process it starts uses the same project and state folder
            return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except (ValueError, OSError, RuntimeError) as exc:      # its words may quote a file name or a value
        print(f"cns {args.command}: error: {printable(exc, keep=chr(10))}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
