"""The "Agreement with you" panel and the calibration controls of the Engrams page, without Streamlit."""

from __future__ import annotations

from typing import Any, Sequence

from cns_core.agents.agreement import MIN_READABLE, ScoreAgreement

__all__ = ["agreement_rows", "agreement_summary", "export_bytes", "calibrate_message", "revert_message"]


def agreement_rows(results: Sequence[ScoreAgreement]) -> list[dict[str, Any]]:
    """One table row per score: its calls, accuracy with interval, AUC and confusion counts."""
    rows = []
    for r in results:
        acc = "–" if r.accuracy is None else f"{r.accuracy:.2f} ({r.interval[0]:.2f}–{r.interval[1]:.2f})"
        rows.append({"score": r.name, "calls": f"{r.n} of {r.marked}",
                     "accuracy (95% interval)": "too few to read" if r.too_few else acc,
                     "AUC": "too few to read" if r.auc_n < MIN_READABLE or r.auc is None else f"{r.auc:.2f}",
                     "right, person right": r.confusion["right/right"],
                     "right, person wrong": r.confusion["right/wrong"],
                     "wrong, person right": r.confusion["wrong/right"],
                     "wrong, person wrong": r.confusion["wrong/wrong"]})
    return rows


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
    """The whole export (:mod:`cns_core.export`) as bytes for a download button."""
    from cns_core.export import export_rows, render_export

    return "".join(render_export(export_rows(memory), fmt)).encode("utf-8")


def _configured_threshold() -> float:
    """``verdict.correct_at`` as config/memory.yaml sets it (no calibration applied)."""
    from cns_core.agents.answer_verdict import VerdictSettings
    from cns_core.memory import memory_settings

    return VerdictSettings.from_config(dict(memory_settings().get("verdict") or {})).correct_at


def calibrate_message(marked: Sequence[Any]) -> str:
    """Fit the verdict's threshold to the marked engrams, store it as the active version, and say what
    changed (before and after); ValueError when there is too little to fit."""
    from cns_core.agents import verdict_calibration as vc

    fitted = vc.save_calibration(vc.fit_to_engrams(marked, _configured_threshold()))
    return (f"Calibration version {fitted.version} is active: {fitted.describe()}. Run cns trust-backfill to "
            "re-judge the stored answers; revert to undo.")


def revert_message() -> str:
    """Set the active calibration aside and say what is in use now."""
    from cns_core.agents import verdict_calibration as vc

    before = vc.active_calibration()
    now = vc.revert_calibration()
    where = f"version {now.version} (threshold {now.threshold:.3f})" if now else \
        f"the configured threshold {_configured_threshold():.3f}"
    return (f"Calibration version {before.version if before else '?'} set aside; the answer verdict now uses "
            f"{where}. Run cns trust-backfill to re-judge the stored answers.")
