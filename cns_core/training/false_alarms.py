"""The ``false_alarms`` reader: a file's supported and unstated pairs that the miner calls contradicted.

A red badge on a true claim costs a reader most, and the cases that earn one are the model's own: a claim
that words its evidence differently, a term the evidence writes in other words, a figure it rounds. This
reader runs the miner (the recipe's pilot, :mod:`cns_core.training.pilot`) over the file's entailment and
neutral pairs and keeps those it flags as contradicted at its own threshold, with their gold labels, so the
run can weight them up (``repeat``). Cached in the run's checkpoint folder under the miner's weights.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Callable

import numpy as np

from cns_core.models.nli import CONTRADICTION
from cns_core.training.nli_data import NLIPairs, read_pairs_cache, write_pairs_cache

__all__ = ["false_alarm_pairs"]

_CACHE_VERSION = 1


def _cache_file(settings: Any, path: Path, model_path: Path, candidates: NLIPairs) -> Path:
    from cns_core.models.nli import weights_fingerprint

    digest = hashlib.blake2b(digest_size=10)
    for part in (str(_CACHE_VERSION), weights_fingerprint(str(model_path)), path.name, str(len(candidates)),
                 str(settings.seed), str(settings.max_length)):
        digest.update(part.encode() + b"|")
    return settings.checkpoint_path / "mined" / f"false_alarms.{path.name}.{digest.hexdigest()}.jsonl.gz"


def false_alarm_pairs(settings: Any, path: Path, candidates: NLIPairs, model_path: Path,
                      log: Callable[[str], None] = print) -> NLIPairs:
    """The pairs of ``candidates`` (a file's pairs, as their own reader reads them) whose gold label is not
    contradiction but which the model at ``model_path`` reads as contradicted."""
    cache = _cache_file(settings, path, model_path, candidates)
    if cache.is_file():
        return read_pairs_cache(cache)
    import torch

    from cns_core.models.nli import TransformersNLI

    rows = [i for i, label in enumerate(candidates.labels) if label != CONTRADICTION]
    on_gpu = settings.device != "cpu" and torch.cuda.is_available()
    model = TransformersNLI(str(model_path), batch_size=64, max_length=settings.max_length, device=settings.device,
                            precision="fp32" if on_gpu else "int8")
    fitted = model.contradiction_threshold        # the miner's own, from its calibration.json
    threshold = 0.5 if fitted is None else fitted
    probs = model.predict([(candidates.premises[i], candidates.hypotheses[i]) for i in rows]) if rows \
        else np.zeros((0, 3))
    flagged = [i for i, p in zip(rows, probs) if p[CONTRADICTION] >= threshold]
    out = candidates.subset(flagged)
    out.sources = [f"false_alarms:{path.name}" for _ in flagged]
    log(f"{path.name}: {len(flagged)} of {len(rows)} supported or unstated pairs read as contradicted "
        f"(threshold {threshold:.2f})")
    write_pairs_cache(cache, out)
    return out
