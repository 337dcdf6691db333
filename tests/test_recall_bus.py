"""Recall on the bus: the MemoryAgent answers ``recall.request`` by ``recall.reply``, bounded, and the bundled
GeneratorAgent gives the recalled answers to its model."""

from __future__ import annotations

import dataclasses

import pytest

from cns_core.agents.bus import QUERY, RECALL, RECALLED, RESPONSE, Publisher, Subscriber
from cns_core.agents.generator import GeneratorAgent
from cns_core.agents.memory_agent import MemoryAgent
from cns_core.agents.prometheus import generator_settings
from cns_core.memory import MemoryService
from judge_loop_helpers import (  # noqa: F401  (fixtures)
    bus_config, fake_ollama, lean_torch, ollama, proxy, wait_for, warm_embedder,
)
from test_recall import QUESTION, judged_memory

pytestmark = pytest.mark.usefixtures("warm_embedder")


def ask(pub: Publisher, replies: Subscriber, payload: dict) -> dict:
    pub.publish(RECALL, payload)
    envelope = wait_for(lambda: replies.recv(0.2), what="a recall reply")
    return envelope.payload


def test_the_memory_agent_answers_recall_requests_ranked_and_bad_ones_with_the_problem(bus_config, proxy, state_dir):
    memory = judged_memory(MemoryService(path=state_dir / "chroma"))
    with MemoryAgent(bus_config, memory) as agent, Publisher(bus_config) as pub, \
            Subscriber([RECALLED], bus_config) as replies:
        replies.wait_ready(pub)
        good = ask(pub, replies, {"request_id": "r1", "query": QUESTION, "k": 2})
        too_many = ask(pub, replies, {"request_id": "r2", "query": QUESTION, "k": 10_000})
        empty = ask(pub, replies, {"request_id": "r3", "query": "   ", "k": 2})
        huge = ask(pub, replies, {"request_id": "r4", "query": "x" * 900_000, "k": 2})   # the bus refuses 1 MB itself
        assert agent.recalls_answered == 4
    assert good["request_id"] == "r1" and good["error"] is None
    assert [r["id"] for r in good["results"]] == ["canberra-marked", "canberra"]
    assert good["results"][0]["why"][0].startswith("ana judged it correct")
    assert too_many["request_id"] == "r2" and "k: Input should be less than or equal to 1000" in too_many["error"]
    assert empty["results"] == [] and "query: must not be empty" in empty["error"]
    assert "query: String should have at most 20000 characters" in huge["error"]
    assert memory.size() == 5


def test_the_generator_answers_with_what_the_memory_recalls(bus_config, proxy, ollama, state_dir):
    memory = judged_memory(MemoryService(path=state_dir / "chroma"))
    settings = dataclasses.replace(generator_settings(), url=ollama.url, timeout=5.0, recall_k=2,
                                   recall_timeout_s=30.0)
    with MemoryAgent(bus_config, memory), GeneratorAgent(bus_config, settings=settings) as generator, \
            Publisher(bus_config) as pub, Subscriber([RESPONSE], bus_config) as answers:
        answers.wait_ready(pub)
        pub.publish(QUERY, {"query": QUESTION, "session_id": "g", "query_id": "g1"})
        turn = wait_for(lambda: answers.recv(0.2), what="the generator's answer").payload
    assert turn["query_id"] == "g1" and generator.recalled == 1
    system = next(m["content"] for m in ollama.requests[-1]["messages"] if m["role"] == "system")
    assert "A: The capital of Australia is Canberra." in system and "Sydney" not in system


def test_a_generator_without_a_memory_answers_without_recall(bus_config, proxy, ollama, state_dir):
    settings = dataclasses.replace(generator_settings(), url=ollama.url, timeout=5.0, recall_k=2,
                                   recall_timeout_s=0.5)
    with GeneratorAgent(bus_config, settings=settings) as generator, Publisher(bus_config) as pub, \
            Subscriber([RESPONSE], bus_config) as answers:
        answers.wait_ready(pub)
        pub.publish(QUERY, {"query": "Name a prime number.", "session_id": "g", "query_id": "g2"})
        turn = wait_for(lambda: answers.recv(0.2), what="the generator's answer").payload
    assert turn["answer"] == "Answer: Name a prime number." and generator.recalled == 0
