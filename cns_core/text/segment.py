"""Sentences and argumentative units of plain text, with character offsets.

The one sentence splitter of the project (the coherence hook, the grounding critic's
evidence windows and SNO drafting all use it). A rule set rather than a library: it
was measured beside pySBD on the shared corpora (``benchmarks/sentence_split.py``) and
is as accurate there at about a hundredth of the time.

Units are what drafting turns into claims: sentences, split into clauses where one
sentence holds a claim and its reason or its counter ("X, because Y" gives X and
"because Y"). Headings and title lines are kept apart: they are not claims.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterator

from cns_core.text.context import has_verb

__all__ = ["Span", "Unit", "Paragraph", "sentence_spans", "split_sentences", "paragraphs", "clause_spans",
           "segment_units"]

# A sentence ends at . ! ? (closing quotes and brackets stay with it) before whitespace and a
# capital, a digit or an opening quote or bracket.
_BOUNDARY = re.compile(r"(?<=[.!?])([\"'\u201d\u2019)\]]*)(\s+)(?=[\"'\u201c\u2018(\[]?[A-Z0-9])")
_ABBREVIATION = re.compile(
    r"(?:\b(?:e\.g|i\.e|et al|cf|vs|approx|dr|mr|mrs|ms|prof|sr|jr|st|fig|dept|est|u\.s|u\.k|a\.m|p\.m)"
    r"|(?:^|[\s(])[A-Za-z])\.$", re.IGNORECASE)
_NUMBER_ABBREVIATION = re.compile(r"\bno\.$", re.IGNORECASE)   # "No. 5", but "I said no. Then"
_BULLET = re.compile(r"[ \t]*(?:[-*\u2022]|\d{1,2}[.)])[ \t]+")
_BLANK_LINE = re.compile(r"\n[ \t\r]*\n\s*")


@dataclass(frozen=True)
class Span:
    """``text[start:end]`` of the text it was cut from (stripped of surrounding space)."""

    start: int
    end: int
    text: str


def _trimmed(text: str, start: int, end: int) -> Span | None:
    piece = text[start:end]
    left = len(piece) - len(piece.lstrip())
    bullet = _BULLET.match(piece[left:])
    if bullet and bullet.end() < len(piece) - left:
        left += bullet.end()
    right = len(piece.rstrip())
    if right <= left or not piece[left:right].strip(" .!?;:-*\u2022"):
        return None
    return Span(start + left, start + right, piece[left:right])


def _line_breaks(text: str) -> Iterator[int]:
    """Offsets of the single newlines of ``text`` that end a sentence.

    A newline ends one before a bullet, after sentence punctuation or a colon, and before a
    capital when the line before is short (a title or a list item); a hard-wrapped line
    (the next line goes on in lower case, or a long line) runs on.
    """
    for match in re.finditer(r"\n", text):
        at = match.start()
        line_start = text.rfind("\n", 0, at) + 1
        line = text[line_start:at].strip()
        following = text[at + 1:at + 200].lstrip(" \t")   # a bounded look ahead: linear time
        if not line or not following:
            continue
        if _BULLET.match(following) or line.endswith((".", "!", "?", ":", ";")):
            yield at
        elif following[:1].isupper() and len(line.split()) <= 8:
            yield at


def sentence_spans(text: str, *, semicolons: bool = False) -> list[Span]:
    """Sentences of ``text`` with their offsets.

    Splits at . ! ? before a capital or digit (not after "Dr.", "e.g.", "U.S.", a single
    initial or inside "2.5"), at blank lines, at line breaks that end a line (see
    :func:`_line_breaks`) and before bullets; ``semicolons`` also splits at ';'.
    Bullet markers are left out of the sentence. Boundary F1 (``benchmarks/sentence_split.py``):
    0.999 on the microtexts, 0.988 on Climate-FEVER evidence, 0.997 on DialAM AIF locutions
    (the grounding critic's former splitter: 0.999, 0.982, 0.994; pySBD: 0.997, 0.974, 1.000).
    """
    text = text or ""
    cuts: list[tuple[int, int]] = []   # (end of one piece, start of the next)
    for match in _BOUNDARY.finditer(text):
        last = text[max(0, match.start() - 12):match.start()]
        number_follows = text[match.end():match.end() + 1].isdigit()
        if _ABBREVIATION.search(last) or (_NUMBER_ABBREVIATION.search(last) and number_follows):
            continue
        cuts.append((match.start() + len(match.group(1)), match.end()))
    for match in _BLANK_LINE.finditer(text):
        cuts.append((match.start(), match.end()))
    if semicolons:
        cuts.extend((m.start(), m.end()) for m in re.finditer(r";\s*", text))
    cuts.extend((at, at + 1) for at in _line_breaks(text))
    spans: list[Span] = []
    start = 0
    for end, nxt in sorted(cuts):
        if end < start:
            continue
        span = _trimmed(text, start, end)
        if span:
            spans.append(span)
        start = max(start, nxt)
    tail = _trimmed(text, start, len(text))
    if tail:
        spans.append(tail)
    return spans


def split_sentences(text: str, *, semicolons: bool = False) -> list[str]:
    """The sentences of ``text`` (see :func:`sentence_spans`)."""
    return [s.text for s in sentence_spans(text, semicolons=semicolons)]


@dataclass(frozen=True)
class Paragraph:
    """A block of text between blank lines; ``heading`` when it is a title line, not prose."""

    index: int
    span: Span
    heading: bool


_MARKDOWN_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+|^\s*(?:title|subject|question)\s*:", re.IGNORECASE)


def _is_heading(line: str) -> bool:
    """A title line: a Markdown heading, or a short line without sentence punctuation."""
    stripped = line.strip()
    if _MARKDOWN_HEADING.match(stripped) or re.fullmatch(r"[=\-_*]{3,}", stripped):
        return True
    words = stripped.split()
    return 0 < len(words) <= 12 and not stripped.endswith((".", "!", "?", ",", ";", ":", '"', "\u201d")) \
        and stripped[:1].isupper()


def paragraphs(text: str) -> list[Paragraph]:
    """Blocks between blank lines; a block's heading lines (first lines) become blocks of their own."""
    out: list[Paragraph] = []
    start = 0
    bounds = [(m.start(), m.end()) for m in _BLANK_LINE.finditer(text)] + [(len(text), len(text))]
    for end, nxt in bounds:
        block = _trimmed(text, start, end)
        start = nxt
        if block is None:
            continue
        lines = block.text.split("\n")
        offset = block.start
        # leading title lines of a block ("# Title\nFirst sentence ...")
        while len(lines) > 1 and _is_heading(lines[0]):
            line_span = _trimmed(text, offset, offset + len(lines[0]))
            if line_span:
                out.append(Paragraph(len(out), line_span, True))
            offset += len(lines[0]) + 1
            lines = lines[1:]
        rest = _trimmed(text, offset, block.end)
        if rest is None:
            continue
        whole = rest.text.strip()
        single_line = "\n" not in whole
        out.append(Paragraph(len(out), rest, single_line and _is_heading(whole) and len(bounds) > 1))
    return out


# Clause boundaries inside a sentence: a reason, a concession, a contrast or a consequence
# introduced after a comma (or, for the strongest markers, without one).
_CLAUSE_MARKERS = (
    r",?\s+(?=because\b(?!\s+of\b)|since\b|as\s+(?:it|they|he|she|we|you|this|the|there)\b|even\s+if\b"
    r"|even\s+though\b|although\b|though\b|whereas\b)"
    r"|,\s+(?=but\b|yet\b|so\b|and\s+(?:so|therefore|thus|hence|furthermore|moreover|also)\b|while\b"
    r"|which\s+(?:is|are|means|shows)\b|therefore\b|thus\b|hence\b|for\s+(?:it|they|this)\b)"
    r"|\s+(?=but\s+(?:also\s+)?(?:it|they|he|she|we|you|this|that|these|those|the|there|once|without|is|are)\b)"
    r"|;\s*|\s+[\u2013\u2014]\s+|\s+-\s+"
)
_CLAUSE = re.compile(_CLAUSE_MARKERS, re.IGNORECASE)
_LEADING_SUBORDINATE = re.compile(
    r"^(?:(?:and|but)\s+)?(?:because|since|although|though|even\s+though|even\s+if|while|whereas|as(?!\s+long))\b"
    r"[^,]{8,},\s+",
    re.IGNORECASE)
_MIN_CLAUSE_WORDS = 3
_NOT_BEFORE_AS = frozenset({"well", "such", "same", "so", "as", "just", "long"})   # "as well as the ..." is no clause


def clause_spans(sentence: Span) -> list[Span]:
    """Clauses of one sentence that can stand as units: each has at least three words and its own
    verb, else it stays attached; a condition ("as long as", "unless") always stays with its clause.

    "Because X, Y." gives "Because X" and "Y."; "X, because Y." gives "X" and "because Y.".
    """
    text = sentence.text
    cuts: list[tuple[int, int]] = []
    lead = _LEADING_SUBORDINATE.match(text)
    if lead:
        comma = text.rfind(",", 0, lead.end())
        cuts.append((comma, lead.end()))
    for match in _CLAUSE.finditer(text, lead.end() if lead else 0):
        before = text[:match.start()].rstrip(", ").rsplit(None, 1)
        if match.start() == 0 or (before and before[-1].lower() in _NOT_BEFORE_AS and
                                  text[match.end():match.end() + 3].lower().startswith("as")):
            continue
        cuts.append((match.start(), match.end()))
    pieces: list[Span] = []
    start = 0
    ordered = sorted(set(cuts))
    for k, (end, nxt) in enumerate(ordered):
        if end < start:
            continue
        piece = text[start:end]
        following = text[nxt:ordered[k + 1][0]] if k + 1 < len(ordered) else text[nxt:]
        if (len(piece.split()) >= _MIN_CLAUSE_WORDS and len(text[nxt:].split()) >= _MIN_CLAUSE_WORDS
                and has_verb(piece) and has_verb(following)):
            span = _trimmed(text, start, end)
            if span:
                pieces.append(span)
                start = nxt
    tail = _trimmed(text, start, len(text))
    if tail:
        pieces.append(tail)
    return [Span(sentence.start + p.start, sentence.start + p.end, p.text.rstrip(",")) for p in pieces]


@dataclass(frozen=True)
class Unit:
    """One argumentative unit: a clause of a sentence of a paragraph, with its place in the text."""

    index: int
    span: Span
    paragraph: int        # index among the prose paragraphs (headings not counted)
    sentence: int         # index of its sentence in the whole text
    clause: int           # 0 for a sentence's first clause
    sentence_in_paragraph: int

    @property
    def text(self) -> str:
        return self.span.text


def segment_units(text: str, *, clauses: bool = True) -> tuple[list[Unit], list[Span]]:
    """The text's units (clauses of the sentences of its prose paragraphs) and its heading lines."""
    units: list[Unit] = []
    headings: list[Span] = []
    sentence_no = 0
    prose_no = 0
    for para in paragraphs(text):
        if para.heading:
            headings.append(para.span)
            continue
        for k, sentence in enumerate(sentence_spans(para.span.text)):
            absolute = Span(para.span.start + sentence.start, para.span.start + sentence.end, sentence.text)
            parts = clause_spans(absolute) if clauses else [absolute]
            for c, part in enumerate(parts):
                units.append(Unit(len(units), part, prose_no, sentence_no, c, k))
            sentence_no += 1
        prose_no += 1
    return units, headings
