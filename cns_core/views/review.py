"""Which answers a person should read next, and saving what they say (no Streamlit).

A person's time is best spent where the machine is least sure: first the answers where the judge and
the critics disagree (:class:`cns_core.engrams.DisagreementRule`), then those whose p(answer right)
(``trust_verdict_score``) lies nearest the verdict's threshold. Answers a person already marked never
come back. The queue asks Chroma for ids in ever wider bands around the threshold instead of reading
every engram, so it stays fast on a large memory.
"""

from __future__ import annotations

from typing import Any

from cns_core.people.annotations import HUMAN_VERDICTS, Annotation
from cns_core.engrams import DisagreementRule, Engram, and_clauses

__all__ = ["review_queue", "verdict_threshold", "save_annotation", "REVIEW_BANDS"]

REVIEW_BANDS = (0.02, 0.05, 0.1, 0.2, 0.35, 0.5, 1.0)   # half-widths around the threshold, tried in turn
MAX_READ = 5000     # records read per group to order it (a larger group is ordered on its first ids only)
_NOT_MARKED = {"human_verdict": {"$nin": list(HUMAN_VERDICTS)}}
def verdict_threshold() -> float:
    """The p(answer right) at which the verifier calls an answer correct (the active setting)."""
    from cns_core.judging.answer_verdict import VerdictSettings

    return VerdictSettings.from_config().correct_at


def _score(e: Engram) -> float | None:
    value = e.metadata.get("trust_verdict_score")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def review_queue(memory: Any, rule: DisagreementRule, threshold: float, limit: int = 25) -> list[Engram]:
    """Up to ``limit`` unmarked engrams: disagreements first, then by distance of p(right) to ``threshold``
    (nearest first); within a group the nearest to the threshold first."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 500:
        raise ValueError(f"limit: expected an integer 1-500, got {limit!r}")

    def by_distance(rows: list[Engram]) -> list[Engram]:
        return sorted(rows, key=lambda e: (abs(_score(e) - threshold) if _score(e) is not None else 2.0, e.id))

    disagreeing = memory.ids_matching(and_clauses([_NOT_MARKED, rule.clause()]), None)
    first = by_distance(memory.get(disagreeing[:MAX_READ]))[:limit] if disagreeing else []
    taken = {e.id for e in first}
    ids: list[str] = []
    for band in REVIEW_BANDS:
        where = and_clauses([_NOT_MARKED, {"trust_verdict_score": {"$gte": threshold - band}},
                             {"trust_verdict_score": {"$lte": threshold + band}}])
        ids = [i for i in memory.ids_matching(where, None) if i not in taken]
        if len(ids) >= limit - len(first):
            break
    rest = by_distance(memory.get(ids[:MAX_READ])) if ids and len(first) < limit else []
    return (first + rest)[:limit]


def save_annotation(memory: Any, engram_id: str, verdict: str, note: str = "", who: str = "") -> str:
    """Store one person's verdict (validated; ValueError naming the field) and say what was stored."""
    annotation = Annotation(engram_id, verdict, note, who)
    memory.record_annotations([annotation])
    by = f" by {annotation.who}" if annotation.who else ""
    return f"Marked {annotation.id} {annotation.verdict}{by}" + (" with a note." if annotation.note else ".")

