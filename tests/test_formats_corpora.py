"""The real corpora in ../shared/data import whole, with the counts their READMEs state."""

from __future__ import annotations

import json
import re
from collections import Counter
from functools import cache

import pytest

from cns_core.formats import import_path, parse_aif, parse_argdown, to_aif, to_argdown
from cns_core.formats.summary import ImportSummary


def readme_counts(text: str, names: list[str]) -> dict[str, int]:
    """``NAME 123`` pairs as the READMEs write them (``sup 263``, ``RA 53``)."""
    found = {}
    for name in names:
        match = re.search(rf"(?<![\w`]){re.escape(name)}`?\s+(\d+)\b", text)
        assert match, f"README does not state a count for {name}"
        found[name] = int(match.group(1))
    return found


@cache
def _imported(fmt: str, folder: str) -> tuple:
    return tuple(import_path(fmt, folder))   # imported once per session, shared by the tests below


@pytest.fixture
def microtexts(shared_data):
    folder = shared_data / "arg_microtexts_en"
    return folder, list(_imported("microtexts", str(folder / "corpus_en")))


@pytest.fixture
def aif_maps(shared_data):
    folder = shared_data / "aif_dialam2024_test_maps"
    return folder, list(_imported("aif", str(folder)))


def test_all_112_microtexts_import_with_the_readme_counts(microtexts):
    folder, results = microtexts
    readme = (folder / "README.md").read_text()
    assert len(results) == int(re.search(r"\*\*Counts\*\*: (\d+) graphs", readme).group(1)) == 112
    assert [r.error for r in results if not r.ok] == []
    snos = [r.sno for r in results]
    units = re.search(r"(\d+) EDUs = (\d+) ADUs \((\d+) `pro`, (\d+) `opp`\)", readme)
    roles = Counter(c.role for s in snos for c in s.claims)
    assert sum(len(s.claims) for s in snos) == int(units.group(2))
    assert (roles["proponent"], roles["opponent"]) == (int(units.group(3)), int(units.group(4)))
    expected = readme_counts(readme, ["sup", "reb", "und", "add", "exa"])
    assert Counter(t for s in snos for t in s.metadata["edge_types"].values()) == expected
    assert sum(len(s.relations) for s in snos) == sum(expected.values())
    kinds = Counter((s.metadata["edge_types"][r.id], r.kind, r.attack_type) for s in snos for r in s.relations)
    assert {k: n for k, n in kinds.items() if k[0] != "add"} == {
        ("sup", "support", None): expected["sup"], ("exa", "support", None): expected["exa"],
        ("reb", "attack", "rebut"): expected["reb"], ("und", "attack", "undercut"): expected["und"]}
    # an add edge (linked premise) takes the kind of the edge it joins
    assert sum(n for k, n in kinds.items() if k[0] == "add") == expected["add"]
    # pinned: the corpus is clean, nothing is repaired or left out
    summary = ImportSummary.of(results)
    assert (summary.whole, summary.repaired, summary.refused, dict(summary.warnings)) == (112, 0, 0, {})
    stances = Counter(s.metadata["stance"] or "none" for s in snos)   # absent attribute = none
    stated = re.search(r"Text stance: pro (\d+), con (\d+), unclear (\d+), none (\d+)", readme)
    assert [stances[k] for k in ("pro", "con", "unclear", "none")] == [int(g) for g in stated.groups()]


def test_all_11_aif_maps_import_with_the_readme_counts(aif_maps):
    folder, results = aif_maps
    readme = (folder / "README.md").read_text()
    assert len(results) == 11
    assert [r.error for r in results if not r.ok] == []
    snos = [r.sno for r in results]
    expected = readme_counts(readme, ["I", "RA", "CA", "MA"])
    i_claims = sum(len(s.claims) - len(s.metadata["promoted_locutions"]) for s in snos)
    s_nodes = Counter(n["type"] for s in snos for n in s.metadata["s_nodes"].values())
    assert {"I": i_claims, **{k: s_nodes[k] for k in ("RA", "CA", "MA")}} == expected
    # every RA and CA became relations; every MA a rephrase
    assert all(n["relations"] for s in snos for n in s.metadata["s_nodes"].values() if n["type"] in ("RA", "CA"))
    assert sum(len(s.metadata["rephrases"]) for s in snos) == expected["MA"]
    assert sum(1 for s in snos for r in s.relations if r.kind == "attack") == expected["CA"]
    # pinned: one locution in test_map1 is a premise anchoring no I-node; nothing else is repaired
    summary = ImportSummary.of(results)
    assert (summary.whole, summary.repaired, summary.refused) == (10, 1, 0)
    assert dict(summary.warnings) == {"promoted-locution": 1}
    (repaired,) = [r for r in results if r.warnings]
    assert repaired.file.endswith("test_map1.json") and repaired.sno.metadata["promoted_locutions"] == [
        repaired.warnings[0].location.removeprefix("L-node ")]


def test_corpora_round_trip_through_both_exports(microtexts, aif_maps):
    for sno in [r.sno for r in microtexts[1] + aif_maps[1]]:
        back = parse_aif(json.dumps(to_aif(sno)), f"{sno.id}.json").sno
        assert (back.claims, back.relations, back.evidence) == (sno.claims, sno.relations, sno.evidence), sno.id
        down = parse_argdown(to_argdown(sno), f"{sno.id}.argdown").sno
        assert down.claims == sno.claims and len(down.relations) == len(sno.relations), sno.id
