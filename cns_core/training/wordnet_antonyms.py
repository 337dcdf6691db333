"""WordNet's antonyms: the opposites of English words ("cold" / "warm", "win" / "lose", "open" / "closed").

The opposites the corpora's revisions show are few and skewed ("more" / "less" a thousand times, "alive" /
"dead" never), and a verifier taught only those learns the words, not the idea. WordNet 3.0 records about
five thousand antonym pairs of adjectives, adverbs and verbs; the ``opposites`` reader
(:mod:`cns_core.training.opposites`) changes a word of a training sentence into one of them. The database is
read where it is installed (Debian's ``wordnet-base``: ``/usr/share/wordnet``); nothing is downloaded.

WordNet 3.0 licence: Princeton University, free to use, copy, modify and distribute with its notice.
"""

from __future__ import annotations

import os
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Antonyms", "read_antonyms", "WORDNET_DIR_ENV"]

WORDNET_DIR_ENV = "CNS_WORDNET_DIR"        # overrides the settings' folder (a GPU machine unpacks it elsewhere)
_PARTS = ("adj", "adv", "verb")             # data.<part>: adjectives, adverbs, verbs
_MAX_FILE_BYTES = 64 * 1024 * 1024
_WORD = re.compile(r"[a-z]+")
_VERB_TAGS = ("VBD", "VBZ", "VBG", "VBN", "VBP", "VB")


@dataclass(frozen=True)
class Antonyms:
    """Per word, its antonyms: adjectives and adverbs as written, verbs by their lemma."""

    words: dict[str, tuple[str, ...]]
    verbs: dict[str, tuple[str, ...]]

    def opposite(self, word: str) -> str | None:
        """The first antonym of ``word`` in the form it is written in ("won" -> "lost"), or None."""
        lower = word.lower()
        if lower in self.words:
            return self.words[lower][0]
        from lemminflect import getAllLemmas, getInflection

        for lemma in getAllLemmas(lower, upos="VERB").get("VERB", ()):
            for other in self.verbs.get(lemma, ()):
                for tag in _VERB_TAGS:
                    if lower in getInflection(lemma, tag):
                        inflected = getInflection(other, tag)
                        if inflected:
                            return inflected[0]
        return None


def _data_lines(path: Path):
    if path.stat().st_size > _MAX_FILE_BYTES:
        raise ValueError(f"{path}: over {_MAX_FILE_BYTES} bytes, not a WordNet data file")
    with path.open(encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if not line.startswith("  "):          # the licence header's lines start with two spaces
                yield line


def _antonyms_in(path: Path) -> set[tuple[str, str]]:
    """(word, antonym) of one ``data.<part>`` file: the ``!`` pointers between the words of two synsets."""
    synsets: dict[str, list[str]] = {}
    pointers: list[tuple[str, str, str]] = []           # (offset, target offset, source/target word numbers)
    for n, line in enumerate(_data_lines(path), 1):
        fields = line.split(" | ", 1)[0].split()
        try:
            count = int(fields[3], 16)
            words = [re.sub(r"\(.*\)$", "", fields[4 + 2 * i]).lower() for i in range(count)]
            at = 4 + 2 * count
            for i in range(int(fields[at])):
                symbol, target, _, numbers = fields[at + 1 + 4 * i:at + 5 + 4 * i]
                if symbol == "!":
                    pointers.append((fields[0], target, numbers))
        except (IndexError, ValueError):
            raise ValueError(f"{path}:{n}: not a WordNet data line") from None
        synsets[fields[0]] = words
    pairs = set()
    for offset, target, numbers in pointers:
        source, dest = int(numbers[:2], 16), int(numbers[2:], 16)
        words, others = synsets.get(offset, []), synsets.get(target, [])
        if 0 < source <= len(words) and 0 < dest <= len(others):
            a, b = words[source - 1], others[dest - 1]
            if _WORD.fullmatch(a) and _WORD.fullmatch(b) and a != b:
                pairs.add((a, b))
    return pairs


def read_antonyms(folder: str | Path) -> Antonyms:
    """WordNet's antonyms of adjectives, adverbs and verbs from its database folder (``data.adj`` and the rest);
    ``CNS_WORDNET_DIR`` overrides ``folder``. A missing database is a ValueError that says what to install."""
    path = Path(os.environ.get(WORDNET_DIR_ENV) or folder)
    missing = [part for part in _PARTS if not (path / f"data.{part}").is_file()]
    if missing:
        raise ValueError(f"opposites.wordnet: no WordNet database in {path} (data.{missing[0]} is missing; "
                         f"on Debian: apt-get install wordnet-base, or set {WORDNET_DIR_ENV})")
    words: dict[str, set[str]] = defaultdict(set)
    verbs: dict[str, set[str]] = defaultdict(set)
    for part in _PARTS:
        into = verbs if part == "verb" else words
        for a, b in _antonyms_in(path / f"data.{part}"):
            into[a].add(b)
            into[b].add(a)
    return Antonyms({w: tuple(sorted(v)) for w, v in words.items()},
                    {w: tuple(sorted(v)) for w, v in verbs.items()})
