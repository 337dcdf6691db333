"""The suite's waits (tests/local_servers.py): they end on the state, and say what they waited for when it
never comes."""

from __future__ import annotations

import itertools

import pytest

from local_servers import WaitFailed, wait_for


def test_a_wait_with_progress_lasts_while_the_count_moves_and_fails_where_it_stalls():
    polls = itertools.count()
    count = [0]

    def moved() -> bool:
        count[0] = next(polls)
        return count[0] >= 20

    # 20 polls 0.01 s apart outlast the 0.05 s bound, but every poll moves the count, so the wait goes on
    assert wait_for(moved, timeout=0.05, interval=0.01, progress=lambda: count[0])
    with pytest.raises(WaitFailed, match=r"timed out after 0.05 s waiting for engrams carrying a score "
                                         r"\(stalled at 3\)"):
        wait_for(lambda: False, timeout=0.05, interval=0.01, progress=lambda: 3, what="engrams carrying a score")


def test_wait_for_returns_the_first_truthy_value_and_names_what_never_came():
    values = iter([0, None, "ready"])
    assert wait_for(lambda: next(values), timeout=5, interval=0) == "ready"
    with pytest.raises(WaitFailed, match="timed out after 0.05 s waiting for the port"):
        wait_for(lambda: False, timeout=0.05, interval=0.01, what="the port")
