"""Soak: N turns through a real judge loop while the judge fails at random and the loop is killed with SIGKILL.

    .venv/bin/python benchmarks/soak.py              # 2,000 turns, 4 kills
    .venv/bin/python benchmarks/soak.py -n 500 --kills 2 --seed 7
    .venv/bin/python benchmarks/soak.py -n 400 --kills 2 --break-every 10   # and every 10th reply broken
    .venv/bin/python benchmarks/soak.py -n 300 --kills 0 --chroma-kills 2 --break-every 10   # the memory's server killed

What runs: ``cns agents`` (bus proxy and journal, MemoryAgent, CriticAgent, pending grader; no
generator, coherence hook or Trust Score) on free loopback ports against a fresh state folder, and a
fake judge (tests/fake_ollama.py) that switches every few seconds between good (70 %), HTTP 500,
garbage and too slow (past the 1 s judge timeout); with ``--break-every N`` every N-th reply of the
judge also breaks HTTP itself, in turn cut short (Content-Length larger than the body, then closed),
nested 200,000 brackets deep, and dripped a byte every 0.05 s (tests/fake_ollama.py
``BROKEN_REPLIES``). Turns are published in bursts of ``--burst``;
between bursts, ``--kills`` times in all, the loop is killed with SIGKILL a random 0-2 s after the
burst reached the journal (so mid-work) and started again. After the last burst the judge is made
good and the loop gets ``--deadline`` seconds to grade everything *and* to store everything: the
memory's checkpoint must have passed every journaled turn (graded in the journal is not stored in the
memory: the critic can be ahead of the MemoryAgent). Then it is stopped with SIGTERM (a clean stop
drains what the journal holds) and the memory is counted.

Printed: turns per second (published to all graded, kills and restarts included), grading latency
p50/p95 (the journal's receipt of the turn to its first critique with a score), and three counts
that should be 0: **lost** (journaled but not stored), **duplicated** (graded more than once, or
stored more than once: as engram and quarantined), **stuck** (stored but not graded by the deadline).

With ``--chroma-kills K`` the memory is a ``chroma run`` server (``CNS_CHROMA_URL``) instead of the embedded
store, and between bursts that server is killed with SIGKILL K times and started again on its port, as ``cns
run``'s supervisor restarts it: every write that failed meanwhile must be kept and stored once it is back.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from cns_core.agents.bus import CRITIQUE, RESPONSE, Publisher  # noqa: E402
from fake_ollama import FakeOllama  # noqa: E402
from judge_loop_helpers import _chroma_binary  # noqa: E402
from local_servers import free_port, stop_process, wait_until_serving  # noqa: E402
from loop_harness import LoopUnderTest, turn_payload  # noqa: E402

FAULTS = ("good",) * 7 + ("error", "garbage", "slow")


def chaos(judge: FakeOllama, stop: threading.Event, rng: random.Random) -> None:
    """Switch the judge's behaviour every 1-4 s until ``stop``."""
    while not stop.wait(rng.uniform(1.0, 4.0)):
        judge.mode = rng.choice(FAULTS)


class ChromaServer:
    """A ``chroma run`` server on one port and folder, killed with SIGKILL and started again on the same port."""

    def __init__(self, folder: Path):
        binary = _chroma_binary()
        if binary is None:
            raise SystemExit("--chroma-kills needs the chroma CLI of the project's environment")
        self.command = [binary, "run", "--path", str(folder / "chroma"), "--host", "127.0.0.1"]
        self.port, self.folder, self.proc, self.starts = free_port(), folder, None, 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "ChromaServer":
        log = (self.folder / f"chroma-{self.starts}.log").open("wb")
        self.proc = subprocess.Popen(self.command + ["--port", str(self.port)], stdout=log, stderr=subprocess.STDOUT,
                                     env=dict(os.environ, ANONYMIZED_TELEMETRY="False"))
        self.starts += 1
        wait_until_serving(f"{self.url}/api/v2/heartbeat", self.proc, "chroma run")
        return self

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(10)

    def stop(self) -> None:
        stop_process(self.proc)


def run(n: int, kills: int, burst: int, deadline: float, seed: int, break_every: int = 0,
        chroma_kills: int = 0) -> dict:
    rng = random.Random(seed)
    judge = FakeOllama(delay=2.0, break_every=break_every).start()
    folder = Path(tempfile.mkdtemp(prefix="cns-soak-"))
    chroma = ChromaServer(folder).start() if chroma_kills else None
    loop = LoopUnderTest(folder, judge.url, sweep_s=1.0, retry_first_s=1.0, retry_max_s=8.0,
                         extra_env={"CNS_CHROMA_URL": chroma.url} if chroma else None).start()
    stop = threading.Event()
    threading.Thread(target=chaos, args=(judge, stop, rng), daemon=True).start()
    bursts = max(1, n // burst)
    kill_after = set(rng.sample(range(bursts - 1), min(kills, bursts - 1))) if bursts > 1 else set()
    chroma_kill_after = set(rng.sample(range(bursts - 1), min(chroma_kills, bursts - 1))) if bursts > 1 else set()
    ids: list[str] = []
    started = time.monotonic()
    for b in range(bursts):
        payloads = [turn_payload(b * burst + i, "soak") for i in range(burst if b < bursts - 1 else n - b * burst)]
        with Publisher(loop.bus, source="soak") as pub:
            for payload in payloads:
                pub.publish(RESPONSE, payload)
        ids += [p["query_id"] for p in payloads]
        while len(loop.journal_rows(RESPONSE)) < len(ids):
            time.sleep(0.05)
        if b in kill_after:
            time.sleep(rng.uniform(0.0, 2.0))
            loop.kill()
            loop.start()
        if b in chroma_kill_after:
            time.sleep(rng.uniform(0.0, 2.0))
            chroma.kill()
            time.sleep(rng.uniform(1.0, 3.0))         # the writes of the next moments fail and are kept
            chroma.start()
    stop.set()
    judge.mode = "good"
    end = time.monotonic() + deadline
    while time.monotonic() < end and not (set(loop.grades()) >= set(ids) and loop.memory_behind() == 0):
        time.sleep(0.5)
    behind = loop.memory_behind()
    elapsed = time.monotonic() - started
    time.sleep(3.0)                      # a few more sweeps: a duplicate would show now
    received = {p["query_id"]: t for t, p in loop.journal_messages(RESPONSE)}
    first_grade: dict[str, float] = {}
    grades: Counter = Counter()
    for t, p in loop.journal_messages(CRITIQUE):
        if isinstance(p.get("score"), int):
            grades[p["query_id"]] += 1
            first_grade.setdefault(p["query_id"], t)
    status = loop.stop()
    census = loop.memory_census(ids)
    judge.stop()
    if chroma is not None:
        chroma.stop()
    latencies = sorted(first_grade[q] - received[q] for q in ids if q in first_grade and q in received)
    stored_twice = set(census["quarantined"]) & census["stored"]
    return {
        "turns": n, "kills": len(kill_after), "chroma_kills": len(chroma_kill_after), "seconds": elapsed, "turns_per_s": n / elapsed,
        "p50_s": statistics.median(latencies) if latencies else float("nan"),
        "p95_s": latencies[int(0.95 * (len(latencies) - 1))] if latencies else float("nan"),
        "lost": len(set(received) - census["stored"] - set(census["quarantined"])),
        "duplicated": sum(1 for q in ids if grades[q] > 1) + len(stored_twice),
        "stuck": len(census["stored"] - census["graded"]),
        "behind_at_stop": behind, "judge_requests": len(judge.requests), "exit_status": status,
        "broken_replies": judge.chats // break_every if break_every else 0,
        "folder": str(folder),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=2000, help="turns (default 2000)")
    parser.add_argument("--kills", type=int, default=4, help="SIGKILLs of the loop (default 4)")
    parser.add_argument("--burst", type=int, default=100, help="turns per burst (default 100)")
    parser.add_argument("--deadline", type=float, default=120.0, help="seconds to grade all after the last burst")
    parser.add_argument("--seed", type=int, default=38)
    parser.add_argument("--break-every", type=int, default=0, metavar="N",
                        help="also break every N-th judge reply (truncated, nested, dripped; default: never)")
    parser.add_argument("--chroma-kills", type=int, default=0, metavar="K",
                        help="keep the memory in a chroma run server and SIGKILL it K times (default: embedded, 0)")
    args = parser.parse_args()
    r = run(args.n, args.kills, args.burst, args.deadline, args.seed, args.break_every, args.chroma_kills)
    print(f"{r['turns']} turns, {r['kills']} kill(s) -9 of the loop, {r['chroma_kills']} of the memory's server, "
          f"random judge faults: {r['turns_per_s']:.1f} turns/s "
          f"({r['seconds']:.0f} s), grading latency p50 {r['p50_s']:.2f} s / p95 {r['p95_s']:.2f} s; "
          f"lost {r['lost']}, duplicated {r['duplicated']}, stuck {r['stuck']} "
          f"({r['judge_requests']} judge requests, {r['broken_replies']} broken replies; {r['behind_at_stop']} turn(s) "
          "not yet stored at the stop; "
          f"loop exit status {r['exit_status']}; state {r['folder']})")


if __name__ == "__main__":
    main()
