"""What the answer head reads of an answer, its question and its reference.

A small cross-encoder reads "Sydney is the capital of Australia." against "Canberra is the capital
of Australia." as entailed: nearly every word matches. What a careful grader looks at first is
whether the answer says *what the reference says*: the reference's own words (names, numbers,
the rare words the question does not already hold) found again in the answer, and no number that
clashes. QA evaluation has used exact match and token F1 for this for years; here they are
features beside the verifier's probabilities, weighed by a head fitted on answers people judged
(:mod:`cns_core.models.answer_head`), not rules.

A reference may hold several accepted answers joined by ``" | "`` (NQ's and TriviaQA's golds);
the best-matching one counts.
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass
from typing import Sequence

import numpy as np

__all__ = ["ANSWER_FEATURES", "LexicalMatch", "lexical_match", "feature_row", "content_tokens", "ALIAS_SEPARATOR"]

ALIAS_SEPARATOR = " | "

# Feature name -> what it is (the head's inputs, in this order).
ANSWER_FEATURES: dict[str, str] = {
    "entailment": "log-odds of the verifier's p(supported) of the answer, given the question, against the reference",
    "contradiction": "log-odds of the verifier's p(contradicted) of the same pair",
    "reference_recall": "share of the reference's content words (not already in the question) found in the answer",
    "reference_all_found": "1 when every such word of the best-matching accepted answer is in the answer",
    "answer_novelty": "share of the answer's content words found neither in the reference nor in the question",
    "number_match": "1 when the answer states a number the reference states",
    "number_clash": "1 when both state numbers and none agree",
    "answer_length": "log(1 + the answer's words)",
}

_WORD = re.compile(r"\w+(?:[.,]\d+)*", re.UNICODE)
_NUMBER = re.compile(r"^\d+(?:[.,]\d+)*$")
_EPS = 1e-4


def _stop_words() -> frozenset[str]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS) | {"s", "t", "did", "does", "according"}


_STOP = _stop_words()


def _fold(text: str) -> str:
    """Lower case without accents ("Röntgen" == "rontgen")."""
    decomposed = unicodedata.normalize("NFKD", text.lower())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def _canonical(token: str) -> str:
    """A number without thousands separators ("384,400" == "384400"); a word as it is."""
    if _NUMBER.match(token):
        whole = token.replace(",", "")
        return whole[:-2] if whole.endswith(".0") else whole
    return token


def content_tokens(text: str) -> list[str]:
    """The words that carry content: folded, numbers canonical, stop words dropped."""
    return [_canonical(t) for t in _WORD.findall(_fold(text)) if t not in _STOP]


@dataclass(frozen=True)
class LexicalMatch:
    """How much of the reference the answer restates (best accepted answer) and how its numbers compare."""

    recall: float
    all_found: bool
    novelty: float
    number_match: bool
    number_clash: bool
    answer_words: int


def lexical_match(question: str, reference: str, answer: str) -> LexicalMatch:
    question_words = set(content_tokens(question))
    answer_tokens = content_tokens(answer)
    answer_words = set(answer_tokens)
    best_recall, all_found, reference_words = 0.0, False, set()
    for alias in [a for a in reference.split(ALIAS_SEPARATOR.strip()) if a.strip()] or [reference]:
        words = set(content_tokens(alias))
        reference_words |= words
        asked = words - question_words or words          # an answer may restate the question's own words
        if not asked:
            continue
        recall = len(asked & answer_words) / len(asked)
        if recall > best_recall:
            best_recall = recall
        all_found = all_found or recall == 1.0
    novel = answer_words - reference_words - question_words
    numbers_ref = {w for w in reference_words if _NUMBER.match(w)}
    numbers_answer = {w for w in answer_words - question_words if _NUMBER.match(w)}
    return LexicalMatch(
        recall=best_recall, all_found=all_found,
        novelty=len(novel) / len(answer_words) if answer_words else 0.0,
        number_match=bool(numbers_ref & numbers_answer),
        number_clash=bool(numbers_ref and numbers_answer and not numbers_ref & numbers_answer),
        answer_words=len(answer.split()))


def _logit(p: float) -> float:
    p = min(max(float(p), _EPS), 1.0 - _EPS)
    return math.log(p / (1.0 - p))


def feature_row(probabilities: Sequence[float], match: LexicalMatch) -> np.ndarray:
    """The head's input for one answer: verifier (entailment, neutral, contradiction) and the lexical match."""
    values = {
        "entailment": _logit(probabilities[0]), "contradiction": _logit(probabilities[2]),
        "reference_recall": match.recall, "reference_all_found": float(match.all_found),
        "answer_novelty": match.novelty, "number_match": float(match.number_match),
        "number_clash": float(match.number_clash), "answer_length": math.log1p(match.answer_words),
    }
    return np.array([values[name] for name in ANSWER_FEATURES], dtype=np.float64)
