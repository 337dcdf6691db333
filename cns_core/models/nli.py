"""Natural-language inference backends behind one interface.

``predict(pairs)`` takes ``(premise, hypothesis)`` pairs and returns an
``(n, 3)`` array of probabilities whose columns are always
``NLI_LABELS = (entailment, neutral, contradiction)``, whatever order the
underlying model uses.

Backends, chosen by ``nli.backend`` in ``config/models.yaml`` or ``CNS_NLI_BACKEND``:

* ``transformers`` (default): any sequence-classification NLI model by hub name or
  local folder, loaded with ``local_files_only`` so nothing downloads. The default
  model is the project's own MiniLM cross-encoder shipped in ``models/nli-minilm-l6``
  (made by ``cns train-verifier``), with the softmax temperature fitted beside it;
* ``lexical`` (the fast offline proxy): a calibrated estimate from embeddings and
  contradiction cues (:mod:`cns_core.models.lexical_nli`);
* ``ollama-minicheck``: a grounding model served by Ollama
  (:mod:`cns_core.models.minicheck`).
"""

from __future__ import annotations

import functools
import importlib
import json
import threading
import warnings
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

import numpy as np

from cns_core.config import env_override, load_config, project_path
from cns_core.models.cancel import raise_if_cancelled
from cns_core.models.errors import ModelUnavailableError
from cns_core.models.name_marks import mark_unstated_names, marks_unstated_names

__all__ = ["NLI_LABELS", "NLIBackend", "TransformersNLI", "label_columns", "softmax_rows", "nli_settings",
           "get_nli_backend", "reset_backends", "nli_identity", "nli_fingerprint", "resolve_model_path",
           "weights_fingerprint", "SHIPPED_MODEL"]

# The project's own model, shipped in the repository (see its MODEL_CARD.md).
SHIPPED_MODEL = "models/nli-minilm-l6"
_RESTORE = ("Restore the shipped weights with `git checkout -- models/nli-minilm-l6` (or retrain them with "
            "`cns train-verifier`), point nli.transformers.model / CNS_NLI_MODEL at another NLI model folder, "
            "or choose nli.backend: lexical.")

NLI_LABELS: tuple[str, str, str] = ("entailment", "neutral", "contradiction")
ENTAILMENT, NEUTRAL, CONTRADICTION = 0, 1, 2

Pair = tuple[str, str]


class NLIBackend(Protocol):
    """Scores (premise, hypothesis) pairs; columns follow :data:`NLI_LABELS`."""

    name: str

    def predict(self, pairs: Sequence[Pair]) -> np.ndarray:
        ...


def label_columns(id2label: dict[Any, str]) -> list[int]:
    """Model output index of each of :data:`NLI_LABELS`, read from a config's ``id2label``.

    Label names vary ('ENTAILMENT', 'entailment', 'contradiction', 'CONTRADICTION');
    ``LABEL_0``-style names carry no meaning and are refused rather than guessed.
    """
    index: dict[str, int] = {}
    for raw_id, raw_name in id2label.items():
        name = str(raw_name).lower()
        for label, stem in (("entailment", "entail"), ("neutral", "neutral"), ("contradiction", "contradict")):
            if stem in name:
                index[label] = int(raw_id)
    missing = [label for label in NLI_LABELS if label not in index]
    if missing:
        raise ValueError(f"id2label {dict(id2label)} names no {', '.join(missing)} label")
    return [index[label] for label in NLI_LABELS]


def softmax_rows(logits: np.ndarray) -> np.ndarray:
    """Numerically stable softmax over each row."""
    shifted = logits - logits.max(axis=1, keepdims=True)
    probs = np.exp(shifted)
    return probs / probs.sum(axis=1, keepdims=True)


def resolve_model_path(model: str) -> str:
    """A relative folder is taken from the project root (so the shipped model is found from any
    working directory); anything else (absolute path, hub name) is returned as it is."""
    candidate = project_path(model)
    if not Path(model).is_absolute() and (candidate.exists() or model.startswith("models/")):
        return str(candidate)
    return model


class TransformersNLI:
    """A Hugging Face sequence-classification NLI model, batched, on CUDA when present.

    Weights are always computed in fp32 on CPU (fp16 is slow and inexact there, whatever the
    stored precision); ``precision="int8"`` quantizes the linear layers dynamically for CPU.
    A ``calibration.json`` beside the weights holds the softmax temperature fitted at training.
    """

    name = "transformers"

    def __init__(self, model: str, batch_size: int = 32, max_length: int = 256, device: str = "auto",
                 precision: str = "fp32"):
        if precision not in ("fp32", "int8"):
            raise ValueError(f"nli.transformers.precision: must be fp32 or int8 (got {precision!r})")
        self.model_name = model
        self.model_path = resolve_model_path(model)
        self.batch_size = batch_size
        self.max_length = max_length
        self.precision = precision
        self.temperature = 1.0
        self._contradiction_threshold: float | None = None
        self._device_setting = device
        self._loaded: tuple[Any, Any, list[int], Any] | None = None
        self._lock = threading.Lock()

    @property
    def identity(self) -> str:
        """What scored a result: the model folder's name and its precision."""
        return f"{Path(self.model_name).name} ({self.precision})"

    @functools.cached_property
    def weights_hash(self) -> str:
        """:func:`weights_fingerprint` of the model folder, hashed once per backend (the weights are 45 MB)."""
        return weights_fingerprint(self.model_path)

    def _fail(self, problem: str, exc: Exception | None = None) -> ModelUnavailableError:
        detail = f" ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else exc!r})" if exc else ""
        return ModelUnavailableError(self.name, f"cannot load model {self.model_path}: {problem}{detail}",
                                     _RESTORE)

    def _load(self):
        if self._loaded is not None:
            return self._loaded
        with self._lock:
            if self._loaded is None:
                self._loaded = self._load_now()
        return self._loaded

    def _load_now(self):
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer
        from transformers.utils import logging as hf_logging

        folder = Path(self.model_path)
        if folder.is_absolute() and not folder.is_dir():
            raise self._fail("no such folder")
        if folder.is_dir() and not any((folder / f).is_file() for f in ("model.safetensors", "pytorch_model.bin")):
            raise self._fail("the folder holds no weights (model.safetensors)")
        verbosity, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
        hf_logging.set_verbosity_error()          # no load reports or bars on the console
        hf_logging.disable_progress_bar()
        try:
            tokenizer = AutoTokenizer.from_pretrained(self.model_path, local_files_only=True)
            model = AutoModelForSequenceClassification.from_pretrained(self.model_path, local_files_only=True,
                                                                       dtype=torch.float32)
        except Exception as exc:  # OSError, ValueError, safetensors errors for corrupt files
            raise self._fail("the weights or tokenizer are missing or corrupt", exc) from exc
        finally:
            hf_logging.set_verbosity(verbosity)
            if bars:
                hf_logging.enable_progress_bar()
        try:
            columns = label_columns(model.config.id2label)
        except ValueError as exc:
            raise self._fail(f"it is not an NLI model: {exc}") from exc
        calibration = folder / "calibration.json"
        if calibration.is_file():
            try:
                fitted = json.loads(calibration.read_text())
                self.temperature = float(fitted["temperature"])
                threshold = fitted.get("contradiction_threshold")
                self._contradiction_threshold = None if threshold is None else float(threshold)
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                raise self._fail(f"{calibration.name}: no valid temperature", exc) from exc
            if not 0.01 <= self.temperature <= 100:
                raise self._fail(f"{calibration.name}: temperature {self.temperature} is out of range")
        wanted = self._device_setting
        device = torch.device("cuda" if wanted == "auto" and torch.cuda.is_available()
                              else "cpu" if wanted == "auto" else wanted)
        model.to(device).eval()
        if self.precision == "int8":
            if device.type != "cpu":
                raise self._fail("int8 runs on CPU only; set nli.transformers.device: cpu or precision: fp32")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")   # torch marks its quantized tensors deprecated
                model = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
        return tokenizer, model, columns, device

    @property
    def contradiction_threshold(self) -> float | None:
        """The p(contradiction) cut-off fitted with the model (``calibration.json``), if any."""
        self._load()
        return self._contradiction_threshold

    def ensure_loaded(self) -> None:
        """Load now (raises :class:`ModelUnavailableError`), instead of at the first ``predict``."""
        self._load()

    @property
    def device(self):
        return self._load()[3]

    def logits(self, pairs: Sequence[Pair]) -> np.ndarray:
        """Raw logits in the model's own label order, batched by similar length."""
        import torch

        tokenizer, model, _, device = self._load()
        if not pairs:
            return np.zeros((0, model.config.num_labels), dtype=np.float32)
        if marks_unstated_names(model.config):     # a model trained on marked pairs reads them marked
            pairs = [mark_unstated_names(p, h) for p, h in pairs]
        order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
        out = np.empty((len(pairs), model.config.num_labels), dtype=np.float32)
        with self._lock, torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                idx = order[start:start + self.batch_size]
                enc = tokenizer([pairs[i][0] for i in idx], [pairs[i][1] for i in idx], padding=True,
                                truncation=True, max_length=self.max_length, return_tensors="pt").to(device)
                out[idx] = model(**enc).logits.float().cpu().numpy()
                raise_if_cancelled()
        return out

    def predict(self, pairs: Sequence[Pair]) -> np.ndarray:
        _, _, columns, _ = self._load()
        return softmax_rows(self.logits(pairs) / self.temperature)[:, columns]


def weights_fingerprint(model: str) -> str:
    """A hash of a local model folder's weights, config and calibration ('' for a hub name), so results
    scored by a retrained model are never taken for results of the old one."""
    import hashlib

    folder = Path(resolve_model_path(model))
    if not folder.is_dir():
        return ""
    digest = hashlib.blake2b(digest_size=12)
    for name in ("config.json", "calibration.json", "model.safetensors", "pytorch_model.bin"):
        path = folder / name
        if path.is_file():
            digest.update(name.encode())
            with path.open("rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
    return digest.hexdigest()


def nli_identity(backend: Any) -> str:
    """How a result names the NLI that scored it: ``nli-minilm-l6 (fp32)``, ``lexical``, ...

    A fallback backend says so, with the reason the configured one was not used.
    """
    label = getattr(backend, "identity", None) or getattr(backend, "name", type(backend).__name__)
    reason = getattr(backend, "fallback_reason", None)
    return f"{label} (fallback: {reason})" if reason else str(label)


def nli_fingerprint(backend: Any) -> str:
    """What a stored result must be keyed by: :func:`nli_identity` and, for a model folder, the hash of its
    weights and calibration, so a verifier retrained into the same folder never passes for the one before."""
    identity = nli_identity(backend)
    weights = getattr(backend, "weights_hash", "")
    return f"{identity} weights={weights}" if weights else identity


def nli_settings(backend: str | None = None) -> tuple[str, dict[str, Any]]:
    """The chosen backend name and the whole ``nli`` section, with env overrides applied."""
    cfg = load_config("models").get("nli", {})
    name = backend or env_override(cfg.get("backend", "lexical"), "CNS_NLI_BACKEND")
    tcfg = cfg.setdefault("transformers", {})
    tcfg["model"] = env_override(tcfg.get("model"), "CNS_NLI_MODEL")
    tcfg["device"] = env_override(tcfg.get("device", "auto"), "CNS_NLI_DEVICE")
    tcfg["batch_size"] = env_override(int(tcfg.get("batch_size", 32)), "CNS_NLI_BATCH_SIZE", int)
    tcfg["precision"] = env_override(tcfg.get("precision", "fp32"), "CNS_NLI_PRECISION")
    return name, cfg


def _build_transformers(cfg: dict[str, Any]) -> NLIBackend:
    t = cfg.get("transformers", {})
    if not t.get("model"):
        raise ModelUnavailableError("transformers", "no model configured",
                                    "Set nli.transformers.model in config/models.yaml or CNS_NLI_MODEL.")
    return TransformersNLI(str(t["model"]), batch_size=int(t.get("batch_size", 32)),
                           max_length=int(t.get("max_length", 256)), device=str(t.get("device", "auto")),
                           precision=str(t.get("precision", "fp32")))


# name -> "module:factory"; each factory takes the ``nli`` config section.
_FACTORIES: dict[str, str | Callable[[dict[str, Any]], NLIBackend]] = {
    "transformers": _build_transformers,
    "lexical": "cns_core.models.lexical_nli:from_config",
    "ollama-minicheck": "cns_core.agents.ollama:minicheck_nli",   # the backend is models.minicheck
}
_instances: dict[tuple, NLIBackend] = {}
_instances_lock = threading.Lock()


def _build(name: str, cfg: dict[str, Any]) -> NLIBackend:
    factory = _FACTORIES.get(name)
    if factory is None:
        raise ModelUnavailableError("nli", f"unknown backend {name!r}",
                                    f"Set nli.backend (or CNS_NLI_BACKEND) to one of {', '.join(_FACTORIES)}.")
    if isinstance(factory, str):
        module, attr = factory.split(":")
        factory = getattr(importlib.import_module(module), attr)
    return factory(cfg)


def _with_fallback(name: str, cfg: dict[str, Any]) -> NLIBackend:
    """The configured backend; where ``nli.fallback`` names another and the first cannot load,
    that one, marked with ``fallback_reason`` so every result and page says so."""
    fallback = cfg.get("fallback")
    backend = _build(name, cfg)
    if not fallback or fallback == name:
        return backend
    try:
        ensure = getattr(backend, "ensure_loaded", None)
        if ensure is not None:
            ensure()
        return backend
    except ModelUnavailableError as exc:
        substitute = _build(str(fallback), cfg)
        substitute.fallback_reason = f"{name} unavailable: {exc.problem}"  # type: ignore[attr-defined]
        return substitute


def get_nli_backend(backend: str | None = None) -> NLIBackend:
    """The process-wide NLI backend (one instance per backend and model)."""
    name, cfg = nli_settings(backend)
    # one instance per backend and its settings section (``ollama-minicheck`` -> ``ollama_minicheck``)
    section = cfg.get(name.replace("-", "_"))
    key = (name, repr(sorted(section.items())) if isinstance(section, dict) else None, cfg.get("fallback"))
    with _instances_lock:
        if key not in _instances:
            _instances[key] = _with_fallback(name, cfg)
        return _instances[key]


def reset_backends() -> None:
    """Forget the process-wide backends, so the next call re-reads config and environment (tests)."""
    with _instances_lock:
        _instances.clear()
