"""One calibrated verdict per claim: supported, contradicted or not enough information.

The NLI model's best entailment alone ranks claims poorly against long sources (a claim's
best window may be merely on topic). The verdict fuses a few per-claim features (how
strongly the best passages entail or contradict the claim, and how relevant the best
passage is, by embedding and by BM25) with a multinomial logistic regression fitted on the development sets
(``scripts/fit_grounding.py``). Its weights live in ``config/grounding_fusion.yaml`` together
with how they were fitted; :func:`load_fusion` validates them and names any bad field.

A label is given by :class:`VerdictRule`: "supported" or "contradicted" only when that
probability reaches its threshold, otherwise "not enough information", so no label ever sits beside
a probability below the one that defines it. The thresholds are fitted with the fusion (its
``verdict``: the contradiction threshold is the lowest at which few supported claims read
contradicted, since a wrong red badge costs a reader most); ``grounding.verdict`` in
``config/critics.yaml`` overrides them. :class:`ClaimGrounding` is how every surface (the Reasoning graph and Coherence
pages, ``cns evaluate``, ``cns coherence-check``, JSON) reads that one verdict back from the
Grounding critic's result: nothing else labels a claim.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from cns_core.config import ConfigError, load_config

__all__ = ["VERDICTS", "VERDICT_WORDS", "PROBABILITY_DIGITS", "shown_probability", "FEATURES", "Fusion", "VerdictRule", "ClaimGrounding", "GroundingPassage",
           "claim_features", "load_fusion", "fusion_from_mapping", "claim_grounding", "claim_verdicts", "PASSAGE_SHOWS"]

VERDICTS: tuple[str, str, str] = ("supported", "contradicted", "not_enough_info")
VERDICT_WORDS: dict[str, str] = {"supported": "supported", "contradicted": "contradicted",
                                 "not_enough_info": "not enough information"}
NOT_SCORED = "not scored"

# Feature name -> what it is. Probabilities enter as log-odds so the linear fusion sees
# the difference between 0.9 and 0.99.
FEATURES: dict[str, str] = {
    "entailment": "log-odds of the highest p(entailment) over the claim's chosen passages",
    "contradiction": "log-odds of the highest p(contradiction) over the claim's chosen passages",
    "similarity": "cosine similarity of the claim with its most similar passage",
    "top_entailment": "log-odds of p(entailment) of the claim's most similar passage",
    "top_contradiction": "log-odds of p(contradiction) of the claim's most similar passage",
    "bm25": "log(1 + the claim's best BM25 score over all passages)",
    "bm25_per_token": "the claim's best BM25 score over all passages per claim token",
    "coverage": "the largest share of the claim's words (stop words out) that one run of passages holds",
}
_EPS = 1e-4


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(np.asarray(p, dtype=np.float64), _EPS, 1.0 - _EPS)
    return np.log(p / (1.0 - p))


def claim_features(probs: np.ndarray, sims: np.ndarray, names: Sequence[str],
                   lexical: Sequence[float] = (0.0, 0.0, 0.0)) -> np.ndarray:
    """The named features of one claim from its chosen passages' NLI rows (best similarity first).

    ``probs`` is ``(m, 3)`` (entailment, neutral, contradiction) and ``sims`` ``(m,)``; a claim
    with no passage gets neutral values (p = 0 for both, similarity 0). ``lexical`` is the
    claim's best BM25 score, that score per claim token and its coverage (``grounding_passages.lexical_match``).
    """
    if len(probs) == 0:
        probs, sims = np.array([[0.0, 1.0, 0.0]]), np.array([0.0])
    values = {
        "entailment": _logit(probs[:, 0].max()), "contradiction": _logit(probs[:, 2].max()),
        "similarity": float(sims[0]), "top_entailment": _logit(probs[0, 0]),
        "top_contradiction": _logit(probs[0, 2]),
        "bm25": float(np.log1p(lexical[0])), "bm25_per_token": float(lexical[1]),
        "coverage": float(lexical[2]) if len(lexical) > 2 else 0.0,
    }
    return np.array([float(values[n]) for n in names], dtype=np.float64)


@dataclass(frozen=True)
class Fusion:
    """Multinomial logistic fusion: p(verdict) = softmax(coef @ features + intercept)."""

    features: tuple[str, ...]
    coef: np.ndarray          # (3, features), rows in VERDICTS order
    intercept: np.ndarray     # (3,)
    fitted: Mapping[str, Any]
    verdict: Mapping[str, float] = field(default_factory=dict)   # the thresholds chosen with the fit

    def predict(self, features: np.ndarray) -> np.ndarray:
        """``(n, 3)`` verdict probabilities (columns in :data:`VERDICTS` order) of ``(n, features)`` rows."""
        z = np.atleast_2d(features) @ self.coef.T + self.intercept
        z -= z.max(axis=1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=1, keepdims=True)

    def drivers(self, features: Sequence[float], verdict: str, top: int = 2) -> list[tuple[str, float, float]]:
        """What pushed ``verdict`` above the other two: each feature's share of its logit over theirs (their
        mean), ``(coef[verdict] - mean coef[others]) * value``; the ``top`` positive ones, largest first, as
        (feature, share, the feature's value). The pages name them where a verdict differs from what its
        passage shows on its own."""
        if verdict not in VERDICTS:
            return []
        i = VERDICTS.index(verdict)
        others = [k for k in range(len(VERDICTS)) if k != i]
        values = np.asarray(features, dtype=np.float64)
        lift = (self.coef[i] - self.coef[others].mean(axis=0)) * values
        ranked = sorted(((n, float(v), float(x)) for n, v, x in zip(self.features, lift, values) if v > 0),
                        key=lambda d: -d[1])
        return [(n, round(v, 3), round(x, 4)) for n, v, x in ranked[:top]]

    def to_mapping(self) -> dict[str, Any]:
        return {"features": list(self.features), "verdicts": list(VERDICTS),
                "coef": {v: {f: round(float(c), 6) for f, c in zip(self.features, row)}
                         for v, row in zip(VERDICTS, self.coef)},
                "intercept": {v: round(float(b), 6) for v, b in zip(VERDICTS, self.intercept)},
                **({"verdict": dict(self.verdict)} if self.verdict else {}),
                "fitted": dict(self.fitted)}


def _number(value: Any, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value):
        raise ConfigError(f"{field}: must be a finite number (got {value!r})")
    return float(value)


def fusion_from_mapping(data: Any, where: str = "grounding_fusion.yaml") -> Fusion:
    """A :class:`Fusion` from its YAML mapping; any bad field is a ConfigError naming it."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where}: expected a mapping with features, coef and intercept")
    features = data.get("features")
    if not isinstance(features, list) or not features or not all(isinstance(f, str) for f in features):
        raise ConfigError(f"{where}: features: must be a non-empty list of feature names")
    unknown = [f for f in features if f not in FEATURES]
    if unknown:
        raise ConfigError(f"{where}: features: unknown {unknown} (known: {sorted(FEATURES)})")
    if len(set(features)) != len(features):
        raise ConfigError(f"{where}: features: names repeat")
    coef_map, intercept_map = data.get("coef"), data.get("intercept")
    if not isinstance(coef_map, Mapping):
        raise ConfigError(f"{where}: coef: must map each verdict ({', '.join(VERDICTS)}) to feature weights")
    if not isinstance(intercept_map, Mapping):
        raise ConfigError(f"{where}: intercept: must map each verdict ({', '.join(VERDICTS)}) to a number")
    coef = np.zeros((len(VERDICTS), len(features)))
    intercept = np.zeros(len(VERDICTS))
    for i, verdict in enumerate(VERDICTS):
        row = coef_map.get(verdict)
        if not isinstance(row, Mapping):
            raise ConfigError(f"{where}: coef.{verdict}: missing (a mapping of feature -> weight)")
        extra = sorted(set(row) - set(features))
        if extra:
            raise ConfigError(f"{where}: coef.{verdict}: weights for features not listed: {extra}")
        for j, name in enumerate(features):
            if name not in row:
                raise ConfigError(f"{where}: coef.{verdict}.{name}: missing")
            coef[i, j] = _number(row[name], f"{where}: coef.{verdict}.{name}")
        if verdict not in intercept_map:
            raise ConfigError(f"{where}: intercept.{verdict}: missing")
        intercept[i] = _number(intercept_map[verdict], f"{where}: intercept.{verdict}")
    fitted = data.get("fitted", {})
    if not isinstance(fitted, Mapping):
        raise ConfigError(f"{where}: fitted: must be a mapping (how the weights were fitted)")
    verdict = VerdictRule.thresholds(data.get("verdict"), f"{where}: verdict")
    return Fusion(tuple(features), coef, intercept, dict(fitted), verdict)


def load_fusion(name: str = "grounding_fusion") -> Fusion:
    """The fitted fusion from ``config/<name>.yaml`` (validated)."""
    return fusion_from_mapping(load_config(name), f"{name}.yaml")


@dataclass(frozen=True)
class VerdictRule:
    """When a claim's verdict probabilities earn a label (the one rule every surface shows).

    "supported" needs p(supported) >= ``supported`` and "contradicted" p(contradicted) >=
    ``contradicted``; when both do (thresholds below 0.5), the larger wins; otherwise the claim
    has "not enough information". A most-probable label at p(supported) 0.37 is therefore not
    "supported".
    """

    supported: float = 0.5
    contradicted: float = 0.5

    def __post_init__(self) -> None:
        self.thresholds({"supported": self.supported, "contradicted": self.contradicted})

    @staticmethod
    def thresholds(raw: Any, where: str = "critics.yaml: grounding.verdict") -> dict[str, float]:
        """``raw`` (a mapping of supported / contradicted to a threshold in (0, 1], either may be left out)
        checked; any bad field is a ConfigError naming it."""
        if raw is None:
            return {}
        if not isinstance(raw, Mapping):
            raise ConfigError(f"{where}: must map supported / contradicted to a threshold")
        unknown = sorted(set(raw) - {"supported", "contradicted"})
        if unknown:
            raise ConfigError(f"{where}: unknown key(s) {unknown}")
        for name, value in raw.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 < value <= 1.0:
                raise ConfigError(f"{where}.{name}: must be a number in (0, 1] (got {value!r})")
        return {name: float(value) for name, value in raw.items()}

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any], fitted: Mapping[str, float] | None = None) -> "VerdictRule":
        """The thresholds ``fitted`` with the fusion (its ``verdict``), each overridden by the Grounding critic's
        settings (``verdict: {supported, contradicted}``); 0.5 where neither gives one."""
        return cls(**{**cls.thresholds(fitted, "grounding_fusion.yaml: verdict"),
                      **cls.thresholds(settings.get("verdict"))})

    def decide(self, probabilities: Sequence[float]) -> str:
        """The label of one claim's (p(supported), p(contradicted), p(not enough information))."""
        p_s, p_c = float(probabilities[0]), float(probabilities[1])
        earned = [(p, v) for p, v, t in ((p_s, "supported", self.supported), (p_c, "contradicted", self.contradicted))
                  if p >= t]
        return max(earned)[1] if earned else "not_enough_info"


# ----- the verdict as every surface reads it -------------------------------------------
PROBABILITY_DIGITS = 2


def shown_probability(value: float | None) -> float | None:
    """A verdict probability as every surface shows it: two decimals, cut rather than rounded, so a value
    below a threshold never reads as reaching it ("contradicted 0.49" for 0.498 beside "not enough
    information"; a threshold has at most two decimals). Numbers derived from it (a contradiction
    pair's score) are computed from this shown value."""
    if value is None:
        return None
    scale = 10 ** PROBABILITY_DIGITS
    return math.floor(float(value) * scale + 1e-9) / scale


PASSAGE_SHOWS = {"entails": "entails the claim", "contradicts": "contradicts the claim",
                 "neither": "neither entails nor contradicts it"}


@dataclass(frozen=True)
class GroundingPassage:
    """A passage the Grounding critic judged a claim against (a run of an evidence item's sentences)."""

    evidence: str
    text: str
    similarity: float | None = None
    entailment: float | None = None
    contradiction: float | None = None

    @property
    def shows(self) -> str:
        """What the NLI model read in this passage on its own: ``entails`` or ``contradicts`` when that is its
        most probable reading (above neutral and the other), else ``neither``. A passage is never called the one
        that "entails" at p(entailment) 0.21."""
        e, c = self.entailment or 0.0, self.contradiction or 0.0
        neutral = max(0.0, 1.0 - e - c)
        if e > max(c, neutral):
            return "entails"
        if c > max(e, neutral):
            return "contradicts"
        return "neither"


@dataclass(frozen=True)
class ClaimGrounding:
    """One claim's verdict and numbers as the Grounding critic recorded them (``None``: not computed).

    ``entailment`` / ``contradiction`` belong to the passage that entails the claim most
    (``best_evidence``); ``max_contradiction`` is the strongest contradiction over the judged
    passages (``contradicted_by``).
    """

    best_evidence: str | None = None
    entailment: float | None = None
    contradiction: float | None = None
    verdict: str | None = None               # supported | contradicted | not_enough_info
    p_supported: float | None = None
    p_contradicted: float | None = None
    passages: tuple[GroundingPassage, ...] = ()
    p_not_enough_info: float | None = None
    max_contradiction: float | None = None
    contradicted_by: str | None = None
    reads: int | None = None                 # the passage the verdict rests on (an index into ``passages``)
    decided_by: tuple[tuple[str, float], ...] = ()   # (feature, value) that pushed the verdict most (Fusion.drivers)

    @property
    def read_passage(self) -> GroundingPassage | None:
        """The passage the verdict rests on, as the critic chose it (``ClaimVerdict.read``): every page that
        names "the" passage of a claim names this one."""
        if self.reads is None or not 0 <= self.reads < len(self.passages):
            return None
        return self.passages[self.reads]

    @property
    def reading_differs(self) -> bool:
        """The verdict is supported / contradicted while the passage it rests on does not show that on its own:
        the fusion's other features decided it (:attr:`decided_by`), and a page must say so."""
        passage = self.read_passage
        wanted = {"supported": "entails", "contradicted": "contradicts"}.get(self.verdict or "")
        return passage is not None and wanted is not None and passage.shows != wanted

    @property
    def reads_evidence(self) -> str | None:
        """The evidence item of :attr:`read_passage`."""
        passage = self.read_passage
        return passage.evidence if passage is not None else None

    @property
    def support(self) -> float | None:
        """What the node colour shows: p(supported) of the verdict, else the best entailment."""
        return self.p_supported if self.p_supported is not None else self.entailment

    @property
    def label(self) -> str:
        """The verdict in words (``not scored`` when the critic gave none)."""
        return VERDICT_WORDS.get(self.verdict or "", NOT_SCORED)

    def to_dict(self) -> dict[str, Any]:
        """The verdict's plain fields (no passages), as the CLI's JSON lists each claim."""
        return {"verdict": self.verdict, "label": self.label, "p_supported": self.p_supported,
                "p_contradicted": self.p_contradicted, "p_not_enough_info": self.p_not_enough_info,
                "best_evidence": self.best_evidence, "contradicted_by": self.contradicted_by,
                "reads_evidence": self.reads_evidence}


def _num(value: Any) -> float | None:
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if out == out else None  # drop NaN


def _index(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def claim_grounding(per_claim: Mapping[str, Any] | None) -> dict[str, ClaimGrounding]:
    """Read the Grounding critic's ``evidence["claims"]`` mapping, tolerating missing fields."""
    out: dict[str, ClaimGrounding] = {}
    for claim_id, info in (per_claim or {}).items():
        if not isinstance(info, Mapping):
            continue
        verdict = info.get("verdict")
        contradicted_by = info.get("contradicted_by")
        out[str(claim_id)] = ClaimGrounding(
            best_evidence=info.get("best_evidence"),
            entailment=_num(info.get("entailment")),
            contradiction=_num(info.get("contradiction")),
            verdict=verdict if verdict in VERDICT_WORDS else None,
            p_supported=_num(info.get("p_supported")),
            p_contradicted=_num(info.get("p_contradicted")),
            passages=tuple(GroundingPassage(str(p.get("evidence", "")), str(p.get("text", "")),
                                            _num(p.get("similarity")), _num(p.get("entailment")),
                                            _num(p.get("contradiction")))
                           for p in (info.get("passages") or ()) if isinstance(p, Mapping)),
            p_not_enough_info=_num(info.get("p_not_enough_info")),
            max_contradiction=_num(info.get("max_contradiction")),
            contradicted_by=None if contradicted_by is None else str(contradicted_by),
            reads=_index(info.get("reads")),
            decided_by=tuple((str(d[0]), float(d[2])) for d in (info.get("decided_by") or ())
                             if isinstance(d, (list, tuple)) and len(d) == 3 and d[0] in FEATURES
                             and _num(d[2]) is not None),
        )
    return out


def claim_verdicts(results: Mapping[str, Any]) -> dict[str, ClaimGrounding]:
    """Each claim's verdict from a run's critic results (empty when grounding failed or did not run)."""
    result = results.get("grounding")
    if result is None or not getattr(result, "ok", False):
        return {}
    return claim_grounding((result.evidence or {}).get("claims"))
