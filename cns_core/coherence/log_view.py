"""The Coherence page's view of the hook's JSONL log: rows, filters and chain metrics over time.

The log has one line per proposition; the chain metrics repeat on each line of a
chain, so the time series keeps the first line per (tick, chain) only.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from cns_core.coherence.log import read_log
from cns_core.coherence.schemas import ModelCoverage
from cns_core.config import state_dir

__all__ = ["LOG_COLUMNS", "default_log_path", "load_log", "filter_log", "ChainPoint", "LogSummary", "summarise",
           "chain_series", "chain_points", "stream_coverage", "NOT_COMPARED", "table_rows"]

NOT_COMPARED = "n/a"      # a chain's coherence when it had nothing to compare (logged as 0, no measurement)

LOG_COLUMNS = ("tick", "chain_id", "p_id", "entail", "contradict", "uncertainty", "types", "drift_facets",
               "coherence_chain", "contradiction_density", "blocked", "latency_ms", "evidence_pairs", "model_pairs",
               "degraded", "event")


def default_log_path() -> Path:
    """Where the hook writes by default (``state_dir()/coherence.jsonl``)."""
    return state_dir() / "coherence.jsonl"


def load_log(path: str | Path | None = None, limit: int = 50_000,
             problems: list[str] | None = None) -> list[dict[str, Any]]:
    """The last ``limit`` records of the log, each with every column (missing ones None, lists joined);
    damaged lines are skipped and named in ``problems`` (file and line)."""
    rows: list[dict[str, Any]] = []
    for rec in read_log(path or default_log_path(), problems):
        if not isinstance(rec, dict):
            continue
        row = {c: rec.get(c) for c in LOG_COLUMNS}
        for c in ("types", "drift_facets", "degraded"):
            row[c] = ", ".join(map(str, row[c])) if isinstance(row[c], list) else (row[c] or "")
        row["blocked"] = bool(row["blocked"])
        row["chain_id"] = "" if row["chain_id"] is None else str(row["chain_id"])
        rows.append(row)
        if len(rows) > 2 * limit:
            rows = rows[-limit:]
    return rows[-limit:]


def filter_log(rows: Iterable[dict[str, Any]], chain_id: str = "", types: Iterable[str] = (),
               blocked: bool | None = None) -> list[dict[str, Any]]:
    """Rows whose chain id contains ``chain_id`` (case-insensitive), that carry any of ``types``,
    and whose ``blocked`` equals ``blocked`` when given."""
    needle = chain_id.strip().lower()
    wanted = set(types)
    out = []
    for r in rows:
        if needle and needle not in r["chain_id"].lower():
            continue
        if wanted and not wanted & set(_listed(r["types"])):
            continue
        if blocked is not None and r["blocked"] != blocked:
            continue
        out.append(r)
    return out


def table_rows(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The log as the page's table shows it: a chain with nothing to compare (``evidence_pairs`` 0) has
    coherence and contradiction density n/a, as in the headline, never the 0 the hook logged; the
    others are shown with two decimals (one column type, so the table never mixes text and numbers)."""
    out = []
    for r in rows:
        row = dict(r)
        for key in ("coherence_chain", "contradiction_density"):
            value = r.get(key)
            row[key] = (NOT_COMPARED if r.get("evidence_pairs") == 0 else
                        f"{value:.2f}" if isinstance(value, (int, float)) and not isinstance(value, bool) else "")
        out.append(row)
    return out


def _listed(value: Any) -> list[str]:
    """The names in a list column: a list (raw log) or ``", "``-joined text (:func:`load_log`)."""
    items = value.split(",") if isinstance(value, str) else (value or [])
    return [n for n in (str(v).strip() for v in items) if n]


@dataclass(frozen=True)
class ChainPoint:
    """One checked chain. ``compared`` is False when it had nothing to compare with (no earlier engram
    or evidence: ``evidence_pairs`` 0): its logged coherence 0 is no measurement and is left out of the
    series, the means and the drift indicator (shown as n/a with a count)."""

    tick: int
    chain_id: str
    coherence: float
    drift: bool
    density: float = 0.0
    blocked: bool = False
    compared: bool = True


@dataclass(frozen=True)
class LogSummary:
    """What the Coherence page shows of a log, from one walk over it (:func:`summarise`)."""

    chains: int
    propositions: int
    blocked_chains: int
    mean_coherence: float | None
    mean_density: float | None
    types: tuple[str, ...]
    chain_rows: tuple[dict[str, Any], ...] = ()   # the first line of each checked chain, in log order
    points: tuple[ChainPoint, ...] = ()           # the same chains for the drift indicator
    lines: int = 0                                # every line read: one per proposition, plus event lines
    events: int = 0                               # lines that record an event (the hook started, ...), no chain

    def lines_note(self) -> str:
        """Why the log has more lines than chains: ``302 lines: 300 proposition lines of 300 chains, 2 events``."""
        other = self.lines - self.events - self.propositions
        parts = [f"{self.propositions:,} proposition line(s) of {self.chains:,} chain(s)"]
        if self.events:
            parts.append(f"{self.events:,} event line(s)")
        if other > 0:
            parts.append(f"{other:,} other line(s)")
        return f"{self.lines:,} lines: " + ", ".join(parts)

    @property
    def compared_points(self) -> tuple[ChainPoint, ...]:
        """The chains that had something to compare (their coherence is a measurement), in log order."""
        return tuple(p for p in self.points if p.compared)

    @property
    def uncompared(self) -> int:
        """Chains with nothing to compare: coherence n/a, left out of the series, means and indicator."""
        return len(self.points) - len(self.compared_points)

    @property
    def series(self) -> list[dict[str, Any]]:
        """One point per compared chain, in tick order: tick, chain_id, coherence_chain, contradiction_density,
        blocked."""
        out = [{"tick": p.tick, "chain_id": p.chain_id, "coherence_chain": p.coherence,
                "contradiction_density": p.density, "blocked": p.blocked} for p in self.compared_points]
        return sorted(out, key=lambda p: p["tick"])

    def coverage(self, budget_ms: float) -> tuple[ModelCoverage, int]:
        """Chains of the log the model judged (it scored a pair), those the heuristics alone judged (over
        budget, no model) and those with nothing to compare; ``elapsed_ms`` is the chains' 95th-percentile
        time. Also returns how many chains were logged before the log recorded this: they are not counted."""
        model = heuristics = empty = unrecorded = 0
        times: list[float] = []
        for r in self.chain_rows:
            pairs, scored = r.get("evidence_pairs"), r.get("model_pairs")
            if not (isinstance(pairs, int) and isinstance(scored, int)):
                unrecorded += 1
                continue
            model += scored > 0
            heuristics += pairs > 0 and scored == 0
            empty += pairs == 0
            if isinstance(r.get("latency_ms"), (int, float)):
                times.append(float(r["latency_ms"]))
        p95 = float(np.percentile(times, 95)) if times else 0.0
        return ModelCoverage(model, heuristics, empty, p95, budget_ms), unrecorded


def summarise(rows: Iterable[dict[str, Any]]) -> LogSummary:
    """The log in one walk. A checked chain is a (tick, chain_id) with an integer tick and a
    ``coherence_chain``; its fields repeat on each of its lines, so the first line stands for it,
    and it is a drift chain when any of its lines names a drift facet. Event lines are skipped.
    The means are over the compared chains only (see :class:`ChainPoint`)."""
    first: dict[tuple[int, str], dict[str, Any]] = {}
    drift: dict[tuple[int, str], bool] = {}
    propositions, types, lines, events = 0, set(), 0, 0
    for r in rows:
        lines += 1
        events += bool(r.get("event"))
        propositions += bool(r.get("p_id")) and not r.get("event")
        types.update(_listed(r.get("types")))
        if r.get("event") or r.get("coherence_chain") is None or not isinstance(r.get("tick"), int):
            continue
        key = (r["tick"], str(r.get("chain_id") or ""))
        first.setdefault(key, r)
        drift[key] = drift.get(key, False) or bool(_listed(r.get("drift_facets")))
    chain_rows = tuple(first.values())
    points = tuple(ChainPoint(t, c, float(r["coherence_chain"]), drift[t, c],
                              density=float(r.get("contradiction_density") or 0.0), blocked=bool(r["blocked"]),
                              compared=r.get("evidence_pairs") != 0)
                   for (t, c), r in first.items())
    measured = [p for p in points if p.compared]
    n = len(measured)
    return LogSummary(chains=len(points), propositions=propositions,
                      blocked_chains=sum(bool(r["blocked"]) for r in chain_rows),
                      mean_coherence=sum(p.coherence for p in measured) / n if n else None,
                      mean_density=sum(p.density for p in measured) / n if n else None,
                      types=tuple(sorted(types)), chain_rows=chain_rows, points=points, lines=lines, events=events)


def chain_series(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """:attr:`LogSummary.series` of ``rows``."""
    return summarise(rows).series


def chain_points(rows: Iterable[dict[str, Any]]) -> list[ChainPoint]:
    """One point per checked chain, in log order (:attr:`LogSummary.points`)."""
    return list(summarise(rows).points)


def stream_coverage(rows: Iterable[dict[str, Any]], budget_ms: float) -> tuple[ModelCoverage, int]:
    """:meth:`LogSummary.coverage` of ``rows``."""
    return summarise(rows).coverage(budget_ms)
