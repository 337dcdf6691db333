"""People's verdicts on stored answers: correct, incorrect or unsure, with who, when and a note.

The machine's scores (the judge's grade, the answer verdict, the Trust Score) are only worth what they
agree with a person who reads the answer. A person's verdict is stored on the engram under ``human_*``
keys (:data:`HUMAN_KEYS`), owned by the memory like ``critic_*`` and ``trust_*``: a turn's writer cannot
set them, a Trust backfill never touches them, a rewrite of the turn keeps them while its text is
unchanged (a new answer has not been read by anyone).

Everything here is checked before anything is written: a file of annotations with one bad row changes
nothing (:func:`read_annotation_file`, :meth:`cns_core.memory.MemoryService.record_annotations`).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from cns_core.bounds import InputTooLarge, jsonl_records, read_bounded, regular_file_problem
from cns_core.engrams import (AGREEMENTS, HUMAN_KEYS, HUMAN_PREFIX, HUMAN_VERDICTS, MAX_NOTE_CHARS, MAX_WHO_CHARS,
                              Annotation)

__all__ = ["HUMAN_PREFIX", "HUMAN_KEYS", "HUMAN_VERDICTS", "AGREEMENTS", "MAX_NOTE_CHARS", "MAX_WHO_CHARS",
           "MAX_FILE_BYTES", "MAX_FILE_ROWS", "Annotation", "AnnotationFileError", "read_annotation_file",
           "parse_annotations"]

MAX_FILE_BYTES = 5_000_000
MAX_FILE_ROWS = 20_000


class AnnotationFileError(ValueError):
    """Every problem of a set of annotations at once (each naming its line and field), and the annotations
    that were fine with where they stand (``valid``: ``(label, Annotation)``), so a caller can check those
    against the memory too and report everything in one go."""

    def __init__(self, problems: Sequence[str], valid: Sequence[tuple[str, Annotation]] = ()):
        self.problems = list(problems)
        self.valid = list(valid)
        shown = self.problems[:_PROBLEMS_SHOWN]
        more = len(self.problems) - len(shown)
        super().__init__(f"{len(self.problems)} problem(s); nothing was written:\n"
                         + "\n".join(f"  {p}" for p in shown) + (f"\n  ... and {more} more" if more else ""))


_PROBLEMS_SHOWN = 50
_MAX_JSON_DEPTH = 8          # an annotation is one flat object


def _labelled(rows: Sequence[Mapping[str, Any] | tuple[str, Any]], who: str,
              where: str) -> tuple[list[tuple[str, Annotation]], list[str]]:
    """Each row checked: ``(label, Annotation)`` of the good ones and one problem per bad one."""
    out: list[tuple[str, Annotation]] = []
    problems: list[str] = []
    seen: dict[str, str] = {}
    for n, item in enumerate(rows, start=1):
        label, row = item if isinstance(item, tuple) else (f"{where} {n}", item)
        if not isinstance(row, Mapping):
            problems.append(f"{label}: expected an object with id, verdict, note; got {type(row).__name__}")
            continue
        unknown = sorted(set(map(str, row)) - {"id", "verdict", "note", "who"})
        if unknown:
            problems.append(f"{label}: unknown field(s) {', '.join(unknown)} (known: id, verdict, note, who)")
            continue
        try:
            a = Annotation(row.get("id"), row.get("verdict"), row.get("note") or "", row.get("who") or who)
        except ValueError as exc:
            problems.append(f"{label}: {exc}")
            continue
        if a.id in seen:
            problems.append(f"{label}: id {a.id!r} repeats {' '.join(seen[a.id].split(' ')[-2:])}")
            continue
        seen[a.id] = label
        out.append((label, a))
    return out, problems


def parse_annotations(rows: Sequence[Mapping[str, Any] | tuple[str, Any]], who: str = "",
                      where: str = "row") -> list[Annotation]:
    """Annotations from ``id``/``verdict``/``note`` (``who`` optional) mappings, each checked; every problem
    is raised together (:class:`AnnotationFileError`), each naming the row (``where N``, or the label given
    as ``(label, row)``) and field. A repeated id is an error too (which of the two would the person mean?)."""
    if len(rows) > MAX_FILE_ROWS:
        raise ValueError(f"{len(rows):,} annotations, at most {MAX_FILE_ROWS:,} at once")
    labelled, problems = _labelled(rows, who, where)
    if problems:
        raise AnnotationFileError(problems, labelled)
    return [a for _, a in labelled]


def _csv_rows(text: str, path: Path) -> tuple[list[tuple[str, dict[str, Any]]], list[str]]:
    """``(line label, row)`` of each CSV record (labelled by the line it starts on) and the problems
    of the file's structure. ``strict``: a quote never closed is an error at the line it opened on,
    not a note that swallows every row after it."""
    reader = csv.reader(io.StringIO(text), strict=True)
    rows: list[tuple[str, dict[str, Any]]] = []
    problems: list[str] = []
    header: list[str] | None = None
    while True:
        line = reader.line_num + 1
        try:
            values = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            where = f"{path} line {line}"
            problems.append(f"{where}: a quote opened on this line is never closed (the rest of the file would "
                            f"become this row's note)" if "end of data" in str(exc) else f"{where}: {exc}")
            break
        if header is None:
            header = [v.strip() for v in values]
            missing = {"id", "verdict"} - set(header)
            if missing:
                problems.append(f"--file {path}: the CSV header lacks {', '.join(sorted(missing))} "
                                "(expected id,verdict,note)")
                break
            continue
        if not any(v.strip() for v in values):
            continue
        if len(values) > len(header):
            problems.append(f"{path} line {line}: {len(values)} values, more than the {len(header)} header columns")
            continue
        rows.append((f"{path} line {line}", dict(zip(header, values))))
    return rows, problems


def _jsonl_rows(data: bytes, path: Path) -> tuple[list[tuple[str, Any]], list[str]]:
    """``(line label, object)`` of each non-blank line; a line that is not JSON, nested too deep or holding
    a number too long is a problem naming it (:func:`~cns_core.bounds.jsonl_records`, as ``cns replay``)."""
    rows: list[tuple[str, Any]] = []
    problems: list[str] = []
    for n, value, problem in jsonl_records(io.BytesIO(data), _MAX_JSON_DEPTH, MAX_FILE_BYTES):
        if problem:
            problems.append(f"{path} line {n}: {problem}")
        else:
            rows.append((f"{path} line {n}", value))
    return rows, problems


def read_annotation_file(path: str | Path, who: str = "",
                         unknown_ids: Callable[[list[str]], list[str]] | None = None) -> list[Annotation]:
    """Every annotation of a CSV (header ``id,verdict,note``; a spreadsheet's byte-order mark is fine) or
    JSONL file (one object a line), checked whole: a file over :data:`MAX_FILE_BYTES`, of another kind or
    not a regular file raises ValueError; every bad row, and with ``unknown_ids`` (the memory's
    :meth:`~cns_core.memory.MemoryService.unknown_ids`) every id naming no engram, is listed in one
    :class:`AnnotationFileError`, so one run shows all that is wrong."""
    path = Path(path)
    problem = regular_file_problem(path)
    if problem:
        raise ValueError(f"--file {path}: {problem}")
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".jsonl", ".ndjson"):
        raise ValueError(f"--file {path}: expected a .csv or .jsonl file, got {suffix or 'no extension'!r}")
    try:
        data = read_bounded(path, MAX_FILE_BYTES)
    except InputTooLarge:
        raise ValueError(f"--file {path}: {path.stat().st_size:,} bytes, at most {MAX_FILE_BYTES:,} allowed") from None
    except OSError as exc:
        raise ValueError(f"--file {path}: cannot be read: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"--file {path}: not UTF-8 text (byte {exc.start})") from None
    rows, problems = _csv_rows(text, path) if suffix == ".csv" else _jsonl_rows(data, path)
    if len(rows) > MAX_FILE_ROWS:
        raise ValueError(f"--file {path}: {len(rows):,} annotations, at most {MAX_FILE_ROWS:,} at once")
    labelled, row_problems = _labelled(rows, who, "row")
    problems += row_problems
    if unknown_ids is not None and labelled:
        missing = set(unknown_ids([a.id for _, a in labelled]))
        problems += [f"{label}: no engram has the id {a.id!r}" for label, a in labelled if a.id in missing]
    if problems:
        raise AnnotationFileError(sorted(problems, key=_line_order), labelled)
    return [a for _, a in labelled]


def _line_order(problem: str) -> tuple[int, str]:
    """Problems in the order of the file's lines (those naming no line first)."""
    head, _, rest = problem.partition(": ")
    number = head.rsplit(" ", 1)[-1]
    return (int(number) if " line " in head and number.isdigit() else 0, problem)
