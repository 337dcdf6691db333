"""``cns evaluate``: tables, JSON, bad files reported while the good ones are still evaluated."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cns_core.cli import main

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
GOOD = EXAMPLES / "grounded_exercise_bp.yaml"
BAD_YAML = """\
id: broken
hypothesis: h
claims:
  - id: h
    text: ""
  - id: c1
    text: A premise.
relations:
  - {source: c1, target: nowhere, kind: support}
evidence:
  - {id: e1, text: Some evidence., validity: 1.7}
"""


@pytest.fixture
def bad_file(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text(BAD_YAML, encoding="utf-8")
    return path


def test_bad_file_listed_good_file_still_evaluated(bad_file, capsys):
    code = main(["evaluate", str(bad_file), str(GOOD)])
    out, err = capsys.readouterr()
    assert code == 1
    assert f"{bad_file}: 3 problem(s)" in err
    assert "claims[0].text: must not be empty" in err
    assert "relations[0].target: unknown claim or relation 'nowhere'" in err
    assert "evidence[0].validity: must be between 0 and 1 (got 1.7)" in err
    assert "exercise-blood-pressure" in out and "Trust Score" in out
    for critic in ("grounding", "logic", "novelty", "causal", "bias"):
        assert f"  {critic} " in out
    assert "broken" not in out


def test_json_output_parses(bad_file, capsys):
    code = main(["evaluate", "--json", "--profile", "scientific", str(GOOD), str(bad_file)])
    out, _ = capsys.readouterr()
    assert code == 1
    data = json.loads(out)
    [result] = data["results"]
    assert result["sno_id"] == "exercise-blood-pressure" and result["profile"] == "scientific"
    assert result["file"] == str(GOOD)
    assert set(result["critics"]) == {"grounding", "logic", "novelty", "causal", "bias"}
    weights = result["weights"]
    # one SNO alone: novelty has no other SNO to compare with and abstains; its 0.05 went to the others
    assert result["not_applicable"] == {"novelty": "no other SNO to compare the hypothesis with"}
    assert result["critics"]["novelty"]["score"] is None and weights["novelty"] == 0.0
    assert weights["grounding"] == pytest.approx(0.5 / 0.95) and result["complete"] is True
    assert result["trust_score"] == pytest.approx(sum(weights[n] * c["score"] for n, c in result["critics"].items()
                                                      if c["score"] is not None))
    assert result["critics"]["grounding"]["evidence"]["claims"]["h"]["best_evidence"] == "e8"
    assert data["errors"][0]["file"] == str(bad_file) and len(data["errors"][0]["problems"]) == 3
    assert result["nli"] == "nli-minilm-l6 (fp32)"                 # which model scored it
    assert result["critics"]["logic"]["evidence"]["nli_backend"] == "nli-minilm-l6 (fp32)"


def test_table_names_the_nli_that_scored_it(capsys, monkeypatch):
    monkeypatch.setenv("CNS_NLI_BACKEND", "lexical")
    from cns_core.models.nli import reset_backends

    reset_backends()
    try:
        assert main(["evaluate", str(GOOD)]) == 0
    finally:
        reset_backends()
    assert "  NLI: lexical" in capsys.readouterr().out.splitlines()


def test_explicit_weights(capsys):
    assert main(["evaluate", "--json", "--weights", "causal=1", str(GOOD)]) == 0
    result = json.loads(capsys.readouterr().out)["results"][0]
    assert result["profile"] is None
    assert result["trust_score"] == pytest.approx(result["critics"]["causal"]["score"])


def test_unknown_profile_is_a_clear_error(capsys):
    assert main(["evaluate", "--profile", "fast", str(GOOD)]) == 1
    err = capsys.readouterr().err
    assert "unknown weight profile 'fast'" in err and "default" in err and "Traceback" not in err


def test_console_entry_exit_status_for_bad_input_only(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("just some words\n", encoding="utf-8")
    script = Path(sys.executable).with_name("cns")       # the installed console script
    command = [str(script)] if script.exists() else [sys.executable, "-c",
                                                     "import sys; from cns_core.cli import main; sys.exit(main())"]
    proc = subprocess.run([*command, "evaluate", str(path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert "expected a mapping (one SNO) or a list of SNOs, got plain text" in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
