"""The content words of a text, compared across a question, a reference and an answer.

Folded to lower case without accents ("Röntgen" == "rontgen"), numbers without thousands separators
("384,400" == "384400"), English stop words dropped. The verifier's data reader uses them to check that a
right answer chosen as another answer's reference really states its gold answer
(:func:`cns_core.training.verifier_data.answers_against_a_good_answer`).
"""

from __future__ import annotations

import re

from cns_core.models.name_marks import WORD, fold

__all__ = ["content_tokens"]

_NUMBER = re.compile(r"^\d+(?:[.,]\d+)*$")


def _stop_words() -> frozenset[str]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS) | {"s", "t", "did", "does", "according"}


_STOP = _stop_words()


def _canonical(token: str) -> str:
    if _NUMBER.match(token):
        whole = token.replace(",", "")
        return whole[:-2] if whole.endswith(".0") else whole
    return token


def content_tokens(text: str) -> list[str]:
    """The words that carry content: folded, numbers canonical, stop words dropped."""
    return [_canonical(t) for t in WORD.findall(fold(text)) if t not in _STOP]
