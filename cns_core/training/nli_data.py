"""Reading NLI training pairs: the gzip TSV files of ``shared/data/nli_train`` (and ``nli_train_more``)
and SciFact's claim/abstract rows turned into (rationale sentences, claim) pairs.

Each file has the header ``premise, hypothesis, label, genre``. A bad row never
costs the file: it is skipped and reported with its file, line number and
problem, and the rest is read. Text that a source ships tokenized (``it 's``,
``rumbled .``) is put back into ordinary spelling, so the model trains on the
kind of text it will later judge.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from cns_core.models.nli import NLI_LABELS

__all__ = ["NLIPairs", "RowProblem", "write_pairs_cache", "read_pairs_cache", "read_nli_tsv", "read_nli_files", "detokenize", "stratified_split",
           "read_scifact_pairs", "scifact_fold", "sample_pairs", "closest_sentences"]

_COLUMNS = ("premise", "hypothesis", "label")


@dataclass(frozen=True)
class RowProblem:
    """One skipped row: where it is and what is wrong with it."""

    file: str
    line: int
    problem: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.problem}"


@dataclass
class NLIPairs:
    """Premise/hypothesis pairs, gold label indices into ``NLI_LABELS`` and the source of each pair."""

    premises: list[str] = field(default_factory=list)
    hypotheses: list[str] = field(default_factory=list)
    labels: list[int] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    problems: list[RowProblem] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.labels)

    @property
    def pairs(self) -> list[tuple[str, str]]:
        return list(zip(self.premises, self.hypotheses))

    def extend(self, other: "NLIPairs") -> None:
        self.premises += other.premises
        self.hypotheses += other.hypotheses
        self.labels += other.labels
        self.sources += other.sources
        self.problems += other.problems

    def subset(self, indices: Iterable[int]) -> "NLIPairs":
        idx = list(indices)
        return NLIPairs([self.premises[i] for i in idx], [self.hypotheses[i] for i in idx],
                        [self.labels[i] for i in idx], [self.sources[i] for i in idx])

    def label_counts(self) -> dict[str, int]:
        counts = np.bincount(np.asarray(self.labels, dtype=np.int64), minlength=len(NLI_LABELS))
        return {label: int(n) for label, n in zip(NLI_LABELS, counts)}


# Tokenized text puts spaces around punctuation and before clitics; undo the common cases.
_SPACE_BEFORE = re.compile(r" ([.,!?;:%)\]}]|'s\b|'re\b|'ve\b|'ll\b|'d\b|'m\b|n't\b)", re.IGNORECASE)
_SPACE_AFTER = re.compile(r"([(\[{$]) ")
_CONTRACTION_SPLIT = re.compile(r"\b(ca|wo|do|does|did|is|are|was|were|have|has|had|could|would|should) n't\b",
                                re.IGNORECASE)


def detokenize(text: str) -> str:
    """``it 's raining , is n't it ?`` -> ``it's raining, isn't it?`` (the cases MultiNLI's tokenizer makes)."""
    text = _CONTRACTION_SPLIT.sub(r"\1n't", text)
    text = _SPACE_BEFORE.sub(r"\1", text)
    return _SPACE_AFTER.sub(r"\1", text).strip()


def read_nli_tsv(path: str | Path, *, detokenized: bool | None = None, limit: int | None = None) -> NLIPairs:
    """Read one ``premise<TAB>hypothesis<TAB>label<TAB>genre`` file (gzip or plain).

    ``detokenized=None`` undoes tokenization when the file name says ``tokenized``.
    Raises ``ValueError`` only when the file itself is unusable (missing, no header);
    bad rows land in ``problems``.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    if detokenized is None:
        detokenized = "tokenized" in path.name
    opener = gzip.open if path.suffix == ".gz" else open
    out = NLIPairs()
    try:
        with opener(path, "rt", encoding="utf-8", newline="") as handle:
            reader = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
            header = next(reader, None)
            if header is None or any(col not in header for col in _COLUMNS):
                raise ValueError(f"{path.name}: header must name {', '.join(_COLUMNS)} (got {header!r})")
            cols = [header.index(col) for col in _COLUMNS]
            for line, row in enumerate(reader, 2):
                problem = _row_problem(row, cols, len(header))
                if problem:
                    out.problems.append(RowProblem(path.name, line, problem))
                    continue
                premise, hypothesis, label = (row[c].strip() for c in cols)
                if detokenized:
                    premise, hypothesis = detokenize(premise), detokenize(hypothesis)
                out.premises.append(premise)
                out.hypotheses.append(hypothesis)
                out.labels.append(NLI_LABELS.index(label.lower()))
                out.sources.append(path.name)
                if limit is not None and len(out) >= limit:
                    break
    except (OSError, EOFError, UnicodeDecodeError, csv.Error) as exc:
        raise ValueError(f"{path.name}: cannot be read ({type(exc).__name__}: {exc})") from exc
    return out


def _row_problem(row: list[str], cols: list[int], width: int) -> str | None:
    if len(row) != width:
        return f"expected {width} tab-separated columns, found {len(row)}"
    premise, hypothesis, label = (row[c].strip() for c in cols)
    if not premise:
        return "premise: empty"
    if not hypothesis:
        return "hypothesis: empty"
    if label.lower() not in NLI_LABELS:
        return f"label: {label!r} is not one of {', '.join(NLI_LABELS)}"
    return None


def read_nli_files(paths: Sequence[str | Path]) -> NLIPairs:
    """Every pair of several files, in order, with every skipped row reported."""
    out = NLIPairs()
    for path in paths:
        out.extend(read_nli_tsv(path))
    return out


def sample_pairs(data: NLIPairs, pairs: int, seed: int) -> NLIPairs:
    """At most ``pairs`` of ``data``, a seeded sample kept in file order (all of it when it is smaller)."""
    if pairs >= len(data):
        return data
    chosen = np.sort(np.random.default_rng(seed).choice(len(data), pairs, replace=False))
    out = data.subset(chosen)
    out.problems = data.problems
    return out


_SCIFACT_LABELS = {"SUPPORT": "entailment", "CONTRADICT": "contradiction", "NOT_ENOUGH_INFO": "neutral"}
_WORDS = re.compile(r"[a-z0-9]{3,}")


SCIFACT_FOLDS, SCIFACT_HELD_FOLDS = 5, (0, 1)   # the verifier's split of SciFact: folds 0 and 1 validate


def scifact_fold(claim_id: int | str, folds: int) -> int:
    """The fold of a SciFact claim: a hash of its id, so every row of a claim lands in the same fold
    and the split does not move when rows are added, dropped or reordered."""
    return int(hashlib.blake2b(str(claim_id).encode(), digest_size=8).hexdigest(), 16) % folds


def closest_sentences(claim: str, sentences: Sequence[str], k: int) -> list[str]:
    """The ``k`` sentences sharing the most words with the claim, in the text's order."""
    words = set(_WORDS.findall(claim.lower()))
    ranked = sorted(range(len(sentences)), key=lambda i: (-len(words & set(_WORDS.findall(sentences[i].lower()))), i))
    return [sentences[i] for i in sorted(ranked[:k])]


def read_scifact_pairs(path: str | Path, *, folds: int = SCIFACT_FOLDS, held_folds: Sequence[int] = SCIFACT_HELD_FOLDS,
                       held: bool = False, neutral_sentences: int = 2) -> NLIPairs:
    """(evidence, claim) pairs from SciFact's claim/cited-abstract rows (``train_claim_doc_pairs.jsonl``).

    SUPPORT -> entailment and CONTRADICT -> contradiction, with the rationale sentences as evidence;
    NOT_ENOUGH_INFO -> neutral, with the ``neutral_sentences`` abstract sentences closest to the claim
    in words (the hard case: on topic, yet silent on the claim). Claims whose :func:`scifact_fold` is
    in ``held_folds`` are validation data: ``held=False`` leaves them out, ``held=True`` reads only them.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    bad = [f for f in held_folds if not 0 <= f < folds]
    if bad:
        raise ValueError(f"held_folds: {bad} outside 0..{folds - 1}")
    out = NLIPairs()
    with path.open(encoding="utf-8") as handle:
        for line, text in enumerate(handle, 1):
            if not text.strip():
                continue
            try:
                row = json.loads(text)
                claim, label = str(row["claim"]).strip(), _SCIFACT_LABELS[row["label"]]
                fold = scifact_fold(row["claim_id"], folds)
                evidence = [str(s).strip() for s in (row["rationale_sentences"] if label != "neutral"
                                                     else closest_sentences(claim, row["abstract"],
                                                                             neutral_sentences))]
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                out.problems.append(RowProblem(path.name, line, f"not a SciFact row ({type(exc).__name__}: {exc})"))
                continue
            if (fold in held_folds) != held:
                continue
            premise = " ".join(s for s in evidence if s)
            if not claim or not premise:
                out.problems.append(RowProblem(path.name, line, "claim or evidence: empty"))
                continue
            out.premises.append(premise)
            out.hypotheses.append(claim)
            out.labels.append(NLI_LABELS.index(label))
            out.sources.append(path.name)
    return out


def stratified_split(labels: Sequence[int], fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices (kept, held apart): ``fraction`` of each label held apart, chosen by ``seed``."""
    if not 0.0 <= fraction < 1.0:
        raise ValueError(f"fraction: must be in [0, 1) (got {fraction})")
    labels = np.asarray(labels)
    rng = np.random.default_rng(seed)
    held: list[np.ndarray] = []
    for label in np.unique(labels):
        members = np.flatnonzero(labels == label)
        rng.shuffle(members)
        held.append(members[: int(round(fraction * len(members)))])
    held_apart = np.sort(np.concatenate(held)) if held else np.zeros(0, dtype=np.int64)
    kept = np.setdiff1d(np.arange(len(labels)), held_apart)
    return kept, held_apart


def write_pairs_cache(path: Path, pairs: NLIPairs) -> None:
    """Pairs written as gzip JSON lines (premise, hypothesis, label, source), atomically: a mined set's cache."""
    from cns_core.config import replace_atomically

    path.parent.mkdir(parents=True, exist_ok=True)
    with replace_atomically(path) as tmp:
        with gzip.open(tmp, "wt", encoding="utf-8") as handle:
            for row in zip(pairs.premises, pairs.hypotheses, pairs.labels, pairs.sources):
                handle.write(json.dumps(row) + "\n")


def read_pairs_cache(path: Path) -> NLIPairs:
    """The pairs :func:`write_pairs_cache` wrote."""
    out = NLIPairs()
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            premise, hypothesis, label, source = json.loads(line)
            out.premises.append(premise)
            out.hypotheses.append(hypothesis)
            out.labels.append(int(label))
            out.sources.append(source)
    return out
