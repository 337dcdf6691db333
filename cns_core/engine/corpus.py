"""The Corpus view's data: a batch results table and what the dashboard draws from it.

Pure functions over the table :mod:`cns_core.engine.batch` writes (one row per SNO), so
the Corpus page only arranges widgets and charts. Distributions are computed
here on fixed bins over [0, 1] (the same bins for every critic and profile, so
charts compare), not left to the plotting library.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from cns_core.access import AccessError, Root, confine
from cns_core.bounds import excerpt, read_bounded
from cns_core.engine.batch import evaluate_corpus, read_results
from cns_core.config import replace_atomically, state_dir
from cns_core.critics.base import CRITIC_NAMES, in_critic_order
from cns_core.sno import SNO, SNOValidationError, load_snos

__all__ = [
    "load_results",
    "evaluate_folder",
    "FinishedRun",
    "latest_run",
    "folder_results_path",
    "progress_text",
    "critics_in",
    "profiles_in",
    "summary",
    "abstention_counts",
    "score_histograms",
    "trust_histograms",
    "conflict_frequencies",
    "corpus_table",
    "sno_for_row",
]


def load_results(path: str | Path) -> pd.DataFrame:
    """A results file (.parquet or .csv) from ``cns evaluate DIR --out FILE``; errors name the problem."""
    return read_results(path)


def folder_results_path(folder: str | Path) -> Path:
    """Where the dashboard keeps a folder's results: under the state dir, one file per folder."""
    key = hashlib.blake2b(str(Path(folder).resolve()).encode("utf-8"), digest_size=8).hexdigest()
    return state_dir() / "corpus" / f"{Path(folder).name or 'corpus'}-{key}.parquet"


def evaluate_folder(folder: str | Path, *, workers: int = 1, out: str | Path | None = None,
                    progress: bool = False, on_progress: Callable[[int, int], None] | None = None) -> pd.DataFrame:
    """Evaluate every SNO file in ``folder`` (resuming from the folder's results file);
    ``on_progress(done, total)`` follows the run SNO by SNO."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"{folder}: not a folder")
    results = Path(out) if out is not None else folder_results_path(folder)
    report = evaluate_corpus(folder, results, workers=workers, progress=progress, on_progress=on_progress)
    _record_finished(FinishedRun(results=str(results.resolve()), origin=str(folder), finished_at=time.time(),
                                 rows=len(report.frame)))
    return report.frame


@dataclass(frozen=True)
class FinishedRun:
    """A folder run that ran to its end: the Corpus page opens on the latest one."""

    results: str          # the results file
    origin: str           # the folder it evaluated (shown above the charts)
    finished_at: float    # seconds since the epoch
    rows: int


def _latest_path() -> Path:
    return state_dir() / "corpus" / "latest.json"


def _record_finished(run: FinishedRun) -> None:
    """Written only after a run returns, atomically: an interrupted run never becomes the latest."""
    with replace_atomically(_latest_path()) as tmp:
        tmp.write_text(json.dumps(run.__dict__), encoding="utf-8")


def latest_run() -> FinishedRun | None:
    """The latest folder run that finished (``make run``'s demo corpus among them), or None.

    None also when the record is unreadable, names a results file outside the folders a page may read
    (the record is a file like any other: its path is confined like a typed one), or that file is gone:
    the page then starts empty.
    """
    try:
        data = json.loads(read_bounded(_latest_path(), 64_000).decode("utf-8"))
        run = FinishedRun(results=str(confine(str(data["results"]), "latest.json's results file")),
                          origin=str(data["origin"]), finished_at=float(data["finished_at"]), rows=int(data["rows"]))
    except (OSError, ValueError, KeyError, TypeError):    # AccessError and InputTooLarge are ValueErrors
        return None
    return run if Path(run.results).is_file() else None


def progress_text(done: int, total: int) -> str:
    """The Corpus page's progress line."""
    return f"Evaluating: {done} of {total} SNO(s) done" if total else "Nothing to evaluate: every row is done"


def critics_in(frame: pd.DataFrame) -> list[str]:
    """Critics with a score column, canonical order first."""
    names = [c[len("score_"):] for c in frame.columns if c.startswith("score_")]
    return [n for n in CRITIC_NAMES if n in names] + [n for n in names if n not in CRITIC_NAMES]


def profiles_in(frame: pd.DataFrame) -> list[str]:
    """Weight profiles with a Trust Score column that holds at least one value."""
    return [c[len("trust_"):] for c in frame.columns if c.startswith("trust_") and frame[c].notna().any()]


def _parsed(value: object, empty: object) -> object:
    """A JSON cell; blank or missing (NaN in a table) reads as ``empty``."""
    return json.loads(value) if isinstance(value, str) and value.strip() else empty


def _evaluated(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows of SNOs that were evaluated (files that could not be read carry only an error)."""
    return frame[frame["error"].fillna("") == ""]


def summary(frame: pd.DataFrame) -> dict[str, float | int]:
    """Counts for the page header: SNOs, bad files or SNOs, incomplete Trust Scores, critic failures, conflicts."""
    ok = _evaluated(frame)
    failures = ok["failures"].map(lambda s: len(_parsed(s, {}))) if "failures" in ok else pd.Series(dtype=int)
    incomplete = (~ok["complete"].astype(bool)).sum() if "complete" in ok else (failures > 0).sum()
    return {
        "snos": int(len(ok)),
        "incomplete": int(incomplete),
        "errors": int(len(frame) - len(ok)),
        "critic_failures": int(failures.sum()) if len(failures) else 0,
        "with_conflicts": int((ok["n_conflicts"].fillna(0) > 0).sum()) if "n_conflicts" in ok else 0,
    }


def abstention_counts(frame: pd.DataFrame) -> dict[str, int]:
    """Critic -> how many evaluated SNOs it had nothing to judge in (its histogram leaves them out), canonical order."""
    ok = _evaluated(frame)
    counts: dict[str, int] = {}
    for text in ok.get("not_applicable", pd.Series(dtype=str)).fillna(""):
        for name in filter(None, str(text).split(",")):
            counts[name] = counts.get(name, 0) + 1
    return {n: counts[n] for n in in_critic_order(counts)}


def _histograms(frame: pd.DataFrame, columns: dict[str, str], key: str, bins: int) -> pd.DataFrame:
    if bins < 1:
        raise ValueError(f"bins must be at least 1 (got {bins})")
    edges = np.linspace(0.0, 1.0, bins + 1)
    rows = []
    ok = _evaluated(frame)
    for name, column in columns.items():
        values = pd.to_numeric(ok[column], errors="coerce").dropna().to_numpy()
        counts, _ = np.histogram(np.clip(values, 0.0, 1.0), bins=edges)
        for i, count in enumerate(counts):
            rows.append({key: name, "bin_start": edges[i], "bin_end": edges[i + 1], "count": int(count)})
    return pd.DataFrame(rows, columns=[key, "bin_start", "bin_end", "count"])


def score_histograms(frame: pd.DataFrame, bins: int = 10, critics: Sequence[str] | None = None) -> pd.DataFrame:
    """Per-critic score counts on ``bins`` equal bins over [0, 1] (1.0 falls in the last bin).

    A critic that failed on an SNO has no score there and is not counted.
    """
    names = list(critics) if critics is not None else critics_in(frame)
    return _histograms(frame, {n: f"score_{n}" for n in names}, "critic", bins)


def trust_histograms(frame: pd.DataFrame, bins: int = 10, profiles: Sequence[str] | None = None) -> pd.DataFrame:
    """Trust Score counts per weight profile on the same bins."""
    names = list(profiles) if profiles is not None else profiles_in(frame)
    return _histograms(frame, {n: f"trust_{n}" for n in names}, "profile", bins)


def conflict_frequencies(frame: pd.DataFrame) -> pd.DataFrame:
    """How often each critic pair disagrees (by more than the Meta-Critic's threshold) across the corpus.

    ``share`` is the fraction of evaluated SNOs with that conflict; ``mean_delta`` its mean gap.
    The pair is ordered: "grounding > logic" and "logic > grounding" read differently.
    """
    ok = _evaluated(frame)
    found: dict[tuple[str, str], list[float]] = {}
    for text in ok.get("conflicts", pd.Series(dtype=str)):
        for conflict in _parsed(text, []):
            found.setdefault((conflict["higher"], conflict["lower"]), []).append(float(conflict["delta"]))
    rows = [{"pair": f"{h} > {lo}", "higher": h, "lower": lo, "count": len(d), "share": len(d) / len(ok),
             "mean_delta": float(np.mean(d))} for (h, lo), d in found.items()]
    table = pd.DataFrame(rows, columns=["pair", "higher", "lower", "count", "share", "mean_delta"])
    return table.sort_values(["count", "pair"], ascending=[False, True], kind="stable").reset_index(drop=True)


def corpus_table(frame: pd.DataFrame, sort_by: str | None = None, ascending: bool = False,
                 profiles: Sequence[str] | None = None) -> pd.DataFrame:
    """The rows to list: id, Trust Scores, critic scores, conflicts, complete, then the text: title, failures,
    file, error. The numbers come first, so a table wider than the page is cut in its text, never in a number
    (a Trust Score cut at the page's edge read "0").

    ``profiles``: the Trust Score columns to list (default every profile of the table). ``complete`` is False
    where a critic failed: that row's Trust Scores leave it out. ``not_applicable`` names the critics that had
    nothing to judge in that SNO (their score cell is empty, their weight went to the critics that judged).

    ``sort_by`` is a column name (default: the first Trust Score column); unreadable
    files sort last whatever the order.
    """
    known = profiles_in(frame)
    trust = [f"trust_{p}" for p in (known if profiles is None else [p for p in profiles if p in known])]
    scores = [f"score_{c}" for c in critics_in(frame)]
    columns = ["sno_id", *trust, *scores, "n_conflicts", "complete", "not_applicable", "title", "failures", "file",
               "error"]
    table = frame[[c for c in columns if c in frame.columns]].copy()
    if "failures" in table:
        table["failures"] = table["failures"].map(lambda s: ", ".join(_parsed(s, {})))
    key = sort_by or (trust[0] if trust else "sno_id")
    if key not in table.columns:
        raise ValueError(f"sort_by: unknown column {key!r} (known: {', '.join(table.columns)})")
    return table.sort_values(key, ascending=ascending, na_position="last", kind="stable").reset_index(drop=True)


def sno_for_row(row: pd.Series | dict, roots: Sequence[Root] | None = None) -> tuple[str, SNO]:
    """The SNO behind a table row, re-read from its file, with a label for the session library.

    The row's ``file`` comes from a results table, which anyone may have written: it is confined to the
    folders a page may read (``roots``, default :func:`cns_core.access.allowed_roots`) like a typed path.
    Raises ``LookupError`` naming the file when it is outside them, gone, unreadable, or no longer holds
    that SNO.
    """
    file, sno_id = str(row["file"]), str(row["sno_id"])
    if not sno_id:
        raise LookupError(f"{excerpt(file, 200)}: this file could not be read, so there is no SNO to open")
    try:
        path = confine(file, "The results table's file", None if roots is None else list(roots))
    except AccessError as exc:
        raise LookupError(str(exc)) from None
    try:
        snos = load_snos(path)
    except SNOValidationError as exc:
        raise LookupError(f"{file}: cannot be read any more ({'; '.join(exc.problems[:3])})") from None
    for sno in snos:
        if sno.id == sno_id:
            return f"{sno.title or sno.id} · corpus", sno
    raise LookupError(f"{file}: holds no SNO with id {sno_id!r} any more")
