"""Run the flaky-prone tests several times on a loaded CPU, to find what fails one time in a few before CI does.

``make test-stress`` calls this. Each round is a fresh pytest session run as ``make test`` runs it
(``-n 2 --dist loadfile``), so every server, browser and Ray start-up is paid again and its races get another
chance; meanwhile ``--busy`` processes spin (``while True: pass``) so the tests see a machine busier than CI's.
The busy processes are stopped when the rounds end, also on Ctrl-C. At the end it prints one line per round
(result, wall time, load average) and every test that failed with how many rounds it failed in; the exit status
is 1 when any round failed. Each round's JUnit report is kept under ``test-artifacts/stress/``.

    python scripts/stress_tests.py                       # the default set, 5 rounds, 2 busy processes
    python scripts/stress_tests.py --count 2 tests/test_browser_demo35.py
    python scripts/stress_tests.py --busy 0 -- tests/test_faults.py -k kill    # pytest options after --
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REPORTS = ROOT / "test-artifacts" / "stress"
# The tests that start real processes, servers, browsers, Ray or threads and wait on them: where a race or a
# bound too tight for a busy machine shows. A new file of that kind whose name matches a pattern is included.
DEFAULT_TESTS = ("tests/test_browser*.py", "tests/test_batch_ray.py", "tests/test_agents_*.py",
                 "tests/test_run_supervisor.py", "tests/test_judge_loop_ownership.py", "tests/test_faults*.py",
                 "tests/test_memory_served.py", "tests/test_pending_grades.py", "tests/test_bus.py",
                 "tests/test_cancel.py", "tests/test_coalescing.py", "tests/test_coherence_hook.py",
                 "tests/test_dashboard_memory_pages.py")
PYTEST = ["-n", "2", "--dist", "loadfile", "--no-loadscope-reorder", "-q", "-p", "no:cacheprovider",
          "--durations=5"]


def expand(patterns: list[str]) -> list[str]:
    """Test paths from file patterns (relative to the repository); a node id or an option is kept as it is."""
    out: list[str] = []
    for pattern in patterns:
        if pattern.startswith("-") or "::" in pattern or not any(c in pattern for c in "*?["):
            out.append(pattern)
        else:
            out += sorted(str(p.relative_to(ROOT)) for p in ROOT.glob(pattern))
    return out


def start_busy(count: int) -> list[subprocess.Popen]:
    """``count`` processes that keep a core busy each until stopped."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def stop(procs: list[subprocess.Popen]) -> None:
    for proc in procs:
        proc.kill()
    for proc in procs:
        proc.wait()


def failures(report: Path) -> list[str]:
    """``module::test`` of every failed or errored test case of a JUnit report."""
    if not report.is_file():
        return ["(no report: pytest did not finish)"]
    return [f"{case.get('classname')}::{case.get('name')}" for case in ET.parse(report).getroot().iter("testcase")
            if case.find("failure") is not None or case.find("error") is not None]


def run_rounds(tests: list[str], count: int, busy: int) -> int:
    REPORTS.mkdir(parents=True, exist_ok=True)
    failed: Counter = Counter()
    lines, rounds_failed = [], 0
    spinners = start_busy(busy)
    try:
        for n in range(1, count + 1):
            report = REPORTS / f"round-{n}.xml"
            report.unlink(missing_ok=True)
            command = [sys.executable, "-m", "pytest", *PYTEST, f"--junitxml={report}", *tests]
            print(f"\n=== round {n}/{count}: {shlex.join(command[1:])}", flush=True)
            started = time.monotonic()
            status = subprocess.run(command, cwd=ROOT, stdin=subprocess.DEVNULL).returncode
            took = time.monotonic() - started
            ids = failures(report) if status else []
            rounds_failed += status != 0
            failed.update(set(ids))
            load = " ".join(f"{x:.1f}" for x in os.getloadavg())
            lines.append(f"round {n}: {'passed' if status == 0 else f'FAILED (exit {status})'} in {took:.0f} s, "
                         f"load average {load}" + "".join(f"\n    {i}" for i in ids))
    finally:
        stop(spinners)
    print(f"\n=== stress: {count} round(s) with {busy} busy process(es) on {os.cpu_count()} CPU(s)")
    print("\n".join(lines))
    if failed:
        print("failed tests (rounds failed in):")
        for test_id, times in failed.most_common():
            print(f"  {times}/{count}  {test_id}")
    return 1 if rounds_failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=5, help="rounds (fresh pytest sessions); default 5")
    parser.add_argument("--busy", type=int, default=2, help="busy processes loading the CPU; default 2")
    parser.add_argument("tests", nargs="*", help="test files, patterns or node ids; default: the flaky-prone set")
    args = parser.parse_args(argv)
    if args.count < 1 or args.busy < 0:
        parser.error("--count must be at least 1 and --busy at least 0")
    tests = expand(args.tests or list(DEFAULT_TESTS))
    return run_rounds(tests, args.count, args.busy)


if __name__ == "__main__":
    sys.exit(main())
