"""An incomplete Trust Score (a critic failed or timed out) is marked wherever it appears, never silently."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from cns_core.engine import corpus
from cns_core.engine.batch import read_results, write_results
from cns_core.engine.rows import evaluation_row
from cns_core.cli.evaluate import evaluation_to_dict, format_table
from cns_core.critics import default_critics
from cns_core.critics.base import CRITIC_NAMES, CriticResult
from cns_core.pipeline import CriticPipeline
from cns_core.scoring import incomplete_note, load_profiles, weigh
from cns_core.sno import load_snos

ROOT = Path(__file__).resolve().parent.parent
GOOD = ROOT / "examples" / "grounded_exercise_bp.yaml"


class Exploding:
    """Replaces one built-in critic and always raises (a model down, a timeout)."""

    requires = frozenset()

    def __init__(self, name: str):
        self.name = name

    def config_key(self) -> str:
        return f"exploding-{self.name}"

    def evaluate(self, sno, context=None):
        raise RuntimeError(f"{self.name} model is down")


def pipeline_without(*names: str) -> CriticPipeline:
    # a generous limit: only the exploding critics may fail, even on a busy machine
    return CriticPipeline([Exploding(c.name) if c.name in names else c for c in default_critics()], timeout_s=600)


@pytest.fixture(scope="module")
def sno():
    return load_snos(GOOD)[0]


def test_note_names_failed_critics_in_canonical_order():
    assert incomplete_note(["logic", "grounding"]) == "incomplete: grounding, logic failed"
    assert incomplete_note([]) == ""


def test_cli_table_and_json_mark_the_score_incomplete(sno):
    evaluation = pipeline_without("logic", "grounding").evaluate(sno, "default")
    assert not evaluation.complete and set(evaluation.failed) == {"grounding", "logic"}
    # the weights are still redistributed: the score is the others' weighted mean ...
    assert evaluation.trust_score == pytest.approx(weigh(evaluation.results, load_profiles()["default"]).trust_score)
    table = format_table(evaluation, sno)
    trust_line = next(line for line in table.splitlines() if "Trust Score" in line)
    # ... but never passed off as a full score
    assert trust_line.endswith("(default)  incomplete: grounding, logic failed")
    data = evaluation_to_dict(evaluation, sno)
    assert data["complete"] is False and data["incomplete_critics"] == ["grounding", "logic"]

    full = pipeline_without().evaluate(sno, "default")
    assert full.complete and "incomplete" not in format_table(full, sno)
    assert evaluation_to_dict(full, sno)["complete"] is True


def test_results_table_rows_carry_complete_and_old_tables_are_read_with_it(sno, tmp_path):
    results = {n: (CriticResult.failed(n, "timed out after 30 s") if n == "novelty" else
                   CriticResult(critic=n, score=0.5, confidence=0.8, explanation="hand-made")) for n in CRITIC_NAMES}
    clean = {n: CriticResult(critic=n, score=0.5, confidence=0.8, explanation="hand-made") for n in CRITIC_NAMES}
    rows = [evaluation_row(results, sno, "a.json", "fp", load_profiles()),
            {**evaluation_row(clean, sno.model_copy(update={"id": "b"}), "b.json", "fp", load_profiles())}]
    assert (rows[0]["complete"], rows[0]["incomplete_critics"]) == (False, "novelty")
    assert (rows[1]["complete"], rows[1]["incomplete_critics"]) == (True, "")
    for suffix in ("csv", "parquet"):
        written = read_results(write_results(pd.DataFrame(rows), tmp_path / f"r.{suffix}"))
        assert list(written["complete"]) == [False, True], suffix
        old = pd.DataFrame(rows).drop(columns=["complete", "incomplete_critics"])   # a table from before
        again = read_results(write_results(old, tmp_path / f"old.{suffix}"))
        assert list(again["complete"]) == [False, True] and list(again["incomplete_critics"]) == ["novelty", ""]
    frame = pd.DataFrame(rows)
    assert corpus.summary(frame)["incomplete"] == 1
    table = corpus.corpus_table(frame)
    assert "complete" in table.columns
    assert dict(zip(table["sno_id"], table["complete"])) == {sno.id: False, "b": True}


def test_overview_page_shows_the_incomplete_badge(monkeypatch, state_dir):
    import streamlit as st

    from cns_core.models.nli import reset_backends
    from cns_core.views.warm_up import reset_shared_pipeline

    monkeypatch.setenv("CNS_NLI_BACKEND", "no-such-backend")   # grounding cannot run without NLI
    st.cache_resource.clear()      # an AppTest earlier in this process may have cached a working pipeline
    st.cache_data.clear()
    reset_backends()
    reset_shared_pipeline()       # ... or left the warm-up's shared pipeline with a working NLI backend
    at = AppTest.from_file(str(ROOT / "dashboard.py"), default_timeout=120)
    at.run()
    assert not at.exception
    notes = [m.value for m in at.markdown if "incomplete:" in m.value]
    assert notes and "incomplete: grounding failed" in notes[0]
    gate = [m.value for m in at.markdown if "fails" in m.value or "passes" in m.value]
    assert gate and "fails" in gate[0]
    assert any("never passes an incomplete score" in c.value for c in at.caption)
