"""Quality of NLI backends on labelled pairs, side by side: one row per figure, one column per backend.

    .venv/bin/python benchmarks/nli_quality.py                       # the default evaluation files, both backends
    .venv/bin/python benchmarks/nli_quality.py --backend lexical FILE [FILE ...]
    CNS_NLI_MODEL=/path/to/model .venv/bin/python benchmarks/nli_quality.py --backend transformers FILE

Default files (from ``CNS_DATA_DIR``): MultiNLI dev-mismatched (never trained on), SICK test and
Climate-FEVER. FILE may be a SICK ``.tsv``, an SNLI-style ``.jsonl``, a training-format TSV
(``premise, hypothesis, label``, gzip too) or Climate-FEVER's ``.jsonl`` (also scored per claim:
SUPPORTS against REFUTES claims over each claim's five evidence sentences).

Figures: accuracy, per-label precision and recall, entailment and contradiction ROC AUC,
contradiction precision/recall at each backend's own threshold (the one the critics use), the
expected calibration error of the top label, and pairs per second of the run.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from cns_core.config import data_dir  # noqa: E402
from cns_core.critics.common import contradiction_threshold  # noqa: E402
from cns_core.models import ModelUnavailableError, get_nli_backend  # noqa: E402
from cns_core.models.nli import nli_identity  # noqa: E402
from cns_core.training.nli_metrics import (claim_level_auc, expected_calibration_error, nli_report,  # noqa: E402
                                         read_nli_pairs)

DEFAULT_FILES = ("nli_train/mnli_dev_mismatched.tsv.gz", "sick_test/SICK_test.tsv", "climate_fever/climate-fever.jsonl")


def score(backend, data, threshold: float | None) -> dict[str, float]:
    """Every figure of one backend on one file."""
    start = time.perf_counter()
    probs = backend.predict(data.pairs)
    seconds = time.perf_counter() - start
    cut = threshold if threshold is not None else contradiction_threshold({}, backend)
    figures = nli_report(probs, data.labels, cut)
    figures["ECE (top label)"] = expected_calibration_error(probs, data.labels)
    figures.update(claim_level_auc(probs, data))
    figures["pairs per second"] = len(data) / max(seconds, 1e-9)
    return figures


def format_table(columns: dict[str, dict[str, float]]) -> list[str]:
    """``figure | backend | backend`` rows; counts as integers, the rest to three decimals."""
    names = list(dict.fromkeys(name for figures in columns.values() for name in figures))
    width = max(len(n) for n in names) + 2
    lines = [f"{'figure':<{width}}" + "".join(f"{label:>26}" for label in columns)]
    for name in names:
        cells = []
        for figures in columns.values():
            value = figures.get(name)
            cells.append("-" if value is None else f"{int(value)}" if name in ("pairs", "claims (supports/refutes)")
                         else f"{value:.1f}" if name == "pairs per second" else f"{value:.3f}")
        lines.append(f"{name:<{width}}" + "".join(f"{c:>26}" for c in cells))
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="NLI quality on labelled files, backends side by side")
    parser.add_argument("files", nargs="*", type=Path, help="labelled files (default: the evaluation sets)")
    parser.add_argument("--backend", action="append", default=None,
                        help="a backend to measure (repeatable; default: transformers and lexical)")
    parser.add_argument("--threshold", type=float, default=None,
                        help="contradiction threshold for every backend (default: each backend's own)")
    parser.add_argument("--limit", type=int, default=None, help="use only the first N pairs of each file")
    args = parser.parse_args(argv)

    files = args.files or [data_dir() / f for f in DEFAULT_FILES]
    try:
        backends = [get_nli_backend(name) for name in (args.backend or ["transformers", "lexical"])]
        for path in files:
            data = read_nli_pairs(path, limit=args.limit)
            columns = {nli_identity(b): score(b, data, args.threshold) for b in backends}
            print(f"file: {data.name}")
            print("\n".join(format_table(columns)))
            print()
    except (ValueError, ModelUnavailableError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
