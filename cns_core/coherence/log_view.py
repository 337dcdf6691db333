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

__all__ = ["LOG_COLUMNS", "default_log_path", "load_log", "filter_log", "chain_series", "LogSummary", "summarise",
           "stream_coverage"]

LOG_COLUMNS = ("tick", "chain_id", "p_id", "entail", "contradict", "uncertainty", "types", "drift_facets",
               "coherence_chain", "contradiction_density", "blocked", "latency_ms", "evidence_pairs", "model_pairs",
               "degraded",
               "event")



def default_log_path() -> Path:
    """Where the hook writes by default (``state_dir()/coherence.jsonl``)."""
    return state_dir() / "coherence.jsonl"


def load_log(path: str | Path | None = None, limit: int = 50_000) -> list[dict[str, Any]]:
    """The last ``limit`` records of the log, each with every column (missing ones None, lists joined)."""
    rows: list[dict[str, Any]] = []
    for rec in read_log(path or default_log_path()):
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
        if wanted and not wanted & {t.strip() for t in r["types"].split(",") if t.strip()}:
            continue
        if blocked is not None and r["blocked"] != blocked:
            continue
        out.append(r)
    return out


def _chain_rows(rows: Iterable[dict[str, Any]]) -> Iterable[dict[str, Any]]:
    """The first line of each checked chain (the chain's fields repeat on every line of it)."""
    seen: set[tuple[Any, str]] = set()
    for r in rows:
        if r.get("event") or r.get("coherence_chain") is None or not isinstance(r.get("tick"), int):
            continue
        key = (r["tick"], r["chain_id"])
        if key not in seen:
            seen.add(key)
            yield r


def chain_series(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One point per checked chain, in tick order: tick, chain_id, coherence_chain, contradiction_density, blocked."""
    out = [{"tick": r["tick"], "chain_id": r["chain_id"], "coherence_chain": float(r["coherence_chain"]),
            "contradiction_density": float(r.get("contradiction_density") or 0.0), "blocked": r["blocked"]}
           for r in _chain_rows(rows)]
    return sorted(out, key=lambda p: p["tick"])


@dataclass(frozen=True)
class LogSummary:
    chains: int
    propositions: int
    blocked_chains: int
    mean_coherence: float | None
    mean_density: float | None
    types: tuple[str, ...]


def summarise(rows: list[dict[str, Any]]) -> LogSummary:
    series = chain_series(rows)
    types = sorted({t.strip() for r in rows for t in r["types"].split(",") if t.strip()})
    n = len(series)
    return LogSummary(chains=n, propositions=sum(1 for r in rows if r.get("p_id")),
                      blocked_chains=sum(1 for p in series if p["blocked"]),
                      mean_coherence=sum(p["coherence_chain"] for p in series) / n if n else None,
                      mean_density=sum(p["contradiction_density"] for p in series) / n if n else None,
                      types=tuple(types))


def stream_coverage(rows: Iterable[dict[str, Any]], budget_ms: float) -> tuple[ModelCoverage, int]:
    """Chains of the log the model judged (it scored a pair), those the heuristics alone judged (over
    budget, no model) and those with nothing to compare; ``elapsed_ms`` is the chains' 95th-percentile
    time. Also returns how many chains were logged before the log recorded this: they are not counted."""
    model = heuristics = empty = unrecorded = 0
    times: list[float] = []
    for r in _chain_rows(rows):
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
