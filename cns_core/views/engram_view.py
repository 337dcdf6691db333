"""What the Engrams page computes, without Streamlit: filters from widget values, the histogram.

The histogram asks the store for one count per score (a filter per score) instead
of reading every engram, so it stays fast at 100,000 engrams.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time as dtime, timezone
from typing import Any

from cns_core.engrams import UNGRADED, EngramFilters

__all__ = ["HISTOGRAM_BUCKETS", "FilterChoice", "build_filters", "score_histogram", "page_count"]

HISTOGRAM_BUCKETS = (1, 2, 3, 4, 5, UNGRADED)   # left to right on the chart


@dataclass(frozen=True)
class FilterChoice:
    """The Engrams page's widget values; :func:`build_filters` validates them into EngramFilters."""

    score_range: tuple[int, int] = (1, 5)
    ungraded_only: bool = False
    since: date | None = None
    until: date | None = None
    contains: str = ""
    similar_to: str = ""
    session_id: str = ""


def _day_start(day: date) -> float:
    return datetime.combine(day, dtime.min, tzinfo=timezone.utc).timestamp()


def build_filters(choice: FilterChoice) -> EngramFilters:
    """EngramFilters for the widget values; the full score range 1-5 means "any score, ungraded too".

    Dates are whole UTC days (``until`` includes its day). Raises ValueError naming the field.
    """
    lo, hi = (int(x) for x in choice.score_range)
    scored = (lo, hi) != (1, 5)
    since = _day_start(choice.since) if choice.since else None
    until = _day_start(choice.until) + 86400 - 1e-3 if choice.until else None
    return EngramFilters(min_score=lo if scored and not choice.ungraded_only else None,
                         max_score=hi if scored and not choice.ungraded_only else None,
                         ungraded_only=choice.ungraded_only, since=since, until=until,
                         contains=choice.contains or None, similar_to=choice.similar_to or None,
                         session_id=choice.session_id or None)


def score_histogram(memory: Any, filters: EngramFilters | None = None) -> dict[int, int]:
    """Engrams per score (UNGRADED for none) under ``filters`` minus their score part: one count each."""
    f = filters or EngramFilters()
    out: dict[int, int] = {}
    for s in HISTOGRAM_BUCKETS:
        bucket = EngramFilters(min_score=None if s == UNGRADED else s, max_score=None if s == UNGRADED else s,
                               ungraded_only=s == UNGRADED, since=f.since, until=f.until, contains=f.contains,
                               similar_to=f.similar_to, session_id=f.session_id)
        out[s] = memory.count(bucket)
    return out


def page_count(total: int, per_page: int) -> int:
    """Pages needed for ``total`` rows (at least one, so an empty result still has page 1)."""
    return max(1, -(-int(total) // max(1, int(per_page))))
