"""Evidence that names its source: the same pair with the premise attributed, the label kept.

Evidence is written with its source: "Regular vitamin C supplements did not prevent colds, according to a
Cochrane review of 29 trials." The recipe's second model, a third of the way through its training, read that
sentence against "Regular vitamin C supplements prevent colds" as contradicted at 0.69, and at 0.99 without the
attribution: a clause the claim does not share, with a number the claim does not write, made it unsure. A
careful reader takes the attributed sentence as the evidence it is, so these pairs wrap the premise of
claim-verification pairs in a reporting frame ("According to ...", "..., according to ...", "... found that
...") and keep the label.

Deterministic: the same pair always gets the same frame and source.
"""

from __future__ import annotations

import re

import numpy as np

from cns_core.training.fact_swaps import stable_choice
from cns_core.training.nli_data import NLIPairs

__all__ = ["FRAMES", "attribute", "attributed_pairs"]

FRAMES = ("According to {source}, {inner}.", "{outer}, according to {source}.", "{Source} found that {inner}.",
          "{Source} reported that {inner}.", "In {source}, {inner}.")
SOURCES = ("a Cochrane review of 29 trials", "a 2013 meta-analysis", "a randomized trial of 400 adults",
           "the agency's annual report", "a survey of 1,200 households", "the authors", "a cohort study",
           "the official records", "a 2019 review", "the ministry", "two independent studies",
           "the company's filing")
# Sentence-initial words that are lower-cased inside a frame; any other first word (a name) keeps its capital.
_FUNCTION_WORDS = frozenset("""the a an in on at this that these those it its there their they he she his her
some many most all each one two three several after before during for from with by as when while""".split())
_SENTENCE_END = re.compile(r"[.!?]\s+[A-Z]")
_MAX_WORDS = 60


def attribute(premise: str, key: str) -> str | None:
    """``premise`` in a reporting frame chosen by ``key``; ``None`` for a premise of several sentences
    (a frame would cover only the first) or a very long one."""
    text = premise.strip().rstrip(".").strip()
    if not text or _SENTENCE_END.search(text) or len(text.split()) > _MAX_WORDS:
        return None
    first, _, rest = text.partition(" ")
    inner = (first.lower() if first.lower() in _FUNCTION_WORDS else first) + (f" {rest}" if rest else "")
    frame = FRAMES[stable_choice(f"frame:{key}", len(FRAMES))]
    source = SOURCES[stable_choice(f"source:{key}", len(SOURCES))]
    return frame.format(source=source, Source=source[0].upper() + source[1:], inner=inner, outer=text)


def attributed_pairs(pairs: NLIPairs, limit: int, seed: int, source: str = "attributed") -> NLIPairs:
    """At most ``limit`` pairs of ``pairs``, chosen by ``seed``, with the premise attributed and the label kept."""
    out = NLIPairs()
    for i in np.random.default_rng(seed).permutation(len(pairs)):
        if len(out) >= limit:
            break
        framed = attribute(pairs.premises[i], f"{pairs.premises[i]}\t{pairs.hypotheses[i]}")
        if framed is not None:
            out.premises.append(framed)
            out.hypotheses.append(pairs.hypotheses[i])
            out.labels.append(pairs.labels[i])
            out.sources.append(source)
    return out
