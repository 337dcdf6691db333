"""Recall: the answers nearest in meaning to a question, ranked by how right they were judged.

Four signals say how right a stored answer is, in the order a careful reader trusts them: a person's
verdict, the answer verdict with its p(right) (:mod:`cns_core.judging.answer_verdict`), the judge's grade
(1-5) and the critics' Trust Score. Each is read as a value in [0, 1] (a person's "correct" is 1,
"incorrect" 0; a grade g is (g - 1) / 4) and adds ``weight * (value - 0.5)`` to the answer's rank; a
signal the answer does not have adds nothing. Similarity in meaning adds ``weight * similarity``.
With the shipped weights (``config/memory.yaml``, ``recall.weights``) a person's verdict outweighs
everything else together, the verdict outweighs grade and Trust.

The same signals give an answer's *quality* in [0, 1] (0.5 plus their weighted lean, over the sum of
the quality weights): the reward a turn earns (:mod:`cns_core.memory.rewards`) and the order preference
pairs are chosen by (:mod:`cns_core.memory.preferences`). One computation, shown the same everywhere.

An answer a person judged incorrect, one whose verdict is incorrect (unless a person judged it
correct) and a quarantined turn are left out unless asked for, and then carry the mark ``excluded``.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Any, Mapping

from cns_core.config import ConfigError
from cns_core.engrams import Engram, verdict_label

__all__ = ["RecallSettings", "Quality", "Recalled", "judge_quality", "rank", "check_recall_request",
           "QUALITY_SIGNALS", "recall_settings"]

QUALITY_SIGNALS = ("person", "verdict", "grade", "trust")     # in the order of priority
_WEIGHT_KEYS = QUALITY_SIGNALS + ("similarity",)
_KEYS = {"candidates", "max_k", "max_query_chars", "min_similarity", "quarantine_scan", "weights", "preferences"}
_PREFERENCE_KEYS = {"min_gap", "max_pairs_per_question"}


def _number(value: Any, where: str, *, low: float, high: float, integer: bool = False) -> Any:
    kind = "an integer" if integer else "a number"
    if isinstance(value, bool) or not isinstance(value, numbers.Integral if integer else numbers.Real) \
            or not math.isfinite(float(value)):
        raise ConfigError(f"memory.yaml: {where}: expected {kind} between {low:g} and {high:g}, got {value!r}")
    if not low <= value <= high:
        raise ConfigError(f"memory.yaml: {where}: {value!r} is outside {low:g} .. {high:g}")
    return int(value) if integer else float(value)


@dataclass(frozen=True)
class RecallSettings:
    """``recall`` of config/memory.yaml; :meth:`from_config` names any bad key."""

    weights: Mapping[str, float] = field(default_factory=lambda: {
        "person": 10.0, "verdict": 4.0, "grade": 2.0, "trust": 1.0, "similarity": 1.0})
    candidates: int = 50          # nearest engrams re-ranked (at least k)
    max_k: int = 100
    max_query_chars: int = 20_000
    min_similarity: float = 0.3   # candidates less similar in meaning than this are not recalled
    quarantine_scan: int = 2_000  # quarantined turns compared with the question when they are asked for
    min_gap: float = 0.05         # preference pairs: a quality gap below this is a near tie, left out
    max_pairs_per_question: int = 10

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any] | None) -> "RecallSettings":
        cfg = dict(cfg or {})
        unknown = sorted(set(map(str, cfg)) - _KEYS)
        if unknown:
            raise ConfigError(f"memory.yaml: recall: unknown key(s) {', '.join(unknown)} "
                              f"(known: {', '.join(sorted(_KEYS))})")
        weights = cfg.get("weights") or {}
        if not isinstance(weights, Mapping):
            raise ConfigError(f"memory.yaml: recall.weights: expected a mapping of {', '.join(_WEIGHT_KEYS)}")
        bad = sorted(set(map(str, weights)) - set(_WEIGHT_KEYS))
        if bad:
            raise ConfigError(f"memory.yaml: recall.weights: unknown signal(s) {', '.join(bad)} "
                              f"(known: {', '.join(_WEIGHT_KEYS)})")
        merged = {**cls().weights, **{k: _number(v, f"recall.weights.{k}", low=0, high=1000) for k, v in weights.items()}}
        if not any(merged[k] for k in QUALITY_SIGNALS):
            raise ConfigError("memory.yaml: recall.weights: at least one of person, verdict, grade, trust must be "
                              "above 0 (else nothing says how right an answer is)")
        prefs = cfg.get("preferences") or {}
        if not isinstance(prefs, Mapping) or set(map(str, prefs)) - _PREFERENCE_KEYS:
            raise ConfigError(f"memory.yaml: recall.preferences: expected a mapping of "
                              f"{', '.join(sorted(_PREFERENCE_KEYS))}, got {prefs!r}")
        max_k = _number(cfg.get("max_k", 100), "recall.max_k", low=1, high=1000, integer=True)
        return cls(weights=merged, max_k=max_k,
                   candidates=_number(cfg.get("candidates", 50), "recall.candidates", low=1, high=5000, integer=True),
                   max_query_chars=_number(cfg.get("max_query_chars", 20_000), "recall.max_query_chars", low=1,
                                           high=1_000_000, integer=True),
                   min_similarity=_number(cfg.get("min_similarity", 0.3), "recall.min_similarity", low=-1, high=1),
                   quarantine_scan=_number(cfg.get("quarantine_scan", 2000), "recall.quarantine_scan", low=0,
                                           high=100_000, integer=True),
                   min_gap=_number(prefs.get("min_gap", 0.05), "recall.preferences.min_gap", low=0, high=1),
                   max_pairs_per_question=_number(prefs.get("max_pairs_per_question", 10),
                                                  "recall.preferences.max_pairs_per_question", low=1, high=1000,
                                                  integer=True))

    @property
    def quality_weight(self) -> float:
        return sum(self.weights[k] for k in QUALITY_SIGNALS)


def recall_settings(memory_cfg: Mapping[str, Any] | None = None) -> RecallSettings:
    """The ``recall`` section of memory.yaml (the configured file when ``memory_cfg`` is None)."""
    if memory_cfg is None:
        from cns_core.config import load_config

        memory_cfg = load_config("memory")
    return RecallSettings.from_config(memory_cfg.get("recall"))


@dataclass(frozen=True)
class Quality:
    """How right a stored answer was judged: ``value`` in [0, 1], each signal's reading, and why."""

    value: float
    parts: Mapping[str, float]        # signal -> its value in [0, 1] (signals the answer lacks are absent)
    lean: Mapping[str, float]         # signal -> what it adds to the rank: weight * (value - 0.5)
    excluded: str | None = None       # why recall leaves it out unless asked (None: it is recalled)
    reasons: tuple[str, ...] = ()


def _signals(e: Engram) -> tuple[dict[str, float], dict[str, str]]:
    """Each signal's value in [0, 1] and its words."""
    values: dict[str, float] = {}
    words: dict[str, str] = {}
    person = e.human_verdict
    if person in ("correct", "incorrect"):
        values["person"] = 1.0 if person == "correct" else 0.0
        who = e.metadata.get("human_who") or "a person"
        words["person"] = f"{who} judged it {person}"
    verdict = e.answer_verdict
    p_right = e.metadata.get("trust_verdict_score")
    if verdict == "no_answer":
        values["verdict"], words["verdict"] = 0.0, "it gives no answer"
    elif verdict is not None and isinstance(p_right, (int, float)) and not isinstance(p_right, bool) \
            and 0.0 <= float(p_right) <= 1.0:
        values["verdict"] = float(p_right)
        words["verdict"] = f"answer verdict {verdict_label(verdict, e.answer_complete)}, p(right) {float(p_right):.2f}"
    if e.critic_score is not None:
        values["grade"] = (e.critic_score - 1) / 4
        words["grade"] = f"judge's grade {e.critic_score}/5"
    if e.trust_score is not None:
        values["trust"] = e.trust_score
        words["trust"] = f"Trust Score {e.trust_score:.2f}"
    return values, words


def judge_quality(e: Engram, settings: RecallSettings, *, quarantined: bool = False) -> Quality:
    """The quality of one stored answer under these weights (see the module doc)."""
    values, words = _signals(e)
    w = settings.weights
    lean = {k: w[k] * (v - 0.5) for k, v in values.items()}
    value = 0.5 + sum(lean.values()) / settings.quality_weight
    excluded = None
    if quarantined:
        excluded = f"quarantined ({e.metadata.get('quarantine_reason') or 'blocked by the coherence hook'})"
    elif e.human_verdict == "incorrect":
        excluded = "a person judged it incorrect"
    elif e.answer_verdict == "incorrect" and e.human_verdict != "correct":
        excluded = "its answer verdict is incorrect"
    reasons = tuple(f"{words[k]} ({lean[k]:+.2f})" for k in QUALITY_SIGNALS if k in values)
    if not values:
        reasons = ("not judged yet (neutral)",)
    return Quality(round(min(1.0, max(0.0, value)), 6), values, lean, excluded, reasons)


@dataclass(frozen=True)
class Recalled:
    """One recalled answer: the engram, its place, its rank's parts and why it ranks there."""

    engram: Engram
    rank: int                        # 1 = first
    score: float                     # similarity weight * similarity + the quality signals' lean
    similarity: float
    similarity_lean: float           # what similarity adds to the score (its weight times it)
    quality: Quality

    @property
    def excluded(self) -> str | None:
        return self.quality.excluded

    @property
    def reasons(self) -> tuple[str, ...]:
        sim = f"similarity {self.similarity:.2f} ({self.similarity_lean:+.2f})"
        return (*self.quality.reasons, sim) + ((f"marked: {self.excluded}",) if self.excluded else ())

    def why(self) -> str:
        return "; ".join(self.reasons)

    def as_dict(self) -> dict[str, Any]:
        """The result as plain data (``cns recall --json``, the bus reply, the page)."""
        e = self.engram
        return {"rank": self.rank, "id": e.id, "query": e.query, "answer": e.answer, "score": round(self.score, 4),
                "similarity": round(self.similarity, 4), "quality": self.quality.value,
                "signals": {k: round(v, 4) for k, v in self.quality.parts.items()},
                "excluded": self.excluded, "why": list(self.reasons), "session_id": e.session_id,
                "model": e.metadata.get("model")}


def rank(candidates: list[tuple[Engram, float, bool]], k: int, settings: RecallSettings, *,
         include_wrong: bool = False) -> list[Recalled]:
    """The best ``k`` of ``(engram, similarity, quarantined)`` candidates, best first; ties go to the more
    similar, then the newer, then the id (a stable order). Answers left out unless asked come, when asked,
    after every other: one judged wrong never ranks above one that was not."""
    scored = []
    for engram, similarity, quarantined in candidates:
        quality = judge_quality(engram, settings, quarantined=quarantined)
        if quality.excluded and not include_wrong:
            continue
        score = settings.weights["similarity"] * similarity + sum(quality.lean.values())
        scored.append((score, similarity, engram, quality))
    scored.sort(key=lambda s: (s[3].excluded is not None, -s[0], -s[1], -s[2].timestamp, s[2].id))
    weight = settings.weights["similarity"]
    return [Recalled(e, i + 1, round(score, 6), similarity, weight * similarity, q)
            for i, (score, similarity, e, q) in enumerate(scored[:k])]


def check_recall_request(query: Any, k: Any, settings: RecallSettings) -> tuple[str, int]:
    """``query`` and ``k`` checked before anything is embedded: ValueError naming the field otherwise."""
    if not isinstance(query, str):
        raise ValueError(f"query: expected text, got {type(query).__name__}")
    if len(query) > settings.max_query_chars:
        raise ValueError(f"query: {len(query):,} characters, at most {settings.max_query_chars:,} allowed "
                         "(recall.max_query_chars in config/memory.yaml)")
    if not query.strip():
        raise ValueError("query: must not be empty")
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or not 1 <= int(k) <= settings.max_k:
        raise ValueError(f"k: expected an integer from 1 to {settings.max_k}, got {k!r} "
                         "(recall.max_k in config/memory.yaml)")
    return query, int(k)
