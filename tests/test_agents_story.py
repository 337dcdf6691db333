"""Story S6: a generated answer is graded 1-5 and the grade lands on its engram.

Proxy, journal, CriticAgent and MemoryAgent run for real; the judge is the fake
Ollama server (or a real Ollama when ``CNS_OLLAMA_URL`` names one with the judge
model); the engrams go to a real ``chroma run`` server.
"""

from __future__ import annotations

import dataclasses
import os
import uuid

import pytest

from cns_core.agents.bus import CRITIQUE, QUERY, RESPONSE, Publisher, Subscriber
from cns_core.agents.critic import CriticAgent
from cns_core.agents.generator import GeneratorAgent
from cns_core.agents.memory_agent import MemoryAgent
from cns_core.agents.ollama import OllamaClient, OllamaError
from cns_core.agents.prometheus import critic_settings, generator_settings
from cns_core.memory import MemoryService
from fake_ollama import fake_grade
from judge_loop_helpers import (  # noqa: F401  (fixtures)
    bus_config, chroma_server_url, fake_ollama, judge_settings, lean_torch, ollama, proxy, wait_for, warm_embedder,
)

pytestmark = pytest.mark.usefixtures("warm_embedder")


def run_story(bus_config, memory: MemoryService, critic: CriticAgent, timeout: float) -> tuple[dict, object]:
    """Publish one turn; return the critique payload and the engram once the score landed."""
    query_id = f"s6-{uuid.uuid4().hex[:8]}"
    with MemoryAgent(bus_config, memory), critic, \
            Publisher(bus_config, source="test") as pub, Subscriber([CRITIQUE], bus_config) as sub:
        sub.wait_ready(pub)
        pub.publish(RESPONSE, {"query": "What is the boiling point of water at sea level in Celsius?",
                               "answer": "Water boils at 100 degrees Celsius at sea level.",
                               "session_id": "story-s6", "query_id": query_id})
        envelope = sub.recv(timeout)
        assert envelope is not None, "no critique.result arrived"
        engram = wait_for(lambda: next((e for e in memory.get([query_id]) if e.graded), None), timeout=60,
                          what="the score on the engram")
    return envelope.payload, engram


def test_story_s6_with_the_fake_judge(bus_config, proxy, judge_settings, chroma_server_url, tmp_path):
    memory = MemoryService(url=chroma_server_url, collection=f"s6-{uuid.uuid4().hex[:8]}")
    critique, engram = run_story(bus_config, memory, CriticAgent(bus_config, settings=judge_settings), timeout=10)
    score = critique["score"]
    assert isinstance(score, int) and 1 <= score <= 5
    assert score == fake_grade("Water boils at 100 degrees Celsius at sea level.")
    assert critique["error"] is None and critique["judge_model"] == judge_settings.model
    assert critique["latency_s"] > 0 and critique["feedback"]
    assert engram.critic_score == score and engram.metadata["type"] == "episodic"
    assert engram.feedback == critique["feedback"]


def _real_ollama_or_skip():
    url = os.environ.get("CNS_OLLAMA_URL")
    if not url:
        pytest.skip("CNS_OLLAMA_URL is not set: story S6 against a real Ollama judge is skipped")
    settings = critic_settings()
    try:
        present = OllamaClient(url, timeout=5).has_model(settings.model)
    except OllamaError as exc:
        pytest.skip(f"CNS_OLLAMA_URL={url} does not answer: {exc}")
    if not present:
        pytest.skip(f"the judge model {settings.model!r} is not pulled on {url}")
    return settings


def test_story_s6_with_a_real_ollama_judge(bus_config, proxy, chroma_server_url):
    settings = _real_ollama_or_skip()
    memory = MemoryService(url=chroma_server_url, collection=f"s6real-{uuid.uuid4().hex[:8]}")
    critique, engram = run_story(bus_config, memory, CriticAgent(bus_config, settings=settings),
                                 timeout=settings.timeout + 30)
    assert isinstance(critique["score"], int) and 1 <= critique["score"] <= 5
    assert engram.critic_score == critique["score"] and engram.metadata["type"] == "episodic"


def test_the_ask_flow_from_query_to_graded_engram(bus_config, proxy, judge_settings, ollama, state_dir):
    """query.request -> GeneratorAgent -> response.generation -> CriticAgent + MemoryAgent."""
    memory = MemoryService(path=state_dir / "chroma")
    gen_settings = dataclasses.replace(generator_settings(), url=ollama.url, timeout=2.0)
    with GeneratorAgent(bus_config, settings=gen_settings), MemoryAgent(bus_config, memory), \
            CriticAgent(bus_config, settings=judge_settings), Publisher(bus_config) as pub, \
            Subscriber([RESPONSE, CRITIQUE], bus_config) as sub:
        sub.wait_ready(pub)
        pub.publish(QUERY, {"query": "Name a prime number.", "session_id": "ask", "query_id": "ask-1"})
        got = {}
        while len(got) < 2:
            envelope = sub.recv(10)
            assert envelope is not None
            got[envelope.subject] = envelope.payload
        assert got[RESPONSE]["answer"] == "Answer: Name a prime number."
        assert got[RESPONSE]["model"] == gen_settings.model
        assert got[CRITIQUE]["score"] == fake_grade("Answer: Name a prime number.")
        engram = wait_for(lambda: next((e for e in memory.get(["ask-1"]) if e.graded), None), what="graded engram")
    assert engram.answer == "Answer: Name a prime number." and engram.metadata["model"] == gen_settings.model
