"""``cns meta FILE... [--profile NAME | --weights ...] [--threshold T] [--gate] [--json]``.

The Meta-Critic from the command line: per SNO the Trust Score (and what caps it), its
quality band and the gate's verdict with the action they call for, the conflicts between
critics, the suggestions and the improvement plan. Every number is the Meta-Critic's own
(:func:`cns_core.meta.assess`), the same the dashboard's Meta-Critic page shows: novelty is
measured against the bundled examples by default, the dashboard's population (``--population``
pins another; each block names it). A folder stands for its SNO files. A file that cannot be read
(missing, a pipe, binary, too deep, a 6,000-digit number) is named on stderr and the others are
still scored.

Exit status: 0, or 1 when a file could not be read or there is nothing to judge (an empty
folder, only pipes or broken links: said before any model loads); with ``--gate`` 3 when any SNO
fails the quality gate, so ``cns meta sno.yaml --gate && publish`` publishes only what passes.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from cns_core.cli.evaluate import FileReport, ScoringRun, judged_nothing, load_files, print_problems
from cns_core.critics.base import in_critic_order
from cns_core.engine.population import Population
from cns_core.meta import MetaConfig, MetaEvaluation, assess
from cns_core.pipeline import resolve_weights
from cns_core.scoring import incomplete_note, parse_weights
from cns_core.sno import SNO

__all__ = ["GATE_FAILED", "format_meta", "register", "run"]

GATE_FAILED = 3     # exit status with --gate when an SNO fails the quality gate


def _lines(title: str, items: list[str]) -> list[str]:
    return [f"  {title}:", *(f"    {item}" for item in items)] if items else [f"  {title}: none"]


def format_meta(ev: MetaEvaluation, sno: SNO, path: str, weights_label: str,
                population: Population | None = None) -> str:
    """One readable block per SNO: score, band and gate, critics, conflicts, suggestions, plan."""
    gate = ev.gate
    title = f'  "{sno.title}"' if sno.title else ""
    out = [f"{path}  {sno.id}{title}",
           f"  Trust Score {ev.score:.3f}  ({weights_label})"
           + (f"  {incomplete_note(ev.failed)}" if ev.failed else ""),
           f"  band {gate.band.name} {gate.band.span} · gate {gate.verdict}: {gate.reason}; the gate {gate.rule}",
           f"  action: {gate.action}"]
    if ev.weighted.capped:
        out.append(f"  {ev.weighted.cap_note()}")
    if ev.not_applicable:
        out.append(f"  {ev.abstention_note()}")
    lo, hi = ev.confidence_band
    out.append(f"  confidence band {lo:.3f} - {hi:.3f}")
    if population is not None:
        out.append(f"  {population.describe(sno)}")
    out.append(f"  {'critic':<10} {'score':>5} {'weight':>6} {'contrib':>7}")
    for name in in_critic_order(ev.results):
        weight = ev.weights.get(name, 0.0)
        if name in ev.failed:
            out.append(f"  {name:<10} {'failed':>5} {weight:>6.2f} {'':>7}  {ev.failed[name]}")
        elif name in ev.not_applicable:
            out.append(f"  {name:<10} {'n/a':>5} {weight:>6.2f} {'':>7}  not applicable: {ev.not_applicable[name]}")
        else:
            out.append(f"  {name:<10} {ev.critic_scores[name]:>5.2f} {weight:>6.2f} "
                       f"{ev.weighted.contributions.get(name, 0.0):>7.3f}")
    out += _lines("conflicts", [f"{c.describe(str)}: {c.interpretation}"
                                + (f" ({note})" if (note := c.weight_note(ev.weights, str)) else "")
                                for c in ev.conflicts])
    out += _lines("suggestions", [f"{k}. [{s.critic}, +{s.cost:.3f}] {s.text}"
                                  for k, s in enumerate(ev.suggestions, 1)])
    out += _lines("improvement plan", [
        f"{p.priority:<6} {p.critic:<10} {p.current_score:.2f} -> {p.target_score:.2f}  +{p.expected_impact:.3f}  "
        f"{p.action}" + (f"  ({p.note})" if p.note else "") for p in ev.plan])
    return "\n".join(out)


def _weights(args: argparse.Namespace) -> tuple[dict[str, float], str]:
    if args.weights:
        weights = parse_weights(args.weights)
        resolve_weights(weights)
        return weights, "custom weights"
    weights, name = resolve_weights(args.profile or "default")
    return weights, str(name)


def run(args: argparse.Namespace) -> int:
    """The ``meta`` command (module docstring for the exit status)."""
    config = MetaConfig.load()
    threshold = config.gate_threshold if args.threshold is None else config.gate_threshold_of(args.threshold)
    weights, label = _weights(args)            # an unknown profile stops here, before any model loads
    reports: list[FileReport] = load_files(args.files)       # nothing to judge: an error, before any model loads
    bad = print_problems(reports)
    if judged_nothing(reports, args.json):
        return 1
    scoring = ScoringRun.of(reports, args)
    population = scoring.population
    done: list[tuple[str, SNO, MetaEvaluation]] = []
    for report in reports:
        for sno in report.snos:
            results = scoring.pipeline.run_critics(sno, scoring.context)
            done.append((report.path, sno, assess(results, weights, config, sno_id=sno.id,
                                                  sno_hash=sno.content_hash(), context=label,
                                                  threshold=threshold)))
    if args.json:
        payload: dict[str, Any] = {
            "results": [{"file": path, "title": sno.title, **ev.to_dict(),
                         "population": population.to_dict(sno)} for path, sno, ev in done],
            "errors": [{"file": r.path, "problems": r.problems} for r in bad]}
        print(json.dumps(payload, indent=2, default=str))
    elif done:
        print("\n\n".join(format_meta(ev, sno, path, label, population) for path, sno, ev in done))
    if bad:
        return 1
    if args.gate and any(not ev.gate.passed for _, _, ev in done):
        return GATE_FAILED
    return 0


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "meta", help="the Meta-Critic: band, quality gate, conflicts, suggestions and improvement plan",
        description="Run the five critics on SNO files and print the Meta-Critic's verdict per SNO: the Trust "
                    "Score, its quality band and the quality gate's decision with the action they call for, the "
                    "conflicts between critics, suggestions and the improvement plan.",
        epilog=f"Exit status: 0; 1 when a file could not be read or validated, or there is nothing to judge (an "
               f"empty folder); with --gate, {GATE_FAILED} when "
               "any SNO fails the quality gate (an incomplete score, where a critic failed, always fails).")
    parser.add_argument("files", nargs="+", metavar="FILE",
                        help="SNO files (.json, .yaml, .yml) or folders of them")
    choice = parser.add_mutually_exclusive_group()
    choice.add_argument("--profile", help="weight profile from config/profiles.yaml (default: default)")
    choice.add_argument("--weights", help="explicit weights, e.g. grounding=0.5,logic=0.3; critics not named "
                                          "get weight 0")
    parser.add_argument("--threshold", type=float, default=None, metavar="T",
                        help="the quality gate's threshold: where a band of config/meta.yaml starts; the gate accepts "
                             "that band and every band above (default: the gate threshold in config/meta.yaml)")
    parser.add_argument("--gate", action="store_true",
                        help=f"make the exit status say whether the gate passed: {GATE_FAILED} when any SNO fails it")
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    parser.add_argument("--population", default="examples", metavar="examples|batch|none|FILES",
                        help="what novelty is measured against (as cns evaluate); default: the bundled examples, "
                             "as the dashboard, so both give the same score; each SNO's block says which")
    parser.add_argument("--timeout", type=float, default=None,
                        help="seconds the critics may take per SNO (default: sized to the SNO)")
    parser.set_defaults(func=run)
    return parser
