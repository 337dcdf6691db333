"""Discourse cues: the words that say how a unit stands to the text around it.

A unit's *leading* cue (the marker it opens with) says what it does: gives a reason for
the unit before ("because"), draws a conclusion ("therefore"), concedes a point to the
other side ("admittedly", "although"), turns against what came before ("but",
"however"), adds a parallel argument ("moreover") or an example ("for instance").
*Stance* cues anywhere in a unit ("I believe", "should", "in conclusion") mark the
author's position, which is where the main claim usually is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

__all__ = ["Cue", "CueKind", "leading_cue", "stance_cues", "evaluative_cues", "inner_conclusion",
           "has_argument_marker", "looks_english"]

CueKind = Literal["reason", "conclusion", "concession", "contrast", "addition", "example", "summary"]

# Order matters where one phrase starts another ("even though" before "though").
_LEADING: dict[CueKind, tuple[str, ...]] = {
    "summary": ("in conclusion", "to conclude", "to sum up", "in summary", "in sum", "all in all", "overall",
                "in short", "all things considered", "for these reasons", "for all these reasons"),
    "conclusion": ("therefore", "thus", "hence", "consequently", "as a result", "accordingly", "so", "this is why",
                   "that is why", "which is why", "that's why", "this's why", "which's why", "and so",
                   "and therefore", "and thus", "and hence", "for this reason", "for that reason", "it follows that"),
    "concession": ("admittedly", "of course", "granted", "it is true that", "it's true that", "true,", "yes,",
                   "sure,", "although", "even though", "though", "even if", "while it", "while some", "some say",
                   "some people", "some argue", "some claim", "some believe", "critics", "opponents", "proponents",
                   "supporters", "advocates",
                   "one could", "one might", "one may", "it could be argued", "it may be", "it might be",
                   "it is often said", "many people think", "many think", "many say"),
    "contrast": ("but", "however", "yet", "nevertheless", "nonetheless", "still", "on the other hand",
                 "in contrast", "on the contrary", "instead", "whereas", "then again", "even so", "and yet",
                 "having said that",
                 "that said", "be that as it may", "all the same", "and still", "but still",
                 "rather", "unless"),
    "reason": ("because", "since", "as", "for", "given that", "due to", "after all", "the reason is",
               "this is because", "that is because"),
    "example": ("for example", "for instance", "e.g.", "to illustrate", "such as", "take", "consider"),
    "addition": ("moreover", "furthermore", "in addition", "additionally", "besides", "what is more",
                 "what's more", "also", "and also", "and furthermore", "and moreover", "another", "first",
                 "firstly", "second", "secondly", "third", "thirdly", "finally", "lastly", "not only",
                 "on top of that", "likewise", "similarly", "plus", "and"),
}
# Checked in this order: the more specific kinds first ("for example" is not the reason "for").
_ORDER: tuple[CueKind, ...] = ("summary", "example", "concession", "conclusion", "contrast", "reason", "addition")

_STANCE = re.compile(
    r"\b(?:i|we)\s+(?:strongly\s+|firmly\s+|do\s+)?(?:believe|think|argue|am convinced|are convinced|feel|hold|"
    r"maintain|conclude|propose|suggest|recommend)\b|\bin my (?:view|opinion)\b|\bmy (?:view|position|answer)\b"
    r"|\b(?:should|must|ought to|need to|needs to|has to|have to|shall)\b|\bit is (?:clear|obvious|essential|"
    r"necessary|important|time) (?:that|to)\b|\bclearly\b|\bundoubtedly\b", re.IGNORECASE)

# Evaluative words: a text that judges ("unfair", "desirable") argues even without a marker.
_EVALUATIVE = re.compile(
    r"\b(?:(?:un)?fair|unjust|(?:un)?justifi(?:ed|able)|(?:un)?desirable|(?:in)?acceptable|(?:un)?necessary|"
    r"wrong|right|"
    r"better|worse|best|worst|good|bad|harmful|beneficial|dangerous|important|essential|absurd|reasonable|"
    r"unreasonable|sensible|wise|unwise|(?:im)?moral|(?:un)?ethical|(?:in)?appropriate|(?:un)?wise|should|"
    r"advantage|disadvantage|benefit|problem|mistake|sense)\b", re.IGNORECASE)

_ENGLISH = frozenset("""
the a an and or but of to in on at for with from by is are was were be been being it its this that these those
not no nor i me you he him she we us they them my your his her our their as if so than then there here what which
who whom whose why how when where all any each every both some such can could will would should must may might do
does did done have has had having very also more most less only just because about above after again against
among before below between during into over under until up down out off through since per via within without
while whether one two three four five six seven eight nine ten hundred thousand million billion trillion percent
first second third new year years day days time people said says made other many much own same well
january february march april may june july august september october november december monday tuesday wednesday
thursday friday saturday sunday
""".split())

# Function words of the languages most often pasted by mistake (French, German, Spanish, Italian,
# Portuguese, Dutch), less any word English also uses: what refuses a foreign text is that its
# words are theirs, not only that they are not English.
_FOREIGN = frozenset("""
le la les des du un une et est sont dans pour pas que qui sur avec ce cette ces il elle ils elles nous vous je tu
au aux ne par mais ou leur leurs sa ses mon ma mes très été être avoir fait comme aussi était entre sous chez lui
où dont quand qu
der die das und ist nicht ein eine einen einem dem den des zu mit auf für von sich auch es im sie er wir ich du
sind wurde werden nach bei aus wie über noch nur oder aber wenn dass als auch kann haben schon sehr mehr diese
dieser dieses zum zur am
el los las de del y en una es con para se su sus al lo más pero este esta estos fue está han ha muy también
sobre cuando hasta desde donde todo todos ya sin porque les nos
di della dello degli che è e per non sono si da nel nella alla questo questa anche più ma ha hanno essere stato
il gli
o os da do das dos em um não com por é foi são mas também muito ao na no
het een van op te zijn niet met voor er maar ook bij aan om dan nog wel naar uit heeft hebben deze dit wordt werd
""".split()) - _ENGLISH


@dataclass(frozen=True)
class Cue:
    """A marker found in a unit: its kind and the phrase as written."""

    kind: CueKind
    phrase: str


def _compile() -> list[tuple[CueKind, re.Pattern[str]]]:
    out = []
    for kind in _ORDER:
        phrases = sorted(_LEADING[kind], key=len, reverse=True)
        alternation = "|".join(re.escape(p).replace(r"\ ", r"\s+") + ("" if p.endswith(",") else r"\b")
                               for p in phrases)
        out.append((kind, re.compile(rf"^[\s\"'\u201c(]*(?:{alternation})", re.IGNORECASE)))
    return out


_LEADING_PATTERNS = _compile()
_AS_OR_FOR_CLAUSE = re.compile(r"^\s*(?:as|for|since)\s+(?:a|an|the|it|they|he|she|we|you|this|that|these|those|"
                               r"there|many|most|some|people|no|not|every|all|our|their|its|his|her|long|[a-z]+s)\b",
                               re.IGNORECASE)


_INSERTED_EXAMPLE = re.compile(r"^[^,]{2,60},\s*(for example|for instance|e\.g\.)\s*,", re.IGNORECASE)


def leading_cue(text: str) -> Cue | None:
    """The discourse marker ``text`` opens with, if any ("as"/"for"/"since" only before a clause).

    An example marker set off after the subject ("Mexico's tax, for example, ...") counts as leading.
    """
    inserted = _INSERTED_EXAMPLE.match(text)
    if inserted:
        return Cue("example", inserted.group(1).lower())
    for kind, pattern in _LEADING_PATTERNS:
        match = pattern.match(text)
        if not match:
            continue
        phrase = " ".join(match.group(0).strip(" \"'\u201c(").lower().split())
        if phrase in ("as", "for", "since") and not _AS_OR_FOR_CLAUSE.match(text):
            continue
        if phrase in ("take", "consider") and not re.match(r"^\s*(?:take|consider)\s+(?:the|a|an)\b", text, re.I):
            continue
        return Cue(kind, phrase)
    return None


def stance_cues(text: str) -> list[str]:
    """Stance phrases anywhere in ``text`` ("I believe", "should", "it is clear that"), lower-cased."""
    return [" ".join(m.group(0).lower().split()) for m in _STANCE.finditer(text)]


def evaluative_cues(text: str) -> list[str]:
    """Judging words in ``text`` ("unfair", "desirable", "better"), lower-cased."""
    return [m.group(0).lower() for m in _EVALUATIVE.finditer(text)]


_INNER_CONCLUSION = re.compile(r"(?<=\w)\W+(therefore|hence|thus|consequently)\b", re.IGNORECASE)


def inner_conclusion(text: str) -> str | None:
    """A conclusion adverb inside the unit ("shops would therefore help"), not at its start."""
    match = _INNER_CONCLUSION.search(text)
    return match.group(1).lower() if match else None


def has_argument_marker(texts: list[str]) -> bool:
    """Whether any unit opens with a discourse marker (other than a bare "and"), states a stance or judges."""
    for text in texts:
        cue = leading_cue(text)
        if (cue and cue.phrase != "and") or stance_cues(text):
            return True
        if re.search(r"\b(?:because|therefore|however|although|but|since|thus|hence)\b", text, re.IGNORECASE):
            return True
        if evaluative_cues(text) or inner_conclusion(text):
            return True
    return False


# Endings that mark an English word and seldom end one in the languages above ("earned", "quarterly").
_ENGLISH_ENDING = re.compile(r"^[a-z]{2,}(?:[^e]ed|ly|ity|ness|ship|ful)$")
_WORD = re.compile(r"^[^\W\d_]+(?:['\u2019-][^\W\d_]+)*$")
_LATIN = re.compile(r"[a-zA-Z\u00c0-\u024f]")


def looks_english(text: str, *, min_words: int = 8, min_share: float = 0.10) -> tuple[bool, float]:
    """Whether ``text`` reads as English, and the share of its words that are common English words.

    Only wholly alphabetic words count ("$160", "44th", "Q3" are neither English nor foreign), so
    figures, prices and dates in a short answer do not weigh against it. Under ``min_words`` such
    words there is too little to judge and the text is given the benefit of the doubt, unless it is
    mostly written in another script. Otherwise it must have at least ``min_share`` common English
    words (function words, or words with an English ending such as "-ed" or "-ly") and more of
    them than function words of French, German, Spanish, Italian, Portuguese or Dutch.
    """
    letters = re.findall(r"[^\W\d_]", text)
    if len(letters) >= 12 and len(_LATIN.findall(text)) < len(letters) / 2:
        return False, 0.0
    words = [w for w in (t.strip(".,;:!?()[]{}\"'\u201c\u201d\u2018\u2019") for t in text.lower().split())
             if _WORD.match(w)]
    if len(words) < min_words:
        return True, 1.0
    english = sum(w in _ENGLISH or w.split("'")[0] in _ENGLISH or bool(_ENGLISH_ENDING.match(w)) for w in words)
    foreign = sum(w in _FOREIGN or w.split("'")[0] in _FOREIGN for w in words)
    share = english / len(words)
    return share >= min_share and english > foreign, share
