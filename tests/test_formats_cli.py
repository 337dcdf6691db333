"""``cns import``: one SNO file per document, a summary line, exit 1 when any file failed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cns_core.cli import main
from cns_core.sno import load_snos

FIXTURES = Path(__file__).parent / "fixtures" / "formats"


def test_import_folder_writes_good_files_and_reports_bad_ones(tmp_path, capsys):
    src = tmp_path / "maps"
    src.mkdir()
    for name in ("debate.json", "bad_edge.json"):
        shutil.copy(FIXTURES / name, src / name)
    out = tmp_path / "out"
    code = main(["import", "aif", str(src), str(FIXTURES / "debate_xaif.json"), "-o", str(out)])
    captured = capsys.readouterr()
    assert code == 1
    assert sorted(p.name for p in out.iterdir()) == ["debate.json", "debate_xaif.json"]
    (sno,) = load_snos(out / "debate.json")
    assert sno.hypothesis == "1" and len(sno.relations) == 5
    assert "imported 2 of 3 document(s)" in captured.out and "(1 failed)" in captured.out
    assert f"error: {src / 'bad_edge.json'}: edge 7: toID '99' is not a node" in captured.err
    assert "Traceback" not in captured.err


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
