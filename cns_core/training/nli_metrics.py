"""Reading labelled NLI pairs and scoring an NLI backend on them.

Files: SICK ``.tsv``, SNLI-style ``.jsonl``, the training format (``premise, hypothesis,
label`` TSV, gzip or not) and Climate-FEVER's ``.jsonl`` (each claim with its five evidence
sentences: premise = evidence, hypothesis = claim; the claim is the pair's group).

Shared by ``benchmarks/nli_quality.py``, ``scripts/calibrate_lexical_nli.py`` and the
coherence evaluation, so every figure the project quotes is computed one way.
Probabilities are ``(n, 3)`` arrays in :data:`~cns_core.models.nli.NLI_LABELS`
order; gold labels are indices into it.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from cns_core.models.nli import CONTRADICTION, ENTAILMENT, NLI_LABELS

__all__ = ["NLIDataset", "read_nli_pairs", "nli_report", "format_report", "expected_calibration_error",
           "fit_temperature", "claim_level_auc", "precision_recall", "red_badge_figures"]


@dataclass(frozen=True)
class NLIDataset:
    """Premise/hypothesis pairs with gold label indices into ``NLI_LABELS``.

    ``groups`` (Climate-FEVER) names the claim each pair belongs to and ``group_labels`` that
    claim's own label, for claim-level figures.
    """

    name: str
    pairs: list[tuple[str, str]]
    labels: np.ndarray
    groups: tuple[str, ...] | None = None
    group_labels: dict[str, str] | None = None

    def __len__(self) -> int:
        return len(self.pairs)


def _label_index(raw: str, where: str) -> int:
    name = raw.strip().lower()
    if name in NLI_LABELS:
        return NLI_LABELS.index(name)
    raise ValueError(f"{where}: unknown label {raw!r} (expected one of {', '.join(NLI_LABELS)})")


def _read_sick(path: Path) -> tuple[list[tuple[str, str]], list[int]]:
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        needed = {"sentence_A", "sentence_B", "entailment_label"}
        missing = needed - set(reader.fieldnames or ())
        if missing:
            raise ValueError(f"{path}: not a SICK file, no column {', '.join(sorted(missing))}")
        pairs, labels = [], []
        for line, row in enumerate(reader, 2):
            pairs.append((row["sentence_A"].strip(), row["sentence_B"].strip()))
            labels.append(_label_index(row["entailment_label"] or "", f"{path}:{line}: entailment_label"))
    return pairs, labels


_FEVER_LABELS = {"SUPPORTS": "entailment", "REFUTES": "contradiction", "NOT_ENOUGH_INFO": "neutral"}


def _json_lines(path: Path):
    """(line number, text) of each non-blank line of a JSON-lines file."""
    with path.open(encoding="utf-8") as handle:
        for line, text in enumerate(handle, 1):
            if text.strip():
                yield line, text


def _read_climate_fever(path: Path) -> NLIDataset:
    pairs, labels, groups, group_labels = [], [], [], {}
    for line, text in _json_lines(path):
        try:
            row = json.loads(text)
            claim_id, claim = str(row["claim_id"]), row["claim"].strip()
            group_labels[claim_id] = str(row["claim_label"])
            for k, ev in enumerate(row["evidences"]):
                pairs.append((ev["evidence"].strip(), claim))
                labels.append(_label_index(_FEVER_LABELS.get(ev["evidence_label"], ev["evidence_label"]),
                                           f"{path}:{line}: evidences[{k}].evidence_label"))
                groups.append(claim_id)
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"{path}:{line}: not a Climate-FEVER row ({type(exc).__name__}: {exc})") from exc
    return NLIDataset(path.name, pairs, np.asarray(labels, dtype=np.int64), tuple(groups), group_labels)


def _read_jsonl(path: Path) -> tuple[list[tuple[str, str]], list[int]]:
    pairs, labels = [], []
    for line, text in _json_lines(path):
        try:
            row = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{line}: not valid JSON: {exc.msg}") from exc
        for key in ("sentence1", "sentence2", "gold_label"):
            if not isinstance(row, dict) or not isinstance(row.get(key), str):
                raise ValueError(f"{path}:{line}: {key}: missing or not a string")
        if row["gold_label"].strip() in ("", "-"):
            continue  # SNLI marks pairs without annotator agreement with '-'
        pairs.append((row["sentence1"].strip(), row["sentence2"].strip()))
        labels.append(_label_index(row["gold_label"], f"{path}:{line}: gold_label"))
    return pairs, labels


def read_nli_pairs(path: str | Path, limit: int | None = None) -> NLIDataset:
    """Read a SICK ``.tsv``/``.txt`` (sentence_A, sentence_B, entailment_label), an
    SNLI/MNLI-style ``.jsonl`` (sentence1, sentence2, gold_label; '-' rows skipped), a
    training-format TSV (premise, hypothesis, label; ``.gz`` too) or Climate-FEVER's ``.jsonl``.

    Raises ``ValueError`` naming the file, line and field for malformed input.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    gzipped = path.name.endswith(".gz")
    first = "" if gzipped else _first_line(path)     # the one look at the file that picks its reader
    if path.suffix.lower() in (".jsonl", ".json") and '"evidences"' in first and '"claim"' in first:
        data = _read_climate_fever(path)
    elif gzipped or first.startswith("premise\t"):
        from cns_core.training.nli_data import read_nli_tsv

        rows = read_nli_tsv(path)
        if rows.problems:
            raise ValueError(str(rows.problems[0]))
        data = NLIDataset(path.name, rows.pairs, np.asarray(rows.labels, dtype=np.int64))
    else:
        reader = _read_jsonl if path.suffix.lower() in (".jsonl", ".json") else _read_sick
        pairs, labels = reader(path)
        data = NLIDataset(path.name, pairs, np.asarray(labels, dtype=np.int64))
    if limit is not None:
        data = NLIDataset(data.name, data.pairs[:limit], data.labels[:limit],
                          data.groups[:limit] if data.groups else None, data.group_labels)
    if not data.pairs:
        raise ValueError(f"{path}: no labelled pairs")
    return data


def _first_line(path: Path) -> str:
    with path.open(encoding="utf-8", errors="replace") as handle:
        return handle.readline()


def precision_recall(predicted: np.ndarray, actual: np.ndarray) -> tuple[float, float]:
    """Precision and recall of a boolean prediction (0 where nothing is predicted or present)."""
    from sklearn.metrics import precision_score, recall_score

    return (float(precision_score(actual, predicted, zero_division=0)),
            float(recall_score(actual, predicted, zero_division=0)))


def red_badge_figures(flagged: np.ndarray, supported: np.ndarray, contradicted: np.ndarray) -> dict[str, float]:
    """Whether a red badge is right (issue 67): the share of supported items ``flagged`` contradicted (the error
    that costs a reader most, NaN without supported items), beside contradiction precision and recall (items that
    are neither, such as "not enough information", count against precision only)."""
    flagged, supported, contradicted = (np.asarray(a, dtype=bool) for a in (flagged, supported, contradicted))
    precision, recall = precision_recall(flagged, contradicted)
    return {"supported called contradicted": float(np.mean(flagged[supported])) if supported.any() else float("nan"),
            "contradiction precision": precision, "contradiction recall": recall}


def _roc_auc(scores: np.ndarray, positive: np.ndarray) -> float:
    """:func:`cns_core.metrics.roc_auc`, NaN without both classes (the report's tables print NaN)."""
    from cns_core.metrics import roc_auc

    return roc_auc(scores, positive, missing=float("nan"))


def nli_report(probs: np.ndarray, labels: Sequence[int] | np.ndarray,
               contradiction_threshold: float) -> dict[str, float]:
    """All figures of one run, keyed by the names the benchmark prints.

    ``accuracy`` and ``precision[<label>]`` / ``recall[<label>]`` use the argmax label;
    ``entailment AUC`` and ``contradiction AUC`` rank by that column;
    ``contradiction precision`` / ``contradiction recall`` flag a pair when
    ``p(contradiction) >= contradiction_threshold`` (how critics and the coherence hook use it), and
    ``supported called contradicted`` is the share of entailment pairs so flagged (:func:`red_badge_figures`).
    """
    probs = np.asarray(probs, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.int64)
    if probs.ndim != 2 or probs.shape[1] != len(NLI_LABELS) or len(probs) != len(labels):
        raise ValueError(f"probs: expected shape ({len(labels)}, 3), got {probs.shape}")
    predicted = probs.argmax(axis=1)
    report: dict[str, float] = {"pairs": float(len(labels)), "accuracy": float(np.mean(predicted == labels))}
    for index, label in enumerate(NLI_LABELS):
        precision, recall = precision_recall(predicted == index, labels == index)
        report[f"precision[{label}]"] = precision
        report[f"recall[{label}]"] = recall
    report["entailment AUC"] = _roc_auc(probs[:, ENTAILMENT], labels == ENTAILMENT)
    report["contradiction AUC"] = _roc_auc(probs[:, CONTRADICTION], labels == CONTRADICTION)
    flagged = probs[:, CONTRADICTION] >= contradiction_threshold
    report["contradiction threshold"] = float(contradiction_threshold)
    report.update(red_badge_figures(flagged, labels == ENTAILMENT, labels == CONTRADICTION))
    return report


def format_report(report: dict[str, float]) -> list[str]:
    """One ``name: value`` line per figure (counts as integers, the rest to three decimals)."""
    return [f"{name}: {int(value)}" if name == "pairs" else f"{name}: {value:.3f}" for name, value in report.items()]


def expected_calibration_error(probs: np.ndarray, labels: Sequence[int] | np.ndarray, bins: int = 15) -> float:
    """Top-label ECE: the mean gap between confidence and accuracy over equal-width confidence bins."""
    probs = np.asarray(probs, dtype=np.float64)
    labels = np.asarray(labels)
    confidence = probs.max(axis=1)
    correct = probs.argmax(axis=1) == labels
    edges = np.linspace(0.0, 1.0, bins + 1)
    which = np.clip(np.digitize(confidence, edges[1:-1], right=True), 0, bins - 1)
    total = 0.0
    for b in range(bins):
        members = which == b
        if members.any():
            total += members.sum() * abs(confidence[members].mean() - correct[members].mean())
    return float(total / max(1, len(labels)))


def fit_temperature(logits: np.ndarray, labels: Sequence[int] | np.ndarray) -> float:
    """The softmax temperature that minimises the negative log-likelihood of ``labels``."""
    from scipy.optimize import minimize_scalar

    logits = np.asarray(logits, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.int64)
    rows = np.arange(len(labels))

    def nll(log_t: float) -> float:
        scaled = logits / np.exp(log_t)
        scaled -= scaled.max(axis=1, keepdims=True)
        log_norm = np.log(np.exp(scaled).sum(axis=1))
        return float(np.mean(log_norm - scaled[rows, labels]))

    return float(np.exp(minimize_scalar(nll, bounds=(-3.0, 3.0), method="bounded").x))


def claim_level_auc(probs: np.ndarray, data: NLIDataset) -> dict[str, float]:
    """Climate-FEVER claim level, SUPPORTS against REFUTES claims, over each claim's evidence:

    ``claim AUC (max entailment)`` ranks claims by their best p(entailment);
    ``claim AUC (entailment - contradiction)`` by best p(entailment) minus best p(contradiction).
    """
    if not data.groups or not data.group_labels:
        return {}
    probs = np.asarray(probs, dtype=np.float64)
    claims = [c for c in dict.fromkeys(data.groups) if data.group_labels.get(c) in ("SUPPORTS", "REFUTES")]
    index = {c: i for i, c in enumerate(claims)}
    ent = np.full(len(claims), -np.inf)
    con = np.full(len(claims), -np.inf)
    for row, group in enumerate(data.groups):
        i = index.get(group)
        if i is not None:
            ent[i] = max(ent[i], probs[row, ENTAILMENT])
            con[i] = max(con[i], probs[row, CONTRADICTION])
    supports = np.array([data.group_labels[c] == "SUPPORTS" for c in claims])
    return {"claims (supports/refutes)": float(len(claims)),
            "claim AUC (max entailment)": _roc_auc(ent, supports),
            "claim AUC (entailment - contradiction)": _roc_auc(ent - con, supports)}
