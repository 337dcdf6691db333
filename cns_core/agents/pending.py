"""Pending grades: turns stored without a grade get one once a judge answers.

A turn is *pending* when its engram has no ``critic_score`` (the judge was down,
timed out, or the turn was stored while the loop was off). :func:`request_grades`
publishes each pending turn once as ``critique.request``; the CriticAgent grades it
and the MemoryAgent merges the score as for any critique. Nothing is graded twice:
a grade already stored means the turn is no longer pending, and the CriticAgent
skips a request for a turn it has already scored.

:class:`PendingGrader` (run by ``cns agents``) watches the judge and requests the
pending grades at start-up and every time the judge comes back after being away.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable

from cns_core.agents.bus import GRADE, BusConfig, Publisher
from cns_core.agents.messages import TurnMessage

__all__ = ["pending_turns", "request_grades", "PendingGrader"]

log = logging.getLogger(__name__)


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
            if engram.query.strip():
                out.append(TurnMessage(query=engram.query, answer=engram.answer, session_id=engram.session_id,
                                       query_id=engram.id))
    return out


def request_grades(publisher: Publisher, memory: Any, limit: int = 1000) -> int:
    """Publish one ``critique.request`` per pending turn; returns how many were requested."""
    turns = pending_turns(memory, limit)
    for turn in turns:
        publisher.publish(GRADE, turn.model_dump(exclude_none=True))
    return len(turns)


class PendingGrader:
    """A thread asking for pending grades whenever the judge (re)appears."""

    def __init__(self, bus: BusConfig, memory: Callable[[], Any], judge_up: Callable[[], bool], *,
                 every_s: float = 15.0, limit: int = 1000):
        self.bus = bus
        self.memory = memory            # called when needed: the MemoryAgent opens its store on start
        self.judge_up = judge_up
        self.every_s = every_s
        self.limit = limit
        self.requested = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cns-pending-grader", daemon=True)

    def start(self) -> "PendingGrader":
        self._thread.start()
        return self

    def _run(self) -> None:
        was_up = False
        with Publisher(self.bus, source="pending grader") as publisher:
            while not self._stop.is_set():
                try:
                    up = self.judge_up()
                    if up and not was_up and self.memory() is not None:
                        count = request_grades(publisher, self.memory(), self.limit)
                        self.requested += count
                        if count:
                            log.info("pending grades: asked the judge for %d ungraded turn(s)", count)
                    was_up = up
                except Exception as exc:     # the store or the bus hiccuped: try again next round
                    log.warning("pending grades: %s", exc)
                self._stop.wait(self.every_s)

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._thread.join(timeout)
