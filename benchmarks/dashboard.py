"""Dashboard speed: the Weights page rerun after a slider move, and the Engrams page over 100,000 engrams.

    .venv/bin/python benchmarks/dashboard.py                          # 100k store in a temp folder
    .venv/bin/python benchmarks/dashboard.py --store .cns/bench-100k  # build once, reuse next time

(a) A 25-claim SNO is made the current SNO of a ``streamlit.testing`` AppTest of
``pages/weights.py``; the first run fills the pipeline cache (untimed); then each
repetition moves one critic slider and reruns the page. Target: median < 300 ms.
(b) ``pages/engrams.py`` over a Chroma store of ``-n`` engrams filled with
``benchmarks/memory_browse.build`` (random vectors, real metadata layout); the first
run opens the store (untimed), then full page runs are timed. Target: < 1.5 s.
AppTest adds its own overhead (script exec, element tree), so the figures are an upper bound
for what a browser session waits on the server.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from streamlit.testing.v1 import AppTest  # noqa: E402

from cns_core.views import ui_state  # noqa: E402
from cns_core.sno import SNO  # noqa: E402
from memory_browse import build  # noqa: E402

TOPICS = ["exercise", "sleep", "coffee", "fasting", "air pollution", "screen time", "green space", "vitamin D"]


def sno_with_claims(n: int = 25) -> SNO:
    """A hypothesis and ``n - 1`` premises, each supporting it or another premise, one attack, evidence."""
    claims = [{"id": "h", "text": "Regular exercise lowers resting blood pressure in adults."}]
    relations = []
    for k in range(1, n):
        topic = TOPICS[k % len(TOPICS)]
        claims.append({"id": f"c{k}", "text": f"Study {k} found that {topic} changed blood pressure by {k} mmHg."})
        relations.append({"source": f"c{k}", "target": "h" if k <= 8 else f"c{(k % 8) + 1}", "kind": "support"})
    relations.append({"source": f"c{n - 1}", "target": "h", "kind": "attack", "attack_type": "rebut"})
    relations[-2] = {"source": f"c{n - 2}", "target": "h", "kind": "support"}
    evidence = [{"id": f"e{k}", "text": f"Trial {k}: {TOPICS[k % len(TOPICS)]} lowered systolic pressure.",
                 "source": f"Journal {k}", "validity": 0.8} for k in range(1, 9)]
    return SNO.model_validate({"id": "bench-25", "title": "Bench 25 claims", "hypothesis": "h", "claims": claims,
                               "relations": relations, "evidence": evidence})


def time_weights(reps: int) -> list[float]:
    sno = sno_with_claims(25)
    at = AppTest.from_file(str(ROOT / "pages" / "weights.py"), default_timeout=300)
    at.session_state[ui_state.KEY_LIBRARY] = {sno.title: sno}
    at.session_state[ui_state.KEY_CURRENT] = sno.title
    at.run()                                   # warms the pipeline cache: the five critics run once
    if at.exception:
        raise SystemExit(f"weights page failed: {at.exception[0].message}")
    key = "cns_w_logic"
    times, scores = [], set()
    for i in range(reps):
        value = 0.2 + 0.6 * ((i % 7) / 6)
        t = time.perf_counter()
        at.slider(key=key).set_value(round(value, 2)).run()
        times.append(time.perf_counter() - t)
        if at.exception:
            raise SystemExit(f"weights page failed: {at.exception[0].message}")
        scores.add(next(m.value for m in at.metric if m.label == "Trust Score"))
    if reps > 1 and len(scores) < 2:
        raise SystemExit("the Trust Score did not move with the slider: the timing would mean nothing")
    return times


def time_engrams(store: Path, n: int, reps: int) -> tuple[int, list[float]]:
    from cns_core.memory import MemoryService

    memory = MemoryService(path=store, collection="engrams")
    have = memory.count()
    if have and have != n:
        raise SystemExit(f"{store} holds {have:,} engrams, not {n:,}: pass another --store")
    if not have:
        print(f"building {n:,} engrams in {store} ...", file=sys.stderr)
        build(memory, n)
    size = memory.count()
    del memory
    os.environ["CNS_CHROMA_PATH"] = str(store)
    os.environ["CNS_STATE_DIR"] = tempfile.mkdtemp(prefix="cns-bench-dash-")
    times = []
    for i in range(reps + 1):
        at = AppTest.from_file(str(ROOT / "pages" / "engrams.py"), default_timeout=300)
        t = time.perf_counter()
        at.run()
        elapsed = time.perf_counter() - t
        if at.exception:
            raise SystemExit(f"engrams page failed: {at.exception[0].message}")
        if i:                                  # the first run opens the store
            times.append(elapsed)
    return size, times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=100_000, help="engrams in the store")
    parser.add_argument("--store", help="Chroma folder to build once and reuse")
    parser.add_argument("--reps", type=int, default=15)
    args = parser.parse_args()
    weights = time_weights(args.reps)
    print(f"weights rerun, 25-claim SNO: median {statistics.median(weights) * 1000:.0f} ms "
          f"(min {min(weights) * 1000:.0f}, max {max(weights) * 1000:.0f}, {len(weights)} reps; target < 300 ms)")
    store = Path(args.store) if args.store else Path(tempfile.mkdtemp(prefix="cns-bench-dash-store-"))
    size, engrams = time_engrams(store, args.n, max(3, args.reps // 3))
    print(f"engrams page, {size:,} engrams: median {statistics.median(engrams) * 1000:.0f} ms "
          f"(min {min(engrams) * 1000:.0f}, max {max(engrams) * 1000:.0f}, {len(engrams)} runs; target < 1500 ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
