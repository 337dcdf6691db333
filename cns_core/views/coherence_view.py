"""The Coherence page's words around its numbers: when to offer "check again without a time limit",
what a share rests on, and which chains had nothing to compare.

The SNO check and the engram stream are both summed up as a
:class:`~cns_core.coherence.schemas.ModelCoverage` (its ``sentence`` is what the page
prints); the page offers a re-check only for a result the budget cut short, not for one
that no model could help (unavailable or failing).
"""

from __future__ import annotations

from typing import Any

__all__ = ["offers_unlimited", "stream_note", "share_note", "uncompared_note"]

# degradations a check without a time limit can lift (an unavailable or failing model it cannot)
_TIME_LIMITED = frozenset({"model_budget", "model_timeout", "model_dropped"})


def offers_unlimited(report: Any) -> bool:
    """True when the time limit cut the check short (a re-check without it can judge more)."""
    return report.coverage.budget_ms is not None and bool(_TIME_LIMITED & set(report.degraded))


def stream_note(unrecorded: int) -> str:
    """What the stream's counts leave out: chains logged before the log recorded who judged them."""
    return (f" {unrecorded:,} older chain(s) in the log predate this record and are not counted."
            if unrecorded else "")


def share_note(part: int, whole: int, what: str, too_few: bool) -> str:
    """The count behind a percentage ("2 of 2 drift chains"), flagged when too few to read."""
    if whole == 0:
        return f"no {what} yet"
    return f"{part:,} of {whole:,} {what}" + ("; too few to read" if too_few else "")


def uncompared_note(uncompared: int) -> str:
    """Chains whose coherence is n/a because they had nothing to compare (not plotted as 0)."""
    if not uncompared:
        return ""
    return (f"{uncompared:,} chain(s) had nothing to compare (no earlier engram or evidence on the topic): their "
            "coherence is n/a, so they are left out of the chart, the means and the drift indicator.")
