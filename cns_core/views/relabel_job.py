"""The stored verdicts judged again in the background after a calibration, with progress for the page.

Fitting or reverting a calibration changes the threshold of "correct"; the badges, the filters and the
agreement table read the stored verdicts, so those are judged again at once (the verifier only, not the
critics: :func:`cns_core.people.calibrate.relabel_stored`). One job per memory runs at a time; a request
while it runs makes it run once more when it ends, so the last threshold always wins.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any
from cns_core.bounds import logger

__all__ = ["RelabelJob", "start_relabel", "relabel_job"]

log = logger(__name__)


@dataclass
class RelabelJob:
    """What a page shows of the re-judging: progress, then what it did (or why it failed)."""

    done: int = 0
    todo: int = 0
    message: str = ""
    error: str = ""
    running: bool = True
    again: bool = False

    @property
    def fraction(self) -> float:
        return 1.0 if not self.todo else min(1.0, self.done / self.todo)

    def progress(self, done: int, todo: int) -> None:
        self.done, self.todo = done, todo


_jobs: dict[str, RelabelJob] = {}
_jobs_lock = threading.Lock()


def _key(memory: Any) -> str:
    return str(getattr(memory, "url", None) or getattr(memory, "path", None) or id(memory))


def relabel_job(memory: Any) -> RelabelJob | None:
    """The latest job of this memory (running or finished), None when none was started in this process."""
    with _jobs_lock:
        return _jobs.get(_key(memory))


def start_relabel(memory: Any) -> RelabelJob:
    """Start judging the stored verdicts again (or ask the running job to run once more)."""
    from cns_core.people.calibrate import relabel_stored

    with _jobs_lock:
        job = _jobs.get(_key(memory))
        if job is not None and job.running:
            job.again = True
            return job
        job = _jobs[_key(memory)] = RelabelJob()

    def work() -> None:
        while True:
            try:
                job.message, job.error = relabel_stored(memory, job.progress), ""
            except Exception as exc:  # noqa: BLE001 - a failing model or store must not kill the page's thread
                log.warning("re-judging the stored verdicts failed: %s", exc)
                job.error = f"{type(exc).__name__}: {exc}"
            with _jobs_lock:
                if not job.again:
                    job.running = False
                    return
                job.again = False

    threading.Thread(target=work, name="cns-relabel", daemon=True).start()
    return job
