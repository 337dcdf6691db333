"""A finished corpus run for ``make run``: the bundled examples/ evaluated into the state dir.

    python -m cns_core.cli.demo_corpus

It goes through the Corpus page's own call (:func:`cns_core.engine.corpus.evaluate_folder`), so
the results file is the one the page resumes from when that folder is evaluated there;
a second run finds every row done and evaluates nothing.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Callable, Sequence

from cns_core.config import project_path

__all__ = ["build_demo_corpus", "main"]


def build_demo_corpus(folder: str | Path | None = None, on_progress: Callable[[int, int], None] | None = None) -> Path:
    """Evaluate ``folder`` (default: the project's examples/; resumable; ``on_progress(done, total)`` SNO by SNO);
    returns the results file."""
    from cns_core.engine import corpus

    folder = folder or project_path("examples")
    corpus.evaluate_folder(folder, on_progress=on_progress)
    return corpus.folder_results_path(folder)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cns_core.cli.demo_corpus", description=__doc__.splitlines()[0])
    parser.add_argument("--folder", default=str(project_path("examples")),
                        help="folder of SNO files (default: the project's examples/)")
    args = parser.parse_args(argv)
    from cns_core.cli.quiet import offline_and_quiet

    offline_and_quiet()
    started = time.perf_counter()
    try:
        out = build_demo_corpus(args.folder)
    except (ValueError, OSError) as exc:
        print(f"demo corpus: error: {exc}", file=sys.stderr)
        return 1
    print(f"demo corpus: {args.folder} evaluated into {out} ({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
