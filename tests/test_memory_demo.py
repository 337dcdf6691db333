"""The demo memory behind ``make run``."""

from __future__ import annotations

import pytest

from cns_core.cli.demo_memory import FACTS, build_demo, demo_turns, main
from cns_core.memory import EngramFilters, MemoryService
from judge_loop_helpers import lean_torch  # noqa: F401  (fixture)

pytestmark = pytest.mark.usefixtures("lean_torch")


def test_demo_turns_are_graded_ungraded_and_spread_over_a_month():
    turns = demo_turns(300, now=1_750_000_000)
    assert len({t["query_id"] for t in turns}) == 300
    stamps = [t["timestamp"] for t in turns]
    assert stamps == sorted(stamps) and len(set(stamps)) == 300
    assert max(stamps) - min(stamps) > 25 * 86400 and max(stamps) <= 1_750_000_000
    scores = [t["score"] for t in turns]
    assert set(scores) == {1, 2, 3, 4, 5, None}
    assert 20 <= scores.count(None) <= 70
    assert all(t["feedback"] for t in turns if t["score"]) and all(t["feedback"] is None for t in turns
                                                                 if t["score"] is None)
    questions = [f[0].lower() for f in FACTS]
    assert all(any(t["query"].lower().endswith(q) for q in questions) for t in turns)
    assert {t["answer"] for t in turns} <= {a for f in FACTS for a in f[1:]}
    assert demo_turns(300, now=1_750_000_000) == turns         # deterministic


def test_build_demo_writes_once(state_dir, monkeypatch, capsys):
    monkeypatch.delenv("CNS_CHROMA_URL", raising=False)
    assert main(["--count", "40"]) == 0
    assert "wrote 40 engrams" in capsys.readouterr().out
    memory = MemoryService()
    assert memory.path == state_dir / "chroma" and memory.count() == 40
    graded = memory.count(EngramFilters(min_score=1))
    assert 0 < graded < 40 and memory.count(EngramFilters(ungraded_only=True)) == 40 - graded
    best = memory.browse(order="score", limit=1)[0]
    assert best.critic_score == 5 and best.metadata["critic_judge_model"] == "demo judge" and best.feedback
    before = {e.id: e.metadata for e in memory.browse(limit=40)}
    assert main(["--count", "40"]) == 0
    assert "already present" in capsys.readouterr().out
    assert {e.id: e.metadata for e in memory.browse(limit=40)} == before
    assert build_demo(memory, 40) == 0
