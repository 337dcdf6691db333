"""Pending grades: stored, ungraded turns are requested once the judge answers; a turn is never graded twice."""

from __future__ import annotations

from cns_core.agents.bus import CRITIQUE, GRADE, Publisher, Subscriber
from cns_core.agents.critic import CriticAgent
from cns_core.agents.messages import TurnMessage
from fake_ollama import fake_grade
from judge_loop_helpers import (  # noqa: F401  (fixtures)
    bus_config, fake_ollama, judge_settings, ollama, proxy, wait_for,
)


def test_a_pending_request_is_graded_once_even_when_requested_again(bus_config, proxy, judge_settings, ollama):
    turn = TurnMessage(query="How many sides does a hexagon have?", answer="Six.", session_id="s", query_id="p1")
    with CriticAgent(bus_config, settings=judge_settings) as critic, \
            Subscriber([CRITIQUE], bus_config) as sub, Publisher(bus_config, source="test") as pub:
        sub.wait_ready(pub)
        pub.publish(GRADE, turn.model_dump(exclude_none=True))
        first = wait_for(lambda: sub.recv(timeout=0.5), 60, what="the critique of the pending turn")
        assert first.payload["query_id"] == "p1" and first.payload["score"] == fake_grade("Six.")
        pub.publish(GRADE, turn.model_dump(exclude_none=True))          # a second click, or a restart
        wait_for(lambda: critic.skipped == 1, 60, what="the second request to be skipped")
        assert critic.graded == 1 and len(ollama.requests) == 1
        assert sub.recv(timeout=0.5) is None


def test_a_failed_grade_stays_pending_and_is_retried(bus_config, proxy, judge_settings, ollama):
    turn = TurnMessage(query="What is the smallest unit of life?", answer="The cell.", session_id="s",
                       query_id="p2")
    with CriticAgent(bus_config, settings=judge_settings) as critic, \
            Subscriber([CRITIQUE], bus_config) as sub, Publisher(bus_config, source="test") as pub:
        sub.wait_ready(pub)
        ollama.mode = "error"
        pub.publish(GRADE, turn.model_dump(exclude_none=True))
        assert wait_for(lambda: sub.recv(timeout=0.5), 60).payload["score"] is None
        ollama.mode = "good"
        pub.publish(GRADE, turn.model_dump(exclude_none=True))
        assert wait_for(lambda: sub.recv(timeout=0.5), 60).payload["score"] == fake_grade("The cell.")
        # the agent counts a grade once its critique is published: the critique may arrive first
        wait_for(lambda: critic.graded == 1, 60, what="the grade to be counted")
        assert critic.graded == 1 and critic.failed == 1 and critic.skipped == 0


class _Memory:
    """Two stored, ungraded turns (what ``pending_turns`` reads through ``browse``)."""

    def browse(self, filters, offset=0, limit=50, order="oldest"):
        from cns_core.engrams import Engram

        rows = [Engram(id=f"w{i}", query=f"Question {i}?", answer="An answer.", session_id="s", timestamp=float(i),
                       critic_score=None, feedback="", metadata={}) for i in range(2)]
        return rows[offset:offset + limit]


def test_the_sweep_waits_for_the_replay_then_repeats_while_the_judge_answers(bus_config, proxy, state_dir):
    """Issue 38, items 4 and 5: nothing is requested before the MemoryAgent has replayed the journal (a turn
    graded there would be sent again), and afterwards every sweep asks again for what is still ungraded,
    each turn on its own back-off, although the judge never went away."""
    import threading

    from cns_core.agents.pending import PendingGrader, read_schedule
    from cns_core.agents.retry_schedule import RetrySchedule

    replayed = threading.Event()
    asked: list[str] = []
    with Subscriber([GRADE], bus_config) as sub, Publisher(bus_config, source="test") as pub:
        sub.wait_ready(pub)
        grader = PendingGrader(bus_config, lambda: _Memory(), lambda: True, every_s=0.2, ready=replayed.is_set,
                               schedule=RetrySchedule(first_s=0.3, max_s=0.3, in_flight=4)).start()
        try:
            assert sub.recv(timeout=1.0) is None                     # not before the replay
            replayed.set()

            def receive() -> list[str]:       # the requests may come in one batch or several
                asked.extend(e.payload["query_id"] for e in sub.recv_batch(10, 1.0))
                return asked

            wait_for(lambda: len(receive()) >= 2, 60, what="the first requests")
            pub.publish(CRITIQUE, {"query_id": "w0", "score": None, "error": "http_error: HTTP 500"})
            pub.publish(CRITIQUE, {"query_id": "w1", "score": None, "error": "timeout: 1 s"})
            wait_for(lambda: len(receive()) >= 3, 60, what="a retry after the back-off")
        finally:
            grader.stop()
    assert sorted(asked[:2]) == ["w0", "w1"] and asked[2] in ("w0", "w1")
    schedule = read_schedule(state_dir)
    assert schedule["waiting"] == 2 and schedule["judge_up"] is True
