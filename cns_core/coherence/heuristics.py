"""Stage 2: fast entail/contradict seeds from surface cues (spec section 5).

Every cue comes from :mod:`cns_core.models.textcues` (shared with the lexical
NLI backend); this module only decides *when a cue counts*. A cue alone is
cheap and noisy ("A woman is slicing a carrot" / "There is no woman slicing a
potato" flips polarity but does not contradict), so each one is gated by how
well the two texts line up once the cue words are set aside:

* **negation**: exactly one side is a denial, and what the denial denies is
  covered by what the other side affirms (coverage of the negated side's
  content by the affirmed side);
* **antonym**: a lexicon pair swaps ("open" / "closed") while the rest of both
  texts match;
* **numeric**: some number of the new text is farther than ``delta_num``
  (relative) from every number of the evidence, about the same content;
* **temporal**: the same two events in opposite order ("X before Y" / "Y before X");
* **quantifier**: a polarity flip that is a quantifier's (all/some against none,
  always against never) is also typed ``quantifier``; alone, a quantifier clash
  ("not all" / "no") is not a contradiction and does not count.

A negation that meets an antonym cancels out ("is not sitting" / "is standing"
agree). Alignment below ``align_low`` gives a cue no weight, above
``align_high`` full weight, linearly in between; ``contr_h`` is the clamped
sum of cue strengths and ``entail_h`` the covered share of the new text's
content words, zeroed by any contradiction cue.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Iterable, Mapping

from cns_core.models.textcues import (
    antonym_pairs,
    content_stems,
    extract_numbers,
    is_negated,
    numeric_mismatch,
    quantifier_conflict,
    stem,
    stem_share,
    temporal_conflict,
    temporal_relations,
    tokenize,
)

__all__ = ["HeuristicSettings", "TextFeatures", "HeuristicScore", "features", "score_pair", "score_features",
           "read_with_question", "SHORT_ANSWER_TOKENS"]

CUE_TYPES: tuple[str, ...] = ("negation", "antonym", "numeric", "temporal", "quantifier")
SHORT_ANSWER_TOKENS = 3     # "17", "Paris", "It is 12." say nothing without the question they answer


def read_with_question(text: str, question: str | None) -> str:
    """What a text says, for comparing it with another: a short answer (at most
    :data:`SHORT_ANSWER_TOKENS` words) is read as its question followed by the answer, so "17" and
    "12" to "How many apples are left if you have 20 and eat 3?" differ in what they count, as
    "You have 16 apples left." and "You have 11 apples left." do. Longer texts, and texts whose
    question is unknown, are read as they are."""
    if question and question.strip() and len(tokenize(text)) <= SHORT_ANSWER_TOKENS:
        return f"{question.strip()} {text.strip()}"
    return text


@dataclass(frozen=True)
class HeuristicSettings:
    """Gates and strengths of the cues (``heuristics`` and ``thresholds.delta_num`` in coherence.yaml)."""

    delta_num: float = 0.20
    align_low: float = 0.5
    align_high: float = 0.8
    antonym_kinds: tuple[str, ...] = ("word",)
    cue_strength: Mapping[str, float] = field(default_factory=lambda: {t: 1.0 for t in CUE_TYPES})

    @classmethod
    def from_config(cls, cfg: Mapping) -> "HeuristicSettings":
        h = dict(cfg.get("heuristics") or {})
        strength = {t: 1.0 for t in CUE_TYPES}
        strength.update({str(k): float(v) for k, v in (h.get("cue_strength") or {}).items()})
        return cls(delta_num=float((cfg.get("thresholds") or {}).get("delta_num", cls.delta_num)),
                   align_low=float(h.get("align_low", cls.align_low)),
                   align_high=float(h.get("align_high", cls.align_high)),
                   antonym_kinds=tuple(h.get("antonym_kinds", cls.antonym_kinds)),
                   cue_strength=strength)


@dataclass(frozen=True)
class TextFeatures:
    """What the cues need from one text, computed once per text (evidence recurs across chains)."""

    tokens: tuple[str, ...]
    stems: frozenset[str]
    negated: bool
    numbers: tuple[float, ...]
    timed: bool             # holds a before/after marker between two events


@lru_cache(maxsize=50_000)
def _features_of_tokens(tokens: tuple[str, ...]) -> TextFeatures:
    return TextFeatures(tokens=tokens, stems=frozenset(content_stems(tokens)), negated=is_negated(tokens),
                        numbers=tuple(extract_numbers(list(tokens))), timed=bool(temporal_relations(tokens)))


@lru_cache(maxsize=50_000)
def _is_numeral(token: str) -> bool:
    return bool(extract_numbers([token]))


@lru_cache(maxsize=10_000)
def _word_stems(tokens: tuple[str, ...]) -> frozenset[str]:
    """Content stems without the numerals ("3", "three", "dozen"); only a numeric cue needs them."""
    return frozenset(content_stems(t for t in tokens if not _is_numeral(t)))


@lru_cache(maxsize=50_000)
def _features_of_text(text: str) -> TextFeatures:
    return _features_of_tokens(tuple(tokenize(text)))


def features(text: str | None = None, tokens: Iterable[str] | None = None) -> TextFeatures:
    """Cue features of a text (or of its already tokenized form), cached."""
    if tokens is not None:
        return _features_of_tokens(tuple(tokens))
    return _features_of_text(text or "")


@dataclass(frozen=True)
class HeuristicScore:
    entail: float
    contradict: float
    types: tuple[str, ...]
    alignment: float        # coverage of the new text's content by the evidence


def _ramp(value: float, low: float, high: float) -> float:
    if value >= high:
        return 1.0
    if value <= low:
        return 0.0
    return (value - low) / (high - low)


def score_features(new: TextFeatures, old: TextFeatures, settings: HeuristicSettings,
                   numeric: bool = True) -> HeuristicScore:
    """Heuristic seed for "new text" against "evidence" (``old``): the spec's entail_h and contr_h.
    ``numeric=False`` leaves the numeric cue out (the two texts answer different questions)."""
    alignment = stem_share(old.stems, new.stems)
    if not (new.stems & old.stems):
        return HeuristicScore(0.0, 0.0, (), alignment)
    strength = settings.cue_strength
    cues: dict[str, float] = {}

    antonyms = antonym_pairs(new.tokens, old.tokens, kinds=settings.antonym_kinds)
    swapped = {stem(w) for pair in antonyms for w in pair}
    if new.negated != old.negated:
        if not antonyms:  # "not sitting" vs "standing" agree
            affirmed, denied = (old, new) if new.negated else (new, old)
            cues["negation"] = _ramp(stem_share(affirmed.stems, denied.stems), settings.align_low, settings.align_high)
    elif antonyms:
        rest_new, rest_old = new.stems - swapped, old.stems - swapped
        rest = min(stem_share(rest_old, rest_new), stem_share(rest_new, rest_old))
        cues["antonym"] = _ramp(rest, settings.align_low, settings.align_high)
    if numeric and new.numbers and old.numbers and numeric_mismatch(old.numbers, new.numbers,
                                                                      delta=settings.delta_num):
        # compare what the numbers count, not the numbers
        words_new, words_old = _word_stems(new.tokens), _word_stems(old.tokens)
        cues["numeric"] = _ramp(min(stem_share(words_old, words_new), stem_share(words_new, words_old)),
                                settings.align_low, settings.align_high)
    if new.timed and old.timed and temporal_conflict(new.tokens, old.tokens):
        cues["temporal"] = 1.0
    if cues.get("negation") and quantifier_conflict(new.tokens, old.tokens):
        cues["quantifier"] = cues["negation"]  # "no X" / "all X": the denial is a quantifier's
    contradict = min(1.0, sum(strength.get(t, 1.0) * v for t, v in cues.items() if t != "quantifier"))
    types = tuple(t for t in CUE_TYPES if cues.get(t, 0.0) > 0.0)
    # a polarity flip or a swapped antonym means the overlap is not support, even when weakly aligned
    flipped = new.negated != old.negated or bool(antonyms)
    entail = 0.0 if flipped else alignment * (1.0 - contradict)
    return HeuristicScore(entail=entail, contradict=contradict, types=types, alignment=alignment)


def score_pair(new_text: str, old_text: str, settings: HeuristicSettings | None = None) -> HeuristicScore:
    """Convenience wrapper over :func:`score_features` for two raw texts."""
    return score_features(features(new_text), features(old_text), settings or HeuristicSettings())
