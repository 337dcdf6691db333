"""Stage 9: the hook's JSONL log (spec section 17), one line per proposition.

Lines carry the spec's fields -- tick, chain_id, p_id, entail, contradict,
uncertainty, types, drift_facets, coherence_chain, contradiction_density,
blocked, plus the chain's ``latency_ms``, ``evidence_pairs`` and ``model_pairs``
(pairs compared, and those the model scored: the page counts who judged each
chain) -- with floats rounded to four places ("compress fields if large") and
lists capped. Other events (``error`` from the crash fail-safe,
``quarantine`` / ``release`` / ``calibration``) are lines with an ``event`` key
instead of ``p_id``. The file rotates to ``<name>.1`` past ``max_bytes`` so a
long-running loop never fills the disk.

A chain's lines also carry ``text_sha``, a digest of the text checked, and a chain is logged once per
(chain id, text): a turn checked again after a restart (the demo write resumed after a stop, a journal
replayed after a kill -9; it was checked but not stored) adds no second record. What was logged is read
back from the log's last megabyte when the hook starts (:meth:`CoherenceLog.resume`).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any, Iterator

from cns_core.coherence.schemas import HookResult

__all__ = ["LOG_FIELDS", "CoherenceLog", "read_log", "text_digest"]

LOG_FIELDS: tuple[str, ...] = ("tick", "chain_id", "p_id", "entail", "contradict", "uncertainty", "types",
                               "drift_facets", "coherence_chain", "contradiction_density", "blocked")
_MAX_LIST = 16
_PROBLEMS_NAMED = 20       # damaged lines named one by one when reading; the rest are counted
_TICK_TAIL = 65_536        # bytes read back for the last tick
_RESUME_TAIL = 1_000_000   # bytes read back for the chains already logged (some 4,000 lines)
_LOGGED_KEPT = 100_000     # (chain id, text) pairs remembered; the oldest are forgotten first


def text_digest(text: str) -> str:
    """A short digest of a chain's checked text: the log's ``text_sha``, what makes a record one turn's."""
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:16]


def _r(value: float) -> float:
    return round(float(value), 4)


class CoherenceLog:
    """Appends JSON lines to one file; thread-safe; keeps the handle open between writes."""

    def __init__(self, path: str | Path, max_bytes: int = 50_000_000):
        self.path = Path(path)
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._handle = None
        self._logged: OrderedDict[tuple[str, str], None] = OrderedDict()   # (chain id, text_sha) logged

    def _torn(self) -> bool:
        try:
            with self.path.open("rb") as handle:
                if handle.seek(0, 2) == 0:
                    return False
                handle.seek(-1, 2)
                return handle.read(1) != b"\n"
        except OSError:
            return False

    def _tail_records(self, tail_bytes: int, until_found: bool) -> list[dict[str, Any]]:
        """The records in the log's last ``tail_bytes`` (the rotated ``.1`` too: when ``until_found``, only if the
        log has none; else for what the log is short of). Damaged lines and a torn last line are skipped."""
        records: list[dict[str, Any]] = []
        budget = tail_bytes
        for path in (self.path, self.path.with_name(self.path.name + ".1")):
            if budget <= 0 or (until_found and records):
                break
            try:
                with path.open("rb") as handle:
                    size = handle.seek(0, 2)
                    handle.seek(max(0, size - budget))
                    lines = handle.read().split(b"\n")[1 if size > budget else 0:]
            except OSError:
                continue
            budget -= size
            found = []
            for line in lines:
                try:
                    record = json.loads(line) if line.strip() else None
                except (ValueError, RecursionError):
                    continue
                if isinstance(record, dict):
                    found.append(record)
            records = found + records
        return records

    @staticmethod
    def _max_tick(records: list[dict[str, Any]]) -> int:
        ticks = [r.get("tick") for r in records]
        return max((t for t in ticks if isinstance(t, int) and not isinstance(t, bool)), default=0)

    def last_tick(self, tail_bytes: int = _TICK_TAIL) -> int:
        """The highest tick in the log's last ``tail_bytes`` (the rotated ``.1`` when the log is empty or
        gone), 0 when there is none: a hook started again, after a stop or a kill -9, goes on counting
        from there instead of writing ticks 1, 2, ... a second time. Damaged lines are skipped."""
        return self._max_tick(self._tail_records(tail_bytes, until_found=True))

    def resume(self, tail_bytes: int = _RESUME_TAIL) -> int:
        """Read back what a hook before this one logged: remembers the (chain id, ``text_sha``) of the chains in
        the log's last ``tail_bytes`` (so a turn checked again is not logged again, see the module doc) and
        returns the last tick (:meth:`last_tick`)."""
        records = self._tail_records(tail_bytes, until_found=False)
        with self._lock:
            for r in records:
                if isinstance(r.get("chain_id"), str) and isinstance(r.get("text_sha"), str) and "event" not in r:
                    self._remember((r["chain_id"], r["text_sha"]))
        return self._max_tick(records)

    def _remember(self, key: tuple[str, str]) -> None:
        self._logged[key] = None
        self._logged.move_to_end(key)
        if len(self._logged) > _LOGGED_KEPT:
            self._logged.popitem(last=False)

    def _write(self, records: list[dict[str, Any]], once: tuple[str, str] | None = None) -> bool:
        """Append ``records``; with ``once`` (a chain id and its text's digest), only if not logged before.
        Whether they were written."""
        text = "".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in records)
        with self._lock:
            if once is not None and once in self._logged:
                return False
            if self._handle is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._handle = open(self.path, "a", encoding="utf-8")
                if self._torn():              # a write cut short (kill -9): the next line starts on its own
                    self._handle.write("\n")
            self._handle.write(text)
            self._handle.flush()
            if self.max_bytes and self._handle.tell() > self.max_bytes:
                self._handle.close()
                self.path.replace(self.path.with_name(self.path.name + ".1"))
                self._handle = None
            if once is not None:
                self._remember(once)
        return True

    def write_result(self, result: HookResult, text_sha: str | None = None) -> bool:
        """One line per proposition (a chain with no proposition still gets one line, p_id null). With
        ``text_sha`` (:func:`text_digest` of the text checked) the chain is logged once per text: False when
        its lines are in the log already."""
        m = result.chain_metrics
        shared = {**({"text_sha": text_sha} if text_sha else {}),
                  "coherence_chain": _r(m.coherence_chain), "contradiction_density": _r(m.contradiction_density),
                  "blocked": bool(result.blocked), "latency_ms": round(float(result.latency_ms), 1),
                  "evidence_pairs": len(result.pairs), "model_pairs": result.model_pairs}
        records = [{"tick": result.tick, "chain_id": result.chain_id, "p_id": tag.p_id, "entail": _r(tag.entail),
                    "contradict": _r(tag.contradict), "uncertainty": _r(tag.uncertainty),
                    "types": list(tag.contradiction_types)[:_MAX_LIST],
                    "drift_facets": list(tag.drift_facets)[:_MAX_LIST], **shared}
                   for tag in result.prop_tags]
        if not records:
            records = [{"tick": result.tick, "chain_id": result.chain_id, "p_id": None, "entail": 0.0,
                        "contradict": 0.0, "uncertainty": 1.0, "types": [], "drift_facets": [], **shared}]
        if result.degraded:
            for r in records:
                r["degraded"] = list(result.degraded)
        return self._write(records, (result.chain_id, text_sha) if text_sha else None)

    def write_event(self, event: str, tick: int, chain_id: str | None = None, **fields: Any) -> None:
        """A non-proposition line: ``{"event": ..., "tick": ..., "chain_id": ..., "time": ..., ...}``."""
        record = {"event": event, "tick": tick, "chain_id": chain_id, "time": round(time.time(), 3)}
        record.update({k: (str(v)[:2000] if isinstance(v, str) else v) for k, v in fields.items()})
        self._write([record])

    def close(self) -> None:
        with self._lock:
            if self._handle is not None:
                self._handle.close()
                self._handle = None


def read_log(path: str | Path, problems: list[str] | None = None, max_line: int = 1_000_000
             ) -> Iterator[dict[str, Any]]:
    """The records of a log file. A damaged line (not UTF-8, not JSON, longer than ``max_line`` bytes) is
    skipped, never the end of the stream: ``problems`` (when given) collects one line per damaged line,
    naming the file and the line number (the first 20; then a count). A torn last line, a write in
    progress, is skipped silently."""
    path = Path(path)
    if not path.is_file():
        return
    bad = 0

    def note(number: int, what: str) -> None:
        nonlocal bad
        bad += 1
        if problems is not None and bad <= _PROBLEMS_NAMED:
            problems.append(f"{path} line {number}: {what}; skipped")

    with path.open("rb") as handle:
        number = 0
        while True:
            raw = handle.readline(max_line + 1)
            if not raw:
                break
            number += 1
            if len(raw) > max_line and not raw.endswith(b"\n"):
                while raw and not raw.endswith(b"\n"):        # the rest of the over-long line
                    raw = handle.readline(max_line + 1)
                note(number, f"longer than {max_line:,} bytes")
                continue
            try:
                line = raw.decode("utf-8").strip()
            except UnicodeDecodeError as exc:
                note(number, f"not UTF-8 text (byte {exc.start})")
                continue
            if not line:
                continue
            try:
                yield json.loads(line)
            except (json.JSONDecodeError, RecursionError):
                if raw.endswith(b"\n"):      # a complete line that is not JSON: damage, not a write in progress
                    note(number, "not a JSON record")
    if problems is not None and bad > _PROBLEMS_NAMED:
        problems.append(f"{path}: {bad - _PROBLEMS_NAMED} more damaged line(s) skipped")
