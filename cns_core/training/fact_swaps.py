"""Fact swaps: one claim made wrong in one small way (a number, a date, a name, a quantity word, an added fact).

Used to make training pairs for the verifier (:mod:`cns_core.training.verifier_data`) and the development
set of the claim-errors benchmark (:mod:`cns_core.training.claim_errors`), so both change facts the same
way. Deterministic: the same claim and donor always give the same change.
"""

from __future__ import annotations

import hashlib
import re
from typing import Callable

__all__ = ["ERROR_KINDS", "MONTHS", "LOWER_START", "inject_error", "numbers_in", "stable_choice"]

ERROR_KINDS = ("number", "date", "name", "quantity", "added_fact")

MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")
_NUMBER_WORDS = ("two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
_YEAR = re.compile(r"\b(1[5-9]\d\d|20\d\d)\b")
_MONTH = re.compile(r"\b(" + "|".join(MONTHS) + r")\b")
# A number standing alone: not part of a name ("CED-10", "caspase-11"), an ordinal ("9th") or a day of a month.
_NUMBER = re.compile(r"(?<![\w.,-])(\d+(?:,\d{3})*(?:\.\d+)?)(?![\w-])")
_AFTER_MONTH = re.compile(r"\b(?:" + "|".join(MONTHS) + r")\s+$")
_NUMBER_WORD = re.compile(r"\b(" + "|".join(_NUMBER_WORDS) + r")\b", re.IGNORECASE)
# Each word and the one it becomes: the same kind of quantity or comparison, the other way.
_QUANTITY = {"million": "billion", "billion": "million", "thousand": "million", "hundred": "thousand",
             "more": "fewer", "fewer": "more", "less": "more", "increased": "decreased", "decreased": "increased",
             "increase": "decrease", "decrease": "increase", "increases": "decreases", "decreases": "increases",
             "higher": "lower", "lower": "higher", "larger": "smaller", "smaller": "larger", "most": "least",
             "least": "most", "first": "second", "second": "third", "third": "fourth", "last": "first",
             "before": "after", "after": "before", "majority": "minority", "minority": "majority",
             "reduces": "increases", "reduced": "increased", "reduce": "increase", "raises": "lowers",
             "lowers": "raises", "double": "triple", "half": "a third", "all": "some", "always": "sometimes",
             "never": "rarely", "greater": "smaller", "longer": "shorter", "shorter": "longer",
             "high": "low", "low": "high", "positive": "negative", "negative": "positive", "over": "under",
             "under": "over", "above": "below", "below": "above", "early": "late", "late": "early"}
_QUANTITY_WORD = re.compile(r"\b(" + "|".join(sorted(_QUANTITY, key=len, reverse=True)) + r")\b")   # lower case: not in a name
# A name: capitalised words not opening the claim (two or more, or one of at least four letters).
_NAME = re.compile(r"(?<=[a-z,;] )((?:[A-Z][a-z]+(?: (?:de |van |von |of )?[A-Z][a-z]+)+)|[A-Z][a-z]{3,})\b")
LOWER_START = frozenset("""the a an in on at it he she they this these there his her its their many some about after
before during for with by from as when while although according since following under over one two three most all
both each every no not only several""".split())


def stable_choice(key: str, n: int) -> int:
    """A deterministic choice among ``n`` options for ``key`` (the same on every machine and run)."""
    return int(hashlib.blake2b(key.encode(), digest_size=4).hexdigest(), 16) % n


def _quantities(text: str) -> list[re.Match]:
    """The numbers of ``text`` that give a quantity: not years, not days of a month."""
    years = {m.span() for m in _YEAR.finditer(text)}
    return [m for m in _NUMBER.finditer(text)
            if m.span(1) not in years and not _AFTER_MONTH.search(text[:m.start(1)])]


def numbers_in(text: str) -> set[str]:
    """The quantities ``text`` writes in digits (years and days of a month are dates, not counted)."""
    return {m.group(1).replace(",", "") for m in _quantities(text)}


def _change_number(claim: str, donor: str) -> str | None:
    for match in _quantities(claim):
        digits = match.group(1)
        lead = int(digits[0])
        new_lead = [d for d in range(1, 10) if d != lead][stable_choice(claim, 8)]
        return claim[:match.start(1)] + str(new_lead) + digits[1:] + claim[match.end(1):]
    word = _NUMBER_WORD.search(claim)
    if word:
        options = [w for w in _NUMBER_WORDS if w != word.group(1).lower()]
        new = options[stable_choice(claim, len(options))]
        new = new.capitalize() if word.group(1)[0].isupper() else new
        return claim[:word.start()] + new + claim[word.end():]
    return None


def _change_date(claim: str, donor: str) -> str | None:
    month = _MONTH.search(claim)
    if month:
        options = [m for m in MONTHS if m != month.group(1)]
        return claim[:month.start()] + options[stable_choice(claim, len(options))] + claim[month.end():]
    year = _YEAR.search(claim)
    if year:
        shift = (-3, -2, -1, 1, 2, 3)[stable_choice(claim, 6)]
        return claim[:year.start()] + str(int(year.group(1)) + shift) + claim[year.end():]
    return None


def _names(text: str) -> list[str]:
    return [m.group(1) for m in _NAME.finditer(text) if m.group(1) not in MONTHS]


def _change_name(claim: str, donor: str) -> str | None:
    mine, theirs = _names(claim), [n for n in _names(donor) if n not in claim]
    if not mine or not theirs:
        return None
    old = mine[0]
    same_shape = [n for n in theirs if n.count(" ") == old.count(" ")] or theirs
    return claim.replace(old, same_shape[stable_choice(claim, len(same_shape))], 1)


def _change_quantity(claim: str, donor: str) -> str | None:
    match = _QUANTITY_WORD.search(claim)
    if not match:
        return None
    new = _QUANTITY[match.group(1)]
    return claim[:match.start()] + new + claim[match.end():]


def _add_fact(claim: str, donor: str) -> str | None:
    donor = donor.strip().rstrip(".")
    if not donor or donor == claim:
        return None
    first, _, rest = donor.partition(" ")
    clause = (first.lower() + " " + rest) if first.lower() in LOWER_START else donor
    return claim.strip().rstrip(".") + ", and " + clause + "."


_INJECTORS: dict[str, Callable[[str, str], str | None]] = {
    "number": _change_number, "date": _change_date, "name": _change_name, "quantity": _change_quantity,
    "added_fact": _add_fact}


def inject_error(claim: str, kind: str, donor: str) -> str | None:
    """``claim`` with one error of ``kind`` (``donor``: another claim, for names and added facts), or None
    when the claim has nothing of that kind to change."""
    if kind not in _INJECTORS:
        raise ValueError(f"kind: {kind!r} is not one of {', '.join(ERROR_KINDS)}")
    changed = _INJECTORS[kind](claim, donor)
    return changed if changed and changed != claim else None
