"""The first minute of ``make run`` on a fresh state folder: when the dashboard answers, when a cold Engrams page
shows its title and finishes its run, and when the demo data (written in the background) is complete; then a
second ``make run`` on the same folder, which finds the demo data there.

    .venv/bin/python benchmarks/first_minute.py                 # `make run` itself (installed already)
    .venv/bin/python benchmarks/first_minute.py --turns 60      # `cns run --demo-data 60` instead (quicker)

Each run gets a state folder of its own (``CNS_STATE_DIR``), free ports and a judge address where nothing
answers. Times are seconds from the command's start. Debian's chromium opens ``/engrams`` as soon as the
dashboard answers (a visitor's first page on a cold server). The demo's stages are read from its record
(``<state dir>/demo_data.json``), polled. One run of each; the machine's load average is printed with them.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from first_paint import ARGS, visit  # noqa: E402
from local_servers import answers_200, free_port  # noqa: E402

from cns_core.cli.demo_progress import read_progress  # noqa: E402


def one_run(state: Path, turns: int | None, browser, limit_s: float) -> dict[str, object]:
    """Start ``make run`` (or ``cns run --demo-data TURNS``), measure, stop it with one Ctrl-C (SIGINT)."""
    web = free_port()
    env = {**os.environ, "CNS_STATE_DIR": str(state), "CNS_OLLAMA_URL": f"http://127.0.0.1:{free_port()}",
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False",
           **{k: str(free_port()) for k in ("CNS_BUS_PUB_PORT", "CNS_BUS_SUB_PORT", "CNS_BUS_JOURNAL_PORT")}}
    command = (["make", "-s", "run", f"PORT={web}"] if turns is None else
               [sys.executable, "-m", "cns_core.cli", "run", "--port", str(web), "--demo-data", str(turns)])
    log = state / "first-minute.log"
    result: dict[str, object] = {"command": " ".join(command), "load_at_start": round(os.getloadavg()[0], 1)}
    with log.open("w") as out:
        start = time.monotonic()
        proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    stages: dict[str, float] = {}
    try:
        while not answers_200(f"http://127.0.0.1:{web}/_stcore/health"):
            if proc.poll() is not None or time.monotonic() - start > limit_s:
                raise RuntimeError(f"the dashboard did not answer; log:\n{log.read_text()}")
            time.sleep(0.1)
        result["answers_s"] = round(time.monotonic() - start, 1)
        engrams = visit(browser, f"http://127.0.0.1:{web}", "engrams")
        result["engrams_title_s"] = round(result["answers_s"] + (engrams["title"] or float("nan")), 1)
        result["engrams_run_over_s"] = round(result["answers_s"] + (engrams["done"] or float("nan")), 1)
        while time.monotonic() - start < limit_s:
            progress = read_progress(state)
            if progress is not None:
                stages.setdefault(progress.stage, round(time.monotonic() - start, 1))
                if not progress.running:
                    result["turns_written"] = progress.turns_written
                    break
            time.sleep(0.2)
        result["stages_s"] = stages
        result["load_at_end"] = round(os.getloadavg()[0], 1)
        result["demo_lines"] = [line for line in log.read_text().splitlines() if line.startswith("[demo]")]
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=90)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, help="cns run --demo-data TURNS instead of make run (300 turns)")
    parser.add_argument("--limit", type=float, default=1200.0, help="seconds a run may take before it is stopped")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    state = Path(tempfile.mkdtemp(prefix="cns-first-minute-"))
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        try:
            runs = {"fresh": one_run(state, args.turns, browser, args.limit),
                    "again": one_run(state, args.turns, browser, args.limit)}
        finally:
            browser.close()
    print(json.dumps(runs, indent=2))


if __name__ == "__main__":
    main()
