"""The Coherence page's engram stream says n/a where a chain had nothing to compare, in the table too,
and says why the log has more lines than chains (issue 35 item 9)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from cns_core.coherence.log_view import NOT_COMPARED, summarise, table_rows

ROOT = Path(__file__).resolve().parent.parent


def _line(tick: int, coherence: float, pairs: int) -> dict:
    return {"tick": tick, "chain_id": f"demo-{tick:04d}", "p_id": f"demo-{tick:04d}:0", "entail": 0.0,
            "contradict": 0.0, "uncertainty": 1.0, "types": [], "drift_facets": [], "coherence_chain": coherence,
            "contradiction_density": 0.0, "blocked": False, "latency_ms": 3.0, "evidence_pairs": pairs,
            "model_pairs": pairs}


LOG = [{"event": "hook_started", "ts": 1.0},
       *[_line(t, 0.0, 0) for t in range(1, 8)],                  # ticks 1-7: nothing earlier to compare with
       *[_line(t, 0.8, 3) for t in range(8, 11)],
       {"event": "hook_stopped", "ts": 2.0}]


def test_uncompared_chains_are_na_in_the_table_and_lines_are_explained():
    summary = summarise(LOG)
    assert (summary.chains, summary.uncompared, summary.lines, summary.events) == (10, 7, 12, 2)
    assert summary.lines_note() == "12 lines: 10 proposition line(s) of 10 chain(s), 2 event line(s)"
    rows = table_rows(LOG)
    assert [r["coherence_chain"] for r in rows if r.get("tick") in range(1, 8)] == [NOT_COMPARED] * 7
    assert [r["coherence_chain"] for r in rows if r.get("tick") in range(8, 11)] == ["0.80"] * 3


def test_the_page_never_shows_coherence_0_for_a_chain_with_nothing_to_compare(tmp_path, monkeypatch):
    monkeypatch.setenv("CNS_STATE_DIR", str(tmp_path))
    (tmp_path / "coherence.jsonl").write_text("".join(json.dumps(r) + "\n" for r in LOG), encoding="utf-8")
    monkeypatch.syspath_prepend(str(ROOT / "pages"))
    at = AppTest.from_file(str(ROOT / "dashboard.py"), default_timeout=180)
    at.run()
    at.switch_page("pages/coherence.py").run()
    assert not at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Chains checked"] == "10" and metrics["Mean coherence"] == "0.80"
    assert any("12 of 12 lines shown · 12 lines: 10 proposition line(s) of 10 chain(s), 2 event line(s)" in c.value
               for c in at.caption)
    log = next(d.value for d in at.dataframe if "coherence_chain" in d.value.columns)
    early = log[log["tick"].isin(range(1, 8))]
    assert len(early) == 7 and set(early["coherence_chain"].astype(str)) == {NOT_COMPARED}


def test_the_blocked_count_says_what_the_quarantine_released_since(tmp_path, monkeypatch):
    """Issue 70 item 3: the log's "Blocked 2", the memory's "1 quarantined": the page says 1 was released."""
    from cns_core.memory import MemoryService

    monkeypatch.setenv("CNS_STATE_DIR", str(tmp_path))
    blocked = [{**_line(t, 0.2, 3), "blocked": True} for t in (11, 12)]
    (tmp_path / "coherence.jsonl").write_text("".join(json.dumps(r) + "\n" for r in LOG + blocked), encoding="utf-8")
    memory = MemoryService()
    for qid in ("demo-0011", "demo-0012"):
        memory.write_quarantined("Is the sky green?", "Yes.", "s1", qid, reason="contradicts memory")
    memory.release_quarantined("demo-0011")
    monkeypatch.syspath_prepend(str(ROOT / "pages"))
    at = AppTest.from_file(str(ROOT / "dashboard.py"), default_timeout=180)
    at.run()
    at.switch_page("pages/coherence.py").run()
    assert not at.exception
    assert {m.label: m.value for m in at.metric}["Blocked"] == "2"
    said = "The memory now: 1 quarantined (2 blocked by the coherence hook, 1 released since)."
    assert any(said in c.value for c in at.caption), [c.value for c in at.caption]
    # issue 70 item 6: the log table's "Blocked" column was clipped: every column has a width its text fits
    from table_fit import cut_cells

    log = next(d for d in at.dataframe if "coherence_chain" in d.value.columns)
    columns = json.loads(log.proto.columns)
    assert columns["blocked"]["label"] == "Blocked" and cut_cells(log) == []
    at.switch_page("pages/engrams.py").run()
    assert any("1 quarantined (2 blocked by the coherence hook, 1 released since)" in c.value for c in at.caption)
