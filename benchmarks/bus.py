"""Events per second through the judge-loop bus, side by side in one run.

    .venv/bin/python benchmarks/bus.py            # 20,000 critique-sized messages per mode
    .venv/bin/python benchmarks/bus.py -n 50000

Modes (same payload: a critique.result with a 400-character feedback):

* ``publish only``: envelopes built, serialised and handed to ZeroMQ (no subscriber);
* ``1 subscriber`` / ``2 subscribers``: end to end, publisher -> XSUB/XPUB proxy ->
  subscriber(s), counted when every subscriber has decoded and validated every
  envelope (the rate is messages per second, not deliveries);
* ``1 subscriber, no journal``: the same without the SQLite journal the proxy feeds,
  i.e. what durability costs.

Loopback only; ports are taken free at start. Prints one line per mode with the
ratio to the fastest end-to-end mode.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("CNS_STATE_DIR", tempfile.mkdtemp(prefix="cns-bench-bus-"))

from cns_core.agents.bus import CRITIQUE, BusProxy, Envelope, Publisher, Subscriber, bus_settings  # noqa: E402
from cns_core.agents.journal import journal_tail  # noqa: E402
from cns_core.cli.ports import spare_ports  # noqa: E402


def payload(i: int) -> dict:
    return {"query_id": f"bench-{i}", "session_id": "bench", "score": i % 5 + 1, "feedback": "x" * 400,
            "query": "What is the capital of France?", "answer": "Paris.", "judge_model": "prometheus:7b",
            "latency_s": 1.234, "error": None}


def run(n: int, subscribers: int, journal: bool) -> tuple[float, int]:
    ports = spare_ports(count=3)
    config = bus_settings(pub_port=ports[0], sub_port=ports[1], journal_port=ports[2], hwm=max(n, 1000) * 2)
    with BusProxy(config, journal=journal), Publisher(config, source="bench") as pub:
        subs = [Subscriber([CRITIQUE], config) for _ in range(subscribers)]
        for sub in subs:
            sub.wait_ready(pub)
        counts = [0] * subscribers

        def drain(k: int) -> None:
            while counts[k] < n:
                batch = subs[k].recv_batch(1000, timeout=10)
                if not batch:
                    return
                counts[k] += len(batch)

        threads = [threading.Thread(target=drain, args=(k,)) for k in range(subscribers)]
        envelopes = [Envelope(subject=CRITIQUE, payload=payload(i)) for i in range(min(n, 1000))]
        start = time.perf_counter()
        for t in threads:
            t.start()
        for i in range(n):
            pub.send(Envelope(subject=CRITIQUE, payload=envelopes[i % len(envelopes)].payload))
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - start
        journaled = journal_tail(config) if journal else 0
        for sub in subs:
            sub.close()
    delivered = min(counts) if counts else n
    return n / elapsed, delivered if subscribers else journaled


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=20_000, help="messages per mode (default 20,000)")
    args = parser.parse_args()
    modes = [("publish only", 0, True), ("1 subscriber", 1, True), ("2 subscribers", 2, True),
             ("1 subscriber, no journal", 1, False)]
    results = []
    for label, subs, journal in modes:
        rate, delivered = run(args.n, subs, journal)
        results.append((label, rate, delivered))
    best = max(rate for label, rate, _ in results if label != "publish only")
    print(f"{'mode':28s} {'events/s':>10s} {'delivered':>10s} {'vs best e2e':>12s}")
    for label, rate, delivered in results:
        print(f"{label:28s} {rate:10,.0f} {delivered:10,d} {rate / best:11.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
