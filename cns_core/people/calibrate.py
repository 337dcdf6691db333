"""Fitting the answer verdict to a person's verdicts from the memory, and undoing it, in words.

The command line (``cns calibrate``) and the Engrams page's buttons say the same thing the same way:
both call these, which read the marked engrams, fit (:mod:`cns_core.agents.verdict_calibration`),
store a new version and report the threshold before and after.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from cns_core.agents import verdict_calibration as vc
from cns_core.agents.answer_trust import AnswerScorer, rejudge
from cns_core.agents.answer_verdict import VerdictSettings
from cns_core.engrams import HUMAN_VERDICTS, Engram
from cns_core.memory import memory_settings

__all__ = ["MAX_ANNOTATED", "annotated_engrams", "calibrate_message", "revert_message", "relabel_stored"]

MAX_ANNOTATED = 50_000       # marked engrams read for agreement and calibration (a person marks far fewer)


def annotated_engrams(memory: Any) -> list[Engram]:
    """Every engram a person marked (at most :data:`MAX_ANNOTATED`, else ValueError saying so)."""
    ids = memory.ids_matching({"human_verdict": {"$in": list(HUMAN_VERDICTS)}}, None)
    if len(ids) > MAX_ANNOTATED:
        raise ValueError(f"{len(ids):,} marked answers; at most {MAX_ANNOTATED:,} are read at once")
    return memory.get(ids) if ids else []


def _configured_threshold() -> float:
    """``verdict.correct_at`` as config/memory.yaml sets it (no calibration applied)."""
    return VerdictSettings.from_config(dict(memory_settings().get("verdict") or {})).correct_at


def calibrate_message(marked: Sequence[Any]) -> str:
    """Fit the verdict's threshold to the marked engrams, store it as the active version, and say what
    changed (before and after); ValueError when there is too little to fit."""
    fitted = vc.save_calibration(vc.fit_to_engrams(marked, _configured_threshold()))
    return (f"Calibration version {fitted.version} is active: {fitted.describe()}. The stored answers' verdicts "
            "are judged again under it; revert to undo.")


def revert_message() -> str:
    """Set the active calibration aside and say what is in use now."""
    before = vc.active_calibration()
    now = vc.revert_calibration()
    where = f"version {now.version} (threshold {now.threshold:.3f})" if now else \
        f"the configured threshold {_configured_threshold():.3f}"
    return (f"Calibration version {before.version if before else '?'} set aside; the answer verdict now uses "
            f"{where}. The stored answers' verdicts are judged again under it.")


def relabel_stored(memory: Any, on_progress: Callable[[int, int], None] | None = None) -> str:
    """Judge the stored answers' verdicts again under the threshold now in force (after a calibration is
    fitted or reverted), so badges, filters and the agreement table follow at once; says what it did."""
    report = rejudge(memory, AnswerScorer(), on_progress=on_progress)
    return (f"{report.scored:,} stored verdict(s) judged again under threshold {VerdictSettings.from_config().correct_at:.3f}"
            f" in {report.elapsed_s:.0f} s ({report.skipped:,} answer(s) without a Trust Score left as they are).")
