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
itself, kept where seen twice): "in 2016" became "after 2016", so "in" is changed into "after" before a
number, never in "in the community". Training pairs are made from entailed pairs of other files: where the
hypothesis and its premise write the same mined word in the same place (the same word beside it) and the
word stands before what the change was seen before, the hypothesis with the word's opposite is *contradiction*, and the
original pair stays beside it as its *entailment* twin, so the lesson is "this word decides" and not "an
edited sentence is contradicted". The other half of the pairs are the file's premise sentences, each against
itself with one word made its opposite (*contradiction*), the form of a claim that copies its evidence but for
one word.

The revisions' opposites are few and skewed ("more" / "less" a thousand times, "alive" / "dead" never), and a
model taught only them learns those words, not the idea: a short fine-tune on them caught 3 of the opposites
probe's 20 (``benchmarks/opposites_probe.py``), the same on WordNet's antonyms 11. So a word the revisions never
changed is changed into its WordNet antonym (:mod:`cns_core.training.wordnet_antonyms`; never one of the
corpora's commonest words, whose senses are many). No word makes more than ``_MAX_WORD_SHARE`` of a file's
pairs, so the frequent words ("in", "more") do not crowd out the rest. Deterministic in the seed.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from functools import cached_property
from typing import Iterable, Sequence

import numpy as np

from cns_core.models.nli import CONTRADICTION, ENTAILMENT
from cns_core.text.segment import split_sentences
from cns_core.training.nli_data import NLIPairs
from cns_core.training.wordnet_antonyms import Antonyms

__all__ = ["OppositeLexicon", "OppositeFinder", "mine_opposites", "opposite_pairs", "one_word_change", "context_of",
           "FREQUENT_WORDS"]

_TOKEN = re.compile(r"\w+|[^\w\s]")
_WORD = re.compile(r"[a-z]+")
_MAX_GROUP = 50           # a premise shared by more rows than this is a template, not a revision
_MIN_CONTEXT_COUNT = 2    # a place a change was seen once is an accident, not where the word is an opposite
# The commonest words ("in", "by", "on") have many senses: "in 2016" -> "before 2016" is an opposite, "in the
# community" -> "before the community" is nonsense. They are changed before a number, or where the change was
# seen often.
FREQUENT_WORDS = 50
_MIN_FREQUENT_CONTEXT_COUNT = 20
_SENTENCE_WORDS = (5, 40)  # a sentence read against itself: long enough to be a claim, short enough to read
# A WordNet antonym is used only where the corpora write it this often: "legal" -> "illegal", never "made" ->
# "unmade" or "loved" -> "unloved", words people rarely write.
_KNOWN_COUNT = 3
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
    frequent: frozenset[str] = frozenset()     # the corpora's commonest words (WordNet never changes them)
    known: frozenset[str] = frozenset()        # words the corpora write at least _KNOWN_COUNT times

    @cached_property
    def _by_context(self) -> dict[str, dict[str, tuple[str, ...]]]:
        index: dict[str, dict[str, list[tuple[int, str]]]] = defaultdict(lambda: defaultdict(list))
        for (entailed, contradicted), n in self.counts.items():
            for context in self.contexts[(entailed, contradicted)]:
                index[context][entailed].append((-n, contradicted))
        return {context: {word: tuple(w for _, w in sorted(found)) for word, found in words.items()}
                for context, words in index.items()}

    def opposites(self, context: str) -> dict[str, tuple[str, ...]]:
        """Per word, its opposites seen before ``context``, the most often seen first."""
        return self._by_context.get(context, {})


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
        return frozenset(c for c, n in contexts[pair].items()
                         if n >= least or (c == "#" and n >= _MIN_CONTEXT_COUNT))

    return OppositeLexicon(kept, {pair: places(pair) for pair in kept}, frozenset(frequent),
                           frozenset(w for w, n in words.items() if n >= _KNOWN_COUNT))


@dataclass
class OppositeFinder:
    """Where a word of a sentence can be made its opposite, and into what: the mined changes where their place
    fits (:class:`OppositeLexicon`), else WordNet's antonyms (:mod:`cns_core.training.wordnet_antonyms`) for any
    word but the corpora's commonest ones."""

    lexicon: OppositeLexicon
    antonyms: Antonyms | None = None
    _memo: dict[str, str | None] = field(default_factory=dict)

    def choices(self, tokens: Sequence[str], at: int) -> tuple[str, ...]:
        word = tokens[at]
        if not _WORD.fullmatch(word):
            return ()
        mined = self.lexicon.opposites(context_of(tokens, at)).get(word, ())
        if mined or self.antonyms is None or word in self.lexicon.frequent:
            return mined[:3]
        if word not in self._memo:
            other = self.antonyms.opposite(word)
            self._memo[word] = other if other in self.lexicon.known else None
        other = self._memo[word]
        return (other,) if other else ()


def _neighbours(words: Sequence[str], i: int) -> set[tuple[str, str]]:
    return {("left", words[i - 1]) if i else ("left", ""), ("right", words[i + 1] if i + 1 < len(words) else "")}


def _grounded_positions(premise: str, hypothesis: str) -> list[int]:
    """Token positions of the hypothesis whose word the premise writes with the same word beside it."""
    p_tokens = [t.lower() for t in _TOKEN.findall(premise)]
    h_lower = [t.lower() for t in _TOKEN.findall(hypothesis)]
    in_premise: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for i, token in enumerate(p_tokens):
        in_premise[token] |= _neighbours(p_tokens, i)
    return [i for i, token in enumerate(h_lower) if in_premise.get(token, set()) & _neighbours(h_lower, i)]


def _replace_token(text: str, index: int, word: str) -> str:
    spans = [m.span() for m in _TOKEN.finditer(text)]
    start, end = spans[index]
    return text[:start] + word + text[end:]


class _Picker:
    """Chooses one changeable word of a sentence, no word more than its share of the pairs."""

    def __init__(self, finder: OppositeFinder, limit: int, rng: np.random.Generator):
        self.finder, self.rng = finder, rng
        self.per_word: Counter[str] = Counter()
        self.cap = max(1, int(limit * _MAX_WORD_SHARE))

    def change(self, text: str, positions: Sequence[int] | None = None) -> str | None:
        tokens = _TOKEN.findall(text)
        places = range(len(tokens)) if positions is None else positions
        candidates = [(at, choices) for at in places
                      if self.per_word[tokens[at]] < self.cap and (choices := self.finder.choices(tokens, at))]
        if not candidates:
            return None
        at, choices = candidates[int(self.rng.integers(len(candidates)))]
        self.per_word[tokens[at]] += 1
        return _replace_token(text, at, choices[int(self.rng.integers(len(choices)))])


def opposite_pairs(data: NLIPairs, finder: OppositeFinder, limit: int, seed: int, source: str) -> NLIPairs:
    """Up to ``limit`` pairs from ``data``: half from its entailed pairs, the hypothesis with one word the premise
    writes in the same place made its opposite (*contradiction*) beside the original pair (*entailment*); half
    from its premises' sentences, each against itself with one word made its opposite (*contradiction*)."""
    rng = np.random.default_rng(seed)
    picker = _Picker(finder, limit, rng)
    out = NLIPairs()

    def add(premise: str, hypothesis: str, label: int) -> None:
        out.premises.append(premise)
        out.hypotheses.append(hypothesis)
        out.labels.append(label)
        out.sources.append(source)

    order = rng.permutation(len(data)).tolist()
    for i in order:
        if len(out) + 2 > limit // 2:
            break
        if data.labels[i] == ENTAILMENT:
            premise, hypothesis = data.premises[i], data.hypotheses[i]
            changed = picker.change(hypothesis, _grounded_positions(premise, hypothesis))
            if changed:
                add(premise, changed, CONTRADICTION)
                add(premise, hypothesis, ENTAILMENT)
    seen: set[str] = set()
    fewest, most = _SENTENCE_WORDS
    for i in order:
        if len(out) >= limit:
            break
        for sentence in split_sentences(data.premises[i]):
            if len(out) >= limit or sentence in seen or not fewest <= len(sentence.split()) <= most:
                continue
            seen.add(sentence)
            changed = picker.change(sentence)
            if changed:
                add(sentence, changed, CONTRADICTION)
    return out
