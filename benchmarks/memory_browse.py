"""Engram browser speed at 100,000 engrams: browse pages and counts, per filter and order.

    .venv/bin/python benchmarks/memory_browse.py                      # builds a 100k store in a temp folder
    .venv/bin/python benchmarks/memory_browse.py --store .cns/bench-100k   # build once, reuse next time

The store is filled through ``MemoryService``'s own metadata layout but with random
unit vectors instead of MiniLM embeddings (embedding 100,000 texts would take many
minutes and browsing never looks at vectors; the semantic search row does use the
real embedder for its query). Timestamps spread over a year, scores 1-5 with a sixth
ungraded. Each row is the best of three runs.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from cns_core.engrams import UNGRADED, EngramFilters, time_keys  # noqa: E402
from cns_core.memory import MemoryService  # noqa: E402

TOPICS = ["rivers", "volcanoes", "prime numbers", "photosynthesis", "the Roman empire", "jazz", "glaciers",
          "vaccines", "black holes", "tides", "Paris", "compilers"]


def build(memory: MemoryService, n: int, seed: int = 1) -> None:
    rng = random.Random(seed)
    vec = np.random.default_rng(seed)
    now = time.time()
    start = time.perf_counter()
    for lo in range(0, n, 5000):
        ids, docs, metas = [], [], []
        for i in range(lo, min(n, lo + 5000)):
            topic = TOPICS[i % len(TOPICS)]
            qid, doc, meta = memory._prepare({
                "query": f"Question {i} about {topic}?", "answer": f"Answer {i}: a few words on {topic}.",
                "session_id": f"bench-{i % 97}", "query_id": f"b{i:06d}",
                "timestamp": now - 365 * 86400 * rng.random()}, "")
            score = rng.choice([1, 2, 3, 4, 5, UNGRADED])
            if score != UNGRADED:
                meta.update({"critic_score": score, "critic_feedback": "feedback " * 20})
            meta.update(time_keys(score, meta["timestamp"]))
            meta = {k: v for k, v in meta.items() if v is not None}     # add() takes no None values
            ids.append(qid)
            docs.append(doc)
            metas.append(meta)
        emb = vec.standard_normal((len(ids), 384)).astype(np.float32)
        emb /= np.linalg.norm(emb, axis=1, keepdims=True)
        memory._engrams.add(ids=ids, embeddings=emb, documents=docs, metadatas=metas)
        print(f"  built {lo + len(ids):,} engrams ({time.perf_counter() - start:.0f} s)", file=sys.stderr)


def best_of(fn, runs: int = 3) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(runs):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=100_000)
    parser.add_argument("--store", help="Chroma folder to build once and reuse")
    args = parser.parse_args()
    folder = Path(args.store) if args.store else Path(tempfile.mkdtemp(prefix="cns-bench-browse-"))
    memory = MemoryService(path=folder, collection="engrams")
    if memory.count() != args.n:
        print(f"building {args.n:,} engrams in {folder} ...", file=sys.stderr)
        build(memory, args.n)
    year_ago = time.time() - 365 * 86400
    cases = [
        ("newest, no filter", EngramFilters(), "newest"),
        ("oldest, no filter", EngramFilters(), "oldest"),
        ("score order", EngramFilters(), "score"),
        ("score >= 4, newest", EngramFilters(min_score=4), "newest"),
        ("ungraded only, newest", EngramFilters(ungraded_only=True), "newest"),
        ("score 2-3, one month, oldest", EngramFilters(min_score=2, max_score=3, since=year_ago + 100 * 86400,
                                                       until=year_ago + 130 * 86400), "oldest"),
        ("text 'volcanoes', newest", EngramFilters(contains="VOLCANOES"), "newest"),
        ("session, score >= 3", EngramFilters(session_id="bench-7", min_score=3), "newest"),
        ("semantic 'lava', relevance", EngramFilters(similar_to="lava and eruptions"), "relevance"),
    ]
    print(f"{'browse (50 per page)':32s} {'offset 0':>10s} {'offset 1000':>12s} {'offset 20000':>13s} "
          f"{'count':>10s} {'matches':>9s}")
    for label, filters, order in cases:
        row = []
        for offset in (0, 1000, 20_000):
            seconds, page = best_of(lambda: memory.browse(filters, offset=offset, limit=50, order=order))
            row.append(f"{seconds * 1000:8.0f} ms" if page or offset == 0 else "   (empty)")
        seconds, matches = best_of(lambda: memory.count(filters))
        print(f"{label:32s} {row[0]:>10s} {row[1]:>12s} {row[2]:>13s} {seconds * 1000:7.0f} ms {matches:9,d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
