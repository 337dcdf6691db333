"""A development set for summaries and answers: true claims, and the same claims with one injected error.

A summary or an answer is wrong in small ways: a changed number, date, name or quantity word, or a
fact the source never states added to one it does. Each *supported* claim of a development set
(WiCE dev's ``supported`` claims against their cited page; SciFact's ``SUPPORT`` claims of the
held-out folds against their abstract) is kept as it is (it should be judged supported) and once
with one error injected (it should not). The error kinds take turns over the claims, each claim
getting the first kind in turn that it admits, so the kinds stay balanced. Everything is
deterministic: the same data gives the same set, and nothing is written anywhere.

The grounding critic's AUC of p(supported), originals against corrupted claims, is the figure
(``benchmarks/claim_errors.py``).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Callable, Sequence

from cns_core.config import data_dir
from cns_core.critics.grounding_fit import DevClaim
from cns_core.models.nli_data import scifact_fold

__all__ = ["ERROR_KINDS", "inject_error", "claim_error_set", "supported_claims"]

ERROR_KINDS = ("number", "date", "name", "quantity", "added_fact")

_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")
_NUMBER_WORDS = ("two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
_YEAR = re.compile(r"\b(1[5-9]\d\d|20\d\d)\b")
_MONTH = re.compile(r"\b(" + "|".join(_MONTHS) + r")\b")
# A number standing alone: not part of a name ("CED-10", "caspase-11"), an ordinal ("9th") or a day of a month.
_NUMBER = re.compile(r"(?<![\w.,-])(\d+(?:,\d{3})*(?:\.\d+)?)(?![\w-])")
_AFTER_MONTH = re.compile(r"\b(?:" + "|".join(_MONTHS) + r")\s+$")
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
_LOWER_START = frozenset("""the a an in on at it he she they this these there his her its their many some about after
before during for with by from as when while although according since following under over one two three most all
both each every no not only several""".split())


def _pick(key: str, n: int) -> int:
    """A deterministic choice among ``n`` options for ``key``."""
    return int(hashlib.blake2b(key.encode(), digest_size=4).hexdigest(), 16) % n


def _change_number(claim: str, donor: str) -> str | None:
    years = {m.span() for m in _YEAR.finditer(claim)}
    for match in _NUMBER.finditer(claim):
        if match.span(1) in years or _AFTER_MONTH.search(claim[:match.start(1)]):
            continue                             # years and days are dates
        digits = match.group(1)
        lead = int(digits[0])
        new_lead = [d for d in range(1, 10) if d != lead][_pick(claim, 8)]
        return claim[:match.start(1)] + str(new_lead) + digits[1:] + claim[match.end(1):]
    word = _NUMBER_WORD.search(claim)
    if word:
        options = [w for w in _NUMBER_WORDS if w != word.group(1).lower()]
        new = options[_pick(claim, len(options))]
        new = new.capitalize() if word.group(1)[0].isupper() else new
        return claim[:word.start()] + new + claim[word.end():]
    return None


def _change_date(claim: str, donor: str) -> str | None:
    month = _MONTH.search(claim)
    if month:
        options = [m for m in _MONTHS if m != month.group(1)]
        return claim[:month.start()] + options[_pick(claim, len(options))] + claim[month.end():]
    year = _YEAR.search(claim)
    if year:
        shift = (-3, -2, -1, 1, 2, 3)[_pick(claim, 6)]
        return claim[:year.start()] + str(int(year.group(1)) + shift) + claim[year.end():]
    return None


def _names(text: str) -> list[str]:
    return [m.group(1) for m in _NAME.finditer(text) if m.group(1) not in _MONTHS]


def _change_name(claim: str, donor: str) -> str | None:
    mine, theirs = _names(claim), [n for n in _names(donor) if n not in claim]
    if not mine or not theirs:
        return None
    old = mine[0]
    same_shape = [n for n in theirs if n.count(" ") == old.count(" ")] or theirs
    return claim.replace(old, same_shape[_pick(claim, len(same_shape))], 1)


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
    clause = (first.lower() + " " + rest) if first.lower() in _LOWER_START else donor
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


def _json_rows(path: Path) -> list[dict]:
    if not path.is_file():
        raise FileNotFoundError(f"{path}: not found (set CNS_DATA_DIR to the shared data folder)")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def supported_claims(root: Path | None = None, scifact_folds: int = 5,
                     scifact_held_folds: Sequence[int] = (0, 1)) -> list[DevClaim]:
    """WiCE dev's supported claims and SciFact's SUPPORT claims of the held-out folds, with their sources."""
    root = root or data_dir()
    wice = [DevClaim("wice", f"wice-{r['meta']['id']}", "original", "supported", r["claim"].strip(),
                     " ".join(s.strip() for s in r["evidence"] if s.strip()))
            for r in _json_rows(root / "wice_dev" / "claim_dev.jsonl") if r["label"] == "supported"]
    scifact = [DevClaim("scifact", f"scifact-{r['claim_id']}-{r['doc_id']}", "original", "supported",
                        r["claim"].strip(), " ".join(r["abstract"]))
               for r in _json_rows(root / "scifact_train" / "train_claim_doc_pairs.jsonl")
               if r["label"] == "SUPPORT" and scifact_fold(r["claim_id"], scifact_folds) in scifact_held_folds]
    return wice + scifact


def claim_error_set(claims: Sequence[DevClaim] | None = None, limit: int | None = None) -> list[DevClaim]:
    """Each supported claim, then the same claim with one injected error (``label`` = the error kind,
    ``verdict`` = not_enough_info). Kinds take turns per dataset; a claim that admits none is left out.
    ``limit``: the first N claims of each dataset."""
    claims = list(supported_claims() if claims is None else claims)
    out: list[DevClaim] = []
    for dataset in dict.fromkeys(c.dataset for c in claims):
        part = [c for c in claims if c.dataset == dataset][:limit]
        turn = 0
        for i, claim in enumerate(part):
            donor = part[(i + len(part) // 2) % len(part)].claim      # a claim about something else
            for step in range(len(ERROR_KINDS)):
                kind = ERROR_KINDS[(turn + step) % len(ERROR_KINDS)]
                changed = inject_error(claim.claim, kind, donor)
                if changed:
                    out.append(claim)
                    out.append(DevClaim(claim.dataset, claim.group, kind, "not_enough_info", changed, claim.source))
                    turn = (turn + step + 1) % len(ERROR_KINDS)
                    break
    return out
