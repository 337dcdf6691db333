"""The novelty population of a corpus: every SNO's hypothesis embedding, computed once."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from cns_core.critics.base import CriticContext
from cns_core.sno import SNO

__all__ = ["population_context"]


def population_context(snos: Sequence[SNO], embedder: Any = None) -> CriticContext:
    """A context whose novelty population is these SNOs (each leaves itself out by id)."""
    if len(snos) < 2:
        return CriticContext()
    if embedder is None:
        from cns_core.models import get_embedder

        embedder = get_embedder()
    missing = [s.hypothesis_text for s in snos if not s.embedding]
    encoded = iter(np.asarray(embedder.encode(missing), dtype=np.float32)) if missing else iter(())
    rows = [np.asarray(s.embedding, dtype=np.float32) if s.embedding else next(encoded) for s in snos]
    if len({r.shape for r in rows}) > 1:  # SNO embeddings of another size cannot share a population
        return CriticContext()
    return CriticContext(population=np.stack(rows), embedder=embedder,
                         extra={"population_ids": [s.id for s in snos]})
