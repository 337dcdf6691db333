"""The 112 arg-microtexts with the default NLI: in-process vs Ray with 1 and 2 actors, in one run.

Run: ``.venv/bin/python benchmarks/corpus.py [--data DIR] [--workers 1 2]``

Imports the corpus once (timed), writes the SNOs to a temporary folder, starts a local
Ray once (timed, reported apart: a session or a cluster pays it once), then runs
``cns_core.engine.batch.evaluate_corpus`` in this process and on Ray with each actor count.
Each figure is end to end: model loading (in each actor), the novelty population, actor
start-up and writing the results table are included. Beside it, the throughput from the
first SNO back to the last shows the rate once workers run.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")


def main() -> None:
    import ray

    from cns_core.engine.batch import evaluate_corpus
    from cns_core.engine.ray_actors import start_local
    from cns_core.config import data_dir
    from cns_core.formats import import_path
    from cns_core.models.nli import nli_settings
    from cns_core.sno import dump_snos

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=data_dir() / "arg_microtexts_en" / "corpus_en")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    if not args.data.is_dir():
        raise SystemExit(f"{args.data}: not found (set CNS_DATA_DIR or pass --data)")

    started = time.perf_counter()
    results = import_path("microtexts", args.data)
    import_s = time.perf_counter() - started
    snos = [r.sno for r in results if r.ok]
    print(f"imported {len(snos)} of {len(results)} microtexts in {import_s:.2f} s "
          f"({len(results) / import_s:.0f} documents/s); NLI backend: {nli_settings()[0]}, embeddings: MiniLM; "
          f"{os.cpu_count()} CPU core(s)")

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "snos"
        folder.mkdir()
        for sno in snos:
            dump_snos(sno, folder / f"{sno.id}.json")
        started = time.perf_counter()
        start_local(max(args.workers))
        print(f"local Ray started in {time.perf_counter() - started:.1f} s (not in the figures below)", flush=True)
        runs = [("in-process", "local", 1)] + [(f"Ray, {n} actor(s)", "ray", n) for n in args.workers]
        try:
            for label, engine, workers in runs:
                report = evaluate_corpus(folder, Path(tmp) / f"results-{engine}-{workers}.parquet", workers=workers,
                                         engine=engine, progress=False)
                failed = int((report.frame["failures"] != "{}").sum())
                rows.append((label, report))
                print(f"  {label}: {report.evaluated} SNOs in {report.elapsed_s:.1f} s "
                      f"({failed} with a failed critic)", flush=True)
        finally:
            ray.shutdown()

    base, steady_base = rows[0][1].rate, rows[0][1].steady_rate
    print("\nrun                 SNOs  wall s   SNOs/s  vs first  | first SNO back after s  SNOs/s after it  vs first")
    for label, r in rows:
        print(f"{label:<18}  {r.evaluated:>4}  {r.elapsed_s:>6.1f}  {r.rate:>7.2f}  {r.rate / base:>7.2f}x  | "
              f"{r.first_row_s:>22.1f}  {r.steady_rate:>15.2f}  {r.steady_rate / steady_base:>7.2f}x")
    print("(SNOs/s: end to end; after it: from the first SNO back to the last, i.e. without start-up)")


if __name__ == "__main__":
    main()
