"""Load and faults: 1,000 turns in two bursts of 500, a third of the critiques before their engrams,
and the MemoryAgent stopped midway (after 300 writes, so it can never have finished first) while
the second burst is published, then restarted. Afterwards every engram exists and carries its score."""

from __future__ import annotations

import pytest

from cns_core.agents.bus import CRITIQUE, RESPONSE, Envelope, Publisher
from cns_core.agents.critic import CriticAgent
from cns_core.agents.memory_agent import MemoryAgent
from cns_core.memory import EngramFilters, MemoryService
from fake_ollama import fake_grade
from judge_loop_helpers import (  # noqa: F401  (fixtures)
    bus_config, fake_ollama, judge_settings, lean_torch, ollama, proxy, wait_for, warm_embedder,
)

N = 1000

TOPICS = ["rivers", "volcanoes", "prime numbers", "photosynthesis", "the Roman empire", "jazz", "glaciers",
          "vaccines", "black holes", "tides"]


def turn(i: int) -> dict:
    early = i % 3 == 0        # its critique is sent before the turn; the judge then gives no score
    answer = f"A short answer number {i} about {TOPICS[i % len(TOPICS)]}."
    if early:
        answer += " [fake-ollama:noscore]"
    return {"query": f"Question {i}: tell me about {TOPICS[i % len(TOPICS)]}.", "answer": answer,
            "session_id": f"load-{i % 7}", "query_id": f"load-{i:04d}"}


def expected_score(i: int) -> int:
    return i % 5 + 1 if i % 3 == 0 else fake_grade(turn(i)["answer"])


@pytest.mark.slow
def test_a_thousand_turns_with_early_critiques_and_a_restart(bus_config, proxy, judge_settings, warm_embedder,
                                                             state_dir):
    memory = MemoryService(path=state_dir / "chroma")
    critic = CriticAgent(bus_config, settings=judge_settings).start()
    first = MemoryAgent(bus_config, memory).start()
    early = [Envelope(subject=CRITIQUE, payload={"query_id": f"load-{i:04d}", "score": expected_score(i),
                                                 "feedback": "sent before the turn", "judge_model": "test"})
             for i in range(0, N, 3)]
    turns = [Envelope(subject=RESPONSE, payload=turn(i)) for i in range(N)]
    half = N // 2
    with Publisher(bus_config, source="load-test") as pub:
        assert pub.send_many(early) + pub.send_many(turns[:half]) == len(early) + half

        wait_for(lambda: first.written >= 300, timeout=60, progress=lambda: first.written,
                 what="the first MemoryAgent to write 300 engrams")
        first.stop()
        stopped_at = memory.count()
        assert 300 <= stopped_at < N, "the restart must happen midway"
        assert first.scores_parked > 0, "some critiques must have arrived before their engrams"
        # the second half arrives while no MemoryAgent runs: only the journal can deliver it
        assert pub.send_many(turns[half:]) == N - half

        second = MemoryAgent(bus_config, MemoryService(path=state_dir / "chroma")).start()
        try:
            # bounded by progress, not by time: under load the thousand writes take minutes, a lost one forever
            scored = lambda: memory.count(EngramFilters(min_score=1))  # noqa: E731
            wait_for(lambda: scored() == N, timeout=60, progress=scored, what="all 1,000 engrams to carry a score")
            finished = lambda: critic.graded + critic.failed  # noqa: E731
            wait_for(lambda: finished() == N, timeout=60, progress=finished, what="the critic to finish")
        finally:
            second.stop()
            critic.stop()

    assert second.replayed > 0, "the restarted agent must catch up from the journal"
    engrams = memory.get([f"load-{i:04d}" for i in range(N)])
    assert len(engrams) == N
    wrong = [(e.id, e.critic_score) for i, e in enumerate(engrams) if e.critic_score != expected_score(i)]
    assert wrong == []
    assert all(e.metadata["type"] == "episodic" for e in engrams)
    assert memory.pending_critiques() == []
    assert critic.failed == len(early) and critic.graded == N - len(early)
