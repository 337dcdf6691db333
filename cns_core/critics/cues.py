"""Cue-phrase lexicons of the causal and bias critics, read from ``cns_core/data/*.yaml``.

A lexicon file maps a category ("causal", "hedges", "loaded", ...) to a list of regular
expressions. Each category compiles to one case-insensitive alternation bounded by word
boundaries, so matching a claim is a single regex search per category.

>>> cues = load_cues("causal_cues.yaml")
>>> cues.find("correlational", "Longevity is correlated with coffee, a survey found")
['correlated', 'survey']
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Iterable

import yaml

from cns_core.config import ConfigError, load_yaml_text, yaml_problem

__all__ = ["CueLexicon", "load_cues"]


@dataclass(frozen=True)
class CueLexicon:
    """Compiled categories of one lexicon file."""

    source: str
    patterns: dict[str, re.Pattern[str]]

    def _pattern(self, category: str) -> re.Pattern[str]:
        try:
            return self.patterns[category]
        except KeyError:
            raise KeyError(f"{self.source}: no cue category {category!r} (has {', '.join(self.patterns)})") from None

    def find(self, category: str, text: str) -> list[str]:
        """The cue phrases of ``category`` found in ``text``, lower-cased, in order."""
        return [m.group(0).lower() for m in self._pattern(category).finditer(text)]

    def has(self, category: str, texts: str | Iterable[str]) -> bool:
        """Whether any of ``texts`` holds a cue of ``category``."""
        pattern = self._pattern(category)
        if isinstance(texts, str):
            texts = (texts,)
        return any(pattern.search(t) for t in texts)


def _compile(source: str, data: object) -> CueLexicon:
    if not isinstance(data, dict) or not data:
        raise ConfigError(f"{source}: expected a mapping of category to a list of phrases")
    patterns: dict[str, re.Pattern[str]] = {}
    for category, phrases in data.items():
        if not isinstance(phrases, list) or not phrases:
            raise ConfigError(f"{source}: {category}: expected a non-empty list of phrases")
        for i, phrase in enumerate(phrases):
            if not isinstance(phrase, str) or not phrase.strip():
                raise ConfigError(f"{source}: {category}[{i}]: expected a non-empty phrase")
            try:
                re.compile(phrase)
            except re.error as exc:
                raise ConfigError(f"{source}: {category}[{i}]: bad regular expression {phrase!r}: {exc}") from None
        alternation = "|".join(f"(?:{p})" for p in phrases)
        patterns[str(category)] = re.compile(rf"(?<![\w-])(?:{alternation})(?![\w-])", re.IGNORECASE)
    return CueLexicon(source, patterns)


@lru_cache(maxsize=16)
def load_cues(filename: str) -> CueLexicon:
    """Parse ``cns_core/data/<filename>`` once per process."""
    source = f"cns_core/data/{filename}"
    try:
        text = resources.files("cns_core").joinpath("data", filename).read_text(encoding="utf-8")
    except (FileNotFoundError, OSError) as exc:
        raise ConfigError(f"{source}: cannot be read ({exc})") from None
    try:
        data = load_yaml_text(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: not valid YAML: {yaml_problem(exc)}") from None
    return _compile(source, data)
