"""The bookkeeping behind "pending work finished once its cause is gone": which ungraded turn is asked
for when (RetrySchedule), what the Judge page says about it, and which held messages are retried or
found to be poison (HeldWork). Pure functions of numbers: no bus, no clock."""

from __future__ import annotations

import pytest

from cns_core.agents.held import HeldWork
from cns_core.agents.retry_schedule import RetrySchedule
from cns_core.agents.wire import Envelope
from cns_core.views.judge_feed import retry_schedule_text


def test_new_turns_are_due_at_once_within_the_in_flight_limit():
    s = RetrySchedule(first_s=5, max_s=40, in_flight=2)
    assert s.due(["a", "b", "c"], now=0) == ["a", "b"]
    s.sent("a", 0)
    s.sent("b", 0)
    assert s.due(["a", "b", "c"], now=1) == []                 # two in flight: nothing more, nothing twice
    s.graded("a", 2)
    assert s.due(["b", "c"], now=2) == ["c"] and s.waiting() == 2   # "a" is no longer pending: forgotten


def test_failures_back_off_per_turn_and_a_probe_runs_alone():
    s = RetrySchedule(first_s=5, max_s=12, in_flight=8)
    assert s.due(["a", "b"], 0) == ["a", "b"]
    s.sent("a", 0)
    s.sent("b", 0)
    s.failed("a", "http_error: HTTP 500", 1)
    s.failed("b", "timeout: 1 s", 1)
    assert s.due(["a", "b"], 5.9) == []                        # both wait first_s
    assert s.due(["a", "b"], 6.0) == ["a"]                     # failing: one probe at a time
    s.sent("a", 6)
    s.failed("a", "http_error: HTTP 500", 7)
    assert s.due(["a", "b"], 7) == ["b"]
    s.sent("b", 7)
    s.failed("b", "unparseable: no score", 8)
    assert s.due(["a", "b"], 16.9) == [] and s.due(["a", "b"], 17.0) == ["a"]   # 10 s after the 2nd failure
    s.sent("a", 17)
    s.failed("a", "x", 18)
    assert s.due(["a"], 29.9) == [] and s.due(["a"], 30) == ["a"]              # capped at max_s (12 s)


def test_the_first_good_grade_makes_every_waiting_turn_due():
    s = RetrySchedule(first_s=30, max_s=300, in_flight=8)
    s.due(["a", "b", "c"], 0)
    for qid in "abc":
        s.sent(qid, 0)
        s.failed(qid, "http_error", 1)
    assert s.due(["a", "b", "c"], 10) == []
    s.graded("live-turn", 12)                                  # any good grade, even of a live turn
    assert s.due(["a", "b", "c"], 12) == ["a", "b", "c"] and not s.failing


def test_a_request_without_an_answer_counts_as_a_failure():
    s = RetrySchedule(first_s=5, max_s=40, in_flight=1, answer_timeout_s=60)
    s.due(["a"], 0)
    s.sent("a", 0)
    assert s.due(["a"], 59) == []
    assert s.due(["a"], 60) == [] and s.snapshot(60, 1000.0)["turns"][0]["reason"] == "no critique within 60 s"
    assert s.due(["a"], 65) == ["a"]


def test_the_judge_page_says_how_many_wait_why_and_when():
    s = RetrySchedule(first_s=5, max_s=40, in_flight=4)
    s.due(["a", "b", "c"], 0)
    for qid in "ab":
        s.sent(qid, 0)
        s.failed(qid, "http_error: HTTP 500 from the judge", 1)
    s.sent("c", 1)
    snap = s.snapshot(now=2, wall_now=1000.0) | {"updated": 1000.0, "judge_up": True, "every_s": 15}
    assert retry_schedule_text(snap, now=1000.0) == (
        "Pending grades: 3 turn(s) wait for a grade, 1 asked just now; last failures: http_error ×2; next retry "
        "in 4 s. Each turn backs off on failure; the first good grade retries them all.")
    stale = snap | {"updated": 900.0, "judge_up": False}
    assert "paused: the judge server does not answer" in retry_schedule_text(stale, now=1000.0)
    assert "the judge loop is not sweeping" in retry_schedule_text(stale, now=1000.0)
    assert retry_schedule_text(None) is None and retry_schedule_text({"waiting": 0}) is None


def test_bad_back_off_settings_are_refused():
    with pytest.raises(ValueError, match="need 0 < first_s <= max_s"):
        RetrySchedule(first_s=60, max_s=10)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_held_messages_are_retried_on_a_back_off_and_poison_is_told_apart():
    clock = Clock()
    held = HeldWork(first_s=1, max_s=4, poison_after=3, clock=clock)
    a, b = Envelope(subject="response.generation"), Envelope(subject="response.generation")
    held.hold(a, "the store refused")
    held.hold(b, "the store refused")
    assert held.due() == ([], []) and len(held) == 2
    for now in (1.0, 3.0):                       # two more failures each, the store refusing everything
        clock.now = now
        assert held.due()[0] == [a, b]           # retried, but still held until released
        held.hold(a, "the store refused")
        held.hold(b, "the store refused")
    clock.now = 10.0
    assert held.due() == ([a, b], [])            # nothing was written meanwhile: the store is the cause
    held.release(a.message_id)                   # a's retry worked ...
    held.succeeded()
    clock.now = 20.0
    assert held.due() == ([], [(b, "the store refused")]) and not held   # ... b keeps failing alone: poison
