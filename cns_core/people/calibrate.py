"""Fitting the answer verdict to a person's verdicts from the memory, undoing it, and re-deciding the stored
verdicts under it, in words.

The command line (``cns calibrate``) and the Engrams page's buttons say the same thing the same way:
both call these, which read the marked engrams, fit (:mod:`cns_core.judging.verdict_calibration`),
store a new version and report the threshold before and after.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from cns_core.judging import verdict_calibration as vc
from cns_core.judging.answer_trust import AnswerScorer, BackfillReport, RelabelReport, rejudge, relabel
from cns_core.judging.answer_verdict import VerdictSettings, raw_scores
from cns_core.engrams import HUMAN_VERDICTS, Engram
from cns_core.memory import memory_settings

__all__ = ["MAX_ANNOTATED", "annotated_engrams", "CalibrationOutcome", "calibrate", "calibrate_message", "revert_message", "relabel_stored",
           "relabel_words", "threshold_words"]

MAX_ANNOTATED = 50_000       # marked engrams read for agreement and calibration (a person marks far fewer)


def annotated_engrams(memory: Any) -> list[Engram]:
    """Every engram a person marked (at most :data:`MAX_ANNOTATED`, else ValueError saying so)."""
    ids = memory.ids_matching({"human_verdict": {"$in": list(HUMAN_VERDICTS)}}, None)
    if len(ids) > MAX_ANNOTATED:
        raise ValueError(f"{len(ids):,} marked answers; at most {MAX_ANNOTATED:,} are read at once")
    return memory.get(ids) if ids else []


def _configured() -> VerdictSettings:
    """The verdict settings as config/memory.yaml sets them (no calibration applied)."""
    return VerdictSettings.from_config(dict(memory_settings().get("verdict") or {}))


@dataclass(frozen=True)
class CalibrationOutcome:
    """What a fit did: ``adopted`` (a new version is in force, the stored verdicts must be decided again) or
    not (nothing changed, nothing stored), and the words that say so."""

    adopted: bool
    message: str


def calibrate(marked: Sequence[Any]) -> CalibrationOutcome:
    """Fit the verdict to the marked engrams (a Platt map of p(right) and a threshold on that scale). A fit that
    beats the threshold in use is stored as the active version; one that does not is not stored, so it is never
    called "active" nor offered for reverting. ValueError when there is too little to fit."""
    configured = _configured()
    raw = raw_scores(marked, configured.verdict_head())
    fitted = vc.fit_to_engrams(marked, raw, configured.correct_at)
    if not fitted.adopted:
        active = vc.active_calibration()
        kept = (f"calibration version {active.version} ({threshold_words()})" if active
                else f"the configured threshold {configured.correct_at:.3f}")
        return CalibrationOutcome(False, f"The fit was {fitted.describe()}. Nothing was stored; the answer verdict "
                                         f"keeps {kept}.")
    fitted = vc.save_calibration(fitted)
    return CalibrationOutcome(True, f"Calibration version {fitted.version} is active: {fitted.describe()}.")


def calibrate_message(marked: Sequence[Any]) -> str:
    """:func:`calibrate`'s words (the command line's)."""
    return calibrate(marked).message


def revert_message() -> str:
    """Set the active calibration aside and say what is in use now."""
    before = vc.active_calibration()
    now = vc.revert_calibration()
    where = f"version {now.version} ({threshold_words()})" if now else \
        f"the configured threshold {_configured().correct_at:.3f}"
    return f"Calibration version {before.version if before else '?'} set aside; the answer verdict now uses {where}."


def threshold_words() -> str:
    """The threshold of "correct" in force, and on which scale ("threshold 0.52 on p(right) recalibrated ...")."""
    settings = VerdictSettings.from_config()
    if settings.platt is not None:
        return f"threshold {settings.correct_at:.2f} on p(right) recalibrated to your verdicts"
    return f"threshold {settings.correct_at:.3f}"


def relabel_words(report: RelabelReport, judged: BackfillReport | None = None) -> str:
    """What a relabelling did, in words."""
    said = (f"{report.relabelled:,} stored verdict(s) decided again from their readings under {threshold_words()} "
            f"in {report.elapsed_s:.1f} s ({report.changed:,} changed)")
    if judged is not None:
        said += f"; {judged.scored:,} stored without readings judged again by the verifier in {judged.elapsed_s:.0f} s"
    elif report.needs_model:
        said += f"; {len(report.needs_model):,} stored without readings are being judged again by the verifier"
    return said + f" ({report.unscored:,} answer(s) without a Trust Score left as they are)."


def relabel_stored(memory: Any, on_progress: Callable[[int, int], None] | None = None) -> str:
    """Decide the stored verdicts again under the calibration in force (after one is fitted or reverted), so
    badges, filters, the export, the review queue and the agreement table follow at once: from the readings
    kept on each engram, and with the verifier for the few stored without them. Says what it did."""
    report = relabel(memory)
    judged = rejudge(memory, AnswerScorer(), ids=report.needs_model, on_progress=on_progress) \
        if report.needs_model else None
    return relabel_words(report, judged)
