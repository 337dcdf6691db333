"""Every claim of every bundled example, judged as a careful reader judges it (issue 51 item 3).

``examples/reader_verdicts.tsv`` holds, per claim, the verdict a person gives from the SNO's own evidence and
one line why. The Grounding critic (the shipped verifier and fusion, with the shipped thresholds: the verdict
every page shows) is held to it, example by example; each failure lists every claim it judges otherwise, with
its numbers and the passage it read. A miss is a defect of the model to fix, never a threshold to tune for an
example, and it is never marked as an expected failure here.
"""

from __future__ import annotations

from pathlib import Path

import csv

import pytest

from cns_core.critics.grounding_verdict import VERDICT_WORDS, VERDICTS, claim_verdicts, shown_probability
from cns_core.sno import load_snos

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
FILES = sorted(p.name for p in EXAMPLES.glob("*.yaml"))


def _reader() -> dict[str, dict[str, dict[str, str]]]:
    """example file -> claim -> {verdict, why}, from the tab-separated table (lines opening with # are notes)."""
    lines = [line for line in (EXAMPLES / "reader_verdicts.tsv").read_text(encoding="utf-8").splitlines()
             if line and not line.startswith("#")]
    table: dict[str, dict[str, dict[str, str]]] = {}
    for row in csv.DictReader(lines, delimiter="\t"):
        assert row["claim"] not in table.setdefault(row["example"], {}), row     # one verdict per claim
        table[row["example"]][row["claim"]] = {"verdict": row["verdict"], "why": row["why"]}
    return table


READER = _reader()


def test_every_claim_of_every_example_has_a_reader_verdict_and_a_reason():
    assert sorted(READER) == FILES
    for name in FILES:
        (sno,) = load_snos(EXAMPLES / name)
        assert sorted(READER[name]) == sorted(c.id for c in sno.claims), name
        for claim_id, entry in READER[name].items():
            assert entry["verdict"] in VERDICTS, (name, claim_id)
            assert len(entry["why"].split()) >= 5, (name, claim_id)


@pytest.fixture(scope="module")
def pipeline():
    from cns_core.pipeline import CriticPipeline

    return CriticPipeline()


@pytest.mark.parametrize("name", FILES)
def test_the_grounding_verdicts_are_the_readers(pipeline, name):
    (sno,) = load_snos(EXAMPLES / name)
    verdicts = claim_verdicts(pipeline.run_critics(sno))
    misses = []
    for claim in sno.claims:
        reader, g = READER[name][claim.id], verdicts.get(claim.id)
        if g is not None and g.verdict == reader["verdict"]:
            continue
        read = g.read_passage if g is not None else None
        misses.append(
            f"{claim.id} {claim.text!r}\n    reader: {VERDICT_WORDS[reader['verdict']]} ({reader['why']})\n    "
            + ("critic: not scored" if g is None else
               f"critic: {g.label}, p(supported) {shown_probability(g.p_supported):.2f}, p(contradicted) "
               f"{shown_probability(g.p_contradicted):.2f}"
               + (f", reading {read.evidence} (entailment {read.entailment:.2f}, contradiction "
                  f"{read.contradiction:.2f})" if read is not None else "")))
    if misses:
        pytest.fail(f"{name}: the Grounding critic judges {len(misses)} of {len(sno.claims)} claims otherwise than a "
                    "reader (a model defect):\n" + "\n".join(misses), pytrace=False)
