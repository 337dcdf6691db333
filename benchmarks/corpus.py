"""The 112 arg-microtexts evaluated with the offline backends: SNOs per second, 1 vs 2 workers.

Run: ``.venv/bin/python benchmarks/corpus.py [--data DIR] [--workers 1 2]``

Imports the corpus once (timed), writes the SNOs to a temporary folder, then runs
``cns_core.batch.evaluate_corpus`` from a cold start for each worker count, in this
one run, so the figures compare. Each figure is end to end: model loading, the
novelty population, worker start-up and writing the results table are included; the
worker start-up is also measured alone, so the throughput after start-up is shown beside it.
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


def worker_start_up(workers: int) -> float:
    """Seconds to spawn ``workers`` processes that import the pipeline and load the models (no SNO)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from cns_core import batch
    from cns_core.critics.base import CriticContext

    started = time.perf_counter()
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                             initializer=batch._init_worker,
                             initargs=(CriticContext(), "", {}, 30.0, max(1, (os.cpu_count() or 1) // workers))
                             ) as pool:
        list(pool.map(abs, range(workers)))   # leaving the block waits until every worker is up
    return time.perf_counter() - started


def main() -> None:
    from cns_core.batch import evaluate_corpus
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
        for workers in args.workers:
            report = evaluate_corpus(folder, Path(tmp) / f"results-{workers}.parquet", workers=workers,
                                     progress=False)
            failed = int((report.frame["failures"] != "{}").sum())
            rows.append((workers, report.evaluated, report.elapsed_s, report.rate, failed))
            print(f"  {workers} worker(s): {report.evaluated} SNOs in {report.elapsed_s:.1f} s", flush=True)

    start_up = {w: worker_start_up(w) for w in args.workers if w > 1}
    base = rows[0][3]
    print("\nworkers  SNOs  wall s   SNOs/s  vs first  | start-up s  SNOs/s after start-up  | failed critics")
    for workers, n, wall, rate, failed in rows:
        boot = start_up.get(workers, 0.0)
        steady = n / (wall - boot) if wall > boot else float("nan")
        print(f"{workers:>7}  {n:>4}  {wall:>6.1f}  {rate:>7.2f}  {rate / base:>7.2f}x  | {boot:>10.1f}  "
              f"{steady:>20.2f}  | {failed:>5}")
    print("(start-up: spawning the workers and loading their models, measured alone; 1 worker runs in-process)")


if __name__ == "__main__":   # worker processes are spawned and re-import this file
    main()
