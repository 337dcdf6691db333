"""Engrams as the memory returns them, the browser's filters, and paging in time order.

Chroma cannot sort, and reading the metadata of 100,000 engrams takes seconds, so
:class:`TimePager` pages by time with *counting probes*: it narrows a time window
until it holds just the wanted page, then reads only that band.

Chroma answers each clause of a filter on its own and intersects the results, so
a clause costs in proportion to every row it matches ("score >= 4" alone matches a
third of the store). So every engram also carries its timestamp under a key named
after its score (``critic_ts_4``, ``critic_ts_ungraded``; :func:`time_keys`): a
score filter plus a time window is then one range on one small key per kept score
(:func:`range_clauses`), which costs in proportion to the rows in the window.

Beside the judge's grade an engram may carry the critics' Trust Score of its answer
(``trust_*`` keys, :data:`TRUST_KEYS`; written by :mod:`cns_core.judging.answer_trust`). Where the
two disagree is a :class:`DisagreementRule` (thresholds in ``config/memory.yaml``, ``trust.disagree``).
"""

from __future__ import annotations

import math
import numbers
import re
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Mapping, Protocol, Sequence

__all__ = ["VERDICT_LABELS", "INCOMPLETE_LABEL", "verdict_label", "DECIDED_VERDICTS", "UNDECIDED_VERDICTS", "NO_VERDICT", "UNGRADED", "UNTRUSTED", "ORDERS", "SCORE_BUCKETS", "TRUST_PREFIX", "TRUST_KEYS", "Engram", "EngramFilters",
           "EngramSource", "DisagreementRule", "TimePager", "validate_score", "validate_trust", "check_timestamp",
           "time_key", "time_keys", "range_clauses", "and_clauses", "HUMAN_PREFIX", "HUMAN_VERDICTS", "HUMAN_KEYS",
           "AGREEMENTS", "MAX_NOTE_CHARS", "MAX_WHO_CHARS", "Annotation", "question_key", "turn_document",
           "answer_digest"]

UNGRADED = -1                      # critic_score of an engram no judge has scored yet
ORDERS = ("newest", "oldest", "score", "relevance")
MAX_TIMESTAMP = 1e10               # seconds since the epoch (the year 2286): later is a mistake
SCORE_BUCKETS = (5, 4, 3, 2, 1, UNGRADED)   # the "score" order, best first, ungraded last
_W_MAX = 2e10                      # a time window this wide holds every engram
UNTRUSTED = -1.0                   # trust_score of an engram the critics have not scored (or could not)
DECIDED_VERDICTS = ("correct", "incorrect")      # answer verdicts that settle right or wrong
UNDECIDED_VERDICTS = ("unverified", "no_answer")  # ... and those that leave it to the Trust Score
NO_VERDICT = "none"   # trust_verdict of a scored engram without a verdict (Chroma cannot ask for a missing key)
TRUST_PREFIX = "trust_"            # metadata keys owned by the critics' scoring of the answer
# The answer verdict in words, as every surface shows it (the verdicts are made in cns_core.judging.answer_verdict).
VERDICT_LABELS: dict[str, str] = {"correct": "correct", "incorrect": "incorrect", "unverified": "unverified",
                                  "no_answer": "no answer"}
INCOMPLETE_LABEL = "true but incomplete"


def verdict_label(verdict: str, complete: bool | None = None) -> str:
    """A verdict in words: a correct answer that says less than its reference is "true but incomplete" (true, not
    wrong: its badge stays the correct one's)."""
    if verdict == "correct" and complete is False:
        return INCOMPLETE_LABEL
    return VERDICT_LABELS[verdict]


TRUST_KEYS = (
    "trust_score",        # float in [0, 1]: the critics' Trust Score of the drafted answer; UNTRUSTED if none
    "trust_complete",     # bool: False when a critic failed (the score then leaves it out)
    "trust_incomplete",   # str: the failed critics, comma-separated
    "trust_profile",      # str: the weight profile of the score
    "trust_settings",     # str: fingerprint of everything that made the score (the backfill skips a match)
    "trust_claims",       # int: claims drafted from the answer
    "trust_evidence",     # int: evidence passages (from the reference and sources; 0: grounding has none)
    "trust_error",        # str: why no score could be made (drafting or scoring failed)
    "trust_uncapped",     # float: the critics' score before a verified-wrong answer was capped
    "trust_verdict",      # str: correct / incorrect / unverified / no_answer (judging.answer_verdict)
    "trust_verdict_p",    # float: the probability of that verdict
    "trust_verdict_score",   # float: p(the answer is right)
    "trust_p_supported",  # float: the verifier's p(supported) of the answer given its question
    "trust_p_contradicted",  # float: ... and p(contradicted)
    "trust_verdict_claim",   # str: the answer, or the detail sentence, the verdict rests on
    "trust_verdict_passage",  # str: the evidence passage behind it
    "trust_verdict_evidence",  # str: which evidence ("reference", "source 2")
    "trust_verdict_note",    # str: the verdict in words
    "trust_readings",     # str: JSON, the verifier's readings the verdict is decided from (answer_verdict.VerdictReadings):
                          #   a new threshold or calibration re-decides the verdict from them, without the model
    "trust_verdict_calibration",  # int: the calibration version the verdict was decided under (0: none)
    "trust_verdict_complete",  # bool: of a correct answer against a reference, whether it says what the reference
                               #   says (False: true but incomplete); absent where not judged
)

# A person's verdict on a stored answer (written by cns_core.people; owned by the memory like trust_*).
HUMAN_PREFIX = "human_"
HUMAN_VERDICTS: tuple[str, ...] = ("correct", "incorrect", "unsure")
HUMAN_KEYS = (
    "human_verdict",   # str: correct / incorrect / unsure
    "human_note",      # str: the person's note ("" when none)
    "human_who",       # str: who marked it ("" when not said)
    "human_at",        # float: when, seconds since the epoch
)
AGREEMENTS = ("agrees", "disagrees")    # the answer verdict set against the person's (filters)
MAX_NOTE_CHARS = 2000
MAX_WHO_CHARS = 100
MAX_ID_CHARS = 200


def _bounded_text(value: Any, field_name: str, limit: int) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"{field_name}: expected text, got {type(value).__name__}")
    if len(value) > limit:
        raise ValueError(f"{field_name}: {len(value):,} characters, at most {limit:,} allowed")
    return value.strip()


@dataclass(frozen=True)
class Annotation:
    """One person's verdict on one engram; construction validates every field (ValueError naming it)."""

    id: str
    verdict: str
    note: str = ""
    who: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id.strip():
            raise ValueError(f"id: expected a non-empty engram id, got {self.id!r}")
        if len(self.id) > MAX_ID_CHARS:
            raise ValueError(f"id: {len(self.id):,} characters, at most {MAX_ID_CHARS} allowed")
        object.__setattr__(self, "id", self.id.strip())
        verdict = self.verdict.strip().lower() if isinstance(self.verdict, str) else self.verdict
        if verdict not in HUMAN_VERDICTS:
            raise ValueError(f"verdict: expected one of {', '.join(HUMAN_VERDICTS)}, got {self.verdict!r}")
        object.__setattr__(self, "verdict", verdict)
        object.__setattr__(self, "note", _bounded_text(self.note, "note", MAX_NOTE_CHARS))
        object.__setattr__(self, "who", _bounded_text(self.who, "who", MAX_WHO_CHARS))

    def metadata(self, at: float | None = None) -> dict[str, Any]:
        """The engram's ``human_*`` keys (one write replaces all four)."""
        return {"human_verdict": self.verdict, "human_note": self.note, "human_who": self.who,
                "human_at": float(time.time() if at is None else at)}


def question_key(question: str) -> str:
    """A question's identity across turns and files: lower case, words only ("Who wrote X?" == "who wrote x")."""
    return " ".join(re.findall(r"[a-z0-9]+", question.lower()))



def turn_document(query: str, answer: str) -> str:
    """The stored text of a turn (the answer starts at ``len(query) + 2``)."""
    return f"{query}\n\n{answer}"


def answer_digest(query: str, answer: str) -> str:
    """A short fingerprint of the question and answer a grade judged: a grade is applied only to an engram
    holding this very text, never to another answer that shares its query id."""
    import hashlib

    return hashlib.sha256(turn_document(query, answer).encode("utf-8", "surrogatepass")).hexdigest()[:32]


def validate_score(score: Any, field_name: str = "score") -> int:
    """``score`` as an int 1-5, or ValueError naming the field (bools and 2.5 are refused)."""
    if isinstance(score, bool) or not isinstance(score, numbers.Integral):
        raise ValueError(f"{field_name}: expected an integer 1-5, got {score!r}")
    if not 1 <= int(score) <= 5:
        raise ValueError(f"{field_name}: expected an integer 1-5, got {int(score)}")
    return int(score)


def validate_trust(value: Any, field_name: str = "trust") -> float:
    """``value`` as a float in [0, 1], or ValueError naming the field."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(float(value)):
        raise ValueError(f"{field_name}: expected a number between 0 and 1, got {value!r}")
    if not 0.0 <= float(value) <= 1.0:
        raise ValueError(f"{field_name}: expected a number between 0 and 1, got {float(value):g}")
    return float(value)


def check_timestamp(value: Any, field_name: str = "timestamp") -> float:
    if isinstance(value, datetime):
        value = value.timestamp()
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(float(value)):
        raise ValueError(f"{field_name}: expected seconds since the epoch, got {value!r}")
    if not 0 <= float(value) < MAX_TIMESTAMP:
        raise ValueError(f"{field_name}: {value!r} is outside 0 .. {MAX_TIMESTAMP:.0f} seconds since the epoch")
    return float(value)


def time_key(score: int) -> str:
    """The metadata key that holds the timestamp of engrams with this score."""
    return "critic_ts_ungraded" if score == UNGRADED else f"critic_ts_{score}"


def time_keys(score: int, timestamp: float) -> dict[str, float | None]:
    """The timestamp under its score's key, and None (Chroma: delete) under every other score's key."""
    return {time_key(s): (timestamp if s == score else None) for s in SCORE_BUCKETS}


def and_clauses(clauses: list[dict[str, Any]]) -> dict[str, Any] | None:
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


@dataclass(frozen=True)
class Engram:
    """One stored turn as the memory returns it."""

    id: str
    query: str
    answer: str
    session_id: str
    timestamp: float
    critic_score: int | None
    feedback: str
    metadata: dict[str, Any]
    distance: float | None = None
    similarity: float | None = None     # to the text of a search by meaning (1 = the same meaning)

    @property
    def graded(self) -> bool:
        return self.critic_score is not None

    @property
    def trust_score(self) -> float | None:
        """The critics' Trust Score of the answer, None when it was not (or could not be) scored."""
        value = self.metadata.get("trust_score")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= float(value) <= 1.0:
            return None
        return float(value)

    @property
    def answer_verdict(self) -> str | None:
        """The answer's verdict (correct / incorrect / unverified / no_answer), None before one was made."""
        value = self.metadata.get("trust_verdict")
        return value if value in DECIDED_VERDICTS + UNDECIDED_VERDICTS else None

    @property
    def answer_complete(self) -> bool | None:
        """Of a correct answer, whether it says what its reference says (False: true but incomplete); None where
        that was not judged (not correct, no reference, or judged before it was asked)."""
        value = self.metadata.get("trust_verdict_complete")
        return value if isinstance(value, bool) else None

    @property
    def human_verdict(self) -> str | None:
        """A person's verdict on the answer (correct / incorrect / unsure), None when nobody marked it."""
        value = self.metadata.get("human_verdict")
        return value if value in HUMAN_VERDICTS else None

    @property
    def trust_complete(self) -> bool:
        """False when a critic failed on this answer (its Trust Score then leaves that critic out)."""
        return self.metadata.get("trust_complete", True) is not False

    @classmethod
    def from_chroma(cls, id_: str, document: str | None, meta: Mapping[str, Any] | None,
                    distance: float | None = None, similarity: float | None = None) -> "Engram":
        meta = dict(meta or {})
        document = document or ""
        start = meta.get("answer_start")
        query = str(meta.get("query", ""))
        answer = document[int(start):] if isinstance(start, int) and 0 <= start <= len(document) else document
        score = meta.get("critic_score", UNGRADED)
        return cls(id=id_, query=query, answer=answer, session_id=str(meta.get("session_id", "")),
                   timestamp=float(meta.get("timestamp", 0.0)),
                   critic_score=int(score) if isinstance(score, int) and score >= 1 else None,
                   feedback=str(meta.get("critic_feedback", "")), metadata=meta, distance=distance,
                   similarity=similarity)


@dataclass(frozen=True)
class DisagreementRule:
    """When the judge's grade and the critics' Trust Score disagree: a grade of ``judge_high`` or
    more with Trust below ``trust_low``, or a grade of ``judge_low`` or less with Trust of
    ``trust_high`` or more. An engram missing either is never a disagreement."""

    judge_high: int = 4
    trust_low: float = 0.5
    judge_low: int = 2
    trust_high: float = 0.7

    def __post_init__(self) -> None:
        for name in ("judge_high", "judge_low"):
            object.__setattr__(self, name, validate_score(getattr(self, name), f"disagree.{name}"))
        for name in ("trust_low", "trust_high"):
            object.__setattr__(self, name, validate_trust(getattr(self, name), f"disagree.{name}"))
        if self.judge_low >= self.judge_high:
            raise ValueError(f"disagree.judge_low {self.judge_low} must be below judge_high {self.judge_high}")
        if self.trust_low > self.trust_high:
            raise ValueError(f"disagree.trust_low {self.trust_low:g} is above trust_high {self.trust_high:g}")

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any] | None) -> "DisagreementRule":
        """From ``trust.disagree`` in config/memory.yaml; an unknown key is an error naming it."""
        cfg = dict(cfg or {})
        unknown = sorted(set(cfg) - {"judge_high", "trust_low", "judge_low", "trust_high"})
        if unknown:
            raise ValueError(f"trust.disagree: unknown key(s) {', '.join(map(str, unknown))}")
        return cls(**cfg)

    def verdict(self, grade: int | None, trust: float | None, answer: str | None = None) -> str | None:
        """``"judge higher"`` or ``"critics higher"`` where they disagree, else None.

        ``answer`` is the answer's verdict: where it says correct or incorrect, it alone is set against
        the grade (a right answer is right whatever its argument's Trust); otherwise the Trust Score is.
        """
        if grade is None or trust is None:
            return None
        if answer in DECIDED_VERDICTS:
            if grade >= self.judge_high and answer == "incorrect":
                return "judge higher"
            if grade <= self.judge_low and answer == "correct":
                return "critics higher"
            return None
        if grade >= self.judge_high and trust < self.trust_low:
            return "judge higher"
        if grade <= self.judge_low and trust >= self.trust_high:
            return "critics higher"
        return None

    def clause(self) -> dict[str, Any]:
        """The rule as one Chroma ``where`` clause (graded engrams only: ungraded ones store -1)."""
        high = {"critic_score": {"$gte": self.judge_high}}
        low = [{"critic_score": {"$gte": 1}}, {"critic_score": {"$lte": self.judge_low}}]
        undecided = {"trust_verdict": {"$in": [*UNDECIDED_VERDICTS, NO_VERDICT]}}
        return {"$or": [
            {"$and": [high, {"trust_verdict": "incorrect"}]},
            {"$and": [*low, {"trust_verdict": "correct"}]},
            {"$and": [high, undecided, {"trust_score": {"$gte": 0.0}},   # not UNTRUSTED
                      {"trust_score": {"$lt": self.trust_low}}]},
            {"$and": [*low, undecided, {"trust_score": {"$gte": self.trust_high}}]}]}


@dataclass(frozen=True)
class EngramFilters:
    """What the engram browser may filter on; every field is optional.

    ``contains`` is a case-insensitive substring of the query or answer (pushed into
    Chroma); ``similar_to`` keeps the ``semantic_k`` engrams nearest in meaning whose similarity
    reaches ``min_similarity`` (None: the memory's ``browse.min_similarity``).
    ``min_trust``/``max_trust`` bound the critics' Trust Score (engrams without one are then
    left out), ``untrusted_only`` keeps those without one, ``disagreeing`` those where the
    judge and the critics disagree under that rule.
    """

    min_score: int | None = None
    max_score: int | None = None
    ungraded_only: bool = False
    since: float | None = None
    until: float | None = None
    contains: str | None = None
    similar_to: str | None = None
    min_similarity: float | None = None
    session_id: str | None = None
    min_trust: float | None = None
    max_trust: float | None = None
    untrusted_only: bool = False
    disagreeing: DisagreementRule | None = None
    answer_verdicts: tuple[str, ...] = ()     # keep answers with one of these verdicts (empty: any)
    annotated: bool | None = None     # True: a person marked the answer; False: nobody did; None: either
    person: str | None = None         # "agrees" / "disagrees": the answer verdict set against the person's

    def __post_init__(self) -> None:
        for name in ("min_score", "max_score"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, validate_score(value, name))
        if self.min_score and self.max_score and self.min_score > self.max_score:
            raise ValueError(f"min_score {self.min_score} is above max_score {self.max_score}")
        if self.ungraded_only and (self.min_score or self.max_score):
            raise ValueError("ungraded_only cannot be combined with min_score/max_score")
        for name in ("since", "until"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, check_timestamp(value, name))
        if self.since is not None and self.until is not None and self.since > self.until:
            raise ValueError(f"since {self.since} is after until {self.until}")
        for name in ("min_trust", "max_trust", "min_similarity"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, validate_trust(value, name))
        if self.min_trust is not None and self.max_trust is not None and self.min_trust > self.max_trust:
            raise ValueError(f"min_trust {self.min_trust:g} is above max_trust {self.max_trust:g}")
        if self.untrusted_only and (self.min_trust is not None or self.max_trust is not None or self.disagreeing):
            raise ValueError("untrusted_only cannot be combined with min_trust/max_trust or disagreeing")
        unknown = [v for v in self.answer_verdicts if v not in DECIDED_VERDICTS + UNDECIDED_VERDICTS]
        if unknown:
            raise ValueError(f"answer_verdicts: {', '.join(map(repr, unknown))} is not one of "
                             f"{', '.join(DECIDED_VERDICTS + UNDECIDED_VERDICTS)}")
        if self.annotated not in (None, True, False):
            raise ValueError(f"annotated: expected True, False or None, got {self.annotated!r}")
        if self.person is not None and self.person not in AGREEMENTS:
            raise ValueError(f"person: expected one of {', '.join(AGREEMENTS)}, got {self.person!r}")
        if self.person is not None and self.annotated is False:
            raise ValueError("person: an answer nobody marked cannot agree or disagree with a person "
                             "(drop 'not annotated')")
        if self.disagreeing is not None and not isinstance(self.disagreeing, DisagreementRule):
            raise ValueError(f"disagreeing: expected a DisagreementRule, got {type(self.disagreeing).__name__}")
        for name in ("contains", "similar_to", "session_id"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise ValueError(f"{name}: expected a string, got {type(value).__name__}")
            if isinstance(value, str) and not value.strip():
                object.__setattr__(self, name, None)

    @property
    def buckets(self) -> tuple[int, ...] | None:
        """The score values these filters keep, or None for all of them."""
        if self.ungraded_only:
            return (UNGRADED,)
        if self.min_score or self.max_score:
            lo, hi = self.min_score or 1, self.max_score or 5
            return tuple(s for s in SCORE_BUCKETS if lo <= s <= hi)
        return None

    def where_document(self) -> dict[str, Any] | None:
        if not self.contains:
            return None
        return {"$regex": "(?i)" + re.escape(self.contains)}


def range_clauses(filters: EngramFilters, lo: float | None = None, hi: float | None = None) -> list[dict[str, Any]]:
    """Filters plus a time window ``lo <= timestamp <= hi`` as Chroma clauses.

    With a score filter the bounds go on the kept scores' time keys (see the module doc).
    """
    lows = [x for x in (filters.since, lo) if x is not None]
    highs = [x for x in (filters.until, hi) if x is not None]
    low = max(lows) if lows else None
    high = min(highs) if highs else None
    clauses: list[dict[str, Any]] = [{"session_id": filters.session_id}] if filters.session_id else []
    clauses += _trust_clauses(filters)
    buckets = filters.buckets
    if buckets is None:
        if low is not None:
            clauses.append({"timestamp": {"$gte": low}})
        if high is not None:
            clauses.append({"timestamp": {"$lte": high}})
        return clauses
    ranges = []
    for s in buckets:       # a row has only its own score's key, so one bound is enough to select the score
        bounds = [{time_key(s): {"$gte": low}}] if low is not None else []
        if high is not None:
            bounds.append({time_key(s): {"$lte": high}})
        ranges.append(and_clauses(bounds) or {time_key(s): {"$gte": 0.0}})
    clauses.append(ranges[0] if len(ranges) == 1 else {"$or": ranges})
    return clauses


def _trust_clauses(filters: EngramFilters) -> list[dict[str, Any]]:
    """The Trust Score part of the filters. Chroma cannot ask for a missing key, so an engram
    without a score stores UNTRUSTED (-1), as an ungraded one stores UNGRADED."""
    clauses: list[dict[str, Any]] = []
    if filters.answer_verdicts:
        clauses.append({"trust_verdict": {"$in": list(filters.answer_verdicts)}})
    if filters.untrusted_only:
        clauses.append({"trust_score": {"$lt": 0.0}})        # UNTRUSTED
    if filters.min_trust is not None:
        clauses.append({"trust_score": {"$gte": filters.min_trust}})
    if filters.max_trust is not None:
        clauses.append({"trust_score": {"$lte": filters.max_trust}})
    if filters.disagreeing is not None:
        clauses.append(filters.disagreeing.clause())
    return clauses + _human_clauses(filters)


def _human_clauses(filters: EngramFilters) -> list[dict[str, Any]]:
    """The people's part of the filters. ``$nin`` also matches an engram without the key (never marked)."""
    clauses: list[dict[str, Any]] = []
    if filters.annotated is True:
        clauses.append({"human_verdict": {"$in": list(HUMAN_VERDICTS)}})
    elif filters.annotated is False:
        clauses.append({"human_verdict": {"$nin": list(HUMAN_VERDICTS)}})
    pairs = [("correct", "correct"), ("incorrect", "incorrect")]
    if filters.person == "disagrees":
        pairs = [("correct", "incorrect"), ("incorrect", "correct")]
    if filters.person is not None:
        clauses.append({"$or": [{"$and": [{"human_verdict": h}, {"trust_verdict": m}]} for h, m in pairs]})
    return clauses


class EngramSource(Protocol):
    """What :class:`TimePager` needs from a store (MemoryService provides it)."""

    def ids_matching(self, where: dict[str, Any] | None, where_document: dict[str, Any] | None) -> list[str]: ...

    def timestamps(self, ids: Sequence[str]) -> dict[str, float]: ...

    def fetch(self, ids: Sequence[str]) -> list[Engram]:
        """The records, in the order of ``ids``."""

    def lower_bound(self) -> float | None:
        """A time at or before the oldest engram's (any value is correct; a close one is fast)."""

    def size(self) -> int: ...


@dataclass
class TimePager:
    """Pages engrams in time order without reading them all (Chroma has no ORDER BY).

    ``g(w)`` counts the engrams within ``w`` seconds of an anchor, walking back in
    time for newest-first (forward for oldest-first). It is monotone, and a count
    costs in proportion to the rows it matches, so we probe small windows, widen
    them geometrically, and narrow by interpolation until one window ends just
    before the page and another just after it. A probe returns ids (cheap), so the
    band between the two is a set difference, and only its records are read.
    """

    source: "EngramSource"
    filters: EngramFilters
    newest_first: bool
    first_step_s: float = 60.0
    band_slack: int = 64
    direct_limit: int = 20_000
    _probes: dict[float, int] = field(default_factory=dict)
    _ids: dict[float, list[str]] = field(default_factory=dict)
    _anchor: float | None = None
    _spacing: float | None = None

    def _edge(self, w: float) -> float:
        return self.anchor - w if self.newest_first else self.anchor + w

    @property
    def anchor(self) -> float:
        if self._anchor is None:
            f = self.filters
            if self.newest_first:
                self._anchor = f.until if f.until is not None else time.time()
            elif f.since is not None:
                self._anchor = f.since
            else:
                oldest = self.source.lower_bound()
                self._anchor = time.time() if oldest is None else oldest
        return self._anchor

    def _window(self, w: float) -> list[dict[str, Any]]:
        if w >= _W_MAX:
            return range_clauses(self.filters, None, None)
        if self.newest_first:
            return range_clauses(self.filters, self._edge(w), None)
        return range_clauses(self.filters, None, self._edge(w))

    def g(self, w: float) -> int:
        w = min(w, _W_MAX)
        if w <= -_W_MAX:
            return 0
        if w not in self._probes:
            self._ids[w] = self.source.ids_matching(and_clauses(self._window(w)), self.filters.where_document())
            self._probes[w] = len(self._ids[w])
        return self._probes[w]

    def total(self) -> int:
        return self.g(_W_MAX)

    def _seconds_per_engram(self, step: float) -> float:
        """The store's mean spacing in time (spread evenly since the lower bound): scales the first jumps."""
        if self._spacing is None:
            oldest, size = self.source.lower_bound(), self.source.size()
            span = time.time() - oldest if oldest is not None else 0.0
            self._spacing = max(span, step) / size if size else step
        return self._spacing

    def _first_guess(self, lo: int, hi: int, step: float) -> float:
        """The window that would hold ``(lo + hi) / 2`` engrams at the store's mean spacing."""
        return max(step, min(_W_MAX, (lo + hi) / 2 * self._seconds_per_engram(step)))

    def find(self, lo: int, hi: int, need_at_least: bool) -> float:
        """A width ``w`` with ``lo <= g(w) <= hi``; failing that (ties), the bracket end that keeps
        ``g >= lo`` (``need_at_least``) or ``g <= hi``."""
        step = max(self.first_step_s, 1e-3)
        for i in range(60):
            if any(lo <= n <= hi for n in self._probes.values()):
                return next(w for w, n in self._probes.items() if lo <= n <= hi)
            small = [w for w, n in self._probes.items() if n < lo]
            big = [w for w, n in self._probes.items() if n > hi]
            b = max(small) if small else None    # widest window still too small
            a = min(big) if big else None        # narrowest window already too big
            if b is None and a is None:
                nxt = self._first_guess(lo, hi, step)
            elif a is None:                      # widen geometrically, faster when the window is sparse
                if b >= _W_MAX:
                    return _W_MAX
                n_b = self._probes[b]
                grow = 8.0 if n_b == 0 else min(64.0, max(2.0, 1.5 * lo / n_b))
                nxt = b + max(step, abs(b)) * (grow - 1)
            elif b is None:                      # even the anchor window is too big: walk past it
                if a <= -_W_MAX:
                    return a if need_at_least else -_W_MAX
                nxt = max(-_W_MAX, a - max(step, abs(a)) * 7)
            else:                                # interpolate, with a plain halving every third step
                if a - b <= 1e-4:
                    return a if need_at_least else b
                n_b, n_a = self._probes[b], self._probes[a]
                t = 0.5 if i % 3 == 2 else ((lo + hi) / 2 - n_b) / max(n_a - n_b, 1)
                nxt = b + (a - b) * min(0.999, max(0.001, t))
            self.g(min(nxt, _W_MAX))
        small = [w for w, n in self._probes.items() if n < lo]
        big = [w for w, n in self._probes.items() if n > hi]
        if need_at_least:
            return min(big) if big else _W_MAX
        return max(small) if small else -_W_MAX

    def page(self, offset: int, limit: int) -> list[Engram]:
        f = self.filters
        if f.contains or f.session_id or f.disagreeing or f.annotated is not None or f.person:
            # Chroma evaluates the text, session or disagreement clause over all its matches in every
            # probe anyway: when those matches are few, one read of their timestamps beats probing.
            every = self.g(_W_MAX)
            if every <= self.direct_limit:
                if offset >= every:
                    return []
                return self._sorted_page(self._ids[_W_MAX], offset, limit)
        need = offset + limit
        # a probe over n rows costs about as much as reading n/5 records: deep pages accept a wider band
        slack = max(self.band_slack, need // 20)
        w_end = self.find(need, need + slack, need_at_least=True)
        if offset == 0:
            w_start, before = None, 0
        else:
            w_start = self.find(max(0, offset - slack), offset, need_at_least=False)
            before = 0 if w_start <= -_W_MAX else self.g(w_start)
            if before >= self.g(w_end):
                return []
        self.g(w_end)
        band = self._ids[min(w_end, _W_MAX)]
        if before:
            skip = set(self._ids[w_start])
            band = [i for i in band if i not in skip]
        return self._sorted_page(band, offset - before, limit)

    def _sorted_page(self, ids: list[str], offset: int, limit: int) -> list[Engram]:
        stamps = self.source.timestamps(ids)
        order = sorted(stamps, key=lambda i: (stamps[i], i), reverse=self.newest_first)
        return self.source.fetch(order[offset:offset + limit])
