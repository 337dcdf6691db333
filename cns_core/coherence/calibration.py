"""Stage 6: calibrating fused scores into probabilities (temperature, optionally isotonic).

The fused (entail, neutral, contradict) scores of stage 4 are scores, not
probabilities: a weighted max is not normalised and its scale depends on the
fusion weights. Calibration turns them into probabilities whose margin
(entail - contradict) can be trusted by the reward hint and the blocking rule.

* **temperature** (default): ``softmax(log(p) / T + b)`` with ``T`` (and the
  per-label offsets ``b``, unless ``class_bias: false``) fitted by minimising
  the negative log-likelihood on labelled pairs.
* **isotonic** (option): one monotone map per label (scikit-learn's
  ``IsotonicRegression``), stored as breakpoints and applied with ``np.interp``
  so the saved state is plain JSON.

The calibration error tracked is the spec's ECE on the margin: margins are
binned over [-1, 1] and each bin's mean margin is compared with the mean
observed margin (+1 for an entailment, -1 for a contradiction, 0 for neutral).
The fitted state (T, isotonic breakpoints, reliability bins, ECE before and
after) is saved as JSON and reloaded.

Drift: the hook feeds labelled outcomes back (:meth:`Calibrator.observe`);
when the margin ECE of the recent window exceeds ``drift_ece`` the temperature
is reset to 1.0 and re-fitted once ``min_samples`` new outcomes have arrived.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections import deque
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, Mapping, Sequence

import numpy as np

from cns_core.config import replace_atomically

__all__ = [
    "ReliabilityBin",
    "CalibrationState",
    "Calibrator",
    "normalise",
    "apply_temperature",
    "fit_temperature",
    "margin_ece",
    "normalised_entropy",
]

EPS = 1e-6
Method = Literal["temperature", "isotonic"]


def normalise(scores: np.ndarray) -> np.ndarray:
    """Rows as probability vectors (floored at a small epsilon so logs are finite)."""
    p = np.clip(np.asarray(scores, dtype=np.float64), EPS, None)
    if p.ndim == 1:
        p = p[None, :]
    return p / p.sum(axis=1, keepdims=True)


def apply_temperature(probs: np.ndarray, temperature: float, bias: Sequence[float] | None = None) -> np.ndarray:
    """``softmax(log(p) / T + b)``: T > 1 softens, T < 1 sharpens; ``b`` shifts mass between labels.

    With T = 1 and no bias ``p`` comes back unchanged.
    """
    logits = np.log(normalise(probs)) / max(temperature, 1e-3)
    if bias is not None:
        logits = logits + np.asarray(bias, dtype=np.float64)
    logits -= logits.max(axis=1, keepdims=True)
    out = np.exp(logits)
    return out / out.sum(axis=1, keepdims=True)


def _nll(probs: np.ndarray, labels: np.ndarray, temperature: float, bias: Sequence[float] | None = None) -> float:
    p = apply_temperature(probs, temperature, bias)
    return float(-np.mean(np.log(np.clip(p[np.arange(len(labels)), labels], EPS, None))))


def fit_temperature(probs: np.ndarray, labels: Sequence[int], *, class_bias: bool = False,
                    low: float = 0.05, high: float = 20.0) -> tuple[float, list[float] | None]:
    """Temperature (and, with ``class_bias``, log-offsets of entailment and contradiction against
    neutral) minimising the negative log-likelihood of the labels.

    The bias is the "bias-corrected temperature scaling" of the calibration literature: the
    hook's weighted-max fusion moves mass between labels (a high token overlap lifts entailment
    for pairs that are only related), which one temperature cannot undo.
    """
    from scipy.optimize import minimize

    labels = np.asarray(labels, dtype=np.int64)
    probs = normalise(probs)

    def objective(x: np.ndarray) -> float:
        bias = (x[1], 0.0, x[2]) if class_bias else None
        return _nll(probs, labels, float(np.exp(x[0])), bias)

    start = np.zeros(3 if class_bias else 1)
    bounds = [(np.log(low), np.log(high))] + ([(-10.0, 10.0)] * 2 if class_bias else [])
    best = minimize(objective, start, method="L-BFGS-B", bounds=bounds)
    x = best.x if best.fun <= objective(start) else start
    bias = [float(x[1]), 0.0, float(x[2])] if class_bias else None
    return float(np.exp(x[0])), bias


@dataclass(frozen=True)
class ReliabilityBin:
    """One margin bin: its range, how many pairs fell in it, mean predicted and observed margin."""

    low: float
    high: float
    count: int
    predicted: float
    observed: float


def margin_ece(probs: np.ndarray, labels: Sequence[int], bins: int = 10) -> tuple[float, list[ReliabilityBin]]:
    """ECE on the margin ``p(entail) - p(contradict)`` against the observed margin (+1 / 0 / -1)."""
    probs = np.asarray(probs, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.int64)
    if len(labels) == 0:
        return 0.0, []
    margin = probs[:, 0] - probs[:, 2]
    observed = (labels == 0).astype(float) - (labels == 2).astype(float)
    edges = np.linspace(-1.0, 1.0, bins + 1)
    index = np.clip(np.digitize(margin, edges[1:-1]), 0, bins - 1)
    out: list[ReliabilityBin] = []
    ece = 0.0
    for b in range(bins):
        mask = index == b
        n = int(mask.sum())
        if n == 0:
            out.append(ReliabilityBin(float(edges[b]), float(edges[b + 1]), 0, 0.0, 0.0))
            continue
        pred, obs = float(margin[mask].mean()), float(observed[mask].mean())
        ece += n / len(labels) * abs(pred - obs)
        out.append(ReliabilityBin(float(edges[b]), float(edges[b + 1]), n, pred, obs))
    return float(ece), out


def normalised_entropy(probs: np.ndarray) -> np.ndarray:
    """Entropy of each row divided by log(3): 0 for a certain verdict, 1 for a uniform one."""
    p = np.clip(np.asarray(probs, dtype=np.float64), 1e-12, 1.0)
    p = p / p.sum(axis=1, keepdims=True)
    return -(p * np.log(p)).sum(axis=1) / math.log(p.shape[1])


@dataclass
class CalibrationState:
    """Everything fitted, as plain data (saved as JSON)."""

    method: Method = "temperature"
    temperature: float = 1.0
    bias: list[float] | None = None                       # log-offsets per label (neutral 0), or none
    isotonic: list[dict[str, list[float]]] | None = None   # per label: {"x": [...], "y": [...]}
    bins: list[ReliabilityBin] = field(default_factory=list)
    ece_before: float | None = None
    ece_after: float | None = None
    n_samples: int = 0
    fitted_at: float | None = None
    resets: int = 0

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["bins"] = [asdict(b) for b in self.bins]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "calibration state") -> "CalibrationState":
        if not isinstance(data, dict):
            raise ValueError(f"{source}: expected a mapping")
        method = data.get("method", "temperature")
        if method not in ("temperature", "isotonic"):
            raise ValueError(f"{source}: method: expected 'temperature' or 'isotonic', got {method!r}")
        try:
            temperature = float(data.get("temperature", 1.0))
        except (TypeError, ValueError):
            raise ValueError(f"{source}: temperature: expected a number") from None
        if not (temperature > 0 and math.isfinite(temperature)):
            raise ValueError(f"{source}: temperature: must be a positive number (got {temperature})")
        isotonic = data.get("isotonic")
        if isotonic is not None:
            if not (isinstance(isotonic, list) and len(isotonic) == 3
                    and all(isinstance(m, dict) and len(m.get("x", [])) == len(m.get("y", [])) > 0
                            for m in isotonic)):
                raise ValueError(f"{source}: isotonic: expected three maps with equal-length x and y lists")
        bias = data.get("bias")
        if bias is not None and not (isinstance(bias, list) and len(bias) == 3
                                     and all(isinstance(b, (int, float)) and math.isfinite(b) for b in bias)):
            raise ValueError(f"{source}: bias: expected three finite numbers or null")
        try:
            bins = [ReliabilityBin(**b) for b in data.get("bins") or []]
        except TypeError:
            raise ValueError(f"{source}: bins: expected a list of {{low, high, count, predicted, observed}}") from None
        return cls(method=method, temperature=temperature, bias=bias, isotonic=isotonic, bins=bins,
                   ece_before=data.get("ece_before"), ece_after=data.get("ece_after"),
                   n_samples=int(data.get("n_samples", 0)), fitted_at=data.get("fitted_at"),
                   resets=int(data.get("resets", 0)))


class Calibrator:
    """Applies and (re)fits the calibration; thread-safe; the hook holds one."""

    def __init__(self, state: CalibrationState | None = None, *, bins: int = 10, min_samples: int = 200,
                 drift_ece: float = 0.25, window: int = 500, class_bias: bool = True):
        self.state = state or CalibrationState()
        self.bins = bins
        self.class_bias = class_bias
        self.min_samples = min_samples
        self.drift_ece = drift_ece
        self._buffer: deque[tuple[np.ndarray, int]] = deque(maxlen=max(window, min_samples))
        self._fresh = 0          # outcomes since the last fit or reset
        self._lock = threading.Lock()

    @classmethod
    def from_config(cls, section: Mapping[str, Any], path: str | Path | None = None) -> "Calibrator":
        """One with coherence.yaml's ``calibration`` settings: the state saved at ``path`` when
        given, else identity (T = 1) that will fit with the configured ``method``."""
        options = dict(bins=int(section.get("bins", 10)), min_samples=int(section.get("min_samples", 200)),
                       drift_ece=float(section.get("drift_ece", 0.25)), window=int(section.get("window", 500)),
                       class_bias=bool(section.get("class_bias", True)))
        if path is not None:
            return cls.load(path, **options)
        calibrator = cls(**options)
        calibrator.state.method = section.get("method", "temperature")
        return calibrator

    # ----- applying ---------------------------------------------------------
    def apply(self, raw: np.ndarray) -> np.ndarray:
        """Calibrated (n, 3) probabilities from fused (entail, neutral, contradict) scores."""
        probs = normalise(raw)
        state = self.state
        if state.method == "isotonic" and state.isotonic:
            mapped = np.stack([np.interp(probs[:, k], m["x"], m["y"]) for k, m in enumerate(state.isotonic)],
                              axis=1)
            return normalise(mapped)
        if state.temperature == 1.0 and not state.bias:
            return probs
        return apply_temperature(probs, state.temperature, state.bias)

    # ----- fitting ----------------------------------------------------------
    def fit(self, raw: np.ndarray, labels: Sequence[int], method: Method | None = None) -> CalibrationState:
        """Fit on labelled pairs; record the margin ECE before and after on the same pairs."""
        labels = np.asarray(labels, dtype=np.int64)
        if len(labels) == 0:
            raise ValueError("calibration: no labelled pairs to fit on")
        if np.any((labels < 0) | (labels > 2)):
            raise ValueError("calibration: labels must be 0 (entailment), 1 (neutral) or 2 (contradiction)")
        probs = normalise(raw)
        method = method or self.state.method
        before, _ = margin_ece(probs, labels, self.bins)
        state = CalibrationState(method=method, n_samples=int(len(labels)), fitted_at=time.time(),
                                 resets=self.state.resets, ece_before=before)
        if method == "isotonic":
            from sklearn.isotonic import IsotonicRegression

            maps = []
            for k in range(3):
                iso = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip")
                iso.fit(probs[:, k], (labels == k).astype(float))
                maps.append({"x": [float(v) for v in iso.X_thresholds_], "y": [float(v) for v in iso.y_thresholds_]})
            state.isotonic = maps
        else:
            state.temperature, state.bias = fit_temperature(probs, labels, class_bias=self.class_bias)
        with self._lock:
            self.state = state
        state.ece_after, state.bins = margin_ece(self.apply(probs), labels, self.bins)
        return state

    def reset(self) -> None:
        """Back to identity (T = 1), keeping the count of resets."""
        with self._lock:
            self.state = CalibrationState(method=self.state.method, resets=self.state.resets + 1)
            self._buffer.clear()
            self._fresh = 0

    # ----- online feedback ----------------------------------------------------
    def observe(self, raw: Sequence[float], label: int, *, allow_refit: bool = True) -> str | None:
        """Record one labelled outcome; returns ``'reset'``, ``'refit'`` or ``None``.

        A fitted state is judged on the outcomes that arrived since it was fitted: once
        ``min_samples`` of them show a margin ECE above ``drift_ece`` the temperature is
        reset to 1.0 and the buffer emptied. An unfitted (or reset) state is fitted once the
        buffer holds ``min_samples`` outcomes -- unless ``allow_refit=False`` (backlog),
        which keeps collecting and leaves the cached calibration in use.
        """
        with self._lock:
            self._buffer.append((np.asarray(raw, dtype=np.float64), int(label)))
            self._fresh += 1
            size, fresh = len(self._buffer), min(self._fresh, len(self._buffer))
        if not self.state.n_samples:
            if allow_refit and size >= self.min_samples:
                raws, labels = self._arrays(size)
                self.fit(raws, labels)
                with self._lock:
                    self._fresh = 0
                return "refit"
            return None
        if fresh < self.min_samples:
            return None
        raws, labels = self._arrays(fresh)
        recent, _ = margin_ece(self.apply(raws), labels, self.bins)
        with self._lock:
            self._fresh = 0
        if recent > self.drift_ece:
            self.reset()
            return "reset"
        return None

    def _arrays(self, last: int) -> tuple[np.ndarray, np.ndarray]:
        with self._lock:
            items = list(self._buffer)[-last:]
        return np.stack([r for r, _ in items]), np.array([lab for _, lab in items])

    @property
    def buffered(self) -> int:
        return len(self._buffer)

    # ----- persistence --------------------------------------------------------
    def save(self, path: str | Path) -> Path:
        path = Path(path)
        with replace_atomically(path) as tmp:
            tmp.write_text(json.dumps(self.state.to_dict(), indent=2), encoding="utf-8")
        return path

    @classmethod
    def load(cls, path: str | Path, **kwargs: Any) -> "Calibrator":
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}: not valid JSON: {exc.msg}") from exc
        return cls(CalibrationState.from_dict(data, str(path)), **kwargs)
