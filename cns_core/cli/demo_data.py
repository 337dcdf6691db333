"""``make run``'s demo data, written in the background behind a dashboard that already serves.

    python -m cns_core.cli.demo_data                         # the demo memory, then the demo corpus run
    python -m cns_core.cli.demo_data --turns 40 --after http://127.0.0.1:8501/_stcore/health

``cns run --demo-data`` (what ``make run`` calls) starts it as a one-shot child once the memory's Chroma
server is up, so it reaches the memory through that server (:mod:`cns_core.memory.access`), never embedded.
Writing the demo took about two minutes on the shared 2-core machine; ``make run`` used to do it before
serving anything. Now the dashboard answers first, and this process:

1. takes the state folder's demo lock (a second filler of the folder says so and leaves);
2. lowers its own priority, and waits for the dashboard to answer (``--after``, bounded) so the two cores
   serve the first page before they load the demo's models;
3. reads which demo turns the memory lacks (:func:`~cns_core.cli.demo_memory.plan_demo`, no model loaded):
   when it lacks none, the models are never loaded;
4. writes the missing turns a session at a time (:func:`~cns_core.cli.demo_memory.write_demo_memory`),
   then the bundled examples as a corpus run (:func:`~cns_core.cli.demo_corpus.build_demo_corpus`, which
   evaluates only rows not done).

Every step rewrites ``<state dir>/demo_data.json`` (:mod:`cns_core.cli.demo_progress`), which the pages
that show the memory or the corpus read for their "Demo data: 120 of 300 turns written ..." line; "done"
at the end, or "failed" with the reason (the dashboard and the judge loop go on either way).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import urllib.request
from pathlib import Path
from typing import Sequence

__all__ = ["fill_demo_data", "wait_for_dashboard", "main", "DEMO_LOCK"]

DEMO_LOCK = "demo_data.lock"
BACKGROUND_NICENESS = 10        # below the dashboard and the judge loop, which serve people
_AFTER_WAIT_S = 180.0


def wait_for_dashboard(url: str, wait_s: float = _AFTER_WAIT_S) -> bool:
    """Whether ``url`` (the dashboard's health address) answered within ``wait_s``; polled, not slept through."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as reply:
                if reply.status == 200:
                    return True
        except OSError:
            pass
        time.sleep(0.3)
    return False


def fill_demo_data(turns: int, folder: str | Path, after: str | None = None) -> int:
    """Steps 2-4 of the module doc, recorded in the progress file; the exit status."""
    from cns_core.judging.answer_trust import TrustSettings
    from cns_core.cli.demo_corpus import build_demo_corpus
    from cns_core.agents.pending import memory_counts
    from cns_core.cli.demo_memory import plan_demo, write_demo_memory
    from cns_core.cli.demo_progress import DemoProgress, read_progress, write_progress
    from cns_core.engine.corpus import latest_run
    from cns_core.memory import MemoryService, MemoryStoreError

    started = read_progress()         # `cns run` wrote this process's first record as it started it
    progress = started if started is not None and started.pid == os.getpid() else DemoProgress.begin(turns)
    progress = write_progress(progress.step("waiting" if after else "checking"))
    try:
        os.nice(BACKGROUND_NICENESS)
    except OSError:
        pass
    try:
        if after and not wait_for_dashboard(after):
            print(f"demo data: the dashboard did not answer at {after} within {_AFTER_WAIT_S:.0f} s; writing anyway")
        progress = write_progress(progress.step("checking"))
        memory = MemoryService()
        plan = plan_demo(memory, turns)
        progress = write_progress(progress.step(turns_written=len(plan.present)))
        if plan.complete(with_trust=TrustSettings.from_config().enabled):
            print(f"demo data: the memory holds the {turns} demo turns already; no model loaded for them")
        else:
            progress = write_progress(progress.step("loading"))

            def turns_done(done: int, total: int) -> None:
                nonlocal progress
                progress = write_progress(progress.step("memory", turns_written=done, turns_total=total))

            for line in write_demo_memory(memory, turns, on_progress=turns_done):
                print(line, flush=True)
        progress = write_progress(progress.step("corpus"))

        def snos_done(done: int, total: int) -> None:
            nonlocal progress
            progress = write_progress(progress.step("corpus", snos_done=done, snos_total=total))

        out = build_demo_corpus(folder, on_progress=snos_done)
        run = latest_run()
        rows = run.rows if run is not None else progress.snos_total
        print(f"demo corpus: {folder} evaluated into {out}", flush=True)
    except (MemoryStoreError, ValueError, OSError) as exc:
        write_progress(progress.step("failed", error=str(exc)))
        print(f"demo data: error: {exc}", file=sys.stderr)
        return 1
    progress = write_progress(progress.step("done", snos_done=rows, snos_total=rows))
    counts = memory_counts(memory)
    print(f"demo data: complete ({progress.turns_written} of {turns} turns in the memory: {counts.engrams} engrams, "
          f"{counts.quarantine_words()}; {rows} examples in the corpus run) in {progress.elapsed():.0f} s", flush=True)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    from cns_core.config import project_path, state_dir

    parser = argparse.ArgumentParser(prog="python -m cns_core.cli.demo_data", description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=300, help="demo turns in the memory (default 300)")
    parser.add_argument("--folder", default=str(project_path("examples")),
                        help="SNO files of the demo corpus run (default: the project's examples/)")
    parser.add_argument("--after", metavar="URL", help="start writing once this address answers (the dashboard's "
                                                       "health; cns run passes it)")
    args = parser.parse_args(argv)
    if args.turns < 1:
        parser.error("--turns must be at least 1")
    from cns_core.cli.quiet import offline_and_quiet
    from cns_core.memory.process_lock import ExclusiveLock, LockHeld

    offline_and_quiet()
    lock = ExclusiveLock(state_dir() / DEMO_LOCK, "the demo data of this state folder", "writing the demo data")
    try:
        lock.acquire()
    except LockHeld as exc:
        print(f"demo data: {exc}; it writes the demo data, nothing to do here")
        return 0
    try:
        return fill_demo_data(args.turns, args.folder, args.after)
    finally:
        lock.release()


if __name__ == "__main__":
    sys.exit(main())
