"""The Trust Score held to a careful reader's ranking of the bundled examples (issue 69 item 1).

``examples/reader_ranking.tsv`` gives, per example, the reader's rank, band and one line why. The shipped critics
(default profile, the examples as the novelty population: what the dashboard shows) are held to it as the claim
verdicts are held to ``reader_verdicts.tsv``: an example the table marks ``agrees`` must stay within one band of
the reader's (else a regression), one marked ``misses`` fails the test once it comes within one band (a fix, to
be marked ``agrees``). The Spearman correlation of the two orders may not fall below what the shipped critics
reach today, nor below the issue's target (0.8), with every band at most one step from the reader's (reached
2026-12-07: +0.829 with the Logic critic trained on real arguments, +0.543 before). Every failure lists each
example with its numbers.

No example states two claims that contradict each other, so the Logic critic's claim-against-claim conflicts
must be the known verifier misses below, no more (a new one is a suggestion no reader should get) and no fewer
(a fixed one is struck off here).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from cns_core.config import PROJECT_ROOT

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SPEARMAN_TODAY = 0.94       # what the shipped critics reach (benchmarks/reader_ranking.py: +0.943); never lower
SPEARMAN_TARGET = 0.8       # issue 69's target, reached since the Logic critic learned from real arguments (item 2)
# (example, claim, claim): the verifier reads these as contradicting each other both ways, and they do not
# (systolic and diastolic pressure are different things, not two figures for one).
KNOWN_CONFLICT_MISSES = {("grounded_exercise_bp.yaml", "c1", "c2")}


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("reader_ranking", PROJECT_ROOT / "benchmarks" / "reader_ranking.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module           # its dataclasses look their module up while being built
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def report(bench):
    return bench.measure("default")


def _table(report) -> str:
    return "\n".join(f"  reader #{p.entry.rank} {p.entry.band:<12} Trust #{p.trust_rank} {p.trust:.3f} {p.band:<12} "
                     f"({p.band_steps} band(s) apart) {p.entry.example}: {p.entry.why}" for p in report.placements)


def test_every_example_has_a_rank_a_band_and_a_reason(bench):
    from cns_core.meta import MetaConfig

    entries = bench.read_ranking()
    assert sorted(e.example for e in entries) == sorted(p.name for p in EXAMPLES.glob("*.yaml"))
    assert [e.rank for e in entries] == list(range(1, len(entries) + 1))
    bands = [b.name for b in MetaConfig.load().bands]
    for e in entries:
        assert e.band in bands and e.shipped_model in ("agrees", "misses") and len(e.why.split()) >= 8, e
    # a better rank never carries a worse band
    assert [bands.index(e.band) for e in entries] == sorted(bands.index(e.band) for e in entries)
    # the randomised trial at the top, the rant and the circular forecasts at the bottom
    assert entries[0].example == "grounded_exercise_bp.yaml"
    assert {e.example for e in entries[-2:]} == {"loaded_homework.yaml", "circular_forecasts.yaml"}


def test_each_band_stays_within_one_step_of_the_readers(report):
    regressions = [p for p in report.placements if p.band_steps >= 2 and p.entry.shipped_model == "agrees"]
    fixed = [p for p in report.placements if p.band_steps < 2 and p.entry.shipped_model == "misses"]
    if regressions:
        pytest.fail("two or more bands from the reader's, where the shipped critics agreed (a regression): "
                    + ", ".join(p.entry.example for p in regressions) + "\n" + _table(report), pytrace=False)
    if fixed:
        pytest.fail("known misses now within one band of the reader's: mark them 'agrees' in "
                    "examples/reader_ranking.tsv: " + ", ".join(p.entry.example for p in fixed) + "\n"
                    + _table(report), pytrace=False)


def test_the_order_does_not_fall_below_todays(report):
    if report.spearman < SPEARMAN_TODAY:
        pytest.fail(f"Spearman {report.spearman:+.3f} against the reader's order, below today's "
                    f"{SPEARMAN_TODAY:+.2f}:\n" + _table(report), pytrace=False)


def test_the_order_is_the_readers(report):
    assert report.spearman >= SPEARMAN_TARGET and report.max_band_steps <= 1, _table(report)


def test_no_conflict_is_reported_that_is_not_there(report):
    import re

    found = {(p.entry.example, *re.findall(r"^(\S+) \".*?\" and (\S+) \"", message)[0])
             for p in report.placements for message in p.conflicts}
    new, gone = found - KNOWN_CONFLICT_MISSES, KNOWN_CONFLICT_MISSES - found
    messages = "\n".join(f"  {p.entry.example}: {m}" for p in report.placements for m in p.conflicts)
    assert not new, f"claim-against-claim conflicts a reader does not find:\n{messages}"
    assert not gone, f"known verifier misses no longer reported (strike them off KNOWN_CONFLICT_MISSES): {gone}"
