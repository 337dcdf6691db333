"""Surface cues of (dis)agreement between two texts: negation, antonyms, numbers, order.

Pure functions, shared by the offline ``lexical`` NLI backend and the coherence
hook's heuristics, so both read a contradiction the same way. Embeddings say two
sentences are *about* the same thing; these cues say whether one of them flips
it ("is" / "is not", "sitting" / "standing", "3%" / "30%", "before" / "after").

Everything works on lower-cased tokens from :func:`tokenize` (contractions
expanded: "isn't" -> "is", "not") and compares words by :func:`stem`, a crude
suffix stripper that is good enough to match "sitting" with "sit" and "rises"
with "rise".

>>> negation_flip("A man is playing a guitar", "There is no man playing a guitar")
True
>>> antonym_pairs(tokenize("A boy is sitting"), tokenize("A boy is standing"))
[('sitting', 'standing')]
>>> numeric_mismatch(extract_numbers("three dogs"), extract_numbers("30 dogs"), delta=0.1)
True
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Iterable, Sequence

__all__ = [
    "NEGATION_WORDS",
    "STOPWORDS",
    "tokenize",
    "stem",
    "content_stems",
    "negation_count",
    "is_negated",
    "negation_flip",
    "AntonymLexicon",
    "load_antonyms",
    "antonym_pairs",
    "extract_numbers",
    "relative_gap",
    "numeric_mismatch",
    "temporal_relations",
    "temporal_conflict",
    "quantifier_classes",
    "quantifier_conflict",
    "coverage",
    "stem_share",
    "jaccard",
]

# ----- tokens ---------------------------------------------------------------

_CONTRACTIONS = {
    "can't": "can not", "cannot": "can not", "won't": "will not", "shan't": "shall not",
    "ain't": "is not", "n't": " not",
}
_TOKEN = re.compile(r"\d+(?:[.,]\d+)*%?|[a-z]+(?:'[a-z]+)?|%")
_NT = re.compile(r"([a-z])n't\b")


def tokenize(text: str) -> list[str]:
    """Lower-cased word and number tokens; "isn't" becomes ``["is", "not"]``.

    Apostrophe-s and possessives are split off ("man's" -> "man", "'s"), punctuation is dropped.
    """
    text = text.lower().replace("\u2019", "'")
    for word, expansion in _CONTRACTIONS.items():
        if word != "n't":
            text = re.sub(rf"\b{re.escape(word)}", expansion, text)
    text = _NT.sub(r"\1 not", text)
    tokens: list[str] = []
    for tok in _TOKEN.findall(text):
        if "'" in tok and not tok[0].isdigit():
            head, _, tail = tok.partition("'")
            tokens.extend(t for t in (head, "'" + tail) if t and t != "'")
        else:
            tokens.append(tok)
    return tokens


_SUFFIXES = ("ies", "ied", "ing", "ed", "es", "s")


@lru_cache(maxsize=50_000)
def stem(word: str) -> str:
    """A crude, deterministic stem: strips one inflection, undoubles, drops a final 'e'.

    Only used to compare words with each other (the lexicon goes through the same
    function), so it needs to be consistent, not linguistically right:
    sitting/sits/sit -> 'sit', rises/rising/rise -> 'ris', cities/city -> 'city'.
    """
    w = word.lower()
    if not w.isalpha() or len(w) <= 3:
        return w
    for suffix in _SUFFIXES:
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            if suffix == "s" and w.endswith(("ss", "us", "is")):
                break
            w = w[: -len(suffix)] + ("y" if suffix in ("ies", "ied") else "")
            break
    if len(w) >= 4 and w[-1] == w[-2] and w[-1] not in "lsz":
        w = w[:-1]
    if len(w) >= 4 and w.endswith("e"):
        w = w[:-1]
    return w


NEGATION_WORDS: frozenset[str] = frozenset({
    "not", "no", "never", "nobody", "nothing", "none", "neither", "nowhere", "noone", "nope",
})

STOPWORDS: frozenset[str] = frozenset("""
a an the this that these those there here it its it's 's is are was were be been being am do does did
doing has have had having will would shall should can could may might must of in on at to from by with for
into onto out off up down over under about as and or but if then than so such too very just also
i me my we our you your he him his she her they them their who whom whose which what where when why how
one some any each every all both few more most other another own same someone somebody something
person people while being near next front behind some is ' " , .
""".split()) | NEGATION_WORDS


def content_stems(tokens: Iterable[str]) -> set[str]:
    """Stems of the tokens that carry content (no stop, negation or quantifier words)."""
    return {stem(t) for t in tokens if t not in STOPWORDS and t not in _QUANTIFIER_WORDS}


# ----- negation -------------------------------------------------------------

def negation_count(tokens: Sequence[str]) -> int:
    """How many negation words the tokens hold ("no one" and "nobody" count once each).

    "without" and "nor" are left out: "plays without a shirt" denies nothing, and
    "neither ... nor" is one denial.
    """
    return sum(1 for t in tokens if t in NEGATION_WORDS)


def is_negated(text_or_tokens: str | Sequence[str]) -> bool:
    """Whether the text denies something (holds any negation word).

    Any, not an odd count: "there is no boy and no man" is a denial of two things,
    not a double negative.
    """
    tokens = tokenize(text_or_tokens) if isinstance(text_or_tokens, str) else text_or_tokens
    return negation_count(tokens) > 0


def negation_flip(a: str | Sequence[str], b: str | Sequence[str]) -> bool:
    """Exactly one of the two texts holds a negation."""
    return is_negated(a) != is_negated(b)


# ----- antonyms -------------------------------------------------------------

@dataclass(frozen=True)
class AntonymLexicon:
    """Antonym pairs keyed by :func:`stem`; ``kind`` tells content words from particles."""

    opposites: dict[str, frozenset[str]]
    kinds: dict[tuple[str, str], str]

    def __len__(self) -> int:
        return len(self.kinds) // 2

    def kind(self, a: str, b: str) -> str:
        return self.kinds.get((stem(a), stem(b)), "")

    def are_antonyms(self, a: str, b: str) -> bool:
        return stem(b) in self.opposites.get(stem(a), frozenset())


def _parse_antonyms(lines: Iterable[str], source: str) -> AntonymLexicon:
    opposites: dict[str, set[str]] = {}
    kinds: dict[tuple[str, str], str] = {}
    for number, line in enumerate(lines, 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        fields = line.split("\t")
        if len(fields) < 2 or not fields[0].strip() or not fields[1].strip():
            raise ValueError(f"{source}:{number}: expected 'word<TAB>antonym[<TAB>kind]', got {line!r}")
        a, b = stem(fields[0].strip()), stem(fields[1].strip())
        if a == b:
            raise ValueError(f"{source}:{number}: {fields[0]!r} and {fields[1]!r} have the same stem")
        kind = fields[2].strip() if len(fields) > 2 and fields[2].strip() else "word"
        opposites.setdefault(a, set()).add(b)
        opposites.setdefault(b, set()).add(a)
        kinds[(a, b)] = kinds[(b, a)] = kind
    return AntonymLexicon({k: frozenset(v) for k, v in opposites.items()}, kinds)


@lru_cache(maxsize=8)
def load_antonyms(path: str | Path | None = None) -> AntonymLexicon:
    """The antonym lexicon (default: ``cns_core/data/antonyms.tsv``), parsed once per path."""
    if path is None:
        text = resources.files("cns_core").joinpath("data/antonyms.tsv").read_text(encoding="utf-8")
        return _parse_antonyms(text.splitlines(), "cns_core/data/antonyms.tsv")
    path = Path(path)
    return _parse_antonyms(path.read_text(encoding="utf-8").splitlines(), str(path))


def antonym_pairs(a_tokens: Sequence[str], b_tokens: Sequence[str],
                  lexicon: AntonymLexicon | None = None, kinds: Iterable[str] | None = None) -> list[tuple[str, str]]:
    """Words of ``a`` whose antonym appears in ``b`` (and not in ``a`` itself), in order.

    "A man and a woman" against "A woman" fires nothing: both words sit on side ``a``.
    ``kinds`` keeps only lexicon entries of those kinds (e.g. ``{"word"}`` to skip particles).
    """
    lexicon = lexicon or load_antonyms()
    wanted = set(kinds) if kinds is not None else None
    a_stems = {stem(t) for t in a_tokens}
    b_first: dict[str, str] = {}
    for t in b_tokens:
        b_first.setdefault(stem(t), t)
    found: list[tuple[str, str]] = []
    seen: set[tuple[str, str]] = set()
    for t in a_tokens:
        s = stem(t)
        if s in b_first:
            continue
        for opposite in lexicon.opposites.get(s, ()):
            if opposite in b_first and opposite not in a_stems and (s, opposite) not in seen:
                if wanted is not None and lexicon.kinds[(s, opposite)] not in wanted:
                    continue
                seen.add((s, opposite))
                found.append((t, b_first[opposite]))
    return found


# ----- numbers --------------------------------------------------------------

_UNITS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen".split())}
_TENS = {w: 10 * i for i, w in enumerate("_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()) if w != "_"}
_SCALES = {"hundred": 100, "thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000,
           "trillion": 1_000_000_000_000}
_SPECIAL = {"dozen": 12, "half": 0.5, "twice": 2, "double": 2, "triple": 3, "single": 1, "pair": 2}


def _numeral(token: str) -> float | None:
    if token[0].isdigit():
        raw = token.rstrip("%")
        if re.fullmatch(r"\d{1,3}(,\d{3})+(\.\d+)?", raw):
            raw = raw.replace(",", "")
        else:
            raw = raw.replace(",", ".")
        try:
            return float(raw)
        except ValueError:
            return None
    return None


def extract_numbers(text_or_tokens: str | Sequence[str]) -> list[float]:
    """Numbers written with digits or words: "3", "2.5%", "1,200", "twenty five", "3 million", "a dozen".

    "one" counts only when not used as a pronoun ("one of them", "no one" are skipped).
    """
    tokens = tokenize(text_or_tokens) if isinstance(text_or_tokens, str) else list(text_or_tokens)
    values: list[float] = []
    big: float | None = None    # the thousands-and-up part of the number being read
    small: float | None = None  # the part below a thousand

    def flush() -> None:
        nonlocal big, small
        if big is not None or small is not None:
            values.append((big or 0.0) + (small or 0.0))
        big = small = None

    prev = ""
    for i, tok in enumerate(tokens):
        nxt = tokens[i + 1] if i + 1 < len(tokens) else ""
        reading = big is not None or small is not None
        if tok == "and" and reading and prev in _SCALES:
            continue  # "two hundred and five"
        digit = _numeral(tok)
        if digit is not None:
            flush()
            small = digit
        elif tok == "one" and (prev in _PRONOUN_BEFORE_ONE or nxt in _PRONOUN_AFTER_ONE):
            flush()  # the pronoun, not the numeral
        elif tok in _UNITS or tok in _TENS:
            if not (reading and (prev in _SCALES or (prev in _TENS and tok in _UNITS))):
                flush()
            small = (small or 0.0) + _UNITS.get(tok, _TENS.get(tok, 0))
        elif tok in _SCALES:
            if _SCALES[tok] == 100:
                small = (small or 1.0) * 100
            else:
                big, small = (big or 0.0) + (small or 1.0) * _SCALES[tok], None
        elif tok in _SPECIAL and (tok != "half" or nxt in ("of", "a", "an", "the")):
            if reading and big is None:
                small = (small or 1.0) * _SPECIAL[tok]  # "two dozen"
            else:
                flush()
                small = float(_SPECIAL[tok])
        elif tok != "a":
            flush()
        prev = tok
    flush()
    return values


_PRONOUN_BEFORE_ONE = frozenset({"no", "every", "any", "some", "each", "the", "this", "that", "which", "little",
                                 "young", "other"})
_PRONOUN_AFTER_ONE = frozenset({"of", "another", "is", "was", "who", "which", "that", "", "and", "or"})


def relative_gap(a: float, b: float) -> float:
    """``|a - b| / max(1, |b|)``: how far ``a`` is from the reference ``b``."""
    return abs(a - b) / max(1.0, abs(b))


def numeric_mismatch(premise_numbers: Sequence[float], hypothesis_numbers: Sequence[float],
                     delta: float = 0.1) -> bool:
    """Some number of the hypothesis is farther than ``delta`` from every number of the premise.

    False when either side states no number (nothing to compare).
    """
    if not premise_numbers or not hypothesis_numbers:
        return False
    return any(min(relative_gap(h, p) for p in premise_numbers) > delta for h in hypothesis_numbers)


# ----- temporal order -------------------------------------------------------

_BEFORE = frozenset({"before", "earlier", "prior", "preceded", "precedes", "precede", "until"})
_AFTER = frozenset({"after", "later", "afterwards", "following", "followed", "follows", "since"})


def temporal_relations(tokens: Sequence[str]) -> list[tuple[frozenset[str], str, frozenset[str]]]:
    """``(left content, 'before'|'after', right content)`` for each order marker in the tokens.

    "X after Y" is normalised to ``(Y, 'before', X)`` so that both phrasings compare equal.
    """
    out = []
    for i, tok in enumerate(tokens):
        marker = "before" if tok in _BEFORE else "after" if tok in _AFTER else None
        if marker is None:
            continue
        left, right = frozenset(content_stems(tokens[:i])), frozenset(content_stems(tokens[i + 1:]))
        if not left or not right:
            continue
        out.append((left, "before", right) if marker == "before" else (right, "before", left))
    return out


def temporal_conflict(a_tokens: Sequence[str], b_tokens: Sequence[str]) -> bool:
    """The two texts put the same two events in opposite order ("X before Y" / "Y before X")."""
    for a_first, _, a_then in temporal_relations(a_tokens):
        for b_first, _, b_then in temporal_relations(b_tokens):
            if (a_first & b_then) and (a_then & b_first) and not (a_first & b_first and a_then & b_then):
                return True
    return False


# ----- quantifiers ----------------------------------------------------------

_UNIVERSAL = frozenset({"all", "every", "each", "always", "everyone", "everybody", "everything", "entire"})
_NONE = frozenset({"no", "none", "nobody", "nothing", "never", "noone", "neither"})
_SOME = frozenset({"some", "several", "many", "most", "sometimes", "often", "few", "someone", "somebody",
                   "something"})
_ONLY = frozenset({"only", "solely", "exclusively", "alone"})
_QUANTIFIER_WORDS = _UNIVERSAL | _NONE | _SOME | _ONLY


def quantifier_classes(tokens: Sequence[str]) -> frozenset[str]:
    """Which of 'all', 'none', 'some', 'only' the tokens use."""
    present = set(tokens)
    classes = set()
    for name, words in (("all", _UNIVERSAL), ("none", _NONE), ("some", _SOME), ("only", _ONLY)):
        if present & words:
            classes.add(name)
    return frozenset(classes)


def quantifier_conflict(a_tokens: Sequence[str], b_tokens: Sequence[str]) -> bool:
    """One text says all/some of something and the other says none of it.

    "All birds fly" / "No birds fly" and "Some people agree" / "Nobody agrees" conflict;
    "Some" / "all" do not (one can hold with the other).
    """
    qa, qb = quantifier_classes(a_tokens), quantifier_classes(b_tokens)
    positive = {"all", "some"}
    return bool(("none" in qa and not "none" in qb and qb & positive)
                or ("none" in qb and not "none" in qa and qa & positive))


# ----- overlap --------------------------------------------------------------

def coverage(reference_tokens: Sequence[str], tokens: Sequence[str]) -> float:
    """Share of the content stems of ``tokens`` that also occur in ``reference_tokens``.

    Asymmetric on purpose: a hypothesis fully covered by its premise (coverage 1.0)
    is likely entailed even when the premise says more. 1.0 when ``tokens`` has no content.
    """
    return stem_share(content_stems(reference_tokens), content_stems(tokens))


def stem_share(reference: set[str] | frozenset[str], wanted: set[str] | frozenset[str]) -> float:
    """Share of the stems ``wanted`` found in ``reference`` (1.0 when nothing is wanted).

    :func:`coverage` on precomputed stem sets, for callers that keep them per text.
    """
    return len(wanted & reference) / len(wanted) if wanted else 1.0


def jaccard(a_tokens: Sequence[str], b_tokens: Sequence[str]) -> float:
    """Symmetric overlap of content stems (0 when both are empty)."""
    a, b = content_stems(a_tokens), content_stems(b_tokens)
    return len(a & b) / len(a | b) if a | b else 0.0
