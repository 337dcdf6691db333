"""The hook inside the memory loop: engram retrieval from a real ChromaDB store, the MemoryAgent's
pre-write hook (tags into metadata, blocked turns to the quarantine) and release on new evidence."""

from __future__ import annotations

import pytest

from cns_core.agents.bus import RESPONSE, Envelope
from cns_core.agents.memory_agent import MemoryAgent
from cns_core.coherence import CoherenceHook, CoherenceSettings, MemoryAPI
from cns_core.coherence.retrieval import EngramRetriever, engram_trust
from cns_core.memory import MemoryService

FACTS = {
    "e1": ("Is the north gate locked?", "The north gate is locked."),
    "e2": ("What is the budget?", "The project budget is 40 thousand dollars."),
    "e3": ("Where does Alice work?", "Alice works in the Lisbon office."),
}


@pytest.fixture(scope="module")
def memory(tmp_path_factory):
    service = MemoryService(path=tmp_path_factory.mktemp("chroma"), collection="coherence_test")
    service.write_episodic_many([{"query": q, "answer": a, "session_id": "s", "query_id": i,
                                  "timestamp": 1.7e9 + n} for n, (i, (q, a)) in enumerate(FACTS.items())])
    service.update_engram_score("e3", 5, "good")
    return service


def _turn(query_id: str, answer: str, query: str = "status?", **metadata) -> Envelope:
    return Envelope(subject=RESPONSE, payload={"query": query, "answer": answer, "session_id": "s",
                                               "query_id": query_id, "metadata": metadata})


def test_engram_retrieval_batched_through_the_store(memory):
    hits = EngramRetriever(memory).retrieve(["Is the north gate open?", "How much money does the project have?"],
                                            None, 2)
    assert hits[0][0].id == "e1" and hits[0][0].text == "The north gate is locked."
    assert hits[1][0].id == "e2" and 0.0 < hits[1][0].similarity <= 1.0
    assert engram_trust({"critic_score": 5}) == 1.0 and engram_trust({"critic_score": 1}) == pytest.approx(0.3)
    assert engram_trust({"critic_score": -1}, 0.8) == 0.8 and engram_trust({}) == 1.0
    graded = EngramRetriever(memory).retrieve(["Where does Alice work?"], None, 1)[0][0]
    assert graded.id == "e3" and graded.trust == 1.0


def test_hook_checks_chains_against_engrams(memory, tmp_path):
    hook = CoherenceHook(memory=memory, model=False, log=tmp_path / "log.jsonl",
                         calibration_path=tmp_path / "cal.json")
    result = hook.check_chain("r1", "The north gate is not locked. The project budget is 90 thousand dollars.",
                              importance=0.9)
    gate, budget = result.prop_tags
    assert gate.contradiction_evidence[0][:1] == ("e1",) and "negation" in gate.contradiction_types
    assert budget.contradiction_evidence[0][:1] == ("e2",) and "numeric" in budget.contradiction_types
    temporal = CoherenceHook(mem_api=MemoryAPI.from_memory(memory, temporal=True), model=False, log=False,
                             calibration_path=tmp_path / "cal.json")
    tagged = temporal.check_chain("r2", "Alice works in the Lisbon office.", importance=0.9)
    # in so small a store every engram is among the latest; the related one is kept as temporal evidence
    assert {(p.evidence.id, p.evidence.source) for p in tagged.pairs} >= {("e3", "temporal")}


def test_memory_agent_tags_blocks_and_releases(memory, tmp_path):
    hook = CoherenceHook(CoherenceSettings.from_config(), model=False, log=tmp_path / "log.jsonl",
                         calibration_path=tmp_path / "cal.json")
    agent = MemoryAgent(memory=memory, pre_write_hook=hook.as_pre_write_hook(memory),
                        checkpoint=tmp_path / "checkpoint.json", replay_on_start=False)
    # a coherent answer is written with flat coherence tags in its metadata
    agent.handle_batch([_turn("a1", "Alice works in the Lisbon office on Mondays.")])
    (engram,) = memory.get(["a1"])
    assert engram.metadata["type"] == "episodic"
    assert engram.metadata["coherence_blocked"] is False and engram.metadata["coherence_chain"] > 0
    assert all(isinstance(v, (str, int, float, bool)) for v in engram.metadata.values())
    # a contradicting answer of default importance goes to the quarantine, not to the engrams
    agent.handle_batch([_turn("a2", "The north gate is not locked.")])
    assert memory.get(["a2"]) == []
    (held,) = [q for q in memory.list_quarantined() if q.id == "a2"]
    assert "negation" in held.metadata["contradiction_types"]
    assert "north" in held.metadata["quarantine_subjects"].split(",")
    assert "contradicted" in held.metadata["quarantine_reason"]
    assert agent.quarantined == 1
    # supporting evidence about the same subject arrives (important, so it is written although it
    # contradicts the old engram too): the quarantined turn is re-checked and released
    agent.handle_batch([_turn("a3", "Guards confirmed that the north gate is not locked tonight.",
                              query="Is the gate open?", importance=0.9)])
    assert [e.id for e in memory.get(["a2", "a3"])] == ["a2", "a3"]
    assert [q.id for q in memory.list_quarantined()] == []
    assert hook.stats()["released"] == 1


def test_cns_agents_wires_the_hook_into_the_memory_agent(state_dir):
    from cns_core.agents.bus import bus_settings
    from cns_core.cli.agents import _memory_agent

    agent = _memory_agent(bus_settings(), coherence=True)
    assert agent.memory is not None and agent.pre_write_hook is not None
    verdict = agent.pre_write_hook("w1", "Is it open?", "The north gate is open.", {})
    assert verdict.blocked is False and "coherence_chain" in verdict.metadata
    assert _memory_agent(bus_settings(), coherence=False).pre_write_hook is None


@pytest.mark.parametrize("busy", [0, 30], ids=["empty memory", "busy memory"])
def test_a_bare_number_is_read_with_its_question(tmp_path, busy):
    """Issue 53, item 4: "17" then "12" to "How many apples are left if you have 20 and eat 3?" was stored
    plainly (contradiction 0.087) while "You have 16 apples left." then "... 11 ..." was quarantined as
    numeric: a short answer is read as its question plus the answer. Another question answered with
    another bare number is no conflict, and the same number again is none either."""
    memory = MemoryService(path=tmp_path / "chroma", collection="bare_numbers")
    memory.write_episodic_many([{"query": f"How many apples are left if you have {30 + i} and eat {i % 9 + 1}?",
                                 "answer": str(29 + i - i % 9), "session_id": "s", "query_id": f"busy-{i:03d}",
                                 "timestamp": 1.7e9 + i} for i in range(busy)])
    hook = CoherenceHook(CoherenceSettings.from_config(), memory=memory, model=False, log=tmp_path / "c.jsonl",
                         calibration_path=tmp_path / "cal.json")
    agent = MemoryAgent(memory=memory, pre_write_hook=hook.as_pre_write_hook(memory), checkpoint=tmp_path / "cp.json",
                        replay_on_start=False)
    asked = "How many apples are left if you have 20 and eat 3?"
    agent.handle_batch([_turn("first", "17", asked)])
    agent.handle_batch([_turn("other", "12", "How many apples are left if you have 15 and eat 3?")])
    agent.handle_batch([_turn("same-again", "17", asked)])
    assert memory.count_quarantined() == 0
    agent.handle_batch([_turn("again", "12", asked)])
    [held] = memory.list_quarantined()
    assert held.id == "again" and "numeric" in held.metadata["quarantine_reason"]
