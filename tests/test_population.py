"""The novelty population: named, pinned from the command line, and each SNO leaves itself out."""

from __future__ import annotations

from pathlib import Path

import pytest

from cns_core.engine.population import Population
from cns_core.sno import SNO, dump_snos

ROOT = Path(__file__).resolve().parent.parent


def _sno(sno_id: str, text: str) -> SNO:
    return SNO(id=sno_id, title=sno_id, hypothesis="h", claims=[{"id": "h", "text": text}])


def test_resolve_names_what_novelty_is_measured_against(tmp_path):
    a, b, c = _sno("a", "Tea is healthy."), _sno("b", "Coffee is healthy."), _sno("c", "Rain is wet.")
    batch = Population.resolve("batch", [a, b])
    assert batch.describe(a) == "novelty against 1 SNO (the SNOs given together): b"
    assert Population.resolve("none", [a, b]).describe(a) == (
        "novelty against no SNO (population: none): maximally novel")
    examples = Population.resolve("examples")
    assert examples.origin == "examples" and len(examples.snos) == len(list((ROOT / "examples").glob("*.yaml")))
    dump_snos([b, c], tmp_path / "pop.yaml")
    pinned = Population.resolve(f"{tmp_path / 'pop.yaml'}")
    assert pinned.to_dict(b) == {"origin": "files", "size": 1, "members": ["c"]}
    assert Population.resolve(str(tmp_path)).key == pinned.key                       # a folder of them
    with pytest.raises(ValueError, match="--population: no SNO file matches"):
        Population.resolve(str(tmp_path / "nothing*.yaml"))
    (tmp_path / "bad.yaml").write_text("id: x\n", encoding="utf-8")
    with pytest.raises(ValueError, match="--population: .*bad.yaml"):
        Population.resolve(str(tmp_path / "bad.yaml"))


def test_a_population_of_one_other_sno_counts():
    """A pinned population of one SNO is that SNO, not "no population" (a batch of one still is none)."""
    from critic_doubles import TableEmbedder

    from cns_core.critics.novelty import NoveltyCritic

    a, b = _sno("a", "Tea is healthy."), _sno("b", "Coffee is healthy.")
    embedder = TableEmbedder()
    pinned = Population.of([b], "files").context(embedder)
    result = NoveltyCritic().evaluate(a, pinned)
    assert result.evidence["population_size"] == 1 and result.evidence["nearest"] == "b"
    alone = NoveltyCritic().evaluate(a, Population.of([a], "batch").context(embedder))
    assert alone.evidence["population_size"] == 0
