"""What the argument miner reads about a text's units and about pairs of them, as named features.

Everything here is computed from the text alone with the shipped sentence encoder: position in
the text and the paragraph, discourse cues, stance and evaluative words, numbers, questions,
embedding similarity, and the rule drafter's own decisions (its main-claim score and the unit
each unit argues about by its rules), which the model weighs like any other feature. No NLI
model is read, so retraining the NLI cross-encoder does not change what the miner learned.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Sequence, get_args

import numpy as np

from cns_core.text.cues import Cue, CueKind, evaluative_cues, inner_conclusion, leading_cue, stance_cues
from cns_core.text.rules import DraftSettings, RuleDrafter, weak_concessions_checked
from cns_core.text.segment import Unit

__all__ = ["TextUnits", "describe_texts", "UNIT_FEATURES", "PAIR_FEATURES", "unit_rows", "candidate_pairs",
           "pair_matrix", "is_question"]

CUE_KINDS: tuple[str, ...] = (*get_args(CueKind), "none")
_NUMBER = re.compile(r"\d")
_STATISTIC = re.compile(r"%|\bp\s*[<=>]|\bn\s*=|\b95\s*%|\bci\b|\bconfidence interval|\bsignificant", re.IGNORECASE)
_FIRST_PERSON = re.compile(r"\b(?:i|me|my|we|us|our)\b", re.IGNORECASE)
_RESULT = re.compile(r"\b(?:was|were|showed|show|found|observed|reported|increased|decreased|reduced|improved)\b",
                     re.IGNORECASE)


def is_question(text: str) -> bool:
    """A question asks; it is never a claim."""
    return text.rstrip(" \"'\u201d)").endswith("?")


@dataclass
class TextUnits:
    """One text's units with what the miner reads about each (built by :func:`describe_texts`)."""

    units: list[Unit]
    texts: list[str]
    cues: list[Cue | None]
    vectors: np.ndarray                 # (n, dim) unit-norm sentence embeddings
    rule_prior: np.ndarray              # the rules' main-claim score per unit
    rule_main: int
    rule_target: list[int | None]       # the unit each unit argues about by the rules (None for the main claim)
    rule_attack: list[bool]             # whether the rules read that relation as an attack
    question_similarity: np.ndarray | None = None

    @property
    def n(self) -> int:
        return len(self.units)

    @property
    def rule_prior_z(self) -> np.ndarray:
        """The rules' main-claim score standardised within the text (texts differ in scale)."""
        return (self.rule_prior - self.rule_prior.mean()) / (self.rule_prior.std() or 1.0)


def _rules(units: list[Unit], texts: list[str], cues: list[Cue | None]) -> tuple[np.ndarray, int, list, list]:
    """The rule drafter's decisions without NLI (its cue and position rules alone)."""
    drafter = RuleDrafter(units, texts, cues, None, None, DraftSettings())
    drafter.prepare()
    drafter.take_scores(None)
    main, _, _ = drafter.main_claim()
    plans = drafter.finish(drafter.plan(main), main)
    target = [None if i == main else plans[i].target for i in range(len(units))]
    attack = [i != main and plans[i].kind == "attack" for i in range(len(units))]
    return drafter.prior, main, target, attack


def describe_texts(segmented: Sequence[tuple[list[Unit], list[str], str | None]], embedder: Any) -> list[TextUnits]:
    """Describe many segmented texts (units, their cleaned texts, the question or None) with **one**
    embedding call for every unit and question."""
    questions = list(dict.fromkeys(q for _, _, q in segmented if q))
    flat = [t for _, texts, _ in segmented for t in texts]
    vectors = np.asarray(embedder.encode([*flat, *questions]), dtype=np.float32)
    asked = {q: vectors[len(flat) + k] for k, q in enumerate(questions)}
    out, start = [], 0
    for units, texts, question in segmented:
        cues = weak_concessions_checked([leading_cue(t) for t in texts])
        prior, main, target, attack = _rules(units, texts, cues)
        v = vectors[start:start + len(texts)]
        start += len(texts)
        out.append(TextUnits(units, texts, cues, v, prior, main, target, attack,
                             v @ asked[question] if question else None))
    return out


UNIT_FEATURES: tuple[str, ...] = (
    "position", "first", "last", "paragraph_position", "first_in_paragraph", "last_in_paragraph",
    "inner_clause", "units_log", "words_log", "has_number", "statistic", "result_verb", "question",
    *(f"cue_{k}" for k in CUE_KINDS), "stance", "evaluative", "inner_conclusion", "first_person",
    "rule_prior_z", "rule_main", "rule_argues_forward", "rule_argues_back", "rule_attack", "rule_in_degree",
    "similarity_centroid", "similarity_previous", "similarity_next",
)


_UNIT_COLUMN = {name: k for k, name in enumerate(UNIT_FEATURES)}


def unit_rows(tu: TextUnits) -> np.ndarray:
    """Each unit's named features (:data:`UNIT_FEATURES`), one row per unit."""
    n = tu.n
    rows = np.zeros((n, len(UNIT_FEATURES)), dtype=np.float64)
    last_paragraph = max(u.paragraph for u in tu.units) or 1
    centroid = tu.vectors.mean(axis=0)
    norm = float(np.linalg.norm(centroid)) or 1.0
    prior_z = tu.rule_prior_z
    in_degree = np.zeros(n)
    for t in tu.rule_target:
        if t is not None:
            in_degree[t] += 1
    for i, (unit, text, cue) in enumerate(zip(tu.units, tu.texts, tu.cues)):
        nxt = tu.units[i + 1] if i + 1 < n else None
        target = tu.rule_target[i]
        values = {
            "position": i / (n - 1) if n > 1 else 0.0,
            "first": i == 0, "last": i == n - 1,
            "paragraph_position": unit.paragraph / last_paragraph,
            "first_in_paragraph": unit.sentence_in_paragraph == 0 and unit.clause == 0,
            "last_in_paragraph": nxt is None or nxt.paragraph != unit.paragraph,
            "inner_clause": unit.clause > 0,
            "units_log": math.log(n),
            "words_log": math.log1p(len(text.split())),
            "has_number": bool(_NUMBER.search(text)),
            "statistic": bool(_STATISTIC.search(text)),
            "result_verb": bool(_RESULT.search(text)),
            "question": is_question(text),
            f"cue_{cue.kind if cue else 'none'}": True,
            "stance": bool(stance_cues(text)),
            "evaluative": bool(evaluative_cues(text)),
            "inner_conclusion": inner_conclusion(text) is not None,
            "first_person": bool(_FIRST_PERSON.search(text)),
            "rule_prior_z": prior_z[i],
            "rule_main": i == tu.rule_main,
            "rule_argues_forward": target is not None and target > i,
            "rule_argues_back": target is not None and target < i,
            "rule_attack": tu.rule_attack[i],
            "rule_in_degree": math.log1p(in_degree[i]),
            "similarity_centroid": float(tu.vectors[i] @ centroid) / norm,
            "similarity_previous": float(tu.vectors[i] @ tu.vectors[i - 1]) if i > 0 else 0.0,
            "similarity_next": float(tu.vectors[i] @ tu.vectors[i + 1]) if i + 1 < n else 0.0,
        }
        for name, value in values.items():
            rows[i, _UNIT_COLUMN[name]] = float(value)
    return rows


def candidate_pairs(n: int, max_distance: int) -> list[tuple[int, int]]:
    """Ordered (unit, target) pairs within ``max_distance`` units: where nearly every annotated relation lies."""
    return [(i, j) for i in range(n) for j in range(max(0, i - max_distance), min(n, i + max_distance + 1)) if i != j]


PAIR_FEATURES: tuple[str, ...] = (
    "distance", "distance_abs_log", "target_before", "adjacent", "same_sentence", "same_paragraph",
    "similarity", "most_similar_candidate", "rule_target", "rule_attack_on_target", "target_rule_main",
    "target_rule_prior_z", "target_first", "target_last", "target_question",
)


def pair_matrix(tu: TextUnits, pairs: Sequence[tuple[int, int]], unit_rows: np.ndarray,
                projected: np.ndarray) -> np.ndarray:
    """Named pair features, both units' rows, and the product of their projected embeddings."""
    if not pairs:
        width = len(PAIR_FEATURES) + 2 * unit_rows.shape[1] + projected.shape[1]
        return np.zeros((0, width))
    n = tu.n
    sims = tu.vectors @ tu.vectors.T
    best: dict[int, tuple[float, int]] = {}
    for i, j in pairs:
        if i not in best or sims[i, j] > best[i][0]:
            best[i] = (float(sims[i, j]), j)
    prior_z = tu.rule_prior_z
    rows = np.zeros((len(pairs), len(PAIR_FEATURES)))
    for k, (i, j) in enumerate(pairs):
        ui, uj = tu.units[i], tu.units[j]
        rows[k] = (
            (j - i) / max(n - 1, 1), math.log1p(abs(j - i)), j < i, abs(j - i) == 1, ui.sentence == uj.sentence,
            ui.paragraph == uj.paragraph, sims[i, j], best[i][1] == j, tu.rule_target[i] == j,
            tu.rule_target[i] == j and tu.rule_attack[i], j == tu.rule_main, prior_z[j], j == 0, j == n - 1,
            is_question(tu.texts[j]),
        )
    src = np.array([i for i, _ in pairs])
    dst = np.array([j for _, j in pairs])
    return np.hstack([rows, unit_rows[src], unit_rows[dst], projected[src] * projected[dst]])
