"""Pending grades: turns stored without a grade get one once a judge answers.

A turn is *pending* when its engram has no ``critic_score`` (the judge was down,
failed, timed out, or the turn was stored while the loop was off). :func:`request_grades`
publishes each pending turn once as ``critique.request``; the CriticAgent grades it
and the MemoryAgent merges the score as for any critique. Nothing is graded twice:
a grade already stored means the turn is no longer pending, and the CriticAgent
skips a request for a turn it has already scored.

:class:`PendingGrader` (run by ``cns agents``) sweeps the pending turns every
``check_every_s`` while the judge's server answers, not only when it comes back: a
judge that answers its model list but fails to grade (HTTP 500, garbage, too slow)
leaves turns pending although it looks "up". Each turn is retried on its own back-off
(:class:`~cns_core.agents.retry_schedule.RetrySchedule`), learnt from the critiques it
hears on the bus, and the first good grade makes every waiting turn due again. The
first sweep waits until the MemoryAgent has replayed the journal (``ready``), so a turn
graded in the journal is never sent to the judge again. The schedule is written to
``<state dir>/pending_grades.json`` for the Judge page.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from pydantic import ValidationError

from cns_core.agents.bus import CRITIQUE, GRADE, BusConfig, BusError, Publisher, Subscriber
from cns_core.agents.messages import TurnMessage, describe_errors
from cns_core.agents.retry_schedule import RetrySchedule
from cns_core.config import replace_atomically, state_dir
from cns_core.bounds import logger

__all__ = ["pending_count", "MemoryCounts", "memory_counts", "pending_turns", "request_grades", "PendingGrader", "SCHEDULE_NAME", "schedule_path", "read_schedule"]

log = logger(__name__)
_UNSENDABLE: set[str] = set()     # engrams already reported as too large to send


def pending_count(memory: Any) -> int:
    """How many stored turns have no grade yet: the one count the Judge and Engrams pages show."""
    from cns_core.engrams import EngramFilters

    return memory.count(EngramFilters(ungraded_only=True))


@dataclass(frozen=True)
class MemoryCounts:
    """What the memory holds, as every page states it: read from the memory each time, never cached, so two
    pages (and two reruns) never disagree about a turn another process stored meanwhile."""

    engrams: int
    ungraded: int          # turns waiting for the judge's grade: the pending grades
    quarantined: int       # turns the coherence hook held back and still holds
    released: int = 0      # turns it held back that a later re-check released into the engrams

    @property
    def blocked(self) -> int:
        """Every turn the hook held back: those still quarantined and those released since."""
        return self.quarantined + self.released

    def quarantine_words(self) -> str:
        """``2 quarantined (5 blocked by the coherence hook, 3 released since)``: the one way pages say it."""
        if not self.released:
            return f"{self.quarantined:,} quarantined"
        return (f"{self.quarantined:,} quarantined ({self.blocked:,} blocked by the coherence hook, "
                f"{self.released:,} released since)")

    def words(self) -> str:
        return (f"{self.engrams:,} engrams · {self.ungraded:,} ungraded (pending grades) · "
                f"{self.quarantine_words()}")


def memory_counts(memory: Any) -> MemoryCounts:
    """The memory's counts, read now (see :class:`MemoryCounts`)."""
    return MemoryCounts(memory.count(), pending_count(memory), memory.count_quarantined(), memory.count_released())


def pending_turns(memory: Any, limit: int = 1000) -> list[TurnMessage]:
    """Up to ``limit`` ungraded engrams as turns, oldest first."""
    from cns_core.engrams import EngramFilters

    out: list[TurnMessage] = []
    offset = 0
    while len(out) < limit:
        page = memory.browse(EngramFilters(ungraded_only=True), offset=offset, limit=min(200, limit - len(out)),
                             order="oldest")
        if not page:
            break
        offset += len(page)
        for engram in page:
            if not engram.query.strip():
                continue
            try:
                out.append(TurnMessage(query=engram.query, answer=engram.answer, session_id=engram.session_id,
                                       query_id=engram.id))
            except ValidationError as exc:   # stored before the limits on a turn: cannot be sent on the bus
                if engram.id not in _UNSENDABLE:       # said once, not every sweep
                    _UNSENDABLE.add(engram.id)
                    log.warning("pending grades: engram %s cannot be sent to the judge: %s", engram.id,
                                describe_errors(exc))
    return out


def request_grades(publisher: Publisher, memory: Any, limit: int = 1000) -> int:
    """Publish one ``critique.request`` per pending turn; returns how many were requested."""
    turns = pending_turns(memory, limit)
    for turn in turns:
        publisher.publish(GRADE, turn.model_dump(exclude_none=True))
    return len(turns)


SCHEDULE_NAME = "pending_grades.json"


def schedule_path(folder: str | Path | None = None) -> Path:
    """Where the running grader writes its retry schedule (``<state dir>/pending_grades.json``)."""
    return (Path(folder) if folder is not None else state_dir()) / SCHEDULE_NAME


def read_schedule(folder: str | Path | None = None) -> dict[str, Any] | None:
    """The last schedule a grader wrote, or None (none written, or unreadable: it is rewritten each round)."""
    try:
        data = json.loads(schedule_path(folder).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


class PendingGrader:
    """A thread asking for pending grades while the judge answers, each turn on its own back-off."""

    def __init__(self, bus: BusConfig, memory: Callable[[], Any], judge_up: Callable[[], bool], *,
                 every_s: float = 15.0, limit: int = 1000, ready: Callable[[], bool] = lambda: True,
                 schedule: RetrySchedule | None = None, folder: str | Path | None = None):
        self.bus = bus
        self.memory = memory            # called when needed: the MemoryAgent opens its store on start
        self.judge_up = judge_up
        self.every_s = every_s
        self.limit = limit
        self.ready = ready              # False until the MemoryAgent has replayed the journal
        self.schedule = schedule or RetrySchedule()
        self.path = schedule_path(folder)
        self.requested = 0
        self.sweeps = 0
        self.errors = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cns-pending-grader", daemon=True)

    def start(self) -> "PendingGrader":
        self._thread.start()
        return self

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def _run(self) -> None:
        try:
            with Publisher(self.bus, source="pending grader") as publisher, Subscriber([CRITIQUE], self.bus) as sub:
                while not self._stop.is_set():
                    try:
                        sub.wait_ready(publisher)
                        break
                    except BusError as exc:
                        log.warning("pending grades: %s; trying again", exc)
                        self._stop.wait(1.0)
                next_sweep = 0.0
                while not self._stop.is_set():
                    self._hear(sub, timeout=min(0.5, max(0.0, next_sweep - time.monotonic())))
                    if time.monotonic() >= next_sweep:
                        next_sweep = time.monotonic() + self.every_s
                        self._guarded(self._sweep, publisher)
        except Exception:  # noqa: BLE001 - said loudly; cns agents sees the thread end and stops non-zero
            log.exception("pending grades: the grader stopped")

    def _guarded(self, step: Callable[..., Any], *args: Any) -> None:
        try:
            step(*args)
        except Exception as exc:  # noqa: BLE001 - the store or the bus hiccuped: try again next round
            self.errors += 1
            log.warning("pending grades: %s: %s", type(exc).__name__, exc)

    def _hear(self, sub: Subscriber, timeout: float) -> None:
        """Critiques on the bus: a grade ends a turn's retries, a failure puts it off."""
        envelope = sub.recv(timeout=timeout)
        while envelope is not None:
            payload = envelope.payload
            qid = payload.get("query_id")
            if isinstance(qid, str) and qid:
                if isinstance(payload.get("score"), int):
                    self.schedule.graded(qid, time.monotonic())
                else:
                    self.schedule.failed(qid, str(payload.get("error") or "no score"), time.monotonic())
            envelope = sub.recv(timeout=0)

    def _sweep(self, publisher: Publisher) -> None:
        if not self.ready():
            return
        up = self.judge_up()
        memory = self.memory() if up else None    # opened only once a judge answers (it loads the embedder)
        if memory is not None:
            turns = {t.query_id: t for t in pending_turns(memory, self.limit)}
            due = self.schedule.due(turns, time.monotonic())
            for qid in due:
                publisher.publish(GRADE, turns[qid].model_dump(exclude_none=True))
                self.schedule.sent(qid, time.monotonic())
            self.requested += len(due)
            if due:
                log.info("pending grades: asked the judge for %d ungraded turn(s)", len(due))
        self.sweeps += 1
        self._write(up)

    def _write(self, judge_up: bool) -> None:
        snapshot = self.schedule.snapshot(time.monotonic(), time.time())
        snapshot.update({"updated": time.time(), "judge_up": judge_up, "every_s": self.every_s})
        with replace_atomically(self.path) as tmp:
            tmp.write_text(json.dumps(snapshot), encoding="utf-8")

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._thread.join(timeout)
