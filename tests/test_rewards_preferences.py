"""Reward signals on the bus, preference pairs and ``cns export preferences`` / ``cns export rewards``."""

from __future__ import annotations

import csv
import json

import pytest

from cns_core.agents.bus import CRITIQUE, RESPONSE, REWARD, Publisher, Subscriber
from cns_core.agents.memory_agent import MemoryAgent
from cns_core.cli import main
from cns_core.engrams import Annotation, Engram
from cns_core.memory import MemoryService
from cns_core.memory.preferences import PAIR_KEY, preference_pairs
from cns_core.memory.recall import RecallSettings
from judge_loop_helpers import bus_config, lean_torch, proxy, wait_for, warm_embedder  # noqa: F401  (fixtures)
from test_recall import QUESTION, judged_memory

pytestmark = pytest.mark.usefixtures("warm_embedder")


def test_a_grade_that_lands_is_published_as_the_turns_reward(bus_config, proxy, state_dir):
    memory = MemoryService(path=state_dir / "chroma")
    with Subscriber([REWARD], bus_config) as rewards, Publisher(bus_config) as pub:
        rewards.wait_ready(pub)
        with MemoryAgent(bus_config, memory) as agent:
            pub.publish(RESPONSE, {"query": QUESTION, "answer": "Canberra.", "session_id": "s7", "query_id": "r1",
                                   "model": "llama3.2:3b"})
            wait_for(lambda: memory.get(["r1"]), what="the engram")
            pub.publish(CRITIQUE, {"query_id": "r1", "score": 5, "feedback": "Right."})
            envelope = wait_for(lambda: rewards.recv(0.2), what="a reward on the bus")
            wait_for(lambda: agent.rewards_published == 1, what="the count")
    assert envelope.payload["query_id"] == "r1" and envelope.payload["session_id"] == "s7"
    assert envelope.payload["agent"] == "llama3.2:3b" and envelope.payload["cause"] == "grade"
    assert envelope.payload["parts"] == {"grade": 1.0}
    assert envelope.payload["reward"] == pytest.approx(0.5 + 2 * 0.5 / 17)
    assert 0.0 <= envelope.payload["reward"] <= 1.0


def _engram(id_: str, query: str, answer: str, **meta) -> Engram:
    return Engram(id=id_, query=query, answer=answer, session_id="", timestamp=0.0, critic_score=meta.pop("grade", None),
                  feedback="", metadata=meta)


def test_pairs_follow_the_recall_order_and_leave_near_ties_and_wrong_winners_out():
    q = "Who wrote Hamlet?"
    engrams = [_engram("a", q, "Shakespeare.", trust_verdict="correct", trust_verdict_score=0.9),
               _engram("b", q, "Marlowe.", trust_verdict="incorrect", trust_verdict_score=0.05),
               _engram("c", q, "William Shakespeare.", trust_verdict="correct", trust_verdict_score=0.89),
               _engram("d", "who wrote hamlet", "Bacon.", trust_verdict="incorrect", trust_verdict_score=0.1),
               _engram("e", "Another question?", "Alone.", grade=5)]
    pairs = preference_pairs(engrams, RecallSettings())
    got = {(p.chosen_id, p.rejected_id) for p in pairs}
    assert got == {("a", "b"), ("a", "d"), ("c", "b"), ("c", "d")}   # a~c: a near tie; b vs d: no right winner
    first = pairs[0]                                                    # the best answer's pairs first
    assert (first.prompt, first.chosen, first.rejected, first.by) == (q, "Shakespeare.", "Bacon.", "quality")
    assert all(p.margin >= 0.05 for p in pairs)


def test_the_judges_comparison_decides_a_pair_whatever_the_qualities():
    q = "Who wrote Hamlet?"
    engrams = [_engram("a", q, "Shakespeare.", trust_verdict="correct", trust_verdict_score=0.9),
               _engram("c", q, "William Shakespeare, around 1600.", trust_verdict="correct", trust_verdict_score=0.88,
                       **{PAIR_KEY: "a"})]
    (pair,) = preference_pairs(engrams, RecallSettings())
    assert (pair.chosen_id, pair.rejected_id, pair.by) == ("c", "a", "judge's comparison")


def test_cns_export_preferences_and_rewards(tmp_path, state_dir, capsys):
    folder = tmp_path / "chroma"
    memory = judged_memory(MemoryService(path=folder))
    memory.record_annotations([Annotation("melbourne", "incorrect")])
    memory.close()
    out = tmp_path / "pairs.jsonl"
    assert main(["export", "preferences", "-o", str(out), "--path", str(folder)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows and all(set(r) >= {"prompt", "chosen", "rejected"} for r in rows)
    assert all(r["prompt"] == QUESTION for r in rows)
    assert rows[0]["chosen_id"] == "canberra-marked"
    assert not any(r["chosen_id"] in ("sydney", "melbourne") for r in rows)
    assert "preference pair(s) as jsonl" in capsys.readouterr().out
    rewards = tmp_path / "rewards.csv"
    assert main(["export", "rewards", "-o", str(rewards), "--path", str(folder)]) == 0
    table = {r["query_id"]: r for r in csv.DictReader(rewards.open())}
    assert set(table) == {"sydney", "canberra", "canberra-marked", "melbourne", "spider"}
    assert float(table["canberra-marked"]["reward"]) > float(table["canberra"]["reward"]) > \
        float(table["sydney"]["reward"])
    assert table["spider"]["judged"] == "False" and float(table["spider"]["reward"]) == 0.5
    assert main(["export", "preferences", "--format", "csv", "-o", str(tmp_path / "p.csv"), "--path", str(folder)]) == 1
    assert "preference pairs are written as JSON lines" in capsys.readouterr().err
