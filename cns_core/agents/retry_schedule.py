"""When each ungraded turn is next sent to the judge: per-turn back-off, a probe while the judge fails.

Pure bookkeeping, no bus and no clock of its own, so every rule is tested with numbers:

* a pending turn never asked about is due at once;
* a request is *in flight* until its critique arrives or ``answer_timeout_s`` passes
  (then it counts as a failure: "no critique within N s"), and is never sent twice meanwhile;
* a failure (HTTP 500, garbage, timeout, no critique) puts the turn off for ``first_s``,
  doubling per failure up to ``max_s``, and keeps the reason;
* while the judge's last answer was a failure, only one request is in flight at a time (a
  probe): a judge that fails or crawls is not flooded with the whole backlog;
* the first good grade after failures (a probe's, or any live turn's) means the cause is
  gone: every turn put off is due at once, so the backlog is finished without waiting out
  the back-off.

:meth:`RetrySchedule.snapshot` is what the Judge page shows: each waiting turn's attempts,
when it is next tried and why the last try failed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

__all__ = ["RetrySchedule"]


@dataclass
class _Turn:
    attempts: int = 0
    next_at: float = 0.0
    sent_at: float | None = None
    reason: str = ""


class RetrySchedule:
    """Retry state of the pending turns, by query id (times in the caller's clock, seconds)."""

    def __init__(self, *, first_s: float = 10.0, max_s: float = 120.0, in_flight: int = 16,
                 answer_timeout_s: float = 60.0):
        if not 0 < first_s <= max_s:
            raise ValueError(f"retry back-off: need 0 < first_s <= max_s, got {first_s:g} and {max_s:g}")
        self.first_s = first_s
        self.max_s = max_s
        self.in_flight = max(1, int(in_flight))
        self.answer_timeout_s = answer_timeout_s
        self.failing = False            # the judge's last answer was a failure
        self._turns: dict[str, _Turn] = {}

    def due(self, pending: Iterable[str], now: float) -> list[str]:
        """The pending ids (oldest first) to request now; turns no longer pending are forgotten."""
        pending = list(dict.fromkeys(pending))
        keep = set(pending)
        for qid in [q for q in self._turns if q not in keep]:
            del self._turns[qid]
        for qid, turn in self._turns.items():
            if turn.sent_at is not None and now - turn.sent_at >= self.answer_timeout_s:
                self._failed(turn, f"no critique within {self.answer_timeout_s:g} s", now)
        flying = sum(t.sent_at is not None for t in self._turns.values())
        room = (1 if self.failing else self.in_flight) - flying
        out: list[str] = []
        for qid in pending:
            turn = self._turns.setdefault(qid, _Turn())
            if room > 0 and turn.sent_at is None and turn.next_at <= now:
                out.append(qid)
                room -= 1
        return out

    def sent(self, qid: str, now: float) -> None:
        self._turns.setdefault(qid, _Turn()).sent_at = now

    def failed(self, qid: str, reason: str, now: float) -> None:
        """The judge gave no grade for ``qid`` (a live turn or a request of ours)."""
        self.failing = True
        self._failed(self._turns.setdefault(qid, _Turn()), reason, now)

    def _failed(self, turn: _Turn, reason: str, now: float) -> None:
        turn.attempts += 1
        turn.sent_at = None
        turn.reason = reason[:300]
        turn.next_at = now + min(self.max_s, self.first_s * 2 ** (turn.attempts - 1))

    def graded(self, qid: str, now: float) -> None:
        """``qid`` has its grade; after failures, a good grade makes every put-off turn due at once."""
        self._turns.pop(qid, None)
        if self.failing:
            self.failing = False
            for turn in self._turns.values():
                turn.next_at = min(turn.next_at, now)

    def waiting(self) -> int:
        return len(self._turns)

    def snapshot(self, now: float, wall_now: float, limit: int = 100) -> dict[str, Any]:
        """The schedule for the Judge page: counts, and up to ``limit`` turns with their next try as wall time."""
        rows = sorted(self._turns.items(), key=lambda kv: (kv[1].next_at, kv[0]))
        reasons: dict[str, int] = {}
        for _, turn in rows:
            if turn.reason:
                key = turn.reason.split(":", 1)[0]
                reasons[key] = reasons.get(key, 0) + 1
        return {"waiting": len(rows), "in_flight": sum(t.sent_at is not None for _, t in rows),
                "failing": self.failing, "reasons": reasons,
                "turns": [{"query_id": qid, "attempts": t.attempts, "reason": t.reason,
                           "in_flight": t.sent_at is not None,
                           "next_at": wall_now + max(0.0, t.next_at - now)} for qid, t in rows[:limit]]}
