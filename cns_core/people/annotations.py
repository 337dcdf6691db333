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
import json
from pathlib import Path
from typing import Any, Mapping, Sequence

from cns_core.engrams import (AGREEMENTS, HUMAN_KEYS, HUMAN_PREFIX, HUMAN_VERDICTS, MAX_NOTE_CHARS, MAX_WHO_CHARS,
                              Annotation)

__all__ = ["HUMAN_PREFIX", "HUMAN_KEYS", "HUMAN_VERDICTS", "AGREEMENTS", "MAX_NOTE_CHARS", "MAX_WHO_CHARS",
           "MAX_FILE_BYTES", "MAX_FILE_ROWS", "Annotation", "read_annotation_file", "parse_annotations"]

MAX_FILE_BYTES = 5_000_000
MAX_FILE_ROWS = 20_000


def parse_annotations(rows: Sequence[Mapping[str, Any]], who: str = "", where: str = "row") -> list[Annotation]:
    """Annotations from ``id``/``verdict``/``note`` (``who`` optional) mappings; every row is checked and
    the first problem raises ValueError naming the row and field. A repeated id is an error too (which
    of the two would the person mean?)."""
    if len(rows) > MAX_FILE_ROWS:
        raise ValueError(f"{len(rows):,} annotations, at most {MAX_FILE_ROWS:,} at once")
    out: list[Annotation] = []
    seen: dict[str, int] = {}
    for n, row in enumerate(rows, start=1):
        if not isinstance(row, Mapping):
            raise ValueError(f"{where} {n}: expected an object with id, verdict, note; got {type(row).__name__}")
        unknown = sorted(set(map(str, row)) - {"id", "verdict", "note", "who"})
        if unknown:
            raise ValueError(f"{where} {n}: unknown field(s) {', '.join(unknown)} (known: id, verdict, note, who)")
        try:
            a = Annotation(row.get("id"), row.get("verdict"), row.get("note") or "", row.get("who") or who)
        except ValueError as exc:
            raise ValueError(f"{where} {n}: {exc}") from None
        if a.id in seen:
            raise ValueError(f"{where} {n}: id {a.id!r} repeats {where.rsplit(' ', 1)[-1]} {seen[a.id]}")
        seen[a.id] = n
        out.append(a)
    return out


def read_annotation_file(path: str | Path, who: str = "") -> list[Annotation]:
    """Every annotation of a CSV (header ``id,verdict,note``) or JSONL file (one object a line), checked
    whole: a file over :data:`MAX_FILE_BYTES`, of another kind, or with one bad row raises ValueError."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"--file {path}: no such file")
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise ValueError(f"--file {path}: {size:,} bytes, at most {MAX_FILE_BYTES:,} allowed")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"--file {path}: not UTF-8 text") from None
    suffix = path.suffix.lower()
    if suffix == ".csv":
        reader = csv.DictReader(io.StringIO(text))
        missing = {"id", "verdict"} - set(reader.fieldnames or ())
        if missing:
            raise ValueError(f"--file {path}: the CSV header lacks {', '.join(sorted(missing))} "
                             "(expected id,verdict,note)")
        rows = []
        for row in reader:
            if None in row:
                raise ValueError(f"{path} line {reader.line_num}: more values than header columns")
            rows.append(row)
        return parse_annotations(rows, who, f"{path} row")
    if suffix in (".jsonl", ".ndjson"):
        rows = []
        for n, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path} line {n}: not JSON ({exc.msg})") from None
        return parse_annotations(rows, who, f"{path} line")
    raise ValueError(f"--file {path}: expected a .csv or .jsonl file, got {suffix or 'no extension'!r}")
