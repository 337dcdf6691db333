"""``cns extract`` and ``cns evaluate --text``: valid SNO files, clear refusals, the others still written."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cns_core.cli import main
from cns_core.sno import load_snos, parse_snos

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "text"
TEXT = EXAMPLE / "sugar_tax.md"
SOURCES = EXAMPLE / "sugar_tax_sources.txt"
QUESTION = "Should the city tax sugary drinks?"


def test_extract_writes_one_valid_sno_per_file(tmp_path, capsys):
    second = tmp_path / "short answer.txt"
    second.write_text("Bus lanes should come first, because buses carry most commuters.", encoding="utf-8")
    code = main(["extract", str(TEXT), str(second), "--sources", str(SOURCES), "--question", QUESTION,
                 "-o", str(tmp_path / "out")])
    out = capsys.readouterr().out
    assert code == 0
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["short_answer.yaml", "sugar_tax.yaml"]
    [sno] = load_snos(tmp_path / "out" / "sugar_tax.yaml")
    assert sno.id == "sugar_tax" and sno.title == "Should the city tax sugary drinks?"
    assert sno.hypothesis_text == "The city should tax sugary drinks."
    assert sno.hypothesis_claim.metadata["why"].endswith("the unit that best answers the question")
    assert sno.hypothesis_claim.metadata["unit_role"] == "main claim"
    assert {e.source for e in sno.evidence} == {"sugar_tax_sources.txt"} and len(sno.evidence) == 2
    assert all(r.metadata["why"] for r in sno.relations) and any(r.kind == "attack" for r in sno.relations)
    [short] = load_snos(tmp_path / "out" / "short_answer.yaml")
    assert [(r.source, r.target, r.kind) for r in short.relations] == [("c2", "c1", "support")]
    assert f"sugar_tax.yaml: {len(sno.claims)} claim(s)" in out
    assert "main claim: 'The city should tax sugary drinks.'" in out


def test_one_file_without_output_goes_to_stdout(capsys):
    assert main(["extract", str(TEXT)]) == 0
    out, err = capsys.readouterr()
    [sno] = parse_snos(out, fmt="yaml")
    assert sno.evidence == [] and sno.hypothesis_text == "The city should tax sugary drinks."
    assert "note: no sources given: the SNO has no evidence, so grounding scores 0" in err
    assert "note: no question given: the text's question ('Should the city tax sugary drinks?') picks" in err


def test_several_files_need_an_output_folder(tmp_path, capsys):
    assert main(["extract", str(TEXT), str(TEXT)]) == 1
    assert "several files need -o DIR" in capsys.readouterr().err


def test_bad_inputs_are_named_and_the_good_file_still_written(tmp_path, capsys):
    bad = {
        "empty.txt": (b"", "empty.txt: is empty"),
        "image.txt": (b"\x89PNG\r\n\x1a\n\x00\x00\x00", "image.txt: is a binary file, not text"),
        "latin.txt": ("Caf\u00e9 au lait.".encode("latin-1"), "latin.txt: not UTF-8 text (byte 3)"),
        "german.txt": ("Der Hund läuft schnell über die Straße und die Katze schläft auf dem Sofa.".encode(),
                       "german.txt: does not look like English"),
        "huge.txt": (b"word " * 1_000_000, "huge.txt: 5,000,000 bytes exceed the limit of 1,000,000 bytes "
                                           "(config/sno.yaml max_text_bytes)"),
    }
    for name, (data, _) in bad.items():
        (tmp_path / name).write_bytes(data)
    plain = tmp_path / "plain.txt"
    plain.write_text("The river floods in spring. The town lies on its bank.", encoding="utf-8")
    files = [str(tmp_path / n) for n in bad] + [str(plain), str(TEXT)]
    code = main(["extract", *files, "-o", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 1
    for _, message in bad.values():
        assert message in err
    assert "Traceback" not in err and "5 of 7 file(s) could not be drafted" in err
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["plain.yaml", "sugar_tax.yaml"]
    [plain_sno] = load_snos(tmp_path / "out" / "plain.yaml")   # drafted like any other text
    assert [c.text for c in plain_sno.claims][:1] and len(plain_sno.relations) <= len(plain_sno.claims) - 1


def test_bad_source_stops_before_any_drafting(tmp_path, capsys):
    source = tmp_path / "notes.docx"
    source.write_bytes(b"PK\x03\x04")
    assert main(["extract", str(TEXT), "--sources", str(source), "-o", str(tmp_path / "out")]) == 1
    assert "a source must be .txt, .md or .pdf (got '.docx')" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_evaluate_text_drafts_and_scores(capsys):
    code = main(["evaluate", "--text", str(TEXT), "--sources", str(SOURCES), "--question", QUESTION, "--json"])
    out, err = capsys.readouterr()
    assert code == 0
    [result] = json.loads(out)["results"]
    assert result["sno_id"] == "sugar_tax" and 0.0 < result["trust_score"] < 1.0
    assert result["critics"]["grounding"]["status"] == "ok"
    assert re.search(r"drafted \d+ claim\(s\)", err)


def test_evaluate_text_refuses_files_and_text_together(capsys):
    assert main(["evaluate", "examples/grounded_exercise_bp.yaml", "--text", str(TEXT)]) == 1
    assert "give SNO files or --text FILE..., not both" in capsys.readouterr().err
    assert main(["evaluate", "--text", "examples/grounded_exercise_bp.yaml"]) == 1
    assert ("grounded_exercise_bp.yaml: the text to draft from must be .txt or .md (got '.yaml'); an SNO file is "
            "scored with `cns evaluate FILE`") in capsys.readouterr().err
    assert main(["evaluate"]) == 1
    assert "give SNO files or folders, or --text FILE" in capsys.readouterr().err


@pytest.mark.parametrize("args", [["extract", "--help"], ["evaluate", "--help"]])
def test_help_names_the_text_options(args, capsys):
    with pytest.raises(SystemExit):
        main(args)
    assert "--question" in capsys.readouterr().out
