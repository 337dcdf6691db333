"""Restatements: a supported claim said in other words that a careful reader still calls supported.

Real true claims rarely copy their evidence: a number is rounded or written another way (in words too), a year
is told as its decade or century, a long name is abbreviated or given in part, a precise figure is told
approximately. A verifier that learned "a name or number the evidence does not write" as "contradicted" paints a
red badge on every one of them. These pairs
teach the difference from the corpora's own supported pairs: the restated hypothesis against the same
premise stays *entailment* (the slot holds the same value), beside the fact swaps
(:func:`cns_core.training.verifier_data.swap_pairs`) where another value in the same slot is a contradiction.

Deterministic: the same pair always gives the same restatement.
"""

from __future__ import annotations

import re
from typing import Callable

import numpy as np

from cns_core.models.nli import ENTAILMENT
from cns_core.training.fact_swaps import stable_choice
from cns_core.training.nli_data import NLIPairs

__all__ = ["RESTATEMENT_KINDS", "restate", "restated_pairs", "rounded", "acronym", "in_words"]

RESTATEMENT_KINDS = ("rounded_number", "reformatted_number", "number_in_words", "period", "acronym", "partial_name")

# A number standing alone (not in a name such as "CED-10", not a year, not an ordinal).
_NUMBER = re.compile(r"(?<![\w.,-])(\d{1,3}(?:,\d{3})+|\d{2,}(?:\.\d+)?)(?![\w-])")
_YEAR = re.compile(r"^(1[5-9]\d\d|20\d\d)$")
_HEDGES = ("about", "around", "roughly", "nearly", "some", "approximately", "close to")
# A multi-word proper name: capitalised words, "of"/"and"/"for"/"the" allowed inside.
_LONG_NAME = re.compile(r"\b(?!The\b)([A-Z][a-z]+(?: (?:of |and |for |the )?[A-Z][a-z]+){2,5})\b")
_PERSON = re.compile(r"\b([A-Z][a-z]+) ((?:[A-Z]\. )?[A-Z][a-z]{2,})\b")
_SMALL = {"of", "and", "for", "the"}
_NOT_A_GIVEN_NAME = frozenset("""The A An In On At Of For And But When Where What Which Who How This That These
Those There He She It They We His Her Its Their New North South East West United Saint San Los Las Le La El
January February March April May June July August September October November December Monday Tuesday
Wednesday Thursday Friday Saturday Sunday Mount Lake River Cape Fort Port Royal National International
American British French German Chinese Japanese""".split())


def rounded(value: float) -> float:
    """``value`` rounded to two significant figures (1,473 -> 1,500; 206 -> 210; 48.7 -> 49)."""
    if value == 0:
        return 0.0
    digits = int(np.floor(np.log10(abs(value))))
    return float(round(value, 1 - digits))


def _written(value: float) -> str:
    return f"{int(value):,}" if value == int(value) else f"{value:g}"


def _number_spans(text: str) -> list[re.Match]:
    return [m for m in _NUMBER.finditer(text) if not _YEAR.match(m.group(1))]


def _round_number(premise: str, hypothesis: str) -> str | None:
    """'1,473 minutes' -> 'about 1,500 minutes' where the premise writes 1,473 too."""
    for match in _number_spans(hypothesis):
        text = match.group(1)
        if text not in premise:
            continue
        value = float(text.replace(",", ""))
        near = rounded(value)
        if near == value or abs(near - value) / value > 0.05:
            continue
        hedge = _HEDGES[stable_choice(hypothesis, len(_HEDGES))]
        return hypothesis[:match.start(1)] + f"{hedge} {_written(near)}" + hypothesis[match.end(1):]
    return None


def _reformat_number(premise: str, hypothesis: str) -> str | None:
    """'12,500' <-> '12500', '2,000,000' -> '2 million': the same value written another way."""
    for match in _number_spans(hypothesis):
        text = match.group(1)
        if text not in premise:
            continue
        value = float(text.replace(",", ""))
        if value >= 1_000_000 and value % 100_000 == 0:
            new = f"{value / 1_000_000:g} million"
        elif "," in text:
            new = text.replace(",", "")
        elif value >= 10_000 and value == int(value):
            new = f"{int(value):,}"
        else:
            continue
        return hypothesis[:match.start(1)] + new + hypothesis[match.end(1):]
    return None


_UNITS = ("", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
_TENS = ("", "ten", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
_SCALES = ((1_000_000_000, "billion"), (1_000_000, "million"), (1_000, "thousand"), (100, "hundred"))
_ORDINAL_CENTURIES = {11: "eleventh", 12: "twelfth", 13: "thirteenth", 14: "fourteenth", 15: "fifteenth",
                      16: "sixteenth", 17: "seventeenth", 18: "eighteenth", 19: "nineteenth", 20: "twentieth",
                      21: "twenty-first"}
_IN_YEAR = re.compile(r"\bin (1[0-9]\d\d|20\d\d)\b")


def in_words(value: int) -> str | None:
    """A number of one significant figure in words (200 -> 'two hundred', 40,000 -> 'forty thousand'); None for
    any other."""
    for scale, name in _SCALES:
        if value >= scale and value % scale == 0:
            head = in_words(value // scale)
            return f"{head} {name}" if head else None
    if value < 10:
        return _UNITS[value] or None
    return _TENS[value // 10] if value < 100 and value % 10 == 0 else None


_BOUNDS = frozenset("than over under below above least most about around roughly nearly some approximately to".split())


def _counts_something(before: list[str], after: list[str]) -> bool:
    """A number that counts the word after it ("206 bones"), not a name's ("Fallout 76"), a date's ("April 20"),
    an address's, a ratio's ("59/100") or a bound's ("more than 90", which a rounding could cross)."""
    if not after or not after[0][:1].islower():
        return False
    if not before:
        return True
    previous = before[-1]
    return not (previous[:1].isupper() or previous.lower() in _BOUNDS or previous[-1:] in "$#/€£")


def _number_in_words(premise: str, hypothesis: str) -> str | None:
    """'206 bones' -> 'roughly two hundred bones' where the premise writes 206 too: the number rounded to one
    significant figure (at most 10% off) and written in words, as people say a number they remember."""
    for match in _number_spans(hypothesis):
        text = match.group(1)
        before = hypothesis[:match.start(1)].split()
        after = hypothesis[match.end(1):].split()
        if text not in premise or "." in text or not _counts_something(before, after):
            continue
        value = int(text.replace(",", ""))
        if value < 20:
            continue
        magnitude = 10 ** int(np.floor(np.log10(value)))
        near = int(round(value / magnitude) * magnitude)
        words = in_words(near)
        if words is None or abs(near - value) / value > 0.10:
            continue
        hedge = _HEDGES[stable_choice(hypothesis, len(_HEDGES))] + " " if near != value else ""
        return hypothesis[:match.start(1)] + hedge + words + hypothesis[match.end(1):]
    return None


def _period(premise: str, hypothesis: str) -> str | None:
    """'signed in 1648' -> 'signed in the seventeenth century' (or 'in the 1640s') where the premise gives the year:
    a less precise date that stays true."""
    for match in _IN_YEAR.finditer(hypothesis):
        year = int(match.group(1))
        if match.group(1) not in premise:
            continue
        century = _ORDINAL_CENTURIES.get(year // 100 + 1)
        if century and stable_choice(hypothesis, 2) == 0:
            said = f"in the {century} century"
        else:
            said = f"in the {year // 10 * 10}s"
        return hypothesis[:match.start()] + said + hypothesis[match.end():]
    return None


def acronym(name: str) -> str | None:
    """'World Health Organization' -> 'WHO' (the small words left out); None for fewer than three letters."""
    words = name.split()
    if words[0] == "The":
        return None
    letters = "".join(word[0] for word in words if word not in _SMALL)
    return letters if len(letters) >= 3 else None


def _abbreviate(premise: str, hypothesis: str) -> str | None:
    for match in _LONG_NAME.finditer(hypothesis):
        name = match.group(1)
        short = acronym(name)
        if short and name in premise and short not in premise:
            return hypothesis[:match.start(1)] + short + hypothesis[match.end(1):]
    return None


def _partial_name(premise: str, hypothesis: str) -> str | None:
    """'Tim Tebow was ...' -> 'Tebow was ...' where the premise gives the whole name and also calls him by the
    family name alone (the evidence's own usage: "Rotten Tomatoes" is never "Tomatoes")."""
    for match in _PERSON.finditer(hypothesis):
        given, family = match.group(1), match.group(2)
        if given in _NOT_A_GIVEN_NAME or match.group(0) not in premise:
            continue
        alone = re.search(rf"(?<!{re.escape(given)} )\b{re.escape(family)}\b", premise)
        if not alone:
            continue
        return hypothesis[:match.start()] + family + hypothesis[match.end():]
    return None


_RESTATERS: dict[str, Callable[[str, str], str | None]] = {
    "rounded_number": _round_number, "reformatted_number": _reformat_number, "number_in_words": _number_in_words,
    "period": _period, "acronym": _abbreviate,
    "partial_name": _partial_name}


def restate(premise: str, hypothesis: str, kind: str) -> str | None:
    """``hypothesis`` restated in one way of ``kind`` that keeps it supported by ``premise``, or None."""
    if kind not in _RESTATERS:
        raise ValueError(f"kind: {kind!r} is not one of {', '.join(RESTATEMENT_KINDS)}")
    changed = _RESTATERS[kind](premise, hypothesis)
    return changed if changed and changed != hypothesis else None


def restated_pairs(supported: NLIPairs, limit: int, seed: int, source: str = "restated") -> NLIPairs:
    """Restatements of the entailment rows of ``supported`` (-> entailment), the kinds taking turns, at most
    ``limit`` pairs chosen by ``seed`` and at most a quarter of them of one kind (made-up acronyms, the
    easiest to make, must not teach that any capitals go)."""
    rows = [i for i, label in enumerate(supported.labels) if label == ENTAILMENT]
    rng = np.random.default_rng(seed)
    rng.shuffle(rows)
    out = NLIPairs()
    turn = 0
    per_kind = max(1, limit // len(RESTATEMENT_KINDS))
    made = dict.fromkeys(RESTATEMENT_KINDS, 0)
    for i in rows:
        if len(out) >= limit:
            break
        premise, hypothesis = supported.premises[i], supported.hypotheses[i]
        for step in range(len(RESTATEMENT_KINDS)):
            kind = RESTATEMENT_KINDS[(turn + step) % len(RESTATEMENT_KINDS)]
            if made[kind] >= per_kind:
                continue
            changed = restate(premise, hypothesis, kind)
            if changed:
                out.premises.append(premise)
                out.hypotheses.append(changed)
                out.labels.append(ENTAILMENT)
                out.sources.append(f"{source}:{kind}")
                made[kind] += 1
                turn = (turn + step + 1) % len(RESTATEMENT_KINDS)
                break
    return out
