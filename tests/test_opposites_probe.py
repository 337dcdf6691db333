"""The opposites probe (benchmarks/opposites_probe.py): its committed items load, a damaged file names the item
and the field, and the figures count what a real model reads."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from cns_core.models.nli import CONTRADICTION, TransformersNLI
from cns_core.models.tiny import build_tiny_nli_model

ROOT = Path(__file__).resolve().parents[1]


def _probe():
    if "opposites_probe" in sys.modules:
        return sys.modules["opposites_probe"]
    spec = importlib.util.spec_from_file_location("opposites_probe", ROOT / "benchmarks" / "opposites_probe.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module           # its dataclasses look their module up while being built
    spec.loader.exec_module(module)
    return module


def test_the_committed_probe_has_both_kinds_and_asks_where_it_answers_a_question():
    probe = _probe()
    items = probe.load_items()
    kinds = [item.kind for item in items]
    assert kinds.count("opposite") >= 15 and kinds.count("open") >= 10
    asked = next(item for item in items if item.question)
    assert asked.pair[0] == asked.evidence and asked.question in asked.pair[1] and asked.claim in asked.pair[1]


@pytest.mark.parametrize("text, problem", [
    ("items: []", "items: expected a list"),
    ("items:\n  - {kind: maybe, evidence: E., claim: C.}", "item 1: kind: must be one of opposite, open"),
    ("items:\n  - {kind: open, evidence: E., claim: C.}\n  - {kind: open, evidence: '', claim: C.}",
     "item 2: evidence: missing, empty"),
    ("items:\n  - {kind: open, evidence: E., claim: C., label: x}", "item 1: label: not a field"),
    ("items: [unclosed", "not readable YAML"),
])
def test_a_damaged_probe_names_the_item_and_the_field(tmp_path, text, problem):
    path = tmp_path / "probe.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=problem):
        _probe().load_items(path)


def test_the_figures_count_what_the_model_reads(tmp_path):
    probe = _probe()
    model = TransformersNLI(str(build_tiny_nli_model(tmp_path / "tiny", seed=3)))
    items = probe.load_items()
    figures = probe.probe_figures(model.predict, items)
    p = model.predict([item.pair for item in items])[:, CONTRADICTION]
    for kind in probe.KINDS:
        mine = np.array([item.kind == kind for item in items])
        assert figures[kind]["items"] == int(mine.sum())
        assert figures[kind]["read_contradicted"] == int((p[mine] >= probe.CONTRADICTED_AT).sum())
    wrong = figures["opposite"]["read_wrongly"] + figures["open"]["read_wrongly"]
    expected = int(sum((p[i] >= probe.CONTRADICTED_AT) != (item.kind == "opposite") for i, item in enumerate(items)))
    assert len(wrong) == expected


def test_the_command_prints_the_baseline_beside_and_refuses_a_damaged_file(tmp_path, capsys):
    probe = _probe()
    model = build_tiny_nli_model(tmp_path / "tiny", seed=3)
    assert probe.main(["--model", str(model), "--json", str(tmp_path / "out.json")]) == 0
    out = capsys.readouterr().out
    assert "baseline (stage 13" in out and str(model) in out and (tmp_path / "out.json").is_file()
    bad = tmp_path / "bad.yaml"
    bad.write_text("items: 3", encoding="utf-8")
    assert probe.main(["--probe", str(bad)]) == 2
    assert "items: expected a list" in capsys.readouterr().err
