"""Marks, in a hypothesis, the names and numbers its premise never states (issue 49).

A cross-encoder reads "The capital of Turkey is Istanbul." against "Ankara is the Turkish capital." as
entailed: the two names sit close in what it learned before fine-tuning, and one token in a shared frame
barely moves it. Whether a name of the hypothesis occurs in the premise at all is a plain fact of the two
strings, so it is handed to the model as part of its input: each run of such names is put between two
:data:`MARK` signs. What the mark means (a different value in the same slot, an alias, a detail the premise
leaves open) is still learned from the training pairs; the mark only makes the evidence's silence visible.

A model trained with marks says so in its ``config.json`` (``cns_mark_unstated_names``), and the same
function marks its pairs at training and at use, so the two always see the same text.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from typing import Any

from cns_core.models.verifier import ANSWER_PREFIX, QUESTION_PREFIX

__all__ = ["MARK", "CONFIG_KEY", "WORD", "fold", "mark_unstated_names", "marks_unstated_names"]

MARK = "†"                       # one token of the MiniLM vocabulary, and rare in the texts people store
CONFIG_KEY = "cns_mark_unstated_names"

WORD = re.compile(r"\w+(?:[.,]\d+)*", re.UNICODE)   # a word, or a number with its separators ("384,400")
_GAP = re.compile(r"[\s\-]*")    # what may lie between two names of one run ("New York", "Jean-Paul")


@functools.cache
def _stop_words() -> frozenset[str]:
    """Read at the first marked pair, not at import: scikit-learn costs seconds to import, and a model that
    reads no marks never needs it."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS) | {"yes", "yeah", "ok", "okay"}


def fold(text: str) -> str:
    """Lower case without accents ("Brasília" -> "brasilia")."""
    decomposed = unicodedata.normalize("NFKD", text.lower())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def _key(word: str) -> str:
    """How a word is compared across the two texts: folded, a number without thousands separators."""
    folded = fold(word)
    return folded.replace(",", "") if folded[:1].isdigit() else folded


def _is_name(word: str) -> bool:
    """A capitalised word or a number; a capitalised function word ("The", "In") is not a name."""
    return (word[:1].isupper() or word[:1].isdigit()) and _key(word) not in _stop_words()


def _claim_start(hypothesis: str) -> int:
    """Where the claim begins: after the question of the verifier's form (its names are the question's
    context, not what the answer asserts), else at the start."""
    if hypothesis.startswith(QUESTION_PREFIX):
        answer = hypothesis.find(f" {ANSWER_PREFIX} ")
        if answer >= 0:
            return answer + len(ANSWER_PREFIX) + 2
    return 0


def mark_unstated_names(premise: str, hypothesis: str) -> tuple[str, str]:
    """``(premise, hypothesis)`` with every run of the claim's names and numbers that the premise never
    states put between marks; a mark already in either text is taken out first."""
    premise = premise.replace(MARK, " ")
    hypothesis = hypothesis.replace(MARK, " ")
    stated = {_key(w) for w in WORD.findall(premise)}
    unstated = [m for m in WORD.finditer(hypothesis, _claim_start(hypothesis))
                if _is_name(m.group()) and _key(m.group()) not in stated]
    if not unstated:
        return premise, hypothesis
    runs: list[list[int]] = []
    for match in unstated:
        if runs and _GAP.fullmatch(hypothesis, runs[-1][1], match.start()):
            runs[-1][1] = match.end()
        else:
            runs.append([match.start(), match.end()])
    pieces, last = [], 0
    for start, end in runs:
        pieces += [hypothesis[last:start], f"{MARK} ", hypothesis[start:end], f" {MARK}"]
        last = end
    pieces.append(hypothesis[last:])
    return premise, "".join(pieces)


def marks_unstated_names(config: Any) -> bool:
    """Whether a model (its Hugging Face ``config``) was trained on marked pairs."""
    return bool(getattr(config, CONFIG_KEY, False))
