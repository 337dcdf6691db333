"""How far ``make run``'s demo data has got: ``<state dir>/demo_data.json``, written by its filler, read by the pages.

``cns run --demo-data`` serves at once and writes the demo data (the demo memory, then the demo corpus run)
in the background (:mod:`cns_core.cli.demo_data`). The filler rewrites this record, atomically, at every step:
what it is doing, how many demo turns the memory holds of how many, how many examples the corpus run has done,
when it started and which process it is. The pages that show the memory or the corpus (Engrams, Judge,
Coherence, Corpus) read it on every tick and show one line ("Demo data: 120 of 300 turns written ...") until it
says done; a record whose process is gone says the data stopped where it was, and that ``make run`` finishes it.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from cns_core.bounds import read_bounded
from cns_core.config import replace_atomically, state_dir
from cns_core.memory.process_lock import process_started

__all__ = ["DEMO_PROGRESS", "STAGES", "DemoProgress", "progress_path", "read_progress", "write_progress"]

DEMO_PROGRESS = "demo_data.json"
STAGES = ("waiting", "checking", "loading", "memory", "corpus", "done", "failed")
_MAX_BYTES = 16_000
_MAX_ERROR_CHARS = 600


@dataclass(frozen=True)
class DemoProgress:
    """One state of the demo filler. ``stage``: waiting (for the dashboard to answer), checking (what is there),
    loading (the models), memory, corpus, done or failed."""

    stage: str
    turns_written: int          # demo turns the memory holds (stored or quarantined)
    turns_total: int
    snos_done: int              # examples evaluated by the demo corpus run
    snos_total: int
    started: float              # when the filler started (seconds since the epoch)
    updated: float
    pid: int                    # the filler
    pid_started: float          # ... and its start time (a reused pid is not it)
    finished: float | None = None
    error: str = ""

    @classmethod
    def begin(cls, turns_total: int, stage: str = "checking", pid: int | None = None) -> "DemoProgress":
        """A filler's first record: ``pid`` (default this process) starts now."""
        pid, now = pid or os.getpid(), time.time()
        return cls(stage, 0, turns_total, 0, 0, now, now, pid, process_started(pid) or now)

    def step(self, stage: str | None = None, **changes: object) -> "DemoProgress":
        """This record moved on: another stage or counts, stamped now (and finished when done or failed)."""
        stage = stage or self.stage
        now = time.time()
        finished = now if stage in ("done", "failed") else None
        return replace(self, stage=stage, updated=now, finished=finished, **changes)  # type: ignore[arg-type]

    @property
    def running(self) -> bool:
        """The filler still works on it (it said neither done nor failed, and its process is the one alive)."""
        if self.stage in ("done", "failed"):
            return False
        alive = process_started(self.pid)
        return alive is not None and abs(alive - self.pid_started) <= 1.0

    def elapsed(self, now: float | None = None) -> float:
        end = self.finished if self.finished is not None else (time.time() if now is None else now)
        return max(0.0, end - self.started)

    @property
    def shown(self) -> bool:
        """Whether a page says anything: while it is written, and when it stopped short (failed, or its process
        gone); nothing once it is done."""
        return self.stage != "done"

    def line(self, now: float | None = None, seconds: str | None = None) -> str:
        """The pages' line, the seconds as of ``now``, or ``seconds`` in their place (a page puts a counter there:
        :mod:`cns_core.views.progress_line`)."""
        turns = f"{self.turns_written:,} of {self.turns_total:,} turns written to the memory"
        if self.stage == "failed":
            return (f"Demo data stopped at {turns}: {self.error or 'see the [demo] lines of make run'}. "
                    "`make run` again finishes it.")
        if not self.running:
            return (f"Demo data stopped at {turns}: the `make run` that wrote it ended. `make run` again "
                    "finishes it.")
        seconds = seconds or f"{self.elapsed(now):.0f} s"
        doing = {
            "waiting": f"starts once the dashboard answers ({seconds})",
            "checking": f"reading what the memory holds already ({seconds})",
            "loading": f"loading the models, then {self.turns_total:,} turns go into the memory ({seconds} so far)",
            "memory": f"{turns} ({seconds} so far)",
            "corpus": f"{turns}; evaluating the examples as a corpus run, {self.snos_done} of {self.snos_total} done "
                      f"({seconds} so far)",
        }.get(self.stage, f"{self.stage} ({seconds})")
        return (f"Demo data: {doing}. `make run` writes it in the background; this page shows what is there and "
                "fills in by itself when the memory is complete.")


def progress_path(folder: str | Path | None = None) -> Path:
    return (Path(folder) if folder is not None else state_dir(create=False)) / DEMO_PROGRESS


def write_progress(progress: DemoProgress, folder: str | Path | None = None) -> DemoProgress:
    """Replace the record (atomically: a page never reads half of it); returns ``progress``."""
    record = replace(progress, error=progress.error[:_MAX_ERROR_CHARS])
    with replace_atomically(progress_path(folder)) as tmp:
        tmp.write_text(json.dumps(asdict(record)), encoding="utf-8")
    return record


def read_progress(folder: str | Path | None = None) -> DemoProgress | None:
    """The record, or None when there is none or it cannot be read (a page then says nothing of demo data)."""
    try:
        raw = json.loads(read_bounded(progress_path(folder), _MAX_BYTES).decode("utf-8"))
        record = DemoProgress(**{k: raw[k] for k in DemoProgress.__dataclass_fields__ if k in raw})
        if record.stage not in STAGES:
            return None
        return replace(record, turns_written=int(record.turns_written), turns_total=int(record.turns_total),
                       snos_done=int(record.snos_done), snos_total=int(record.snos_total),
                       started=float(record.started), updated=float(record.updated), pid=int(record.pid),
                       pid_started=float(record.pid_started), error=str(record.error)[:_MAX_ERROR_CHARS],
                       finished=None if record.finished is None else float(record.finished))
    except (OSError, ValueError, TypeError, KeyError, AttributeError):   # InputTooLarge is a ValueError
        return None
