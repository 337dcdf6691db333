"""Every set of judged answers by one name, for the answer verdict's benchmark and its head's training.

A set is a list of :class:`JudgedTurn` (question, answer, reference or sources, right or wrong), read from
``CNS_DATA_DIR`` and sampled with a fixed seed. Which part of a corpus a name reads is fixed here, so the
benchmark never scores what the head was fitted on:

* ``nq301`` (the development set; the verifier never saw its questions), ``squality`` (the development set
  for long answers), ``swaps_dev`` (the development set of claims against long sources: SciFact's training
  folds' supported claims, each also with one injected error; the verifier trains on the claims, never on
  their errors);
* ``evouna_held``, ``saf_unseen``, ``swaps`` and the ``*_held`` parts of the long-answer sets (fold 0 of 5,
  by document or passage): held out, for figures only;
* ``evouna_train``, ``saf_train`` and the ``*_train`` parts (folds 1-4): what the head may be fitted on.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from cns_core.config import data_dir

__all__ = ["JudgedTurn", "SET_NAMES", "answer_set", "sample"]


@dataclass(frozen=True)
class JudgedTurn:
    """One answer a person (or the data's construction) judged right or wrong."""

    question: str
    answer: str
    reference: str | None
    sources: tuple[str, ...]
    right: bool
    rating: float | None = None      # SQuALITY: people's mean correctness rating (0-100)


def sample(rows: list, limit: int, seed: int = 34) -> list:
    """A seeded sample of ``limit`` rows in their order (all when ``limit`` is 0 or more than there are)."""
    if limit <= 0 or limit >= len(rows):
        return rows
    keep = np.sort(np.random.default_rng(seed).choice(len(rows), limit, replace=False))
    return [rows[i] for i in keep]


def _qa(name: str, root: Path) -> list[JudgedTurn]:
    from cns_core.training import verifier_data as vd

    judged = root / "answer_judgements"
    if name == "nq301":
        answers = vd.read_nq301(judged / "nq301_human.tsv", judged / "nq301_gold.tsv")
    elif name.startswith("evouna"):
        answers, _ = vd.read_evouna(judged / "evouna.jsonl", exclude=vd.nq301_questions(judged / "nq301_human.tsv"),
                                    folds=10, held_folds=(0,), held=name == "evouna_held")
    else:
        answers, _ = vd.read_saf(judged / "saf_en" / ("unseen_questions" if name == "saf_unseen" else "training"))
    return [JudgedTurn(a.question, a.answer, a.reference, (), bool(a.correct)) for a in answers
            if a.correct is not None]


def _swaps(root: Path, dev: bool) -> list[JudgedTurn]:
    """Supported claims and each with one injected error, against their sources: held out (WiCE dev, SciFact's
    held-out folds) or, for ``dev``, SciFact's training folds."""
    from cns_core.training.claim_errors import (SCIFACT_TRAINING_FOLDS, claim_error_set, scifact_supported_claims,
                                                supported_claims)

    claims = scifact_supported_claims(root, wanted_folds=SCIFACT_TRAINING_FOLDS) if dev else supported_claims(root)
    return [JudgedTurn("", c.claim, None, (c.source,), c.label == "original") for c in claim_error_set(claims)]


def _long(name: str, root: Path) -> list[JudgedTurn]:
    from cns_core.training import long_answers as la

    corpus, _, part = name.rpartition("_")
    reader: Callable = {"summedits": la.read_summedits, "bump": la.read_bump, "negation": la.read_negation_nli,
                        "condaqa": la.read_condaqa, "squality": la.read_squality}[corpus or name]
    rows = reader(root)
    if corpus:
        rows = [r for r in rows if (r.fold == 0) == (part == "held")]
    return [JudgedTurn(r.question, r.answer, r.reference, (r.source,) if r.source else (), r.right, r.rating)
            for r in rows]


SET_NAMES: tuple[str, ...] = (
    "nq301", "evouna_held", "saf_unseen", "swaps", "swaps_dev", "squality", "summedits_held", "bump_held",
    "negation_held", "condaqa_held", "evouna_train", "saf_train", "summedits_train", "bump_train", "negation_train",
    "condaqa_train")


def answer_set(name: str, limit: int = 0, seed: int = 34, root: Path | None = None) -> list[JudgedTurn]:
    """The set ``name`` (one of :data:`SET_NAMES`), a seeded sample of ``limit`` (0: all)."""
    if name not in SET_NAMES:
        raise ValueError(f"answer set {name!r}: expected one of {', '.join(SET_NAMES)}")
    root = root or data_dir()
    if name in ("nq301", "evouna_held", "evouna_train", "saf_unseen", "saf_train"):
        rows = _qa(name, root)
    elif name in ("swaps", "swaps_dev"):
        rows = _swaps(root, dev=name == "swaps_dev")
    else:
        rows = _long(name, root)
    return sample(rows, limit, seed)
