"""Stage 0: turn chain text into propositions (sentence split, subject-predicate-object).

A careful rule-based extractor rather than a parser library: the well-kept
English dependency parsers ship their models outside PyPI (so they cannot be
installed offline), and the hook has a budget of a few milliseconds per chain.
The rules cover the shapes thought chains and captions actually take:

* "There is no man playing a guitar"  -> (man, playing, guitar), polarity -1
* "The meeting was moved to 5 pm"      -> (meeting, was moved, 5 pm)
* "Aspirin never causes bleeding in adults" -> (aspirin, causes, bleeding, [in adults]), polarity -1
* "Dogs bark loudly at night"          -> (dogs, bark, "", [loudly, at night])

Negations are canonicalised into ``polarity`` (an odd count of "not", "no",
"never", "n't"... is a denial) and numbers into ``numbers`` (digits or words),
both with the shared cues of :mod:`cns_core.models.textcues`, so the heuristics
and the lexical NLI backend read a sentence the same way.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from cns_core.coherence.schemas import Proposition
from cns_core.models.textcues import extract_numbers, is_negated, stem, tokenize
from cns_core.text.segment import split_sentences

__all__ = ["make_proposition", "extract_propositions", "subject_stems"]

_AUXILIARIES = frozenset("""
is are was were be been being am has have had will would shall should can could may might must do does did
""".split())
_DETERMINERS = frozenset("""
a an the this that these those my your his her its our their some any each every all both no another
""".split())
_PREPOSITIONS = frozenset("""
in on at to from by with for into onto over under about through across along around behind beside between
near during without within against toward towards upon among after before since until via per than like
""".split())
_TIME_WORDS = frozenset("""
yesterday today tomorrow tonight now then later earlier soon already always never often sometimes usually
daily weekly monthly yearly annually ago recently currently formerly previously again still
""".split())
_RELATIVES = frozenset({"who", "which", "that", "whose", "whom", "where", "when", "while", "because", "although",
                        "though", "whereas", "and", "but", "or"})
_PRONOUNS = frozenset("i you he she it we they me him her us them".split())
_PARTICLES = frozenset({"not", "never", "neither", "nor", "nope"})
# Verbs common enough in chains that lack an auxiliary to be worth listing (base and past forms).
_COMMON_VERBS = frozenset("""
be go get make take see know think say tell give find use work call try ask need feel become leave put mean
keep let begin seem help show hear play run move like live believe hold bring happen write provide sit stand
lose pay meet include continue set learn change lead understand watch follow stop create speak read allow add
spend grow open walk win offer remember love consider appear buy wait serve die send expect build stay fall cut
reach kill remain suggest raise pass sell require report decide pull cause prevent increase reduce improve
eat drink prefer hate want own contain rise drop fail support oppose claim deny confirm reject accept agree
went got made took saw knew thought said told gave found felt became left meant kept began seemed showed heard
ran held brought wrote sat stood lost paid met led understood spoke read grew won bought fell built sent
""".split())


def _looks_like_verb(token: str, prev: str, *, by_suffix: bool) -> bool:
    """A listed verb (or, when ``by_suffix``, a word ending like one) not right after a determiner."""
    if prev in _DETERMINERS or prev in _PREPOSITIONS or not token.isalpha():
        return False
    if token in _COMMON_VERBS or stem(token) in _COMMON_STEMS:
        return True
    return by_suffix and len(token) >= 4 and (
        token.endswith(("ed", "es")) or (token.endswith("s") and not token.endswith(("ss", "us", "is"))))


_COMMON_STEMS = frozenset(stem(v) for v in _COMMON_VERBS)


def _strip_determiners(tokens: Sequence[str]) -> list[str]:
    out = list(tokens)
    while out and (out[0] in _DETERMINERS or out[0] == "there"):
        out.pop(0)
    return out


def _is_boundary(tok: str) -> bool:
    return (tok in _PREPOSITIONS or tok in _RELATIVES or tok in _TIME_WORDS
            or (tok.endswith("ly") and len(tok) > 4))


def _split_object(rest: Sequence[str]) -> tuple[list[str], list[str]]:
    """Object words up to the first preposition, relative word or time word; the remainder are modifiers."""
    obj: list[str] = []
    modifiers: list[str] = []
    current: list[str] | None = None
    for tok in rest:
        if _is_boundary(tok):
            if current:
                modifiers.append(" ".join(current))
            current = [tok]
        elif current is not None:
            current.append(tok)
        else:
            obj.append(tok)
    if current:
        modifiers.append(" ".join(current))
    return obj, modifiers


def _spo(tokens: Sequence[str]) -> tuple[str, str, str, tuple[str, ...]]:
    """Rule-based subject, predicate, object and modifiers of one sentence's tokens."""
    # drop the negation particles (polarity keeps them); negative pronouns can be subjects
    content = [t for t in tokens if t not in _PARTICLES]
    if not content:
        return "", "", "", ()
    # "there is/are [no] NP V-ing ...": the NP is the subject of the -ing verb.
    if len(content) >= 2 and content[0] == "there" and content[1] in _AUXILIARIES:
        rest = content[2:]
        for i, tok in enumerate(rest):
            if tok.endswith("ing") and i > 0:
                obj, mods = _split_object(rest[i + 1:])
                return " ".join(_strip_determiners(rest[:i])), tok, " ".join(_strip_determiners(obj)), tuple(mods)
        subj, mods = _split_object(rest)
        return " ".join(_strip_determiners(subj)), "exist", "", tuple(mods)
    verb_at = None
    for by_suffix in (False, True):
        for i in range(1, len(content)):
            tok, prev = content[i], content[i - 1]
            if (not by_suffix and tok in _AUXILIARIES) or _looks_like_verb(tok, prev, by_suffix=by_suffix) \
                    or (by_suffix and prev in _PRONOUNS):
                verb_at = i
                break
        if verb_at is not None:
            break
    if verb_at is None:
        verb_at = min(len(content) - 1, 1)
    subj = [t for t in content[:verb_at] if t not in _TIME_WORDS]
    lead_mods = [t for t in content[:verb_at] if t in _TIME_WORDS]
    pred = [content[verb_at]]
    j = verb_at + 1
    # an auxiliary chain: "was moved", "has been running", "will not go"
    while j < len(content) and (content[j] in _AUXILIARIES or pred[-1] in _AUXILIARIES and (
            content[j].endswith(("ing", "ed", "en")) or pred[-1] in ("will", "would", "can", "could", "should",
                                                                       "may", "might", "must", "do", "does",
                                                                       "did", "shall"))):
        pred.append(content[j])
        j += 1
    while j < len(content) and (content[j] in _TIME_WORDS or content[j].endswith("ly") and len(content[j]) > 4):
        lead_mods.append(content[j])
        j += 1
    if (j == verb_at + len(pred) and j < len(content) and content[j] in _PREPOSITIONS
            and content[j] not in ("before", "after", "since", "until")):
        pred.append(content[j])  # "moved to 5 pm", "lives in Paris": the phrase is the object
        j += 1
    obj, mods = _split_object(content[j:])
    return (" ".join(_strip_determiners(subj)), " ".join(pred), " ".join(_strip_determiners(obj)),
            tuple(lead_mods + mods))


def make_proposition(p_id: str, text: str, *, advanced: bool = True, importance: float | None = None) -> Proposition:
    """Canonicalise one sentence. With ``advanced=False`` (latency pressure) the SPO parse is skipped."""
    tokens = tuple(tokenize(text))
    polarity = -1 if is_negated(tokens) else 1
    numbers = tuple(extract_numbers(list(tokens)))
    if advanced:
        subj, pred, obj, modifiers = _spo(tokens)
    else:
        subj, pred, obj, modifiers = "", "", " ".join(tokens), ()
    return Proposition(id=p_id, text=text.strip(), subj=subj, pred=pred, obj=obj, polarity=polarity,
                       modifiers=modifiers, numbers=numbers, tokens=tokens, importance=importance)


def extract_propositions(text: str, chain_id: str = "p", *, advanced: bool = True,
                         importance: float | None = None) -> list[Proposition]:
    """One proposition per sentence, with ids ``<chain_id>:<n>``."""
    return [make_proposition(f"{chain_id}:{i}", sentence, advanced=advanced, importance=importance)
            for i, sentence in enumerate(split_sentences(text, semicolons=True))]


def subject_stems(props: Iterable[Proposition]) -> set[str]:
    """Stems of the content words of the subjects (whole text when no subject was parsed).

    New evidence that mentions one of these re-opens a quarantined chain.
    """
    from cns_core.models.textcues import content_stems

    out: set[str] = set()
    for p in props:
        words = p.subj.split() if p.subj else list(p.tokens)
        out |= content_stems(w for w in words if w not in _PRONOUNS)
    return out
