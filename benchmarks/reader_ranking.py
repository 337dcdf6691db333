"""The Trust Score against a careful reader's ranking of the bundled examples (examples/reader_ranking.tsv).

    .venv/bin/python benchmarks/reader_ranking.py                  # default profile
    .venv/bin/python benchmarks/reader_ranking.py --profile scientific

Each example is scored as the dashboard scores it (the bundled examples as the novelty population) and
compared with the reader: Spearman's rank correlation of the two orders (the reader's rank 1 is the most
trustworthy), each example's quality band against the reader's (steps apart), and the examples two or more
bands away. Also printed: what the critics that abstained left out, and every claim-against-claim conflict the
Logic critic reports (a conflict that is not there is a suggestion no reader should get).

tests/test_reader_ranking.py holds the shipped critics to the same figures through :func:`measure`.
A few seconds of CPU after the models load (six SNOs).
"""

from __future__ import annotations

import argparse
import csv
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cns_core.cli.quiet import offline_and_quiet

offline_and_quiet()

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
TABLE = EXAMPLES / "reader_ranking.tsv"


@dataclass(frozen=True)
class ReaderEntry:
    """One row of the reader's ranking."""

    rank: int
    example: str
    band: str
    shipped_model: str        # agrees | misses (within one band of the reader today, or not)
    why: str


@dataclass(frozen=True)
class Placement:
    """One example as the reader and the Trust Score place it."""

    entry: ReaderEntry
    trust: float
    band: str
    trust_rank: int
    band_steps: int           # how many bands from the reader's
    not_applicable: dict[str, str]
    conflicts: tuple[str, ...]   # claim-against-claim contradictions the Logic critic reports, in its words


@dataclass(frozen=True)
class RankingReport:
    placements: tuple[Placement, ...]
    spearman: float
    profile: str

    @property
    def misses(self) -> tuple[Placement, ...]:
        """Examples two or more bands from the reader's."""
        return tuple(p for p in self.placements if p.band_steps >= 2)

    @property
    def max_band_steps(self) -> int:
        return max((p.band_steps for p in self.placements), default=0)


def read_ranking(path: Path = TABLE) -> list[ReaderEntry]:
    """The reader's rows in rank order (lines opening with # are notes)."""
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line and not line.startswith("#")]
    rows = [ReaderEntry(int(r["rank"]), r["example"], r["band"], r["shipped_model"], r["why"])
            for r in csv.DictReader(lines, delimiter="\t")]
    return sorted(rows, key=lambda r: r.rank)


def measure(profile: str = "default", pipeline: Any = None, entries: list[ReaderEntry] | None = None) -> RankingReport:
    """Score every example of the reader's table and compare (module docstring)."""
    from cns_core.engine.population import Population
    from cns_core.meta import MetaConfig, assess
    from cns_core.metrics import spearman
    from cns_core.pipeline import CriticPipeline, resolve_weights
    from cns_core.sno import load_snos

    entries = entries if entries is not None else read_ranking()
    pipeline = pipeline or CriticPipeline()
    config = MetaConfig.load()
    order = [b.name for b in config.bands]                 # highest first
    weights, _ = resolve_weights(profile)
    context = Population.examples(EXAMPLES).context()
    scored = []
    for entry in entries:
        (sno,) = load_snos(EXAMPLES / entry.example)
        results = pipeline.run_critics(sno, context)
        ev = assess(results, weights, config, sno_id=sno.id, context=profile)
        conflicts = tuple(i.message for i in results["logic"].issues if i.code == "contradictory_claims") \
            if "logic" in results else ()
        scored.append((entry, ev, conflicts))
    by_trust = sorted(range(len(scored)), key=lambda i: -scored[i][1].score)
    trust_rank = {i: k + 1 for k, i in enumerate(by_trust)}
    placements = tuple(Placement(entry, ev.score, ev.band.name, trust_rank[i],
                                 abs(order.index(ev.band.name) - order.index(entry.band)), dict(ev.not_applicable),
                                 conflicts)
                       for i, (entry, ev, conflicts) in enumerate(scored))
    rho = spearman([-p.entry.rank for p in placements], [p.trust for p in placements])
    return RankingReport(placements, rho, profile)


def format_report(report: RankingReport) -> str:
    lines = [f"Trust Score ({report.profile}) against the reader's ranking of the bundled examples",
             f"{'reader':>6} {'trust':>5}  {'Trust':>6}  {'band (reader)':<28} example"]
    for p in report.placements:
        band = f"{p.band} ({p.entry.band})" + ("  two bands off" if p.band_steps >= 2 else "")
        lines.append(f"{p.entry.rank:>6} {p.trust_rank:>5}  {p.trust:>6.3f}  {band:<28} {p.entry.example}")
    lines.append(f"Spearman {report.spearman:+.3f}; largest band distance {report.max_band_steps}; "
                 f"examples two or more bands off: {len(report.misses)}")
    for p in report.placements:
        if p.not_applicable:
            lines.append(f"  {p.entry.example}: not applicable: "
                         + "; ".join(f"{n} ({why})" for n, why in p.not_applicable.items()))
        for conflict in p.conflicts:
            lines.append(f"  {p.entry.example}: Logic reports a conflict: {conflict}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="default", help="weight profile (config/profiles.yaml)")
    args = parser.parse_args(argv)
    print(format_report(measure(args.profile)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
