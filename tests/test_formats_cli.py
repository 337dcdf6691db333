"""``cns import``: one SNO file per document, a summary line, exit 1 when any file failed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cns_core.cli import main
from cns_core.sno import load_snos

FIXTURES = Path(__file__).parent / "fixtures" / "formats"


def test_import_folder_writes_good_and_repaired_files_and_reports_refused_ones(tmp_path, capsys):
    src = tmp_path / "maps"
    src.mkdir()
    for name in ("debate.json", "bad_edge.json", "bad_syntax.json"):
        shutil.copy(FIXTURES / name, src / name)
    out = tmp_path / "out"
    code = main(["import", "aif", str(src), str(FIXTURES / "debate_xaif.json"), "-o", str(out)])
    captured = capsys.readouterr()
    assert code == 1
    assert sorted(p.name for p in out.iterdir()) == ["bad_edge.json", "debate.json", "debate_xaif.json"]
    (sno,) = load_snos(out / "debate.json")
    assert sno.hypothesis == "1" and len(sno.relations) == 5
    (repaired,) = load_snos(out / "bad_edge.json")       # its one edge points nowhere: left out, claim kept
    assert [c.id for c in repaired.claims] == ["1"] and repaired.relations == []
    assert captured.out.splitlines() == [
        f"imported 3 of 4 document(s) into {out}",
        "4 document(s): 3 imported (2 whole, 1 repaired with 1 warning(s)), 1 refused",
        "warnings by cause (-v lists them):",
        "  dangling-relation     1  a relation to a claim or relation that is not there; dropped",
        "refused by cause (the error lines above name file, element and problem):",
        "  syntax     1  not well-formed (JSON, XML, YAML or Argdown syntax)",
    ]
    assert captured.err.startswith(f"error: {src / 'bad_syntax.json'}: line ")
    assert "warning:" not in captured.err and "Traceback" not in captured.err


def test_import_verbose_lists_each_warning_with_its_line_and_cause(tmp_path, capsys):
    essays = FIXTURES / "essays"
    assert main(["import", "brat", str(essays), "-o", str(tmp_path / "out"), "-v"]) == 0
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [
        f"warning: {essays / 'essay_public_transport.ann'}: line 7 (T7): Claim has no stance and no relation; "
        "it stays unconnected [unconnected-claim]",
        f"warning: {essays / 'essay_remote_work.ann'}: line 11 (A3): stance Against of T6 disagrees with "
        "line 16 (R5) (T6 supports T1); the relation is kept [stance-conflict]",
    ]
    assert "4 document(s): 4 imported (2 whole, 2 repaired with 2 warning(s)), 0 refused" in captured.out
    assert "warnings by cause:" in captured.out     # listed above, so no "-v lists them" hint


def test_import_options_evidence_rule_yaml_and_no_silent_overwrite(tmp_path, capsys):
    out = tmp_path / "out"
    args = ["import", "microtexts", str(FIXTURES / "micro_t001.xml"), "-o", str(out)]
    assert main(args + ["--evidence-rule", "none", "--yaml"]) == 0
    (sno,) = load_snos(out / "micro_t001.yaml")
    assert sno.evidence == [] and sno.metadata["evidence_rule"] == "none"
    assert main(args) == 0
    first = json.loads((out / "micro_t001.json").read_text())
    assert [e["id"] for e in first["evidence"]] == ["ev-a2", "ev-a4"]
    assert main(args) == 0                     # same content again: fine
    assert main(args + ["--evidence-rule", "none"]) == 1   # other content: kept, reported
    assert "exists with other content" in capsys.readouterr().err
    assert json.loads((out / "micro_t001.json").read_text()) == first
    assert main(args + ["--evidence-rule", "none", "--overwrite"]) == 0


def test_import_nothing_found_or_bad_format(tmp_path, capsys):
    assert main(["import", "brat", str(tmp_path), "-o", str(tmp_path / "o")]) == 1
    assert "no brat files (.ann)" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:   # argparse rejects the format with its usage line
        main(["import", "csv", str(tmp_path), "-o", str(tmp_path / "o")])
    assert exc.value.code == 2
    assert "invalid choice: 'csv'" in capsys.readouterr().err
