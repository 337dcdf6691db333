"""Hand-built SNOs and deterministic backends for exact arithmetic in the critic tests.

``TableNLI`` and ``TableEmbedder`` answer from tables the test writes, so a test can
compute the critic's answer by hand; the real backends are exercised in
test_examples.py, test_cli_evaluate.py and the transformers test of test_critics_grounding.py.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from cns_core.sno import SNO

NEUTRAL = (0.1, 0.8, 0.1)


def build_sno(claims: dict[str, str], relations: Sequence[tuple] = (), evidence: Sequence[tuple] = (),
              hypothesis: str = "h", roles: dict[str, str] | None = None, **extra) -> SNO:
    """``relations`` rows: (source, target, kind[, id[, attack_type]]); ``evidence``: (id, text[, source[, validity]])."""
    rels = []
    for row in relations:
        rel = {"source": row[0], "target": row[1], "kind": row[2]}
        if len(row) > 3 and row[3]:
            rel["id"] = row[3]
        if len(row) > 4:
            rel["attack_type"] = row[4]
        rels.append(rel)
    evs = [{"id": r[0], "text": r[1], "source": r[2] if len(r) > 2 else "", "validity": r[3] if len(r) > 3 else 1.0}
           for r in evidence]
    roles = roles or {}
    data = {"id": extra.pop("id", "test-sno"), "hypothesis": hypothesis,
            "claims": [{"id": k, "text": v, "role": roles.get(k, "none")} for k, v in claims.items()],
            "relations": rels, "evidence": evs, **extra}
    return SNO.model_validate(data)


class TableNLI:
    """(premise, hypothesis) -> (entailment, neutral, contradiction) from a table; neutral otherwise."""

    name = "table"

    def __init__(self, table: dict[tuple[str, str], tuple[float, float, float]] | None = None):
        self.table = table or {}
        self.calls: list[list[tuple[str, str]]] = []

    def predict(self, pairs):
        pairs = list(pairs)
        self.calls.append(pairs)
        return np.array([self.table.get(p, NEUTRAL) for p in pairs], dtype=np.float64).reshape(len(pairs), 3)


class TableEmbedder:
    """Text -> vector from a table (normalised); unknown texts get distinct one-hot-like vectors."""

    name = "table-embedder"

    def __init__(self, table: dict[str, Sequence[float]] | None = None, dim: int = 16):
        self.dim = dim
        self.table = {k: np.asarray(v, dtype=np.float32) for k, v in (table or {}).items()}
        self.calls = 0

    def encode(self, texts):
        self.calls += 1
        rows = []
        for text in texts:
            if text in self.table:
                v = self.table[text]
            else:
                v = np.zeros(self.dim, dtype=np.float32)
                v[sum(map(ord, text)) % self.dim] = 1.0
            rows.append(v / np.linalg.norm(v))
        return np.stack(rows) if rows else np.zeros((0, self.dim), dtype=np.float32)


class BrokenBackend:
    """A backend whose every call fails, as a missing model would."""

    name = "broken"

    def predict(self, pairs):
        raise RuntimeError("model weights not found")

    def encode(self, texts):
        raise RuntimeError("model weights not found")
