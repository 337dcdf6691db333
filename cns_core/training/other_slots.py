"""Numbers in other slots: two sentences of one true document, each giving its own number, leave each other open.

The recipe's first model read "systolic pressure fell by 8.3 mmHg" against "diastolic pressure fell by 5.2 mmHg"
as a contradiction (p 0.97). The fact swaps teach that another number in the same sentence is another value
for the same slot; nothing taught that a number for *another* slot says nothing about the claim. A true
document does not contradict itself, so two of its sentences that share their topic and give different numbers
are that lesson in real text: the pair is labelled neutral. A pair whose hypothesis writes no number the premise
lacks is left out (the premise may entail it), and so is a pair without enough words in common to tempt the
model (it would teach nothing).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from cns_core.models.nli import NEUTRAL
from cns_core.models.textcues import content_stems, tokenize
from cns_core.training.fact_swaps import numbers_in
from cns_core.training.nli_data import NLIPairs, scifact_fold

__all__ = ["other_slot_pairs", "documents_in"]

_MIN_SHARED = 3                 # content stems both sentences write
_WORDS_RANGE = (6, 60)          # sentence lengths in words that read as claims
_PER_DOCUMENT = 6


def _candidates(sentences: Sequence[str]) -> list[tuple[float, str, str]]:
    """(overlap, premise, hypothesis) for each ordered pair of the document's sentences that qualifies."""
    usable = []
    for sentence in dict.fromkeys(s.strip() for s in sentences):
        numbers, length = numbers_in(sentence), len(sentence.split())
        if numbers and _WORDS_RANGE[0] <= length <= _WORDS_RANGE[1]:
            usable.append((sentence, numbers, content_stems(tokenize(sentence))))
    out = []
    for premise, premise_numbers, premise_words in usable:
        for hypothesis, numbers, words in usable:
            if hypothesis == premise or not numbers - premise_numbers or not premise_numbers - numbers:
                continue
            shared = len(premise_words & words)
            if shared >= _MIN_SHARED:
                out.append((shared / max(len(words), 1), premise, hypothesis))
    return out


def other_slot_pairs(documents: Iterable[Sequence[str]], limit: int, seed: int, source: str = "other_slots",
                     per_document: int = _PER_DOCUMENT) -> NLIPairs:
    """Neutral pairs of sentences from one document with numbers in different slots: per document the
    ``per_document`` pairs with the most words in common (the likeliest false alarms), at most ``limit`` in
    all, chosen by ``seed``."""
    chosen: list[tuple[str, str]] = []
    for sentences in documents:
        ranked = sorted(_candidates(sentences), key=lambda c: (-c[0], c[1], c[2]))
        chosen.extend((premise, hypothesis) for _, premise, hypothesis in ranked[:per_document])
    order = np.random.default_rng(seed).permutation(len(chosen))[:limit]
    out = NLIPairs()
    for i in sorted(order):
        out.premises.append(chosen[i][0])
        out.hypotheses.append(chosen[i][1])
        out.labels.append(NEUTRAL)
        out.sources.append(source)
    return out


def documents_in(path: str | Path, folds: int, held_folds: Sequence[int], held: bool = False) -> list[list[str]]:
    """The documents a training file holds, in sentences: a long-answer set's folder (its source documents
    outside the held-out fold), SciFact's rows (the abstracts its training claims cite, less any abstract a
    held-out claim cites) or BoolQ's rows (their passages). ``held=True``: only the held-out documents (the
    long answers' fold 0, the abstracts held-out claims cite; BoolQ holds none), to measure on."""
    from cns_core.training import long_answers
    from cns_core.text.segment import split_sentences

    path = Path(path)
    if path.is_dir():
        rows = long_answers.TRAIN_READERS[path.name](path.parent.parent)
        rows = long_answers.held_out(rows) if held else long_answers.trainable(rows)
        return [split_sentences(text) for text in dict.fromkeys(r.source for r in rows if r.source)]
    abstracts: dict[int, list[str]] = {}
    passages: dict[str, None] = {}
    cited_by_held: set[int] = set()
    with path.open(encoding="utf-8") as handle:
        for text in handle:
            try:
                row = json.loads(text)
                if "passage" in row:
                    if not held:
                        passages[str(row["passage"])] = None
                    continue
                doc, claim_id, abstract = int(row["doc_id"]), row["claim_id"], row["abstract"]
            except (json.JSONDecodeError, KeyError, TypeError, ValueError):
                continue                 # the rows the file's own reader reports as problems
            if scifact_fold(claim_id, folds) in held_folds:
                cited_by_held.add(doc)
            if isinstance(abstract, list):
                abstracts[doc] = [str(s) for s in abstract]
    return ([sentences for doc, sentences in sorted(abstracts.items()) if (doc in cited_by_held) == held]
            + [split_sentences(text) for text in passages])
