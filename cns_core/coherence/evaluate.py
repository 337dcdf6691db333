"""The spec's section-13 metrics on a labelled pairs file (``cns coherence-eval``).

Each labelled pair is read as (evidence, new proposition): sentence A is what
memory holds, sentence B what the chain now says. The pairs go through stages
2-4 exactly as a chain's pairs do (:meth:`CoherenceHook.score_pairs`), then:

* the pairs are split once, reproducibly (``seed``), into a fitting part and a
  held-back part; stage 6 (temperature, or isotonic) is fitted on the first and
  every figure is measured on the second -- unless a saved calibration is given,
  which is then used as is;
* **contradiction precision / recall**: calibrated p(contradiction) above tau_c
  against the gold label (the NLI helpers' :func:`nli_report`, one way to count);
* **ECE on the margin** before and after calibration (:func:`margin_ece`);
* **false block rate**: every pair is a one-proposition chain of default
  importance; of those the blocking rule blocks, the share whose gold label is
  not a contradiction (a reviewer would accept them later);
* **chain coherence stability**: held-back pairs in file order form chains of
  ``chain_size`` propositions; the figure is the mean rolling standard deviation
  of their coherence_chain over ``window`` consecutive chains.

With ``fit_weights`` the fusion weights are chosen on the fitting part too (model weight
``w_m`` from the grid, ``w_h = 1 - w_m``): the one with the best recall at tau_c whose
precision there reaches ``target_precision``, else the best precision. The held-back
part never takes part in a choice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from cns_core.coherence.calibration import Calibrator, margin_ece, normalise, normalised_entropy
from cns_core.coherence.decision import chain_metrics, is_blocking
from cns_core.coherence.fusion import FusionWeights, fuse_parts
from cns_core.coherence.schemas import PropTag, Triplet
from cns_core.training.nli_metrics import NLIDataset, nli_report, read_nli_pairs

__all__ = ["CoherenceEvalReport", "evaluate_dataset", "evaluate_file", "split_indices", "choose_fusion_weights",
           "WEIGHT_GRID"]

WEIGHT_GRID = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)


@dataclass
class CoherenceEvalReport:
    """The figures ``cns coherence-eval`` prints, one per line, plus what they were measured on."""

    name: str
    pairs_fit: int
    pairs_eval: int
    tau_c: float
    precision: float
    recall: float
    ece_before: float
    ece_after: float
    false_block_rate: float
    blocked: int
    stability: float
    temperature: float
    heuristic_precision: float
    heuristic_recall: float
    model_used: bool
    extra: dict[str, Any] = field(default_factory=dict)

    def lines(self) -> list[str]:
        return [
            f"pairs: {self.pairs_eval} evaluated ({self.pairs_fit} used to fit the calibration)",
            f"contradiction precision: {self.precision:.3f}",
            f"contradiction recall: {self.recall:.3f}",
            f"ECE margin before calibration: {self.ece_before:.3f}",
            f"ECE margin after calibration: {self.ece_after:.3f}",
            f"false block rate: {self.false_block_rate:.3f} ({self.blocked} blocked)",
            f"chain coherence stability: {self.stability:.3f}",
            f"temperature: {self.temperature:.3f}",
            f"heuristics-only contradiction precision: {self.heuristic_precision:.3f}",
            f"heuristics-only contradiction recall: {self.heuristic_recall:.3f}",
            f"model pass: {'yes' if self.model_used else 'no (heuristics only)'}",
        ] + ([f"fusion weights: w_h {self.extra['w_h']:.2f}, w_m {self.extra['w_m']:.2f}"
              + (" (chosen on the fitting part: " + ", ".join(
                  f"w_m {t['w_m']:.1f} P {t['precision']:.3f} R {t['recall']:.3f}"
                  for t in self.extra["weight_search"]) + ")" if "weight_search" in self.extra else "")]
             if "w_m" in self.extra else [])


def split_indices(n: int, fit_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A reproducible split; the held-back part keeps file order (chains are consecutive pairs)."""
    if not 0.0 <= fit_fraction < 1.0:
        raise ValueError(f"fit fraction: must be in [0, 1), got {fit_fraction}")
    order = np.random.default_rng(seed).permutation(n)
    n_fit = int(round(n * fit_fraction))
    return np.sort(order[:n_fit]), np.sort(order[n_fit:])


def _tags(probs: np.ndarray, importance: float) -> list[PropTag]:
    """One-proposition tags from calibrated pair scores (trust 1), as stage 7 builds them."""
    uncertainty = normalised_entropy(probs)
    return [PropTag(p_id=str(i), text="", triplet=Triplet("", "", ""), entail=float(e), contradict=float(c),
                    neutral=1.0 - max(float(e), float(c)), uncertainty=float(u), support_evidence=(),
                    contradiction_evidence=(), contradiction_types=(), drift_facets=(), confidence=1.0 - float(u),
                    importance=importance)
            for i, ((e, _, c), u) in enumerate(zip(probs, uncertainty))]


def _rolling_std(values: list[float], window: int) -> float:
    if len(values) < 2:
        return 0.0
    window = max(2, min(window, len(values)))
    arr = np.asarray(values)
    return float(np.mean([arr[i:i + window].std() for i in range(len(arr) - window + 1)]))


def choose_fusion_weights(parts: dict[str, np.ndarray], labels: np.ndarray, settings,
                          target_precision: float = 0.90, grid: tuple[float, ...] = WEIGHT_GRID
                          ) -> tuple[FusionWeights, Calibrator, list[dict[str, float]]]:
    """The fusion weights with the best contradiction recall at tau_c whose precision reaches the target,
    each candidate calibrated and measured on the pairs given (the fitting part only); with the
    chosen candidate's calibrator, already fitted on those pairs."""
    tau_c = settings.thresholds.tau_c
    tried: list[dict[str, float]] = []
    fitted: dict[float, tuple[FusionWeights, Calibrator]] = {}
    for w_m in grid:
        candidate = FusionWeights(w_h=round(1.0 - w_m, 3), w_m=w_m)
        raw = fuse_parts(parts, candidate)
        calibrator = Calibrator.from_config(settings.calibration)
        calibrator.fit(raw, labels)
        fitted[w_m] = candidate, calibrator
        figures = nli_report(calibrator.apply(raw), labels, tau_c)
        tried.append({"w_m": w_m, "precision": figures["contradiction precision"],
                      "recall": figures["contradiction recall"]})
    meeting = [t for t in tried if t["precision"] >= target_precision]
    best = max(meeting, key=lambda t: (t["recall"], t["precision"])) if meeting \
        else max(tried, key=lambda t: (t["precision"], t["recall"]))
    return (*fitted[best["w_m"]], tried)


def evaluate_dataset(hook, data: NLIDataset, *, fit_fraction: float = 0.5, seed: int = 0, chain_size: int = 10,
                     window: int = 10, calibrator: Calibrator | None = None,
                     save_calibration: str | Path | None = None, fit_weights: bool = False,
                     target_precision: float = 0.90) -> CoherenceEvalReport:
    """Measure the hook on labelled pairs (see the module docstring)."""
    settings = hook.effective_settings()
    pairs = list(data.pairs)
    labels = np.asarray(data.labels, dtype=np.int64)
    parts, _ = hook.score_parts(pairs)
    weights = settings.weights
    heur_raw = fuse_parts(parts, weights, model_scored=np.zeros(len(pairs), dtype=bool))
    model_used = hook.model is not None and hook.model.ready
    extra: dict[str, Any] = {}
    if calibrator is None:
        fit_idx, eval_idx = split_indices(len(pairs), fit_fraction, seed)
        if fit_weights and model_used and len(fit_idx):   # the chosen weights come with their fitted calibrator
            weights, calibrator, extra["weight_search"] = choose_fusion_weights(
                {k: v[fit_idx] for k, v in parts.items()}, labels[fit_idx], settings, target_precision)
        raw = fuse_parts(parts, weights)
        if calibrator is None:
            calibrator = Calibrator.from_config(settings.calibration)
            if len(fit_idx):
                calibrator.fit(raw[fit_idx], labels[fit_idx])
        if len(fit_idx) and save_calibration:
            calibrator.save(save_calibration)
    else:
        fit_idx, eval_idx = np.zeros(0, dtype=np.int64), np.arange(len(pairs))
        raw = fuse_parts(parts, weights)
    if not len(eval_idx):
        raise ValueError(f"{data.name}: no pairs left to evaluate after the calibration split")
    raw_eval, y = raw[eval_idx], labels[eval_idx]
    before, _ = margin_ece(normalise(raw_eval), y, calibrator.bins)
    probs = calibrator.apply(raw_eval)
    after, _ = margin_ece(probs, y, calibrator.bins)
    tau_c = settings.thresholds.tau_c
    report = nli_report(probs, y, tau_c)
    heur = nli_report(Calibrator().apply(heur_raw[eval_idx]), y, tau_c)
    tags = _tags(probs, settings.default_importance)
    blocked = np.array([is_blocking(t, settings) for t in tags])
    false_blocks = int(np.sum(blocked & (y != 2)))
    coherence = [chain_metrics(tags[i:i + chain_size], settings, chain_importance=settings.default_importance,
                               coherence_prev=0.0).coherence_chain
                 for i in range(0, len(tags), max(1, chain_size))]
    return CoherenceEvalReport(
        name=data.name, pairs_fit=int(len(fit_idx)), pairs_eval=int(len(eval_idx)), tau_c=tau_c,
        precision=report["contradiction precision"], recall=report["contradiction recall"],
        ece_before=before, ece_after=after,
        false_block_rate=false_blocks / int(blocked.sum()) if blocked.any() else 0.0, blocked=int(blocked.sum()),
        stability=_rolling_std(coherence, window), temperature=calibrator.state.temperature,
        heuristic_precision=heur["contradiction precision"], heuristic_recall=heur["contradiction recall"],
        model_used=model_used, extra={"accuracy": report["accuracy"], "w_h": weights.w_h, "w_m": weights.w_m,
                                      **extra})


def evaluate_file(hook, path: str | Path, *, limit: int | None = None, **kwargs: Any) -> CoherenceEvalReport:
    """:func:`evaluate_dataset` on a SICK ``.tsv`` or SNLI-style ``.jsonl`` file."""
    return evaluate_dataset(hook, read_nli_pairs(path, limit=limit), **kwargs)
