"""Natural-language inference backends behind one interface.

``predict(pairs)`` takes ``(premise, hypothesis)`` pairs and returns an
``(n, 3)`` array of probabilities whose columns are always
``NLI_LABELS = (entailment, neutral, contradiction)``, whatever order the
underlying model uses.

Backends, chosen by ``nli.backend`` in ``config/models.yaml`` or ``CNS_NLI_BACKEND``:

* ``lexical`` (default, offline): a calibrated proxy from embeddings and
  contradiction cues (:mod:`cns_core.models.lexical_nli`);
* ``transformers``: any sequence-classification NLI model by hub name or
  local folder, loaded with ``local_files_only`` so nothing downloads;
* ``ollama-minicheck``: a grounding model served by Ollama
  (:mod:`cns_core.models.minicheck`).
"""

from __future__ import annotations

import importlib
import threading
from typing import Any, Callable, Protocol, Sequence

import numpy as np

from cns_core.config import env_override, load_config
from cns_core.models.errors import ModelUnavailableError

__all__ = ["NLI_LABELS", "NLIBackend", "TransformersNLI", "label_columns", "softmax_rows", "nli_settings",
           "get_nli_backend", "reset_backends"]

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


class TransformersNLI:
    """A Hugging Face sequence-classification NLI model, batched, on CUDA when present."""

    name = "transformers"

    def __init__(self, model: str, batch_size: int = 32, max_length: int = 256, device: str = "auto"):
        self.model_name = model
        self.batch_size = batch_size
        self.max_length = max_length
        self._device_setting = device
        self._loaded: tuple[Any, Any, list[int], Any] | None = None
        self._lock = threading.Lock()

    def _load(self):
        if self._loaded is not None:
            return self._loaded
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        remedy = ("Set nli.transformers.model in config/models.yaml (or CNS_NLI_MODEL) to a local folder "
                  "holding an NLI model, or choose nli.backend: lexical.")
        try:
            tokenizer = AutoTokenizer.from_pretrained(self.model_name, local_files_only=True)
            model = AutoModelForSequenceClassification.from_pretrained(self.model_name, local_files_only=True)
        except Exception as exc:  # OSError, ValueError, EnvironmentError from the hub client
            raise ModelUnavailableError(self.name, f"cannot load model {self.model_name!r} ({type(exc).__name__}: "
                                        f"{str(exc).splitlines()[0] if str(exc) else exc!r})", remedy) from exc
        try:
            columns = label_columns(model.config.id2label)
        except ValueError as exc:
            raise ModelUnavailableError(self.name, f"model {self.model_name!r} is not an NLI model: {exc}",
                                        remedy) from exc
        wanted = self._device_setting
        device = torch.device("cuda" if wanted == "auto" and torch.cuda.is_available()
                              else "cpu" if wanted == "auto" else wanted)
        model.to(device).eval()
        self._loaded = (tokenizer, model, columns, device)
        return self._loaded

    @property
    def device(self):
        return self._load()[3]

    def logits(self, pairs: Sequence[Pair]) -> np.ndarray:
        """Raw logits in the model's own label order, batched by similar length."""
        import torch

        tokenizer, model, _, device = self._load()
        if not pairs:
            return np.zeros((0, model.config.num_labels), dtype=np.float32)
        order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
        out = np.empty((len(pairs), model.config.num_labels), dtype=np.float32)
        with self._lock, torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                idx = order[start:start + self.batch_size]
                enc = tokenizer([pairs[i][0] for i in idx], [pairs[i][1] for i in idx], padding=True,
                                truncation=True, max_length=self.max_length, return_tensors="pt").to(device)
                out[idx] = model(**enc).logits.float().cpu().numpy()
        return out

    def predict(self, pairs: Sequence[Pair]) -> np.ndarray:
        _, _, columns, _ = self._load()
        return softmax_rows(self.logits(pairs))[:, columns]


def nli_settings(backend: str | None = None) -> tuple[str, dict[str, Any]]:
    """The chosen backend name and the whole ``nli`` section, with env overrides applied."""
    cfg = load_config("models").get("nli", {})
    name = backend or env_override(cfg.get("backend", "lexical"), "CNS_NLI_BACKEND")
    tcfg = cfg.setdefault("transformers", {})
    tcfg["model"] = env_override(tcfg.get("model"), "CNS_NLI_MODEL")
    tcfg["device"] = env_override(tcfg.get("device", "auto"), "CNS_NLI_DEVICE")
    tcfg["batch_size"] = env_override(int(tcfg.get("batch_size", 32)), "CNS_NLI_BATCH_SIZE", int)
    return name, cfg


def _build_transformers(cfg: dict[str, Any]) -> NLIBackend:
    t = cfg.get("transformers", {})
    if not t.get("model"):
        raise ModelUnavailableError("transformers", "no model configured",
                                    "Set nli.transformers.model in config/models.yaml or CNS_NLI_MODEL.")
    return TransformersNLI(t["model"], batch_size=int(t.get("batch_size", 32)),
                           max_length=int(t.get("max_length", 256)), device=str(t.get("device", "auto")))


# name -> "module:factory"; each factory takes the ``nli`` config section.
_FACTORIES: dict[str, str | Callable[[dict[str, Any]], NLIBackend]] = {
    "transformers": _build_transformers,
    "lexical": "cns_core.models.lexical_nli:from_config",
    "ollama-minicheck": "cns_core.models.minicheck:from_config",
}
_instances: dict[tuple, NLIBackend] = {}
_instances_lock = threading.Lock()


def get_nli_backend(backend: str | None = None) -> NLIBackend:
    """The process-wide NLI backend (one instance per backend and model)."""
    name, cfg = nli_settings(backend)
    factory = _FACTORIES.get(name)
    if factory is None:
        raise ModelUnavailableError("nli", f"unknown backend {name!r}",
                                    f"Set nli.backend (or CNS_NLI_BACKEND) to one of {', '.join(_FACTORIES)}.")
    # one instance per backend and its settings section (``ollama-minicheck`` -> ``ollama_minicheck``)
    section = cfg.get(name.replace("-", "_"))
    key = (name, repr(sorted(section.items())) if isinstance(section, dict) else None)
    with _instances_lock:
        if key not in _instances:
            if isinstance(factory, str):
                module, attr = factory.split(":")
                factory = getattr(importlib.import_module(module), attr)
            _instances[key] = factory(cfg)
        return _instances[key]


def reset_backends() -> None:
    """Forget the process-wide backends, so the next call re-reads config and environment (tests)."""
    with _instances_lock:
        _instances.clear()
