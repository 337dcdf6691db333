"""Recall ranked by how right each answer was judged: MemoryService.recall and ``cns recall``, embedded and
against a real ``chroma run`` server."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from cns_core.config import ConfigError
from cns_core.engrams import Annotation
from cns_core.memory import MemoryService
from cns_core.memory.recall import RecallSettings, judge_quality
from judge_loop_helpers import chroma_server_url, free_port, lean_torch  # noqa: F401  (fixtures)

pytestmark = pytest.mark.usefixtures("lean_torch")
ROOT = Path(__file__).resolve().parent.parent
QUESTION = "What is the capital of Australia?"


def verdict(name: str, p_right: float) -> dict:
    return {"trust_score": 0.6, "trust_verdict": name, "trust_verdict_score": p_right}


def judged_memory(memory: MemoryService) -> MemoryService:
    """Four answers to one question, judged differently, and one to another question."""
    memory.write_episodic_many([
        {"query": QUESTION, "answer": "Sydney is the capital of Australia.", "session_id": "s", "query_id": "sydney",
         "timestamp": 1_700_000_000},
        {"query": QUESTION, "answer": "Canberra is the capital of Australia.", "session_id": "s",
         "query_id": "canberra", "timestamp": 1_700_000_001},
        {"query": QUESTION, "answer": "The capital of Australia is Canberra.", "session_id": "s",
         "query_id": "canberra-marked", "timestamp": 1_700_000_002},
        {"query": QUESTION, "answer": "Melbourne, I think.", "session_id": "s", "query_id": "melbourne",
         "timestamp": 1_700_000_003},
        {"query": "How many legs does a spider have?", "answer": "Eight.", "session_id": "s", "query_id": "spider",
         "timestamp": 1_700_000_004}])
    memory.record_trust({"sydney": verdict("incorrect", 0.03), "canberra": verdict("correct", 0.91),
                         "canberra-marked": verdict("unverified", 0.4), "melbourne": verdict("unverified", 0.2)})
    memory.apply_scores([{"query_id": "sydney", "score": 5}, {"query_id": "canberra", "score": 4},
                         {"query_id": "melbourne", "score": 2}])
    memory.record_annotations([Annotation("canberra-marked", "correct", who="ana")])
    return memory


@pytest.fixture(params=["embedded", "server"])
def memory(request, tmp_path, state_dir):
    name = f"recall-{uuid.uuid4().hex[:8]}"
    if request.param == "server":
        return judged_memory(MemoryService(url=request.getfixturevalue("chroma_server_url"), collection=name))
    return judged_memory(MemoryService(path=tmp_path / "chroma", collection=name))


def test_recall_ranks_a_persons_verdict_first_and_leaves_the_wrong_answer_out(memory):
    got = memory.recall(QUESTION, 5)
    ids = [r.engram.id for r in got]
    assert ids[:3] == ["canberra-marked", "canberra", "melbourne"]
    assert "sydney" not in ids and all(r.excluded is None for r in got)
    first = got[0]
    assert first.rank == 1 and first.reasons[0].startswith("ana judged it correct (+5.00)")
    assert any(reason.startswith("similarity") for reason in first.reasons)
    # plain similarity would not have put them in this order: the rank is the quality's doing
    assert got[1].quality.value > got[2].quality.value
    assert [r.score for r in got] == sorted((r.score for r in got), reverse=True)


def test_include_wrong_returns_the_wrong_answer_marked_and_last(memory):
    got = memory.recall(QUESTION, 5, include_wrong=True)
    sydney = next(r for r in got if r.engram.id == "sydney")
    assert sydney.excluded == "its answer verdict is incorrect"
    assert sydney.rank > next(r for r in got if r.engram.id == "melbourne").rank
    assert "marked: its answer verdict is incorrect" in sydney.why()
    assert sydney.as_dict()["excluded"] == "its answer verdict is incorrect"


@pytest.mark.parametrize("query, k, problem", [
    ("", 5, "query: must not be empty"),
    ("   ", 5, "query: must not be empty"),
    (QUESTION, 0, "k: expected an integer from 1 to 100, got 0"),
    (QUESTION, 10_000, "k: expected an integer from 1 to 100, got 10000"),
    (QUESTION, True, "k: expected an integer"),
    ("x" * 1_000_000, 5, "query: 1,000,000 characters, at most 20,000 allowed"),
])
def test_bad_requests_get_a_clear_error_naming_the_field(tmp_path, state_dir, query, k, problem):
    memory = judged_memory(MemoryService(path=tmp_path / "chroma", collection="bad-requests"))
    with pytest.raises(ValueError) as refused:
        memory.recall(query, k)
    assert problem in str(refused.value)
    assert memory.size() == 5                       # nothing lost


def test_a_quarantined_turn_is_recalled_only_when_asked(tmp_path, state_dir):
    memory = judged_memory(MemoryService(path=tmp_path / "chroma", collection="with-quarantine"))
    memory.write_quarantined(QUESTION, "Australia's capital is Perth.", "s", "perth", reason="contradicts memory")
    assert "perth" not in [r.engram.id for r in memory.recall(QUESTION, 10)]
    marked = {r.engram.id: r for r in memory.recall(QUESTION, 10, include_wrong=True)}
    assert marked["perth"].excluded == "quarantined (contradicts memory)"


def test_quality_reads_each_signal_in_order_of_priority():
    from cns_core.engrams import Engram

    settings = RecallSettings()
    base = dict(id="x", query="q", answer="a", session_id="", timestamp=0.0, feedback="")
    unjudged = Engram(**base, critic_score=None, metadata={})
    graded = Engram(**base, critic_score=5, metadata={"trust_score": 1.0})
    person = Engram(**base, critic_score=1, metadata={"human_verdict": "correct", "trust_verdict": "incorrect",
                                                     "trust_verdict_score": 0.0, "trust_score": 0.0})
    assert judge_quality(unjudged, settings).value == 0.5
    assert judge_quality(unjudged, settings).reasons == ("not judged yet (neutral)",)
    assert judge_quality(graded, settings).value == pytest.approx(0.5 + 1.5 / 17)
    assert judge_quality(person, settings).value == pytest.approx(0.5 + (5 - 2 - 1 - 0.5) / 17)
    assert judge_quality(person, settings).excluded is None       # a person's "correct" outweighs the verdict


@pytest.mark.parametrize("cfg, problem", [
    ({"weights": {"person": -1}}, "recall.weights.person: -1 is outside 0 .. 1000"),
    ({"weights": {"persn": 1}}, "unknown signal(s) persn"),
    ({"weights": {"person": 0, "verdict": 0, "grade": 0, "trust": 0}}, "at least one of person"),
    ({"max_k": "ten"}, "recall.max_k: expected an integer"),
    ({"candidates": 0}, "recall.candidates: 0 is outside 1 .. 5000"),
    ({"topk": 3}, "recall: unknown key(s) topk"),
    ({"preferences": {"min_gap": 2}}, "recall.preferences.min_gap: 2 is outside 0 .. 1"),
])
def test_bad_recall_settings_are_named(cfg, problem):
    with pytest.raises(ConfigError) as refused:
        RecallSettings.from_config(cfg)
    assert problem in str(refused.value)


def test_the_shipped_settings_load():
    from cns_core.memory.recall import recall_settings

    settings = recall_settings()
    assert settings.weights["person"] > sum(settings.weights[k] for k in ("verdict", "grade", "trust"))


def _cns(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cns_core.cli", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=180)


def test_cns_recall_prints_ranked_answers_with_reasons_and_refuses_bad_input(tmp_path, state_dir):
    import os

    memory = judged_memory(MemoryService(path=tmp_path / "chroma"))
    memory.close()
    env = {**os.environ, "CNS_STATE_DIR": str(state_dir), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    done = _cns("recall", QUESTION, "--k", "3", "--json", "--path", str(tmp_path / "chroma"), env=env)
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert [r["id"] for r in rows] == ["canberra-marked", "canberra", "melbourne"]
    assert rows[0]["why"][0].startswith("ana judged it correct")
    shown = _cns("recall", QUESTION, "--include-wrong", "--path", str(tmp_path / "chroma"), env=env)
    assert shown.returncode == 0, shown.stderr
    assert "Sydney is the capital" in shown.stdout and "left out unless asked: its answer verdict is incorrect" \
        in shown.stdout
    refused = _cns("recall", QUESTION, "--k", "10000", "--path", str(tmp_path / "chroma"), env=env)
    assert refused.returncode == 1
    assert "cns recall: error: k: expected an integer from 1 to 100, got 10000" in refused.stderr
    assert "Traceback" not in refused.stderr
