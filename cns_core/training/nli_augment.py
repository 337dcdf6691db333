"""Minimal negation pairs made from training sentences, so the model learns what a ``not`` does.

A small cross-encoder trained on SNLI/MultiNLI-sized data reads "Supplements did not reduce
colds" against "Supplements reduce colds" as half entailment: the two sentences share almost
every word. Argument maps are full of such pairs. From each usable training sentence ``s``
this makes ``(s, s)`` entailment and ``(s, not-s)`` and ``(not-s, s)`` contradiction, where
``not-s`` removes every negation, or else inserts one next to the first auxiliary verb.

A sentence without an auxiliary takes English's do-support: "Vitamin C shortens colds" becomes
"Vitamin C does not shorten colds", and "did not shorten" loses its negation as "shortened". Every
negation of a sentence goes at once, and every verb joined by "and" takes one: the recipe's pilot,
taught single edits, read "did not shorten the cold and did not ease its symptoms" against "shortens
the cold and eases its symptoms" as entailed (0.93). The verb is found with lemminflect's dictionary,
and only where it is unambiguous (``_negate_with_do_support``); other sentences are skipped rather than
guessed at. Only training sentences are used: evaluation sets never feed this.
"""

from __future__ import annotations

import re

import numpy as np
from lemminflect import getAllLemmas, getInflection

from cns_core.models.nli import NLI_LABELS
from cns_core.models.textcues import negation_count, tokenize
from cns_core.training.nli_data import NLIPairs

__all__ = ["negate", "negation_pairs"]

_AUXILIARIES = ("is", "are", "was", "were", "can", "could", "will", "would", "should", "has", "have", "had",
                "does", "do", "did", "may", "might", "must")
_WITH_NOT = re.compile(r"\b(" + "|".join(_AUXILIARIES) + r") not\b", re.IGNORECASE)
_CONTRACTED = re.compile(r"\b(is|are|was|were|could|would|should|has|have|had|does|do|did)n't\b", re.IGNORECASE)
_AUXILIARY = re.compile(r"\b(" + "|".join(_AUXILIARIES) + r")\b(?! not\b)", re.IGNORECASE)
_DO_NOT_VERB = re.compile(r"(?<=\w )(do|does|did)(?: not|n't) ([a-z]+)\b")     # not the sentence's first word
_WORD = re.compile(r"[A-Za-z]+(?:['-][A-Za-z]+)*")           # "fresh-mowed" is one word, not a verb
_SPLIT_CONTRACTION = re.compile(r"(?:^|\s)(?:n't|'[a-z]+)\b", re.IGNORECASE)   # MultiNLI's "I 've gone", "ca n't"
_DO_FOR_TAG = {"VBZ": "does", "VBD": "did", "VBP": "do"}
_TAG_FOR_DO = {do: tag for tag, do in _DO_FOR_TAG.items()}
_NOT_BEFORE_A_FINITE_VERB = {"to", "a", "an", "the", "this", "that", "these", "those", "its", "their", "his", "her",
                             "our", "my", "your", "not", "no"}
_PREPOSITIONS = {"with", "by", "in", "on", "at", "for", "from", "to", "into", "as", "of", "after", "during"}
# A sentence that opens with a subordinate clause ("If he wants ..., he needs ...") would be negated in the
# clause, which contradicts nothing; so would a verb under a focus or frequency adverb ("often develop" and
# "often do not develop" can both be true).
_CLAUSE_OPENERS = {"if", "when", "whenever", "although", "though", "because", "while", "since", "unless", "after",
                   "before", "once", "as"}
_SCOPE_ADVERBS = {"only", "also", "even", "just", "still", "already", "always", "never", "often", "sometimes",
                  "usually", "frequently", "occasionally", "rarely", "seldom", "generally", "typically", "mostly",
                  "partly", "largely", "mainly", "merely", "ever"}


def _verb_lemma(word: str, only_a_verb: bool = True) -> str | None:
    """The word's lemma as a verb in lemminflect's dictionary; with ``only_a_verb``, ``None`` for a word
    it knows as something else too ("runs", a noun as well)."""
    lemmas = getAllLemmas(word)
    if "VERB" not in lemmas or (only_a_verb and set(lemmas) != {"VERB"}):
        return None
    return lemmas["VERB"][0]


def _inflect(lemma: str, tag: str) -> str | None:
    forms = getInflection(lemma, tag=tag)
    return forms[0] if forms else None


def _could_be_finite(word: str, tags: tuple[str, ...]) -> bool:
    """Whether a word lemminflect knows as a verb among other things has the form of one of ``tags``."""
    lemma = _verb_lemma(word, only_a_verb=False)
    return lemma is not None and any(word == _inflect(lemma, tag) for tag in tags)


def _affirm_do_support(sentence: str) -> str:
    """Every "did not shorten" -> "shortened", "does not ease" -> "eases", "do not reduce" -> "reduce"."""
    for match in reversed(list(_DO_NOT_VERB.finditer(sentence))):
        if _verb_lemma(match.group(2), only_a_verb=False) != match.group(2):
            continue                                       # "did not always go": no verb right after
        form = _inflect(match.group(2), _TAG_FOR_DO[match.group(1)])
        if form is not None:
            rest = re.sub(r"^ any\b", " some", sentence[match.end():])    # "do not feature any" -> "feature some"
            sentence = sentence[:match.start()] + form + rest
    return sentence


def _negate_coordinated(rest: str, tag: str) -> str:
    """The verbs joined by "and" to one just negated, negated too: "... and eases" -> "... and does not ease"
    (negating only the first would leave a sentence that still asserts the second)."""
    def negated(match: re.Match) -> str:
        lemma = _verb_lemma(match.group(1))
        if lemma is None or _inflect(lemma, tag) != match.group(1):
            return match.group(0)
        return f"and {_DO_FOR_TAG[tag]} not {lemma}"

    return re.sub(r"\band ([a-z]+)\b", negated, rest)


def _negate_with_do_support(sentence: str) -> str | None:
    """The first unambiguous finite verb negated with do-support: "shortens" -> "does not shorten".

    An inflected form ("shortens", "shortened") is taken before a bare one ("begin" in "after symptoms
    begin shortens the cold" is a clause's verb, and a bare form may be an infinitive or an imperative); an
    adverb of manner goes under the negation ("does not significantly reduce"). A sentence is left alone
    where an earlier word may be the verb ("leaves" in "leaves her shoe untied", a noun too), where a past form
    that may be a participle comes first ("treated with", "proceeded as scheduled"), where it already denies
    something ("found no effect" -> "did not find no effect"), where the edit would not contradict it
    (``_CLAUSE_OPENERS``, ``_SCOPE_ADVERBS``) and where a split contraction hides an auxiliary ("I 've gone").
    """
    words = list(_WORD.finditer(sentence))
    if (not words or words[0].group(0).lower() in _CLAUSE_OPENERS or negation_count(tokenize(sentence))
            or _SPLIT_CONTRACTION.search(sentence)):
        return None
    for tags in (("VBZ", "VBD"), ("VBP",)):
        for before, match, after in zip(words, words[1:], [*words[2:], None]):
            word, previous = match.group(0), before.group(0)
            if not word.islower() or previous.lower() in _NOT_BEFORE_A_FINITE_VERB:
                continue
            lemma = _verb_lemma(word)
            if lemma is None:
                if _could_be_finite(word, tags):
                    return None                            # "leaves" in "leaves her shoe untied" may be the verb
                continue
            tag = next((tag for tag in tags if word == _inflect(lemma, tag)), None)
            if tag is None:
                continue
            participle = tag == "VBD" and word == _inflect(lemma, "VBN")
            if previous.lower() in _SCOPE_ADVERBS or (
                    participle and after is not None and after.group(0).lower() in _PREPOSITIONS):
                return None
            manner = (set(getAllLemmas(previous)) == {"ADV"} and before.start() > 0
                      and sentence[before.end():match.start()].isspace())
            start = before.start() if manner else match.start()
            negated = f"{_DO_FOR_TAG[tag]} not {sentence[start:match.start()]}{lemma}"
            return sentence[:start] + negated + _negate_coordinated(sentence[match.end():], tag)
    return None


def negate(sentence: str) -> str | None:
    """The sentence with every negation removed, or else one ``not`` added after its first auxiliary
    verb (with do-support where it has none, on each verb joined by "and"); ``None`` when there is no
    safe edit (why every negation goes at once: the module docstring)."""
    affirmed = _affirm_do_support(sentence)
    for pattern in (_WITH_NOT, _CONTRACTED):
        affirmed = pattern.sub(r"\1", affirmed)
    if affirmed != sentence:
        return affirmed
    if _AUXILIARY.search(sentence):
        return _AUXILIARY.sub(r"\1 not", sentence, count=1)
    return _negate_with_do_support(sentence)


def _negations_changed(sentence: str, negated: str) -> int:
    return abs(negation_count(tokenize(negated)) - negation_count(tokenize(sentence)))


def negation_pairs(source: NLIPairs, count: int, seed: int, max_words: int = 30) -> NLIPairs:
    """Up to ``count`` sentences from ``source``'s hypotheses, three pairs each (see the module docstring).

    Edits of two or more negations at once are rare in text (one sentence in 200) and are what a model taught
    single edits gets wrong, so such sentences are taken first, up to a quarter of ``count``.
    """
    rng = np.random.default_rng(seed)
    usable: dict[str, str] = {}
    for i in rng.permutation(len(source)):
        sentence = source.hypotheses[i]
        if sentence not in usable and len(sentence.split()) <= max_words:
            negated = negate(sentence)
            if negated is not None and negated != sentence:
                usable[sentence] = negated
    several = [s for s, negated in usable.items() if _negations_changed(s, negated) >= 2][:count // 4]
    taken = set(several)
    chosen = several + [s for s in usable if s not in taken][:count - len(several)]
    out = NLIPairs()
    entail, contradict = NLI_LABELS.index("entailment"), NLI_LABELS.index("contradiction")
    for sentence in chosen:
        negated = usable[sentence]
        for premise, hypothesis, label in ((sentence, sentence, entail), (sentence, negated, contradict),
                                           (negated, sentence, contradict)):
            out.premises.append(premise)
            out.hypotheses.append(hypothesis)
            out.labels.append(label)
            out.sources.append("negation_augmentation")
    return out
