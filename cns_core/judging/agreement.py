"""Which of the machine's scores should a person trust on their own data? Each set against their verdicts.

Three scores say whether a stored answer is right: the judge's grade (4-5 right, 1-2 wrong, 3 no call),
the answer verdict (correct / incorrect; unverified and no answer make no call) and the critics' Trust
Score (at or above 0.5 right). On the answers a person marked correct or incorrect ("unsure" is left
out) each gets: how often its call matches the person's (accuracy, with a seeded bootstrap interval),
how well its number ranks right above wrong (AUC; the grade, p(answer right), the Trust Score) and the
confusion table. Under :data:`MIN_READABLE` marked answers the figures are "too few to read".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from cns_core.engrams import Engram
from cns_core.metrics import roc_auc

__all__ = ["MIN_READABLE", "TRUST_RIGHT_AT", "ScoreAgreement", "agreement", "person_labels"]

MIN_READABLE = 20           # fewer marked answers than this: the figures are too noisy to read
TRUST_RIGHT_AT = 0.5        # a Trust Score at or above this calls the answer right
BOOTSTRAP = 1000


@dataclass(frozen=True)
class ScoreAgreement:
    """One score against the person: ``n`` answers it made a call on (of ``marked``)."""

    name: str
    marked: int
    n: int
    accuracy: float | None
    interval: tuple[float, float] | None     # 95% bootstrap interval of the accuracy
    auc: float | None                        # over the marked answers that have the number
    auc_n: int
    confusion: dict[str, int] = field(default_factory=dict)   # "right/right" = machine right, person right, ...

    @property
    def too_few(self) -> bool:
        return self.n < MIN_READABLE


def person_labels(engrams: Sequence[Engram]) -> list[tuple[Engram, bool]]:
    """The engrams a person marked correct (True) or incorrect (False); unsure and unmarked left out."""
    return [(e, e.human_verdict == "correct") for e in engrams if e.human_verdict in ("correct", "incorrect")]


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _grade_call(e: Engram) -> bool | None:
    if e.critic_score is None or e.critic_score == 3:
        return None
    return e.critic_score >= 4


def _verdict_call(e: Engram) -> bool | None:
    return {"correct": True, "incorrect": False}.get(e.answer_verdict or "")


def _trust_call(e: Engram) -> bool | None:
    return None if e.trust_score is None else e.trust_score >= TRUST_RIGHT_AT


SCORES: tuple[tuple[str, Callable[[Engram], bool | None], Callable[[Engram], float | None]], ...] = (
    ("judge's grade", _grade_call, lambda e: None if e.critic_score is None else float(e.critic_score)),
    ("answer verdict", _verdict_call, lambda e: _number(e.metadata.get("trust_verdict_score"))),
    ("Trust Score", _trust_call, lambda e: e.trust_score),
)


def _one(name: str, call: Callable, number: Callable, labelled: list[tuple[Engram, bool]],
         rng: np.random.Generator) -> ScoreAgreement:
    calls = [(call(e), person) for e, person in labelled]
    calls = [(c, p) for c, p in calls if c is not None]
    confusion = {f"{'right' if c else 'wrong'}/{'right' if p else 'wrong'}": 0
                 for c in (True, False) for p in (True, False)}
    for c, p in calls:
        confusion[f"{'right' if c else 'wrong'}/{'right' if p else 'wrong'}"] += 1
    hits = np.array([c == p for c, p in calls], dtype=float)
    accuracy = interval = None
    if len(hits):
        accuracy = float(hits.mean())
        means = hits[rng.integers(0, len(hits), size=(BOOTSTRAP, len(hits)))].mean(axis=1)
        interval = (float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5)))
    numbered = [(number(e), p) for e, p in labelled if number(e) is not None]
    value = roc_auc([s for s, _ in numbered], [p for _, p in numbered]) if numbered else None
    return ScoreAgreement(name, len(labelled), len(calls), accuracy, interval, value, len(numbered), confusion)


def agreement(engrams: Sequence[Engram], seed: int = 37) -> list[ScoreAgreement]:
    """The judge's grade, the answer verdict and the Trust Score, each against the person's verdicts."""
    labelled = person_labels(engrams)
    rng = np.random.default_rng(seed)
    return [_one(name, call, number, labelled, rng) for name, call, number in SCORES]
