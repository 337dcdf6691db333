"""One calibrated verdict per claim: supported, contradicted or not enough information.

The NLI model's best entailment alone ranks claims poorly against long sources (a claim's
best window may be merely on topic). The verdict fuses a few per-claim features (how
strongly the best passages entail or contradict the claim, and how relevant the best
passage is, by embedding and by BM25) with a multinomial logistic regression fitted on the development sets
(``scripts/fit_grounding.py``). Its weights live in ``config/grounding_fusion.yaml`` together
with how they were fitted; :func:`load_fusion` validates them and names any bad field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from cns_core.config import ConfigError, load_config

__all__ = ["VERDICTS", "FEATURES", "Fusion", "claim_features", "load_fusion", "fusion_from_mapping"]

VERDICTS: tuple[str, str, str] = ("supported", "contradicted", "not_enough_info")

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
}
_EPS = 1e-4


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(np.asarray(p, dtype=np.float64), _EPS, 1.0 - _EPS)
    return np.log(p / (1.0 - p))


def claim_features(probs: np.ndarray, sims: np.ndarray, names: Sequence[str],
                   lexical: Sequence[float] = (0.0, 0.0)) -> np.ndarray:
    """The named features of one claim from its chosen passages' NLI rows (best similarity first).

    ``probs`` is ``(m, 3)`` (entailment, neutral, contradiction) and ``sims`` ``(m,)``; a claim
    with no passage gets neutral values (p = 0 for both, similarity 0). ``lexical`` is the
    claim's best BM25 score and that score per claim token (``grounding_passages.lexical_match``).
    """
    if len(probs) == 0:
        probs, sims = np.array([[0.0, 1.0, 0.0]]), np.array([0.0])
    values = {
        "entailment": _logit(probs[:, 0].max()), "contradiction": _logit(probs[:, 2].max()),
        "similarity": float(sims[0]), "top_entailment": _logit(probs[0, 0]),
        "top_contradiction": _logit(probs[0, 2]),
        "bm25": float(np.log1p(lexical[0])), "bm25_per_token": float(lexical[1]),
    }
    return np.array([float(values[n]) for n in names], dtype=np.float64)


@dataclass(frozen=True)
class Fusion:
    """Multinomial logistic fusion: p(verdict) = softmax(coef @ features + intercept)."""

    features: tuple[str, ...]
    coef: np.ndarray          # (3, features), rows in VERDICTS order
    intercept: np.ndarray     # (3,)
    fitted: Mapping[str, Any]

    def predict(self, features: np.ndarray) -> np.ndarray:
        """``(n, 3)`` verdict probabilities (columns in :data:`VERDICTS` order) of ``(n, features)`` rows."""
        z = np.atleast_2d(features) @ self.coef.T + self.intercept
        z -= z.max(axis=1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=1, keepdims=True)

    def to_mapping(self) -> dict[str, Any]:
        return {"features": list(self.features), "verdicts": list(VERDICTS),
                "coef": {v: {f: round(float(c), 6) for f, c in zip(self.features, row)}
                         for v, row in zip(VERDICTS, self.coef)},
                "intercept": {v: round(float(b), 6) for v, b in zip(VERDICTS, self.intercept)},
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
    return Fusion(tuple(features), coef, intercept, dict(fitted))


def load_fusion(name: str = "grounding_fusion") -> Fusion:
    """The fitted fusion from ``config/<name>.yaml`` (validated)."""
    return fusion_from_mapping(load_config(name), f"{name}.yaml")
