"""What the Engrams page computes, without Streamlit: filters from widget values, the histogram,
the judge's grade beside the critics' Trust Score and where the two disagree.

The histogram asks the store for one count per score (a filter per score) instead
of reading every engram, so it stays fast at 100,000 engrams.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import date, datetime, time as dtime, timezone
from typing import Any

from cns_core.engrams import UNGRADED, DisagreementRule, Engram, EngramFilters
from cns_core.views import display

__all__ = ["HISTOGRAM_BUCKETS", "FilterChoice", "build_filters", "score_histogram", "page_count",
           "disagreement_rule", "rule_text", "disagreement_count", "trust_html", "card_key", "DISAGREE_CARD",
           "score_trust", "similarity_text", "ANNOTATED_CHOICES", "PERSON_CHOICES"]

DISAGREE_CARD = "cns_engram_disagree_"   # key prefix of a card whose judge and critics disagree (outlined)

HISTOGRAM_BUCKETS = (1, 2, 3, 4, 5, UNGRADED)   # left to right on the chart
ANNOTATED_CHOICES: dict[str, bool | None] = {"any": None, "annotated": True, "not annotated": False}
PERSON_CHOICES = ("any", "agrees", "disagrees")


@dataclass(frozen=True)
class FilterChoice:
    """The Engrams page's widget values; :func:`build_filters` validates them into EngramFilters."""

    score_range: tuple[int, int] = (1, 5)
    ungraded_only: bool = False
    since: date | None = None
    until: date | None = None
    contains: str = ""
    similar_to: str = ""
    min_similarity: float | None = None
    session_id: str = ""
    trust_range: tuple[float, float] = (0.0, 1.0)
    untrusted_only: bool = False
    disagree_only: bool = False
    verdicts: tuple[str, ...] = ()      # answer verdicts to keep (empty: any)
    annotated: str = "any"              # "any" / "annotated" / "not annotated" (a person's verdict)
    person: str = "any"                 # "any" / "agrees" / "disagrees": the answer verdict against the person's


def _day_start(day: date) -> float:
    return datetime.combine(day, dtime.min, tzinfo=timezone.utc).timestamp()


def build_filters(choice: FilterChoice, rule: DisagreementRule | None = None) -> EngramFilters:
    """EngramFilters for the widget values; the full score range 1-5 means "any score, ungraded too",
    the full Trust range 0-1 "any Trust Score, none too". ``disagree_only`` keeps the engrams where
    ``rule`` (default: :func:`disagreement_rule`) sees the judge and the critics disagree.

    Dates are whole UTC days (``until`` includes its day). Raises ValueError naming the field.
    """
    lo, hi = (int(x) for x in choice.score_range)
    scored = (lo, hi) != (1, 5)
    t_lo, t_hi = (float(x) for x in choice.trust_range)
    trusted = (t_lo, t_hi) != (0.0, 1.0) and not choice.untrusted_only
    since = _day_start(choice.since) if choice.since else None
    until = _day_start(choice.until) + 86400 - 1e-3 if choice.until else None
    if choice.annotated not in ANNOTATED_CHOICES:
        raise ValueError(f"annotated: expected one of {', '.join(ANNOTATED_CHOICES)}, got {choice.annotated!r}")
    if choice.person not in PERSON_CHOICES:
        raise ValueError(f"person: expected one of {', '.join(PERSON_CHOICES)}, got {choice.person!r}")
    if choice.disagree_only and choice.untrusted_only:
        raise ValueError("disagreements: an answer without a Trust Score cannot disagree with the judge "
                         "(untick one of the two)")
    return EngramFilters(min_score=lo if scored and not choice.ungraded_only else None,
                         max_score=hi if scored and not choice.ungraded_only else None,
                         ungraded_only=choice.ungraded_only, since=since, until=until,
                         contains=choice.contains or None, similar_to=choice.similar_to or None,
                         min_similarity=choice.min_similarity if choice.similar_to else None,
                         session_id=choice.session_id or None,
                         min_trust=t_lo if trusted else None, max_trust=t_hi if trusted else None,
                         untrusted_only=choice.untrusted_only,
                         disagreeing=(rule or disagreement_rule()) if choice.disagree_only else None,
                         answer_verdicts=tuple(choice.verdicts),
                         annotated=ANNOTATED_CHOICES[choice.annotated],
                         person=None if choice.person == "any" else choice.person)


def score_histogram(memory: Any, filters: EngramFilters | None = None) -> dict[int, int]:
    """Engrams per score (UNGRADED for none) under ``filters`` minus their score part: one count each."""
    f = filters or EngramFilters()
    out: dict[int, int] = {}
    for s in HISTOGRAM_BUCKETS:
        bucket = replace(f, min_score=None if s == UNGRADED else s, max_score=None if s == UNGRADED else s,
                         ungraded_only=s == UNGRADED)
        out[s] = memory.count(bucket)
    return out


def disagreement_rule() -> DisagreementRule:
    """The configured rule (``trust.disagree`` in config/memory.yaml)."""
    from cns_core.judging.answer_trust import TrustSettings

    return TrustSettings.from_config().rule


def rule_text(rule: DisagreementRule) -> str:
    """The rule in words, for help texts and the marks' hover."""
    return (f"judge {rule.judge_high}-5 on an answer judged incorrect, or judge 1-{rule.judge_low} on one "
            f"judged correct; without such a verdict, judge {rule.judge_high}-5 with Trust below "
            f"{rule.trust_low:g}, or judge 1-{rule.judge_low} with Trust {rule.trust_high:g} and up")


def disagreement_count(memory: Any, filters: EngramFilters, rule: DisagreementRule, matches: int) -> int:
    """How many of the ``matches`` filtered engrams the rule marks (at most one more count: none when
    the filters already keep only the disagreements)."""
    if filters.untrusted_only:
        return 0
    if filters.disagreeing == rule:
        return matches
    return memory.count(replace(filters, disagreeing=rule))


def trust_html(engram: Engram, rule: DisagreementRule) -> str:
    """The critics' Trust badge of a row, and a disagreement mark where the rule sees one."""
    meta = engram.metadata
    answer = display.answer_verdict_html(engram.answer_verdict, p_right=meta.get("trust_verdict_score"),
                                         note=str(meta.get("trust_verdict_note") or ""),
                                         claim=str(meta.get("trust_verdict_claim") or ""),
                                         passage=str(meta.get("trust_verdict_passage") or ""),
                                         complete=engram.answer_complete)
    badge = display.trust_badge_html(engram.trust_score, complete=engram.trust_complete,
                                     note=str(meta.get("trust_error") or meta.get("trust_incomplete") or ""),
                                     evidence=meta.get("trust_evidence"))
    verdict = rule.verdict(engram.critic_score, engram.trust_score, engram.answer_verdict)
    human = display.human_verdict_html(engram.human_verdict, who=str(meta.get("human_who") or ""),
                                       note=str(meta.get("human_note") or ""))
    return answer + badge + human + (display.disagreement_html(verdict, rule_text(rule)) if verdict else "")


def badges_html(engram: Engram, rule: DisagreementRule) -> str:
    """A stored turn's whole badge row: the judge's grade, then :func:`trust_html`. The Engrams page's cards and
    the Judge page's turns show this, so one turn reads the same on both (an ungraded turn too)."""
    return display.score_badge_html(engram.critic_score, engram.feedback) + trust_html(engram, rule)


def page_count(total: int, per_page: int) -> int:
    """Pages needed for ``total`` rows (at least one, so an empty result still has page 1)."""
    return max(1, -(-int(total) // max(1, int(per_page))))


def card_key(engram: Engram, rule: DisagreementRule) -> str:
    """The Streamlit key of an engram's card: :data:`DISAGREE_CARD` + id where the rule sees a
    disagreement (the page's style outlines those whole cards), else ``cns_engram_card_`` + id."""
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", engram.id)
    verdict = rule.verdict(engram.critic_score, engram.trust_score, engram.answer_verdict)
    return f"{DISAGREE_CARD if verdict else 'cns_engram_card_'}{safe}"


def similarity_text(engram: Engram) -> str:
    """"similarity 0.44" for a hit of a search by meaning, else ""."""
    return "" if engram.similarity is None else f"similarity {engram.similarity:.2f}"


def score_trust(memory: Any, scorer: Any, engram_id: str) -> str:
    """Score one stored answer now, exactly as ``cns trust-backfill`` does (its :func:`backfill`, for
    this id, forced), and say what came of it."""
    from cns_core.judging.answer_trust import backfill

    report = backfill(memory, scorer, ids=[engram_id], force=True)
    if report.total == 0:
        return f"Engram {engram_id} is no longer in the memory."
    [engram] = memory.get([engram_id])
    if engram.trust_score is None:
        return f"No Trust Score for {engram_id}: {engram.metadata.get('trust_error') or 'the critics gave none'}."
    note = "" if engram.trust_complete else f" (incomplete: {engram.metadata.get('trust_incomplete')} failed)"
    return (f"Trust {engram.trust_score:.2f}{note} for {engram_id} with the {scorer.settings.profile} profile, "
            f"from {engram.metadata.get('trust_claims', '?')} drafted claim(s).")
