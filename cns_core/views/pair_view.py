"""The Judge page's "Compare two answers": the judge's relative grading asked for from a form, what it
shows, and the comparison kept in the memory. The comparison itself is :mod:`cns_core.agents.compare`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from cns_core.agents.compare import Comparison, KeptComparison, compare_answers, keep_comparison
from cns_core.agents.prometheus import JudgeSettings, critic_settings

__all__ = ["PairOutcome", "compare_on_page"]


@dataclass(frozen=True)
class PairOutcome:
    """One comparison as the page shows it: the question and answers sent, the judge's comparison (None when
    the form was refused), and where it was kept."""

    question: str
    answer_a: str
    answer_b: str
    comparison: Comparison | None = None
    problem: str | None = None            # the form's input error, naming the field
    kept: KeptComparison | None = None
    kept_error: str | None = None

    @property
    def headline(self) -> str:
        if self.problem:
            return f"Not sent: {self.problem}"
        if self.comparison is None or not self.comparison.ok:
            reason = self.comparison.error if self.comparison else "no comparison"
            return f"The judge named no winner: {reason}"
        return f"Answer {self.comparison.winner} won"

    @property
    def kept_note(self) -> str:
        if self.kept_error:
            return f"Not kept in the memory: {self.kept_error}"
        if self.kept is None:
            return "Not kept in the memory." if self.comparison is not None and self.comparison.ok else ""
        new = [name for name, id_ in (("A", self.kept.a_id), ("B", self.kept.b_id)) if id_ in self.kept.stored_now]
        now = {0: "", 1: f" (answer {new[0]} stored now)", 2: " (both stored now)"}[len(new)]
        return (f"Kept in the memory: answer A is engram {self.kept.a_id}, answer B is {self.kept.b_id}{now}; "
                "preference pairs choose the winner.")


def compare_on_page(question: str, answer_a: str, answer_b: str, reference: str = "", *, keep: bool,
                    memory_of: Callable[[], Any], settings: JudgeSettings | None = None) -> PairOutcome:
    """Ask the judge to compare two answers; never raises (a refused form, a failing judge or memory is said in
    the outcome). With ``keep`` a comparison with a winner is kept on the answers' engrams."""
    question, answer_a, answer_b = question.strip(), answer_a.strip(), answer_b.strip()
    base = dict(question=question, answer_a=answer_a, answer_b=answer_b)
    try:
        settings = settings or critic_settings()
        comparison = compare_answers(question, answer_a, answer_b, settings, reference=reference.strip() or None)
    except ValueError as exc:
        return PairOutcome(**base, problem=str(exc))
    if not keep or not comparison.ok:
        return PairOutcome(**base, comparison=comparison)
    try:
        kept = keep_comparison(memory_of(), question, answer_a, answer_b, comparison, session_id="dashboard")
    except Exception as exc:  # noqa: BLE001 - a memory that fails costs the keeping, not the page
        return PairOutcome(**base, comparison=comparison, kept_error=f"{type(exc).__name__}: {exc}")
    return PairOutcome(**base, comparison=comparison, kept=kept)
