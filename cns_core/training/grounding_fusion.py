"""Fitting the grounding fusion on the development sets, and the figures it is judged by.

Dev sets (in ``CNS_DATA_DIR``): ``scifact_train`` (claims vs the abstracts they cite:
SUPPORT / CONTRADICT / NOT_ENOUGH_INFO) and ``wice_dev`` (Wikipedia claims vs the page they
cite: supported / partially_supported / not_supported). Both map onto the three verdicts:
SciFact's labels directly; WiCE's supported -> supported and the other two -> not enough
information (WiCE has no contradicted label: a partly supported claim is not supported).

Every figure quoted from these sets is a development figure. :func:`cross_validated` scores
each claim with a fusion fitted on the other folds (folds grouped by claim, so a claim's
several abstracts never sit on both sides) for figures that are not fitted on themselves.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from cns_core.config import data_dir
from cns_core.critics.grounding import text_problem
from cns_core.critics.grounding_judge import GroundingProblem, RetrievalSettings, judge_problems
from cns_core.critics.grounding_verdict import FEATURES, VERDICTS, Fusion, VerdictRule
from cns_core.training.nli_data import SCIFACT_FOLDS, SCIFACT_HELD_FOLDS, closest_sentences, scifact_fold

__all__ = ["DevClaim", "load_scifact", "load_wice", "in_held_folds", "dev_features", "cached_dev_features", "fit_fusion", "cross_validated",
           "predict_dev", "auc_figures", "verdict_accuracy", "red_badge_threshold", "fitted_record"]

_SCIFACT = {"SUPPORT": "supported", "CONTRADICT": "contradicted", "NOT_ENOUGH_INFO": "not_enough_info"}
_WICE = {"supported": "supported", "partially_supported": "not_enough_info", "not_supported": "not_enough_info"}


@dataclass(frozen=True)
class DevClaim:
    dataset: str
    group: str          # claims sharing a group stay in one cross-validation fold
    label: str          # the dataset's own label
    verdict: str        # the label as one of VERDICTS
    claim: str
    source: str         # the cited abstract or page as one evidence text, as an SNO would hold it

    def problem(self, max_chars: int) -> GroundingProblem:
        """The claim against its source, split as the critic splits evidence."""
        return text_problem([self.claim], [self.source], max_chars)


def _rows(path: Path, limit: int | None) -> list[dict[str, Any]]:
    if not path.is_file():
        raise FileNotFoundError(f"{path}: not found (set CNS_DATA_DIR to the shared data folder)")
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return rows[:limit] if limit else rows


CITED = " cited"       # the dataset suffix of the claims against only the sentences they cite
CLOSEST_SENTENCES = 2  # a claim citing nothing in particular: the sentences sharing the most words with it


def load_scifact(limit: int | None = None, root: Path | None = None, cited: bool = False) -> list[DevClaim]:
    """SciFact train claim-abstract pairs: the abstract's sentences joined into one text, or (``cited``) only its
    rationale sentences (a claim with none: the abstract's sentences closest to it), as short evidence."""
    out = []
    for r in _rows((root or data_dir()) / "scifact_train" / "train_claim_doc_pairs.jsonl", limit):
        source = r["abstract"]
        if cited:
            source = r["rationale_sentences"] or closest_sentences(r["claim"], source, CLOSEST_SENTENCES)
        out.append(DevClaim("scifact" + (CITED if cited else ""), f"scifact-{r['claim_id']}", r["label"],
                            _SCIFACT[r["label"]], r["claim"], " ".join(source)))
    return out


def load_wice(limit: int | None = None, root: Path | None = None, cited: bool = False) -> list[DevClaim]:
    """WiCE dev claims: the cited page's sentences joined into one text, or (``cited``) only the sentences annotated
    as supporting the claim (its first set; a claim with none: the page's sentences closest to it)."""
    rows = _rows((root or data_dir()) / "wice_dev" / "claim_dev.jsonl", limit)
    out = []
    for r in rows:
        page = [s.strip() for s in r["evidence"] if s.strip()]
        if cited:
            page = ([r["evidence"][i].strip() for i in r["supporting_sentences"][0]] if r["supporting_sentences"]
                    else closest_sentences(r["claim"], page, CLOSEST_SENTENCES))
        out.append(DevClaim("wice" + (CITED if cited else ""), f"wice-{r['meta']['id']}", r["label"],
                            _WICE[r["label"]], r["claim"], " ".join(page)))
    return out


def in_held_folds(claim: DevClaim) -> bool:
    """A SciFact claim (either form) of the folds the verifier's recipe holds out: never fitted on."""
    return (claim.dataset.startswith("scifact")
            and scifact_fold(claim.group.split("-", 1)[1], SCIFACT_FOLDS) in SCIFACT_HELD_FOLDS)


def _probe() -> Fusion:
    """A fusion with every feature and zero weights: judging with it yields all features."""
    names = tuple(FEATURES)
    return Fusion(names, np.zeros((3, len(names))), np.zeros(3), {})


def dev_features(claims: Sequence[DevClaim], nli: Any, embedder: Any, settings: RetrievalSettings,
                 max_chars: int, chunk: int = 64) -> np.ndarray:
    """``(claims, len(FEATURES))`` feature rows, judged ``chunk`` problems per NLI call."""
    probe, rows = _probe(), []
    for lo in range(0, len(claims), chunk):
        part = [c.problem(max_chars) for c in claims[lo:lo + chunk]]
        rows.extend(v[0].features for v in judge_problems(part, nli, embedder, probe, settings))
    return np.array(rows, dtype=np.float64).reshape(len(claims), len(FEATURES))


def cached_dev_features(claims: Sequence[DevClaim], nli: Any, embedder: Any, settings: RetrievalSettings,
                        max_chars: int, path: Path) -> np.ndarray:
    """:func:`dev_features`, kept in ``path`` (``.npz``) and reused while the claims, the NLI model and
    the retrieval settings are the same (refitting with other features then costs no model call)."""
    import hashlib

    from cns_core.models.nli import nli_fingerprint

    # max_pairs is left out: it cannot change a one-claim problem
    retrieval = f"RetrievalSettings(max_run={settings.max_run}, top_k={settings.top_k}, margin={settings.margin})"
    if settings.embed_top:                       # (the key of the all-sentences features stays as it was)
        retrieval += f", embed_top={settings.embed_top}"
    blob = json.dumps([nli_fingerprint(nli), getattr(embedder, "name", ""), retrieval, max_chars,
                       [[c.group, c.claim, c.source] for c in claims], list(FEATURES)])
    key = hashlib.blake2b(blob.encode("utf-8"), digest_size=16).hexdigest()
    if path.is_file():
        with np.load(path, allow_pickle=False) as cached:
            if str(cached["key"]) == key:
                return cached["x"]
    x = dev_features(claims, nli, embedder, settings, max_chars)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, key=np.array(key), x=x)
    return x


def _columns(names: Sequence[str]) -> list[int]:
    order = list(FEATURES)
    return [order.index(n) for n in names]


def predict_dev(fusion: Fusion, x_all: np.ndarray) -> np.ndarray:
    """``fusion``'s verdict probabilities of :func:`dev_features` rows (every feature; it reads its own)."""
    return fusion.predict(x_all[:, _columns(fusion.features)])


def fit_fusion(x_all: np.ndarray, verdicts: Sequence[str], names: Sequence[str], c: float = 1.0,
               fitted: dict[str, Any] | None = None) -> Fusion:
    """Multinomial logistic regression (scikit-learn) of the verdicts on the named feature columns."""
    from sklearn.linear_model import LogisticRegression

    y = np.array([VERDICTS.index(v) for v in verdicts])
    if len(set(y.tolist())) < 3:
        raise ValueError(f"fit_fusion: the data must hold all three verdicts (got {sorted(set(verdicts))})")
    model = LogisticRegression(C=c, max_iter=2000, class_weight="balanced")
    model.fit(x_all[:, _columns(names)], y)
    coef = np.zeros((3, len(names)))
    intercept = np.zeros(3)
    for row, cls in enumerate(model.classes_):
        coef[cls], intercept[cls] = model.coef_[row], model.intercept_[row]
    return Fusion(tuple(names), coef, intercept, fitted or {})


def cross_validated(x_all: np.ndarray, verdicts: Sequence[str], groups: Sequence[str], names: Sequence[str],
                    folds: int = 5, c: float = 1.0, seed: int = 0) -> np.ndarray:
    """Out-of-fold verdict probabilities: each claim scored by a fusion fitted on the other folds."""
    from sklearn.model_selection import GroupKFold

    out = np.zeros((len(verdicts), 3))
    verdicts = np.asarray(verdicts)
    splitter = GroupKFold(n_splits=folds, shuffle=True, random_state=seed)
    for train, test in splitter.split(x_all, verdicts, np.asarray(groups)):
        fusion = fit_fusion(x_all[train], list(verdicts[train]), names, c)
        out[test] = predict_dev(fusion, x_all[test])
    return out


def _auc(labels: np.ndarray, scores: np.ndarray, positive: str, negative: str) -> float | None:
    from cns_core.metrics import roc_auc

    keep = (labels == positive) | (labels == negative)
    if not np.isfinite(scores[keep]).all():
        return None
    return roc_auc(scores[keep], labels[keep] == positive)


# (dataset, positive label, negative label) of each AUC the issue targets.
AUC_PAIRS: tuple[tuple[str, str, str], ...] = (
    ("scifact", "SUPPORT", "CONTRADICT"), ("scifact", "SUPPORT", "NOT_ENOUGH_INFO"),
    ("wice", "supported", "not_supported"), ("wice", "supported", "partially_supported"),
    ("scifact" + CITED, "SUPPORT", "CONTRADICT"), ("wice" + CITED, "supported", "partially_supported"))


def auc_figures(claims: Sequence[DevClaim], support_scores: np.ndarray) -> dict[str, float | None]:
    """The four AUCs of ``support_scores`` (higher = more supported), keyed ``dataset: pos vs neg``."""
    labels = np.array([c.label for c in claims])
    datasets = np.array([c.dataset for c in claims])
    return {f"{d}: {p} vs {n}": _auc(labels[datasets == d], support_scores[datasets == d], p, n)
            for d, p, n in AUC_PAIRS if (datasets == d).any()}


def verdict_accuracy(claims: Sequence[DevClaim], predicted: Sequence[str]) -> dict[str, float]:
    """Share of claims whose verdict matches the label, per dataset."""
    out = {}
    for d in dict.fromkeys(c.dataset for c in claims):
        hits = [c.verdict == p for c, p in zip(claims, predicted) if c.dataset == d]
        out[d] = float(np.mean(hits)) if hits else float("nan")
    return out


RED_BADGE_GRID = tuple(round(0.5 + 0.05 * k, 2) for k in range(10))    # 0.5 .. 0.95


def red_badge_threshold(claims: Sequence[DevClaim], probabilities: np.ndarray, max_red: float,
                        supported_at: float = 0.5) -> tuple[float, dict[str, float]]:
    """The lowest contradiction threshold of :data:`RED_BADGE_GRID` at which, in every dataset, at most
    ``max_red`` of the supported claims read contradicted (issue 67: a red badge that is right first), with that
    share per dataset; the grid's top when none reaches it. ``probabilities`` are out-of-fold (no claim judged by
    weights fitted on itself), so the threshold is not chosen on the fit's own answers."""
    supported = np.array([c.verdict == "supported" for c in claims])
    datasets = np.array([c.dataset for c in claims])
    shares: dict[str, float] = {}
    for threshold in RED_BADGE_GRID:
        rule = VerdictRule(supported_at, threshold)
        red = np.array([rule.decide(p) == "contradicted" for p in probabilities])
        shares = {str(d): round(float(np.mean(red[supported & (datasets == d)])), 3)
                  for d in dict.fromkeys(datasets) if (supported & (datasets == d)).any()}
        if all(share <= max_red for share in shares.values()):
            break
    return threshold, shares


def fitted_record(claims: Sequence[DevClaim], folds: int, cv_figures: dict[str, Any], c: float,
                  settings: RetrievalSettings) -> dict[str, Any]:
    """How a fusion was fitted, for the YAML beside its weights."""
    counts: dict[str, int] = {}
    for claim in claims:
        counts[claim.dataset] = counts.get(claim.dataset, 0) + 1
    return {"data": {d: n for d, n in counts.items()}, "date": date.today().isoformat(),
            "method": f"scikit-learn LogisticRegression (multinomial, C={c}, class_weight=balanced)",
            "retrieval": {"max_run": settings.max_run, "top_k": settings.top_k, "margin": settings.margin},
            "cross_validation": {"folds": folds, "grouped_by": "claim", **cv_figures},
            "note": "development figures: SciFact train (its folds the verifier trains on) and WiCE dev, each claim "
                    "against its whole abstract or page and against only the sentences it cites; cross-validated "
                    "figures score each claim with a fusion fitted on the other folds (a claim's two forms share one)"}
