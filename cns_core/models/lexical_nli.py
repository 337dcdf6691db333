"""The offline default NLI backend: embedding similarity plus contradiction cues.

A *proxy* for a real NLI model. For each (premise, hypothesis) pair it computes a
handful of features -- MiniLM cosine similarity, how much of the hypothesis the
premise covers, and the cues of :mod:`cns_core.models.textcues` (negation on one
side only, antonyms across sides, numbers that disagree, opposite quantifiers or
temporal order) -- and maps them to (entailment, neutral, contradiction) with a
multinomial logistic model. The model's numbers live in ``config/nli_lexical.yaml``
and are fitted on SICK by ``scripts/calibrate_lexical_nli.py``; the file records
the cross-validated figures.

Everything after feature extraction is one matrix product over all pairs; texts
are embedded once per unique string (the embedder caches them too).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import yaml

from cns_core.config import ConfigError, config_file, load_yaml_text, yaml_problem
from cns_core.models import textcues as tc
from cns_core.models.embeddings import EmbeddingBackend, get_embedder
from cns_core.models.errors import ModelUnavailableError
from cns_core.models.nli import NLI_LABELS, softmax_rows

__all__ = ["FEATURES", "LexicalParams", "LexicalNLI", "pair_features", "load_params", "from_config"]

#: Feature names, in the column order of :func:`pair_features`.
FEATURES: tuple[str, ...] = (
    "similarity",                # cosine of the MiniLM embeddings
    "similarity_sq",
    "hypothesis_coverage",       # share of the hypothesis' content words found in the premise
    "premise_coverage",          # ... and the other way round
    "jaccard",                   # symmetric content-word overlap
    "full_coverage",             # every content word of the hypothesis is in the premise
    "coverage_x_similarity",
    "length_ratio",              # log((hypothesis tokens + 1) / (premise tokens + 1))
    "negation_flip",             # exactly one side holds a negation
    "negation_flip_x_similarity",
    "negation_flip_x_coverage",
    "negation_flip_x_jaccard",
    "antonyms",                  # antonym pairs across the sides (content words), capped at 2
    "antonyms_x_jaccard",
    "person_antonyms",           # man/woman, boy/girl: a different subject rather than a denial
    "particle_antonyms",         # in/out, up/down
    "numeric_mismatch",          # a number of the hypothesis is > delta away from every number of the premise
    "quantifier_conflict",       # all/some versus none
    "temporal_conflict",         # X before Y versus Y before X
)


@dataclass(frozen=True)
class _TextCues:
    tokens: tuple[str, ...]
    negated: bool
    numbers: tuple[float, ...]


@lru_cache(maxsize=20_000)
def _cues(text: str) -> _TextCues:
    tokens = tuple(tc.tokenize(text))
    return _TextCues(tokens, tc.is_negated(tokens), tuple(tc.extract_numbers(tokens)))


def _cue_row(premise: str, hypothesis: str, lexicon: tc.AntonymLexicon, delta: float) -> list[float]:
    """The non-embedding features of one pair (everything but the similarity columns)."""
    p, h = _cues(premise), _cues(hypothesis)
    covered = tc.coverage(p.tokens, h.tokens)
    jac = tc.jaccard(p.tokens, h.tokens)

    def antonyms(kind: str) -> float:
        both_ways = tc.antonym_pairs(p.tokens, h.tokens, lexicon, kinds=(kind,))
        both_ways += tc.antonym_pairs(h.tokens, p.tokens, lexicon, kinds=(kind,))
        return float(min(2, len({tuple(sorted(map(tc.stem, pair))) for pair in both_ways})))

    word_antonyms = antonyms("word")
    return [
        covered,
        tc.coverage(h.tokens, p.tokens),
        jac,
        float(covered == 1.0),
        float(np.log((len(h.tokens) + 1) / (len(p.tokens) + 1))),
        float(p.negated != h.negated),
        word_antonyms,
        antonyms("person"),
        antonyms("particle"),
        float(tc.numeric_mismatch(p.numbers, h.numbers, delta)),
        float(tc.quantifier_conflict(p.tokens, h.tokens)),
        float(tc.temporal_conflict(p.tokens, h.tokens)),
    ]


def pair_features(pairs: Sequence[tuple[str, str]], embedder: EmbeddingBackend,
                  lexicon: tc.AntonymLexicon | None = None, numeric_delta: float = 0.1) -> np.ndarray:
    """The ``(n, len(FEATURES))`` feature matrix; texts are embedded once per unique string."""
    if not pairs:
        return np.zeros((0, len(FEATURES)), dtype=np.float64)
    lexicon = lexicon or tc.load_antonyms()
    texts = list(dict.fromkeys(t for pair in pairs for t in pair))
    where = {t: i for i, t in enumerate(texts)}
    vectors = np.asarray(embedder.encode(texts), dtype=np.float64)
    left = vectors[[where[p] for p, _ in pairs]]
    right = vectors[[where[h] for _, h in pairs]]
    sim = np.clip(np.einsum("ij,ij->i", left, right), -1.0, 1.0)
    cues = np.array([_cue_row(p, h, lexicon, numeric_delta) for p, h in pairs], dtype=np.float64)
    (cov_h, cov_p, jac, full, length, flip, ant, person, particle, number, quant, order) = cues.T
    columns = {
        "similarity": sim, "similarity_sq": sim * sim, "hypothesis_coverage": cov_h, "premise_coverage": cov_p,
        "jaccard": jac, "full_coverage": full, "coverage_x_similarity": cov_h * sim, "length_ratio": length,
        "negation_flip": flip, "negation_flip_x_similarity": flip * sim, "negation_flip_x_coverage": flip * cov_h,
        "negation_flip_x_jaccard": flip * jac, "antonyms": ant, "antonyms_x_jaccard": ant * jac,
        "person_antonyms": person, "particle_antonyms": particle, "numeric_mismatch": number,
        "quantifier_conflict": quant, "temporal_conflict": order,
    }
    return np.column_stack([columns[name] for name in FEATURES])


@dataclass(frozen=True)
class LexicalParams:
    """A multinomial logistic model on :data:`FEATURES`: ``softmax(X @ weights.T + intercept)``.

    Rows of ``weights`` and entries of ``intercept`` follow :data:`NLI_LABELS`.
    """

    weights: np.ndarray       # (3, len(FEATURES))
    intercept: np.ndarray     # (3,)
    numeric_delta: float = 0.1

    def to_data(self) -> dict[str, Any]:
        return {
            "numeric_delta": float(self.numeric_delta),
            "intercept": {label: round(float(b), 6) for label, b in zip(NLI_LABELS, self.intercept)},
            "weights": {label: {name: round(float(w), 6) for name, w in zip(FEATURES, row)}
                        for label, row in zip(NLI_LABELS, self.weights)},
        }

    @classmethod
    def from_data(cls, data: Any, source: str = "nli_lexical.yaml") -> "LexicalParams":
        """Parse the YAML mapping; every problem names the key that holds it."""
        if not isinstance(data, Mapping):
            raise ConfigError(f"{source}: expected a mapping with 'intercept' and 'weights'")
        weights = np.zeros((len(NLI_LABELS), len(FEATURES)))
        intercept = np.zeros(len(NLI_LABELS))
        for row, label in enumerate(NLI_LABELS):
            intercept[row] = _number(data, ("intercept", label), source)
            for col, name in enumerate(FEATURES):
                weights[row, col] = _number(data, ("weights", label, name), source)
        for label in NLI_LABELS:
            extra = set(data["weights"][label]) - set(FEATURES)
            if extra:
                raise ConfigError(f"{source}: weights.{label}: unknown feature(s) {', '.join(sorted(extra))}")
        delta = data.get("numeric_delta", 0.1)
        if not isinstance(delta, (int, float)) or delta < 0:
            raise ConfigError(f"{source}: numeric_delta: must be a number >= 0 (got {delta!r})")
        return cls(weights, intercept, float(delta))

    def probabilities(self, features: np.ndarray) -> np.ndarray:
        """Row-wise softmax of the linear scores of a :func:`pair_features` matrix."""
        return softmax_rows(features @ self.weights.T + self.intercept)


def _number(data: Mapping, keys: tuple[str, ...], source: str) -> float:
    value: Any = data
    for key in keys:
        value = value.get(key) if isinstance(value, Mapping) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{source}: {'.'.join(keys)}: missing or not a number (re-run "
                          "scripts/calibrate_lexical_nli.py)")
    return float(value)


def load_params(path: str | Path) -> LexicalParams:
    """Read the fitted parameters (``config/nli_lexical.yaml``) (duplicate keys refused)."""
    path = Path(path)
    try:
        data = load_yaml_text(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read lexical NLI parameters ({exc.strerror}); "
                          "run scripts/calibrate_lexical_nli.py") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {yaml_problem(exc)}") from exc
    return LexicalParams.from_data(data, str(path.name))


class LexicalNLI:
    """Offline NLI proxy; ``predict`` returns (entailment, neutral, contradiction) probabilities."""

    name = "lexical"

    def __init__(self, params: LexicalParams, embedder: EmbeddingBackend | None = None,
                 lexicon: tc.AntonymLexicon | None = None):
        self.params = params
        self._embedder = embedder
        self._lexicon = lexicon

    @property
    def embedder(self) -> EmbeddingBackend:
        if self._embedder is None:
            self._embedder = get_embedder()
        return self._embedder

    def features(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        return pair_features(pairs, self.embedder, self._lexicon, self.params.numeric_delta)

    def predict(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        pairs = [(str(p), str(h)) for p, h in pairs]
        if not pairs:
            return np.zeros((0, len(NLI_LABELS)), dtype=np.float32)
        return self.params.probabilities(self.features(pairs)).astype(np.float32)


def from_config(nli_cfg: dict[str, Any]) -> LexicalNLI:
    """Build from the ``nli`` section of ``config/models.yaml`` (``lexical.params_file``,
    relative to the config folder)."""
    name = (nli_cfg.get("lexical") or {}).get("params_file", "nli_lexical.yaml")
    path = Path(name)
    if not path.is_absolute():
        path = config_file(name)
    try:
        return LexicalNLI(load_params(path))
    except ConfigError as exc:
        raise ModelUnavailableError("lexical", str(exc), "Set nli.lexical.params_file in config/models.yaml to "
                                    "the fitted file, or re-create it with scripts/calibrate_lexical_nli.py.") from exc
