"""Quality of an NLI backend on labelled pairs, one figure a line.

    .venv/bin/python benchmarks/nli_quality.py --backend lexical ../shared/data/sick_test/SICK_test.tsv
    CNS_NLI_MODEL=/path/to/model .venv/bin/python benchmarks/nli_quality.py --backend transformers FILE

FILE is a SICK .tsv or an SNLI-style .jsonl (sentence1, sentence2, gold_label). Prints
accuracy, per-label precision and recall, entailment and contradiction ROC AUC, and
contradiction precision/recall at ``nli.contradiction_threshold`` of config/models.yaml
(or ``--threshold``), then the throughput of this run.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from cns_core.config import load_config  # noqa: E402
from cns_core.models import ModelUnavailableError, get_nli_backend  # noqa: E402
from cns_core.models.nli_metrics import format_report, nli_report, read_nli_pairs  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="NLI quality on a labelled file")
    parser.add_argument("file", type=Path, help="SICK .tsv or SNLI-style .jsonl")
    parser.add_argument("--backend", default=None, help="lexical | transformers | ollama-minicheck (default: config)")
    parser.add_argument("--threshold", type=float, default=None,
                        help="contradiction threshold (default: nli.contradiction_threshold)")
    parser.add_argument("--limit", type=int, default=None, help="use only the first N pairs")
    args = parser.parse_args(argv)

    try:
        data = read_nli_pairs(args.file, limit=args.limit)
        backend = get_nli_backend(args.backend)
        threshold = args.threshold
        if threshold is None:
            threshold = float(load_config("models").get("nli", {}).get("contradiction_threshold", 0.5))
        start = time.perf_counter()
        probs = backend.predict(data.pairs)
        seconds = time.perf_counter() - start
    except (ValueError, ModelUnavailableError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"backend: {backend.name}")
    print(f"file: {data.name}")
    for line in format_report(nli_report(probs, data.labels, threshold)):
        print(line)
    print(f"pairs per second: {len(data) / max(seconds, 1e-9):.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
