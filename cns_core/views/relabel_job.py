"""The few stored verdicts without readings judged again in the background after a calibration, with progress.

Fitting or reverting a calibration re-decides every stored verdict from the readings kept on its engram, at
once (:func:`cns_core.judging.answer_trust.relabel`: the Engrams page does it before its next rerun). An
answer stored before readings were kept has none: the verifier judges it again here, once (it carries its
readings from then on). One job per memory runs at a time; a request while it runs makes it run once more
when it ends, over the ids of both, so the last calibration always wins.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Sequence

from cns_core.bounds import logger

__all__ = ["RelabelJob", "start_relabel", "relabel_job", "relabel_after_calibration"]

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
    ids: list[str] = field(default_factory=list)

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


def start_relabel(memory: Any, ids: Sequence[str]) -> RelabelJob:
    """Start judging the verdicts of ``ids`` again with the verifier (or ask the running job to run once more)."""
    from cns_core.judging.answer_trust import AnswerScorer, rejudge
    from cns_core.people.calibrate import threshold_words

    with _jobs_lock:
        job = _jobs.get(_key(memory))
        if job is not None and job.running:
            job.again = True
            job.ids = list(dict.fromkeys([*job.ids, *ids]))
            return job
        job = _jobs[_key(memory)] = RelabelJob(ids=list(ids))

    def work() -> None:
        while True:
            try:
                report = rejudge(memory, AnswerScorer(), ids=job.ids, on_progress=job.progress)
                job.message = (f"{report.scored:,} verdict(s) stored without readings judged again by the verifier "
                               f"under {threshold_words()} in {report.elapsed_s:.0f} s.")
                job.error = ""
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


def relabel_after_calibration(memory: Any) -> str:
    """Every stored verdict decided again under the calibration now in force, at once (from the readings kept
    on each engram: no model); the few stored without readings go to the verifier in the background. Says
    what it did."""
    from cns_core.judging.answer_trust import relabel
    from cns_core.people.calibrate import relabel_words

    report = relabel(memory)
    if report.needs_model:
        start_relabel(memory, report.needs_model)
    return relabel_words(report)
