"""What a reader marks as context rather than argument, and how a unit reads on its own.

Three questions drafting asks of every unit, by rule (the argument corpora mark none of this,
so the miner cannot learn it):

* **context** (:func:`context_reason`): a signpost announces what the text will do ("This essay
  looks at ...", "In this post I will explain ...") and an anecdote tells what happened to someone
  ("Last summer my neighbour ..."). Both frame the argument; neither is a premise.
* **stated facts** (:func:`states_fact`): a unit with a figure, a date or a reported finding is
  never dropped: it is a claim, or a claim of its own that grounding still checks.
* **reader text** (:func:`reader_text`): a clause split off its sentence drops the connective that
  joined it ("but", "because", "so", "In conclusion,") and reads as a sentence; the connective
  stays in the text the miner reads, because it is what says how the clause argues.
"""

from __future__ import annotations

import re

__all__ = ["context_reason", "states_fact", "reader_text", "has_verb"]

_TEXT_NOUN = r"(?:essay|article|paper|post|text|piece|report|section|letter|blog|answer|review|chapter)"
_SIGNPOST = re.compile(
    rf"^(?:(?:this|the\s+present|the\s+following|my)\s+{_TEXT_NOUN}\s+(?:will\s+|shall\s+|is\s+going\s+to\s+)?"
    r"(?:look(?:s)?\s+at|discuss(?:es)?|examine(?:s)?|consider(?:s)?|explore(?:s)?|address(?:es)?|describe(?:s)?"
    r"|outline(?:s)?|review(?:s)?|ask(?:s)?|is\s+about|deal(?:s)?\s+with|weigh(?:s)?|sets?\s+out)\b"
    rf"|in\s+this\s+{_TEXT_NOUN},?\s+(?:i|we)\s+(?:will|shall|want\s+to|would\s+like\s+to|am\s+going\s+to|look|"
    r"discuss|examine|consider|explore|explain|outline|describe|ask)\b"
    r"|(?:let\s+us|let's|let\s+me)\s+(?:look|consider|examine|turn|start|begin|see)\b"
    r"|(?:first|next|now|finally),?\s+(?:i|we)\s+(?:will|shall)\s+(?:look|turn|consider|discuss|examine)\b"
    r"|(?:in\s+)?(?:conclusion|summary|sum)\s*[.:]?$)",
    re.IGNORECASE)
_TIME_OPENING = re.compile(
    r"^(?:last\s+(?:week|month|year|summer|winter|spring|autumn|fall|weekend|night|monday|tuesday|wednesday|thursday"
    r"|friday|saturday|sunday)|this\s+past\s+\w+|yesterday|the\s+other\s+day|once\b|one\s+day|years\s+ago"
    r"|(?:a\s+few|two|three|four|five|several|many)\s+(?:days|weeks|months|years)\s+ago|when\s+i\s+was"
    r"|i\s+remember|i\s+once|as\s+a\s+child)\b",
    re.IGNORECASE)
_PEOPLE = re.compile(r"\bmy\s+(?:neighbou?r|friend|mother|father|mum|mom|dad|brother|sister|uncle|aunt|cousin|"
                     r"colleague|boss|son|daughter|grandmother|grandfather|wife|husband|partner|family)\b",
                     re.IGNORECASE)
_PAST = re.compile(r"\b(?:was|were|had|did|went|told|said|came|took|lost|got|made|saw|could\s+no\s+longer|"
                   r"[a-z]{3,}ed)\b", re.IGNORECASE)
_STANCE_OR_RULE = re.compile(r"\b(?:should|must|ought|need\s+to|i\s+(?:believe|think|argue))\b", re.IGNORECASE)

_MONTH = r"(?:january|february|march|april|may|june|july|august|september|october|november|december)"
_FACT = re.compile(
    r"\d|\b(?:percent|per\s+cent|half|a\s+third|a\s+quarter|twice|double[ds]?|tripled?)\b"
    rf"|\b{_MONTH}\s+\d|\b(?:study|studies|survey|trial|trials|research|data|report|review|census|analysis)\b"
    r"[^.]{0,60}\b(?:found|finds|showed|shows|show|reported|reports|suggests?|estimated?|measured)\b",
    re.IGNORECASE)

_VERB = re.compile(
    r"\b(?:is|are|was|were|be|been|being|am|has|have|had|do|does|did|can|could|will|would|shall|should|may|might"
    r"|must|need|cannot|can't|won't|isn't|aren't|wasn't|weren't|doesn't|don't|didn't|[a-z]{2,}ed|went|came|took|gave"
    r"|made|got|saw|said|told|knew|thought|found|left|lost|kept|paid|rose|fell|grew|began|became|brought|bought|felt"
    r"|held|led|met|ran|sold|spent|won|wrote|says|makes|takes|gets|goes|gives)\b"
    r"|\b(?:i|you|we|they|he|she|it|people|who|which|that)\s+(?!the\b|a\b|an\b)[a-z]{3,}\b|n't\b|'(?:s|re|ve|ll|d)\b",
    re.IGNORECASE)
# A present-tense "-s" word is a verb unless a determiner or preposition stands before it ("on imports").
_S_WORD = re.compile(r"(?:^|\s)(?!(?:the|a|an|of|on|in|for|to|with|by|from|at|its|their|his|her|our|my|your|these|those"
                     r"|some|many|all|new|more|most|few|two|three|several|other)\s)[a-z]+\s+([a-z]{3,}[^su\W]s)\b",
                     re.IGNORECASE)

# Connectives a split clause opens with and drops when it reads alone ("but", "because", "so that"...).
_JOINING = re.compile(
    r"^(?:and\s+)?(?:but\s+also|but|and\s+so|and\s+therefore|and\s+thus|and\s+hence|and\s+also|yet|so|because|since|"
    r"as|whereas|while|though|although|even\s+though|even\s+if|therefore|thus|hence|which\s+means\s+that|"
    r"which\s+means|which\s+shows\s+that|which\s+shows|however|moreover|furthermore|in\s+addition|also)\b[,:]?\s+",
    re.IGNORECASE)
# Summary signposts a whole sentence opens with: the reader keeps what follows them.
_SUMMING = re.compile(r"^(?:in\s+conclusion|to\s+conclude|to\s+sum\s+up|in\s+summary|in\s+sum|all\s+in\s+all"
                      r"|in\s+short)\b[,:]?\s+", re.IGNORECASE)


def has_verb(text: str) -> bool:
    """Whether ``text`` has a finite verb by a small lexicon (auxiliaries, -ed / -s forms, a pronoun and a word)."""
    return bool(_VERB.search(text) or _S_WORD.search(text))


def context_reason(text: str) -> str | None:
    """Why ``text`` is context and not argument (a signpost or an anecdote), or None when it argues."""
    stripped = text.strip(" \"'\u201c\u201d")
    if _SIGNPOST.match(stripped):
        return "context: a signpost (says what the text does, argues nothing)"
    if _STANCE_OR_RULE.search(stripped):
        return None
    if _TIME_OPENING.match(stripped) and _PAST.search(stripped):
        return "context: an anecdote (tells what happened, argues nothing)"
    if _PEOPLE.search(stripped[:60]) and _PAST.search(stripped):
        return "context: an anecdote (tells what happened to someone, argues nothing)"
    return None


def states_fact(text: str) -> bool:
    """Whether ``text`` states a figure, a date or a reported finding: something grounding can check."""
    return bool(_FACT.search(text))


def reader_text(text: str, split_off: bool) -> str:
    """``text`` as a reader would mark it: a capital, a full stop, no summing-up signpost, and, for a
    clause ``split_off`` its sentence, no joining connective.

    A text that would keep fewer than three words, or has no verb once stripped, stays as it is.
    """
    text = " ".join(text.split()).strip(" ,;")
    for pattern in (_SUMMING, _JOINING) if split_off else (_SUMMING,):
        match = pattern.match(text)
        if not match:
            continue
        rest = text[match.end():].lstrip(" ,")
        if len(rest.split()) >= 3 and has_verb(rest):
            text = rest
    if text and text[0].islower():
        text = text[0].upper() + text[1:]
    if text and text[-1] not in ".!?\"'\u201d)":
        text += "."
    return text
