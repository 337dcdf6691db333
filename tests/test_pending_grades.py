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
        first = wait_for(lambda: sub.recv(timeout=0.5), 15, what="the critique of the pending turn")
        assert first.payload["query_id"] == "p1" and first.payload["score"] == fake_grade("Six.")
        pub.publish(GRADE, turn.model_dump(exclude_none=True))          # a second click, or a restart
        wait_for(lambda: critic.skipped == 1, 15, what="the second request to be skipped")
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
        assert wait_for(lambda: sub.recv(timeout=0.5), 15).payload["score"] is None
        ollama.mode = "good"
        pub.publish(GRADE, turn.model_dump(exclude_none=True))
        assert wait_for(lambda: sub.recv(timeout=0.5), 15).payload["score"] == fake_grade("The cell.")
        # the agent counts a grade once its critique is published: the critique may arrive first
        wait_for(lambda: critic.graded == 1, 15, what="the grade to be counted")
        assert critic.graded == 1 and critic.failed == 1 and critic.skipped == 0
