"""The 112 arg-microtexts with the default NLI: in-process vs Ray with 1 and 2 actors, in one run.

Run: ``.venv/bin/python benchmarks/corpus.py [--data DIR] [--workers 1 2]``

On a GPU machine (the issue's figure: 16 cores and one H100, against this 2-core machine):
``.venv/bin/python benchmarks/corpus.py --generated 2000 --workers 1 4 8 --gpu-actors 1``
adds 2,000 generated debate maps (8-24 claims each, seeded) to the corpus and runs GPU actors
(one GPU each) after the CPU ones; without a CUDA device the GPU runs are reported as skipped.

Where two workers start to pay on this machine (issue 31: ``cns evaluate`` of the 112 microtexts
took 18.4 s with ``--workers 1`` and 30.6 s with ``--workers 2``):
``.venv/bin/python benchmarks/corpus.py --sizes 28 112 224 448`` evaluates corpora of those sizes
(the microtexts, then copies of them whose every text is changed a little, so that no cache
keyed by content has seen them) with ``cns evaluate --workers 1`` and
``--workers 2 --engine ray``, each a fresh process timed end to end (imports, model loading and
Ray's start included, as a user pays them); ``corpus.ray_min_snos`` in config/pipeline.yaml comes
from where the second column drops below the first.

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


def generated_snos(count: int, seed: int = 29) -> list:
    """``count`` small generated debate maps (8-24 claims, 4-12 evidence items), seeded."""
    import random

    from large_sno import make_large_sno

    from cns_core.sno import SNO

    rng = random.Random(seed)
    out = []
    for i in range(count):
        claims = rng.randint(8, 24)
        data = make_large_sno(claims, rng.randint(4, 12), claims + rng.randint(0, 4), cycles=rng.randint(0, 1),
                              seed=seed * 100_000 + i)
        data["id"] = f"generated-{i:05d}"
        out.append(SNO.model_validate(data))
    return out


def main() -> None:
    import ray
    import torch

    from cns_core.engine.batch import evaluate_corpus
    from cns_core.engine.ray_actors import start_local
    from cns_core.config import data_dir
    from cns_core.formats import import_path
    from cns_core.models.nli import nli_settings
    from cns_core.sno import dump_snos

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=data_dir() / "arg_microtexts_en" / "corpus_en")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="CPU actor counts to run")
    parser.add_argument("--generated", type=int, default=0, help="generated debate maps added to the corpus")
    parser.add_argument("--gpu-actors", type=int, nargs="*", default=[], help="GPU actor counts (one GPU each)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[],
                        help="corpus sizes to run in process and on 2 Ray actors, Ray's start included in each")
    args = parser.parse_args()
    if not args.data.is_dir():
        raise SystemExit(f"{args.data}: not found (set CNS_DATA_DIR or pass --data)")

    started = time.perf_counter()
    results = import_path("microtexts", args.data)
    import_s = time.perf_counter() - started
    imported = [r.sno for r in results if r.ok]
    snos = imported + generated_snos(args.generated)
    print(f"imported {len(imported)} of {len(results)} microtexts in {import_s:.2f} s "
          f"({len(results) / import_s:.0f} documents/s), {args.generated} generated SNOs added; "
          f"NLI backend: {nli_settings()[0]}, embeddings: MiniLM; {os.cpu_count()} CPU core(s)")

    if args.sizes:
        crossover(snos, args.sizes)
        return

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "snos"
        folder.mkdir()
        for sno in snos:
            dump_snos(sno, folder / f"{sno.id}.json")
        started = time.perf_counter()
        start_local(max(args.workers + args.gpu_actors))
        print(f"local Ray started in {time.perf_counter() - started:.1f} s (not in the figures below)", flush=True)
        runs = [("in-process", "local", 1, 0.0)] + [(f"Ray, {n} actor(s)", "ray", n, 0.0) for n in args.workers]
        if args.gpu_actors and not torch.cuda.is_available():
            print(f"GPU runs {args.gpu_actors} skipped: no CUDA device here")
        elif args.gpu_actors:
            runs += [(f"Ray, {n} GPU actor(s)", "ray", n, 1.0) for n in args.gpu_actors]
        try:
            for label, engine, workers, gpus in runs:
                report = evaluate_corpus(folder, Path(tmp) / f"results-{engine}-{workers}-{gpus:g}.parquet",
                                         workers=workers, engine=engine, gpus_per_worker=gpus, progress=False)
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


def _distinct_copy(sno, k: int):
    """``sno`` under a new id with every text changed a little: a copy that no cache keyed by content
    (the pipeline's, the NLI's) has seen, so a bigger corpus costs what new SNOs cost."""
    data = sno.model_dump(mode="json")
    data["id"] = f"{sno.id}-copy{k}"
    for item in (*data["claims"], *data["evidence"]):
        item["text"] = f"{item['text']} (variant {k})"
    return type(sno).model_validate(data)


def crossover(snos: list, sizes: list[int]) -> None:
    """``cns evaluate DIR --out FILE`` with ``--workers 1`` and with ``--workers 2 --engine ray`` at each corpus
    size, each a fresh process timed end to end as a user pays it: imports, model loading, Ray's start."""
    import subprocess
    import sys

    from cns_core.sno import dump_snos

    print(f"load average at the start: {' '.join(f'{x:.1f}' for x in os.getloadavg())}", flush=True)
    table = []
    for size in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp) / "snos"
            folder.mkdir()
            for i in range(size):
                sno = snos[i % len(snos)]
                if i >= len(snos):
                    sno = _distinct_copy(sno, i // len(snos))
                dump_snos(sno, folder / f"{i:05d}.json")
            times = {}
            for label, extra in (("1 worker", ["--workers", "1"]), ("2 workers", ["--workers", "2", "--engine", "ray"])):
                started = time.perf_counter()
                subprocess.run([sys.executable, "-m", "cns_core.cli", "evaluate", str(folder), "--out",
                                str(Path(tmp) / f"r{extra[1]}.parquet"), *extra], check=True, capture_output=True)
                times[label] = time.perf_counter() - started
                print(f"  {size} SNOs, {label}: {times[label]:.1f} s; load {os.getloadavg()[0]:.1f}", flush=True)
        table.append((size, times["1 worker"], times["2 workers"]))
    print("\nSNOs  --workers 1 s  --workers 2 s  2 / 1")
    for size, one, two in table:
        print(f"{size:>4}  {one:>13.1f}  {two:>13.1f}  {two / one:>5.2f}x")
    print(f"load average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
