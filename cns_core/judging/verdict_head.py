"""p(the answer is right), learned: the verifier's readings of an answer and a few surface cues, weighed
by a logistic regression fitted on answers people judged (``models/answer-verdict``).

The verifier reads an answer against each unit of its evidence; what it misses is as telling as what it
sees. "Sydney is the capital of Australia." against "Canberra is the capital city of Australia." shares
every word but one, and a 6-layer cross-encoder calls it supported; "Einstein failed maths" against
"Einstein did not fail maths" differs by one negation. So beside the verifier's best support and strongest
contradictions the head reads cues of the same kind the coherence hook uses
(:mod:`cns_core.models.textcues`): a name or number of the answer that no unit states while the evidence
names another, a negation or an antonym that one side has and the other lacks, how much of the answer
the supporting passage covers, and whether a hedged answer meets a reference that says people disagree.

Which cue counts how much is learned (``cns train-verdict-head``), never set by hand; without the shipped
weights the verdict falls back to :func:`fallback_probability`, the verifier's numbers alone.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from cns_core.config import project_path
from cns_core.models import textcues as tc

__all__ = ["FEATURES", "VerdictHead", "verdict_features", "fallback_probability", "load_head", "names_in",
           "is_hedge", "figures_differ", "name_gap"]

FEATURES: tuple[str, ...] = (
    "support",              # best p(supported) of the answer (or an answering sentence) over the units
    "contradiction",        # p(contradicted) of the answer read as the answer to its question (strongest unit)
    "plain_contradiction",  # ... read plainly, as a statement
    "plain_support",        # p(supported) read plainly
    "detail_contradiction",  # strongest contradiction of a detail sentence nothing supports
    "detail_support",       # mean best support of the detail sentences (the answer's own when none)
    "name_mismatch",        # share of the answer's names and numbers no unit states, while the evidence names others
    "number_mismatch",      # a number of the answer far from every number of its supporting passage
    "negation_flip",        # exactly one of the answer and its supporting passage negates
    "antonym",              # an antonym pair between them
    "coverage",             # share of the answer's content words its supporting passage holds
    "hedge_agrees",         # a hedged answer ("it depends") meets a unit that says so too ("experts disagree")
    "hedge_alone",          # a hedged answer whose evidence states a plain fact
)

_NAME = re.compile(r"\b(?:[A-Z][\w'-]*[a-z][\w'-]*|[A-Z]{2,})\b|\b\d[\d,.]*\b")
_HEDGE = re.compile(
    r"\b(?:it depends|depends on|no single|no (?:one|definitive|clear|simple|scientific) (?:answer|consensus|evidence)"
    r"|(?:there is|there's) no (?:consensus|evidence|proof)|not (?:known|clear|certain|proven)|unknown|uncertain"
    r"|(?:experts?|scientists|people|researchers) (?:disagree|are divided|debate)|(?:is|are) debated|varies"
    r"|no one knows|nobody knows|may or may not|unclear|not possible to (?:say|know))\b", re.IGNORECASE)


def names_in(text: str) -> set[str]:
    """Names and numbers of a text, lower-cased ("Sydney", "NASA", "1945"); a capitalised word opening a
    sentence counts only when it is not a common word ("The", "It")."""
    out = set()
    for match in _NAME.finditer(text):
        word = match.group(0).rstrip(".,").lower()
        if word and word not in tc.STOPWORDS and word not in {"yes", "no", "i"}:
            out.add(word)
    return out


def name_gap(claim: str, units: Sequence[str]) -> tuple[set[str], set[str], set[str]]:
    """The claim's names and numbers, those of them no unit states, and the units' names the claim lacks."""
    answer_names = names_in(claim)
    evidence_names = set().union(*(names_in(u) for u in units)) if units else set()
    return answer_names, answer_names - evidence_names, evidence_names - answer_names


def is_hedge(text: str) -> bool:
    """Whether a text says there is no single answer, that it depends, or that people disagree."""
    return bool(_HEDGE.search(text))


_YEAR = re.compile(r"\b1[0-9]{3}\b|\b20[0-9]{2}\b")


_APPROXIMATE = re.compile(r"\b(?:about|around|roughly|approximately|nearly|almost|some|over|under|more than|less than"
                         r"|fewer than|at least|at most|up to|a few|several|hundreds|thousands|millions|between)\b",
                         re.IGNORECASE)


def figures_differ(claim: str, passage: str) -> bool:
    """The claim states a figure the passage contradicts: a year the passage does not state while it states
    another, or a quantity more than 5% from each of the passage's (:func:`textcues.numeric_mismatch`). A
    hedged quantity ("more than five", "a few hundred thousand km") differs only when it is off by most of
    the passage's figure ("about 40,000 km" against 384,400)."""
    years, other_years = set(_YEAR.findall(claim)), set(_YEAR.findall(passage))
    if years and other_years and not years & other_years:
        return True
    delta = 0.75 if _APPROXIMATE.search(claim) else 0.05
    return tc.numeric_mismatch(tc.extract_numbers(passage), tc.extract_numbers(claim), delta=delta)


def _passage_text(judged: Any) -> str:
    return judged.passage.text if judged is not None else ""


def verdict_features(readings: Sequence[Any], plain: Any, checks: Sequence[Any], answer: str,
                     units: Sequence[str]) -> np.ndarray:
    """The :data:`FEATURES` of one answer from its readings (:class:`~cns_core.judging.answer_verdict.Reading`),
    plain reading, detail checks and the texts of the evidence units it was judged against."""
    supported = max(readings, key=lambda r: r.p_supported)
    support_text = _passage_text(supported.support)
    claim = supported.claim
    claim_tokens, passage_tokens = tc.tokenize(claim), tc.tokenize(support_text)
    answer_names, missing, others = name_gap(readings[0].claim, units)
    name_mismatch = len(missing) / len(answer_names) if answer_names and others else 0.0
    unsupported_details = [c.p_contradicted for c in checks if c.best_support < 0.5]
    hedge = is_hedge(answer)
    hedge_units = hedge and any(is_hedge(u) for u in units)
    return np.array([
        supported.p_supported,
        readings[0].p_contradicted,
        plain.p_contradicted,
        plain.p_supported,
        max(unsupported_details, default=0.0),
        float(np.mean([c.best_support for c in checks])) if checks else supported.p_supported,
        name_mismatch,
        float(tc.numeric_mismatch(tc.extract_numbers(passage_tokens), tc.extract_numbers(claim_tokens)))
        if support_text else 0.0,
        float(tc.negation_flip(claim_tokens, passage_tokens)) if support_text else 0.0,
        float(bool(tc.antonym_pairs(claim_tokens, passage_tokens))) if support_text else 0.0,
        tc.coverage(passage_tokens, claim_tokens) if support_text else 0.0,
        float(hedge_units),
        float(hedge and not hedge_units),
    ], dtype=np.float64)


def fallback_probability(features: np.ndarray, backing: float | None = None) -> float:
    """p(right) from the verifier's numbers alone (no head shipped): how well the evidence backs the answer
    (``backing``; the best support where it is not given), discounted by the strongest contradiction of the
    answer read either way where that backing is weak."""
    support = features[0] if backing is None else backing
    against = max(features[1], features[2])
    return float(np.clip(support * (1.0 - against * (1.0 - support)), 0.0, 1.0))


@dataclass(frozen=True)
class VerdictHead:
    """A logistic regression over :data:`FEATURES` (standardised), as ``head.json`` stores it."""

    weights: tuple[float, ...]
    bias: float
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    features: tuple[str, ...] = FEATURES
    identity: str = ""

    def probability(self, features: np.ndarray) -> float:
        z = (np.asarray(features, dtype=np.float64) - np.array(self.mean)) / np.array(self.scale)
        logit = float(z @ np.array(self.weights) + self.bias)
        return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, logit))))

    def to_json(self) -> dict[str, Any]:
        return {"features": list(self.features), "weights": list(self.weights), "bias": self.bias,
                "mean": list(self.mean), "scale": list(self.scale)}

    @classmethod
    def from_json(cls, data: Any, where: str) -> "VerdictHead":
        if not isinstance(data, dict):
            raise ValueError(f"{where}: expected an object")
        features = tuple(data.get("features") or ())
        if features != FEATURES:
            raise ValueError(f"{where}: features {list(features)} are not this code's {list(FEATURES)}")
        arrays = {}
        for key in ("weights", "mean", "scale"):
            values = data.get(key)
            if not isinstance(values, list) or len(values) != len(FEATURES) or \
                    not all(isinstance(v, (int, float)) and math.isfinite(v) for v in values):
                raise ValueError(f"{where}: {key} must be {len(FEATURES)} finite numbers")
            arrays[key] = tuple(float(v) for v in values)
        if any(s <= 0 for s in arrays["scale"]):
            raise ValueError(f"{where}: scale must be positive")
        bias = data.get("bias")
        if not isinstance(bias, (int, float)) or not math.isfinite(bias):
            raise ValueError(f"{where}: bias must be a finite number")
        return cls(arrays["weights"], float(bias), arrays["mean"], arrays["scale"], FEATURES, identity=where)


_MAX_HEAD_BYTES = 100_000


def load_head(folder: str | Path | None) -> VerdictHead | None:
    """The head in ``folder/head.json`` (relative to the project), None when ``folder`` is None or has
    none; a damaged file raises ValueError naming it (the verdict then says so instead of guessing)."""
    if not folder:
        return None
    path = Path(folder)
    path = project_path(path) / "head.json"
    if not path.is_file():
        return None
    if path.stat().st_size > _MAX_HEAD_BYTES:
        raise ValueError(f"{path}: larger than {_MAX_HEAD_BYTES:,} bytes")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: unreadable ({exc})") from None
    return VerdictHead.from_json(data, str(path))
