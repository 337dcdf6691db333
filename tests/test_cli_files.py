"""`cns meta` and `cns evaluate` on files that are not what they seem (issue 44, items 2, 3 and 8):
a bad file is named with its problem and never stops the others; nothing waits on a pipe."""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path

import pytest

from cns_core.cli import main

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
GOOD = EXAMPLES / "grounded_exercise_bp.yaml"
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10"


def hostile_files(folder: Path) -> dict[str, Path]:
    """A 6,000-digit integer, a PNG and a named pipe nobody writes to."""
    huge = folder / "hugeint.json"
    huge.write_text('{"id": "s", "hypothesis": "c0", "weight": ' + "7" * 6000 + "}")
    png = folder / "picture.png"
    png.write_bytes(PNG)
    fifo = folder / "pipe.json"
    os.mkfifo(fifo)
    return {"huge": huge, "png": png, "fifo": fifo}


def run_bounded(args: list[str], seconds: float = 60.0) -> int:
    """``cns ARGS`` in this process, failing (not hanging) when it does not return in time."""
    result: list[int] = []
    worker = threading.Thread(target=lambda: result.append(main(args)), daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"cns {' '.join(args)} still running after {seconds:g} s"
    return result[0]


def test_evaluate_names_each_hostile_file_and_waits_on_no_pipe(tmp_path, capsys):
    files = hostile_files(tmp_path)
    assert run_bounded(["evaluate", "--json", *map(str, files.values())], 20) == 1
    errors = {Path(e["file"]).name: e["problems"] for e in json.loads(capsys.readouterr().out)["errors"]}
    assert errors == {"hugeint.json": ["file: a number of 6,000 digits (at most 1,000)"],
                      "picture.png": ["file: not an SNO file (binary); give a .json or .yaml SNO"],
                      "pipe.json": ["file: not a regular file (a named pipe)"]}


def test_meta_takes_a_folder_scores_the_good_file_and_names_the_bad_one(tmp_path, capsys):
    folder = tmp_path / "snos"
    folder.mkdir()
    shutil.copy(GOOD, folder / "good.yaml")
    (folder / "hugeint.json").write_text('{"id": ' + "1" * 6000 + "}")
    assert run_bounded(["meta", str(folder), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    [result] = data["results"]
    assert result["file"] == str(folder / "good.yaml") and result["sno_id"] == "exercise-blood-pressure"
    # the dashboard's population by default: the bundled examples, less the SNO itself
    assert result["population"]["origin"] == "examples" and result["population"]["size"] >= 4
    assert data["errors"] == [{"file": str(folder / "hugeint.json"),
                               "problems": ["file: a number of 6,000 digits (at most 1,000)"]}]


def test_meta_says_which_population_it_measured_novelty_against(capsys):
    assert run_bounded(["meta", str(GOOD)]) == 0
    assert "novelty against " in (out := capsys.readouterr().out) and "(the bundled examples)" in out


@pytest.mark.parametrize("text, problem", [
    ("id: 1" + "2" * 4999 + "\n", "a number of 5,000 digits (at most 1,000)"),
    ("[" * 70 + "]" * 70, "nested more than 64 levels deep"),
])
def test_yaml_and_json_numbers_and_nesting_are_bounded_before_python_refuses_them(tmp_path, text, problem):
    from cns_core.cli.evaluate import load_file

    path = tmp_path / "x.yaml"
    path.write_text(text)
    report = load_file(path)
    assert len(report.problems) == 1 and problem in report.problems[0]
