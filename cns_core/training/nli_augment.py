"""Minimal negation pairs made from training sentences, so the model learns what a ``not`` does.

A small cross-encoder trained on SNLI/MultiNLI-sized data reads "Supplements did not reduce
colds" against "Supplements reduce colds" as half entailment: the two sentences share almost
every word. Argument maps are full of such pairs. From each usable training sentence ``s``
this makes ``(s, s)`` entailment and ``(s, not-s)`` and ``(not-s, s)`` contradiction, where
``not-s`` inserts or removes one negation next to the first auxiliary verb. Sentences
without an auxiliary are skipped rather than guessed at. Only training sentences are used:
evaluation sets never feed this.
"""

from __future__ import annotations

import re

import numpy as np

from cns_core.models.nli import NLI_LABELS
from cns_core.training.nli_data import NLIPairs

__all__ = ["negate", "negation_pairs"]

_AUXILIARIES = ("is", "are", "was", "were", "can", "could", "will", "would", "should", "has", "have", "had",
                "does", "do", "did", "may", "might", "must")
_WITH_NOT = re.compile(r"\b(" + "|".join(_AUXILIARIES) + r") not\b", re.IGNORECASE)
_CONTRACTED = re.compile(r"\b(is|are|was|were|could|would|should|has|have|had|does|do|did)n't\b", re.IGNORECASE)
_AUXILIARY = re.compile(r"\b(" + "|".join(_AUXILIARIES) + r")\b(?! not\b)", re.IGNORECASE)


def negate(sentence: str) -> str | None:
    """The sentence with its first negation removed, or one ``not`` added after its first
    auxiliary verb; ``None`` when it has neither (no safe single edit)."""
    for pattern, replacement in ((_WITH_NOT, r"\1"), (_CONTRACTED, r"\1")):
        if pattern.search(sentence):
            return pattern.sub(replacement, sentence, count=1)
    if _AUXILIARY.search(sentence):
        return _AUXILIARY.sub(r"\1 not", sentence, count=1)
    return None


def negation_pairs(source: NLIPairs, count: int, seed: int, max_words: int = 30) -> NLIPairs:
    """Up to ``count`` sentences from ``source``'s hypotheses, three pairs each (see the module docstring)."""
    rng = np.random.default_rng(seed)
    out = NLIPairs()
    entail, contradict = NLI_LABELS.index("entailment"), NLI_LABELS.index("contradiction")
    seen: set[str] = set()
    for i in rng.permutation(len(source)):
        sentence = source.hypotheses[i]
        if sentence in seen or len(sentence.split()) > max_words:
            continue
        negated = negate(sentence)
        if negated is None or negated == sentence:
            continue
        seen.add(sentence)
        for premise, hypothesis, label in ((sentence, sentence, entail), (sentence, negated, contradict),
                                           (negated, sentence, contradict)):
            out.premises.append(premise)
            out.hypotheses.append(hypothesis)
            out.labels.append(label)
            out.sources.append("negation_augmentation")
        if len(seen) >= count:
            break
    return out
