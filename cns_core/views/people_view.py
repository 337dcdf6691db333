"""The "Agreement with you" panel and the calibration controls of the Engrams page, without Streamlit."""

from __future__ import annotations

from typing import Any, Sequence

from cns_core.judging.agreement import MIN_READABLE, ScoreAgreement

__all__ = ["agreement_rows", "confusion_rows", "agreement_tables", "agreement_summary", "export_bytes"]


def agreement_rows(results: Sequence[ScoreAgreement]) -> list[dict[str, Any]]:
    """One table row per score: its calls, accuracy with interval and AUC."""
    rows = []
    for r in results:
        acc = "–" if r.accuracy is None else f"{r.accuracy:.2f} ({r.interval[0]:.2f}–{r.interval[1]:.2f})"
        rows.append({"score": r.name, "calls": f"{r.n} of {r.marked}",
                     "accuracy (95% interval)": "too few to read" if r.too_few else acc,
                     "AUC": "too few to read" if r.auc_n < MIN_READABLE or r.auc is None else f"{r.auc:.2f}"})
    return rows


def confusion_rows(results: Sequence[ScoreAgreement]) -> list[dict[str, Any]]:
    """One table row per score: how its calls met the person's (its own table, so neither is wider than the page:
    one table of eight columns left its right columns off the page until scrolled)."""
    return [{"score": r.name, "right, person right": r.confusion["right/right"],
             "right, person wrong": r.confusion["right/wrong"], "wrong, person right": r.confusion["wrong/right"],
             "wrong, person wrong": r.confusion["wrong/wrong"]} for r in results]


def agreement_tables(results: Sequence[ScoreAgreement]) -> list[list[dict[str, Any]]]:
    """The Agreement panel's tables, in order: accuracy and AUC, then the confusion counts."""
    return [agreement_rows(results), confusion_rows(results)]


def agreement_summary(results: Sequence[ScoreAgreement]) -> str:
    """The answer to "which score should I trust on my data?" in one sentence."""
    readable = [r for r in results if not r.too_few and r.accuracy is not None]
    marked = results[0].marked if results else 0
    if not readable:
        return (f"{marked} answer(s) marked correct or incorrect: too few to read (each score needs "
                f"{MIN_READABLE} it made a call on).")
    best = max(readable, key=lambda r: r.accuracy)
    return (f"On your {marked} marked answers the {best.name} agrees with you most often "
            f"({best.accuracy:.0%} of its {best.n} calls).")


def export_bytes(memory: Any, fmt: str) -> bytes:
    """The whole export (:mod:`cns_core.people.export`) as bytes for a download button."""
    from cns_core.people.export import export_rows, render_export

    return "".join(render_export(export_rows(memory), fmt)).encode("utf-8")

