"""Every stored answer with what the machine and the people said about it, as CSV or JSONL.

One row per engram: the question, the answer, its reference, the judge's grade and feedback (``judge_grade``,
``judge_feedback``), the answer
verdict with p(answer right), the Trust Score, the person's verdict, and the settings fingerprint that
made the scores (``trust_settings``; every row has the column, empty when the answer was never scored),
so a row read months later still says under which settings it was scored.

What is written is safe to open: a CSV cell that a spreadsheet would run as a formula (starting with
``= + - @``, a tab or a carriage return: OWASP's CSV-injection list) is prefixed with ``'``; control
characters (a terminal's escape sequences, a bell) are written as visible escapes (``\x1b``) in every
text field of both formats, line breaks and tabs inside a text kept; times are ISO 8601 with the zone
(UTC), never raw epoch numbers.
"""

from __future__ import annotations

import csv
import io
import json
from datetime import datetime, timezone
from typing import Any, Iterable, Iterator, Sequence

from cns_core.bounds import printable
from cns_core.engrams import Engram

__all__ = ["EXPORT_COLUMNS", "EXPORT_FORMATS", "EXPORT_KINDS", "export_rows", "preference_rows", "reward_rows", "engram_row", "render_export", "clean_text",
           "iso_time"]

EXPORT_FORMATS = ("csv", "jsonl")
EXPORT_KINDS = ("preferences", "rewards")   # beside the answers: DPO pairs (JSONL), one reward per turn
# judge_grade / judge_feedback: the judge's grade (1-5) and words, stored as the engram's critic_score and
# critic_feedback (the critic-agent spec's names); exported under what they are, never as a "critic score".
# answer_verdict / answer_verdict_p_right: the answer verdict and its p(right), as every page names them (stored
# as the engram's trust_verdict and trust_verdict_score); answer_complete: of a correct answer, whether it says what
# its reference says (false: true but incomplete; empty where not judged).
EXPORT_COLUMNS = ("id", "timestamp", "session_id", "query", "answer", "reference", "judge_grade", "judge_feedback",
                  "answer_verdict", "answer_verdict_p_right", "answer_complete", "trust_score", "trust_settings", "human_verdict",
                  "human_note", "human_who", "human_at")
_CHUNK = 1000
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")          # OWASP: cells a spreadsheet may evaluate
_TIME_COLUMNS = ("timestamp", "human_at")


def clean_text(value: str) -> str:
    """``value`` with each control character written as a visible escape (``\x1b``): a file that is
    ``cat`` to a terminal cannot clear its screen or ring it. Line feeds and tabs stay."""
    return printable(value, keep="\t\n")


def iso_time(value: Any) -> Any:
    """Seconds since the epoch as ISO 8601 in UTC with its zone (``2026-11-26T22:56:29.120+00:00``)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return datetime.fromtimestamp(float(value), tz=timezone.utc).isoformat(timespec="milliseconds")
        except (OverflowError, OSError, ValueError):
            return None
    return value


def engram_row(e: Engram) -> dict[str, Any]:
    """The export row of one engram (every column present; None where it has no value)."""
    meta = e.metadata
    row: dict[str, Any] = {"id": e.id, "timestamp": e.timestamp, "session_id": e.session_id, "query": e.query,
                           "answer": e.answer, "reference": meta.get("reference"), "judge_grade": e.critic_score,
                           "judge_feedback": e.feedback or None, "answer_verdict": e.answer_verdict,
                           "answer_verdict_p_right": meta.get("trust_verdict_score"),
                           "answer_complete": e.answer_complete, "trust_score": e.trust_score,
                           "trust_settings": meta.get("trust_settings") or ""}
    row.update({k: meta.get(k) if e.human_verdict else None for k in EXPORT_COLUMNS if k.startswith("human_")})
    for key in _TIME_COLUMNS:
        row[key] = iso_time(row[key])
    return {k: clean_text(v) if isinstance(v, str) else v for k, v in row.items()}


def export_rows(memory: Any) -> Iterator[dict[str, Any]]:
    """Every engram's row, oldest first, read in chunks (the ids first: cheap)."""
    for e in memory.iter_engrams(_CHUNK):
        yield engram_row(e)


def preference_rows(memory: Any) -> Iterator[dict[str, Any]]:
    """The memory's preference pairs (:mod:`cns_core.memory.preferences`) as DPO rows, text made safe."""
    from cns_core.memory.preferences import preference_pairs

    for pair in preference_pairs(memory.iter_engrams(_CHUNK), memory.recall_settings):
        yield {k: clean_text(v) if isinstance(v, str) else v for k, v in pair.as_dict().items()}


def reward_rows(engrams: Iterable[Engram], settings: Any = None) -> Iterator[dict[str, Any]]:
    """One reward row per turn (:mod:`cns_core.memory.rewards`), text made safe."""
    from cns_core.memory.rewards import reward_of

    for e in engrams:
        yield {k: clean_text(v) if isinstance(v, str) else v for k, v in reward_of(e, settings).as_dict().items()}


def _cell(value: Any) -> Any:
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return "" if value is None else value


def render_export(rows: Iterator[dict[str, Any]], fmt: str,
                  columns: Sequence[str] = EXPORT_COLUMNS) -> Iterator[str]:
    """The rows as text chunks in ``fmt`` (csv with a header of ``columns``, or jsonl)."""
    if fmt not in EXPORT_FORMATS:
        raise ValueError(f"format: expected one of {', '.join(EXPORT_FORMATS)}, got {fmt!r}")
    if fmt == "jsonl":
        for row in rows:
            yield json.dumps(row, ensure_ascii=False) + "\n"
        return
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(columns))
    writer.writeheader()
    for row in rows:
        writer.writerow({k: _cell(v) for k, v in row.items()})
        if buffer.tell() > 1 << 16:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()
