"""``cns coherence-eval`` and ``cns coherence-check``: the section-13 figures, one per line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cns_core.cli import main

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
REQUIRED = ("contradiction precision", "contradiction recall", "ECE margin before calibration",
            "ECE margin after calibration", "false block rate", "chain coherence stability")

SUBJECTS = ["the gate", "the pump", "the server", "the printer", "the heater", "the camera", "the valve",
            "the router", "the lamp", "the fan", "the boiler", "the lift"]


def _labelled_rows() -> list[dict]:
    rows = []
    for s in SUBJECTS:
        thing = s.split()[1]
        rows.append({"sentence1": f"{s.capitalize()} is working today",
                     "sentence2": f"{s.capitalize()} is not working today", "gold_label": "contradiction"})
        rows.append({"sentence1": f"{s.capitalize()} in the hall is working today",
                     "sentence2": f"{s.capitalize()} is working", "gold_label": "entailment"})
        rows.append({"sentence1": f"{s.capitalize()} is working today",
                     "sentence2": f"Penguins near the {thing} like cold water", "gold_label": "neutral"})
    rows.append({"sentence1": "x", "sentence2": "y", "gold_label": "-"})   # SNLI's no-agreement rows are skipped
    return rows


def _figures(out: str) -> dict[str, float]:
    found = {}
    for line in out.splitlines():
        m = re.match(r"^([A-Za-z -]+): (-?\d+\.\d+)", line)
        if m:
            found[m.group(1)] = float(m.group(2))
    return found


@pytest.fixture(scope="module")
def labelled_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("pairs") / "pairs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _labelled_rows()), encoding="utf-8")
    return path


def test_coherence_eval_prints_every_figure(labelled_file, capsys, state_dir):
    assert main(["coherence-eval", str(labelled_file), "--seed", "3", "--chain-size", "3",
                 "--save-calibration", str(state_dir / "cal.json")]) == 0
    out = capsys.readouterr().out
    figures = _figures(out)
    for name in REQUIRED:
        assert name in figures, (name, out)
    # the hand-made contradictions are plain denials: all of them found, nothing else flagged
    assert figures["contradiction precision"] == 1.0 and figures["contradiction recall"] == 1.0
    assert figures["false block rate"] == 0.0
    assert 0.0 <= figures["ECE margin after calibration"] <= 1.0
    assert figures["chain coherence stability"] >= 0.0
    assert "pairs: 18 evaluated (18 used to fit the calibration)" in out
    saved = json.loads((state_dir / "cal.json").read_text())
    assert saved["n_samples"] == 18 and saved["temperature"] == pytest.approx(figures["temperature"], abs=1e-3)
    # the saved state is used as is (nothing fitted, every pair measured)
    assert main(["coherence-eval", str(labelled_file), "--calibration", str(state_dir / "cal.json"),
                 "--heuristics-only"]) == 0
    again = capsys.readouterr().out
    assert "pairs: 36 evaluated (0 used to fit the calibration)" in again
    assert "model pass: no (heuristics only)" in again


@pytest.mark.parametrize("content, args, message", [
    ('{"sentence1": "a", "sentence2": "b"}\n', [], "gold_label: missing"),
    ('{"sentence1": "a", "sentence2": "b", "gold_label": "maybe"}\n', [], "unknown label 'maybe'"),
    ("not json\n", [], "not valid JSON"),
    ('{"sentence1": "a", "sentence2": "b", "gold_label": "neutral"}\n', ["--limit", "0"], "--limit"),
])
def test_coherence_eval_bad_input_is_one_clear_line(tmp_path, capsys, content, args, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(content, encoding="utf-8")
    assert main(["coherence-eval", str(path), *args]) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_coherence_eval_missing_file(tmp_path, capsys):
    assert main(["coherence-eval", str(tmp_path / "nope.tsv")]) == 1
    assert "no such file" in capsys.readouterr().err


def test_coherence_check_text_and_sno(capsys, state_dir):
    assert main(["coherence-check", "--text", "The lab door is open. The lab door is closed.", "--no-log",
                 "--heuristics-only", "--json"]) == 0
    (chain,) = json.loads(capsys.readouterr().out)
    assert chain["props"][1]["contradiction_types"] == ["antonym"]
    assert main(["coherence-check", "--sno", str(EXAMPLES / "contradicted_vitamin_c.yaml"), "--no-log"]) == 0
    out = capsys.readouterr().out
    assert "SNO vitamin-c-colds" in out and "c1 x e2" in out
    assert re.search(r"The NLI model judged 7 of 7 claims; 0 fell back to heuristics\. Took .+ of a [\d.]+ s budget\.",
                     out), out
    assert main(["coherence-check", "--sno", str(EXAMPLES / "contradicted_vitamin_c.yaml"), "--no-log",
                 "--heuristics-only", "--no-time-limit", "--json"]) == 0
    (sno,) = json.loads(capsys.readouterr().out)
    assert (sno["judged"]["model"], sno["judged"]["heuristics"], sno["judged"]["budget_ms"]) == (0, 7, None)
    assert main(["coherence-check"]) == 1


def test_sick_meets_the_targets(shared_data, capsys, state_dir):
    """Contradiction precision >= 0.90 with recall >= 0.60 on SICK (first 1,000 pairs, half held back;
    the whole file is measured by `cns coherence-eval`, see the README)."""
    sick = shared_data / "sick_test" / "SICK_test.tsv"
    if not sick.is_file():
        pytest.skip(f"{sick} is absent")
    assert main(["coherence-eval", str(sick), "--limit", "1000"]) == 0
    out = capsys.readouterr().out
    figures = _figures(out)
    assert "model pass: yes" in out
    assert figures["contradiction precision"] >= 0.90, out
    assert figures["contradiction recall"] >= 0.60, out
    assert figures["ECE margin after calibration"] < 0.8 * figures["ECE margin before calibration"], out
    assert figures["false block rate"] < 0.05, out
