"""The suite's waits (tests/local_servers.py): they end on the state, and say what they waited for when it
never comes."""

from __future__ import annotations

import itertools

import pytest

from local_servers import WaitFailed, wait_for, wait_for_count


def test_a_count_that_keeps_moving_is_waited_for_to_its_target():
    counter = itertools.count(0, 7)
    assert wait_for_count(lambda: next(counter), 50, stall=5, interval=0) >= 50


def test_a_count_that_stops_moving_fails_naming_where_it_stalled():
    with pytest.raises(WaitFailed, match="engrams carrying a score: stalled at 3 of 10 for 0.05 s"):
        wait_for_count(lambda: 3, 10, stall=0.05, interval=0.01, what="engrams carrying a score")


def test_wait_for_returns_the_first_truthy_value_and_names_what_never_came():
    values = iter([0, None, "ready"])
    assert wait_for(lambda: next(values), timeout=5, interval=0) == "ready"
    with pytest.raises(WaitFailed, match="timed out after 0.05 s waiting for the port"):
        wait_for(lambda: False, timeout=0.05, interval=0.01, what="the port")
