"""Opposites: one word changed into its opposite, which a careful reader calls contradicted.

"won" for "lost", "before" for "after", "positively" for "negatively": a claim that keeps every word of
its evidence but one, and says the opposite with that one. Generic NLI rarely shows the model such pairs
(its contradictions are mostly whole other scenes), so a verifier trained on it reads "The team lost" as
entailed by "The team won". More generic NLI does not teach it; one-word opposites do.

Which words are opposites is learned from data, not listed by hand: VitaminC's revisions and CAD-SNLI's
counterfactuals change one word to turn an entailed sentence into a contradicted one, against the same
premise, or the same sentence's evidence into one that refutes it. A change seen at least ``min_count``
times, and in both directions (the word of the entailed side became the other and back), is kept: "more /
less" and "north / south" are; "person / woman" (a more general word, entailed the one way) is not.

Each change is kept with what followed the word where it was seen (a number, a name, or the next word
itself, kept where seen twice): "in 2016" became "after 2016", so "in" is changed into "after" before a number, never in "in the
community". Training pairs are made from entailed pairs of other files: where the hypothesis and its
premise write the same mined word in the same place (the same word beside it) and the word stands before
what the change was seen before, the hypothesis with the word's opposite is *contradiction*, and the
original pair stays beside it as its *entailment* twin, so the lesson is "this word decides" and not "an
edited sentence is contradicted". No word makes more than ``_MAX_WORD_SHARE`` of a file's pairs, so the
frequent words ("in", "more") do not crowd out the rest. Deterministic in the seed.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from cns_core.models.nli import CONTRADICTION, ENTAILMENT
from cns_core.training.nli_data import NLIPairs

__all__ = ["OppositeLexicon", "mine_opposites", "opposite_pairs", "one_word_change", "context_of", "FREQUENT_WORDS"]

_TOKEN = re.compile(r"\w+|[^\w\s]")
_WORD = re.compile(r"[a-z]+")
_MAX_GROUP = 50           # a premise shared by more rows than this is a template, not a revision
_MIN_CONTEXT_COUNT = 2    # a place a change was seen once is an accident, not where the word is an opposite
# The commonest words ("in", "by", "on") have many senses: "in 2016" -> "before 2016" is an opposite, "in the
# community" -> "before the community" is nonsense. They are changed before a number, or where the change was
# seen often.
FREQUENT_WORDS = 50
_MIN_FREQUENT_CONTEXT_COUNT = 20
_MAX_WORD_SHARE = 0.1     # of a file's opposite pairs, at most this share changes any one word


def context_of(tokens: Sequence[str], i: int) -> str:
    """What follows token ``i``: "#" before a number, "A" before a capitalised word, else the next token in
    lower case ("" at the end)."""
    if i + 1 >= len(tokens):
        return ""
    following = tokens[i + 1]
    if following[0].isdigit():
        return "#"
    return "A" if following[0].isupper() else following.lower()


@dataclass(frozen=True)
class OppositeLexicon:
    """Mined opposites: per word, the words that turned an entailed sentence into a contradicted one."""

    counts: dict[tuple[str, str], int]        # (word of the entailed side, word of the contradicted side)
    # per (word, opposite): what followed the word where the change was seen (:func:`context_of`)
    contexts: dict[tuple[str, str], frozenset[str]]

    def opposites(self, context: str) -> dict[str, tuple[str, ...]]:
        """Per word, its opposites seen before ``context``, the most often seen first."""
        out: dict[str, list[tuple[int, str]]] = defaultdict(list)
        for (entailed, contradicted), n in self.counts.items():
            if context in self.contexts[(entailed, contradicted)]:
                out[entailed].append((-n, contradicted))
        return {word: tuple(w for _, w in sorted(found)) for word, found in out.items()}

    @property
    def words(self) -> set[str]:
        return {entailed for entailed, _ in self.counts}

    def __len__(self) -> int:
        return len({tuple(sorted(pair)) for pair in self.counts})


def one_word_change(before: str, after: str) -> tuple[str, str, str] | None:
    """(old word, new word, what follows it) when ``after`` is ``before`` with one lower-case word changed."""
    old, new = _TOKEN.findall(before), _TOKEN.findall(after)
    if len(old) != len(new):
        return None
    changed = [i for i, (a, b) in enumerate(zip(old, new)) if a != b]
    if len(changed) != 1:
        return None
    a, b = old[changed[0]], new[changed[0]]
    return (a, b, context_of(old, changed[0])) if _WORD.fullmatch(a) and _WORD.fullmatch(b) else None


def mine_opposites(revisions: Iterable[NLIPairs], min_count: int = 4,
                   frequent_words: int = FREQUENT_WORDS) -> OppositeLexicon:
    """The one-word changes that flip entailment into contradiction, kept when seen ``min_count`` times in all
    and in both directions (an opposite, not a more general or more specific word); the ``frequent_words``
    commonest words of the hypotheses only where the change was seen often or before a number."""
    seen: Counter[tuple[str, str]] = Counter()
    contexts: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    words: Counter[str] = Counter()
    for data in revisions:
        by_premise: dict[str, list[tuple[str, int]]] = defaultdict(list)
        by_hypothesis: dict[str, list[tuple[str, int]]] = defaultdict(list)
        for premise, hypothesis, label in zip(data.premises, data.hypotheses, data.labels):
            words.update(_WORD.findall(hypothesis.lower()))
            by_premise[premise].append((hypothesis, label))
            by_hypothesis[hypothesis].append((premise, label))
        for group in (*by_premise.values(), *by_hypothesis.values()):
            if len(group) < 2 or len(group) > _MAX_GROUP:
                continue
            entailed = [text for text, label in group if label == ENTAILMENT]
            contradicted = [text for text, label in group if label == CONTRADICTION]
            for e in entailed:
                for c in contradicted:
                    change = one_word_change(e, c)
                    if change:
                        a, b, context = change
                        seen[(a, b)] += 1
                        contexts[(a, b)][context] += 1
                        contexts[(b, a)][context] += 1    # the revision read backwards: the same place
    kept = {}
    for (a, b), n in seen.items():
        back = seen.get((b, a), 0)
        if back and n + back >= min_count:
            kept[(a, b)] = n
    frequent = {w for w, _ in words.most_common(frequent_words)}

    def places(pair: tuple[str, str]) -> frozenset[str]:
        least = _MIN_FREQUENT_CONTEXT_COUNT if pair[0] in frequent else _MIN_CONTEXT_COUNT
        return frozenset(c for c, n in contexts[pair].items() if n >= least or (c == "#" and n >= _MIN_CONTEXT_COUNT))

    return OppositeLexicon(kept, {pair: places(pair) for pair in kept})


def _neighbours(words: Sequence[str], i: int) -> set[tuple[str, str]]:
    return {("left", words[i - 1]) if i else ("left", ""), ("right", words[i + 1] if i + 1 < len(words) else "")}


def _grounded_positions(premise: str, hypothesis: str, vocabulary: set[str]) -> list[int]:
    """Token positions of the hypothesis whose mined word the premise writes with the same word beside it."""
    p_tokens = [t.lower() for t in _TOKEN.findall(premise)]
    h_tokens = _TOKEN.findall(hypothesis)
    h_lower = [t.lower() for t in h_tokens]
    in_premise: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for i, token in enumerate(p_tokens):
        if token in vocabulary:
            in_premise[token] |= _neighbours(p_tokens, i)
    return [i for i, token in enumerate(h_tokens)
            if token in vocabulary and token == h_lower[i] and in_premise.get(token, set()) & _neighbours(h_lower, i)]


def _replace_token(text: str, index: int, word: str) -> str:
    spans = [m.span() for m in _TOKEN.finditer(text)]
    start, end = spans[index]
    return text[:start] + word + text[end:]


def opposite_pairs(data: NLIPairs, lexicon: OppositeLexicon, limit: int, seed: int, source: str) -> NLIPairs:
    """Up to ``limit`` pairs from ``data``'s entailed pairs: each hypothesis with one grounded word made its
    opposite (*contradiction*) beside the original pair (*entailment*)."""
    vocabulary = lexicon.words
    rng = np.random.default_rng(seed)
    out = NLIPairs()
    per_word: Counter[str] = Counter()
    word_cap = max(2, int(limit * _MAX_WORD_SHARE))
    for i in rng.permutation(len(data)).tolist():
        if len(out) + 2 > limit:
            break
        if data.labels[i] != ENTAILMENT:
            continue
        premise, hypothesis = data.premises[i], data.hypotheses[i]
        tokens = _TOKEN.findall(hypothesis)
        candidates = [(at, lexicon.opposites(context_of(tokens, at)).get(tokens[at], ()))
                      for at in _grounded_positions(premise, hypothesis, vocabulary)
                      if per_word[tokens[at]] + 2 <= word_cap]
        candidates = [(at, choices) for at, choices in candidates if choices]
        if not candidates:
            continue
        at, choices = candidates[int(rng.integers(len(candidates)))]
        per_word[tokens[at]] += 2
        changed = _replace_token(hypothesis, at, choices[int(rng.integers(min(len(choices), 3)))])
        out.premises += [premise, premise]
        out.hypotheses += [changed, hypothesis]
        out.labels += [CONTRADICTION, ENTAILMENT]
        out.sources += [source, source]
    return out
