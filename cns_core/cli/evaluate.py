"""``cns evaluate FILE... [--profile NAME | --weights grounding=0.5,...] [--json]``.

Each file holds one SNO or a list. Bad files print every validation problem and make
the exit status 1, while the other files are still evaluated. Novelty is measured
against the other SNOs of the same command (``--population batch``, the default), so
``cns evaluate examples/*`` shows which example stands apart; ``--population examples``
(the dashboard's default), ``none`` or FILES pins it, so a score can be reproduced, and
each SNO's output says what it was measured against ("novelty against 5 SNOs ...").
Each claim's grounding verdict is listed with ``--claims`` and always in the JSON
(``claims``), read from the Grounding critic's result like every page reads it.

The building blocks (:func:`load_file`, :func:`evaluate_snos`, :func:`evaluate_file`,
:func:`evaluation_to_dict`, :func:`format_table`) are public so that batch commands
reuse them.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from cns_core.bounds import excerpt, printable
from cns_core.cli.extract import add_text_options, evaluate_text
from cns_core.critics.base import CriticContext, in_critic_order
from cns_core.critics.grounding_verdict import claim_verdicts
from cns_core.engine.population import Population
from cns_core.pipeline import CriticPipeline, Evaluation, resolve_weights
from cns_core.scoring import incomplete_note, parse_weights
from cns_core.sno import SNO, SNOValidationError, load_snos

__all__ = ["FileReport", "load_file", "load_files", "files_to_judge", "judged_nothing", "evaluate_snos", "evaluate_file",
           "evaluation_to_dict", "format_table", "register", "run"]


@dataclass
class FileReport:
    """One input file: its SNOs and their evaluations, or the problems that stopped it loading."""

    path: str
    snos: list[SNO] = field(default_factory=list)
    evaluations: list[Evaluation] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def load_file(path: str | Path) -> FileReport:
    """Read one SNO file; validation problems are kept in the report, never raised, so one bad file
    never stops the others (whatever the loader finds wrong is named under the file's path)."""
    try:
        return FileReport(str(path), snos=load_snos(path))
    except SNOValidationError as exc:
        return FileReport(str(path), problems=list(exc.problems))
    except (ValueError, OSError, RecursionError) as exc:     # a problem the loader does not word itself
        return FileReport(str(path), problems=[f"file: {excerpt(str(exc) or type(exc).__name__, 300)}"])


def files_to_judge(paths: Sequence[str | Path]) -> list[Path]:
    """The files named, a folder standing for its SNO files (.json, .yaml, .yml, sorted); ValueError
    "nothing to judge" when there are none (an empty folder, or one holding only a pipe or a broken
    link), said before any model loads: a quality gate that judged nothing must not pass."""
    from cns_core.engine.batch import SNO_SUFFIXES, collect_files

    files = collect_files(paths)
    if not files:
        raise ValueError(f"nothing to judge: no SNO file ({', '.join(SNO_SUFFIXES)}) in "
                         f"{', '.join(map(str, paths)) or 'the paths given'}")
    return files


def load_files(paths: Sequence[str | Path]) -> list[FileReport]:
    """:func:`load_file` for each of :func:`files_to_judge`."""
    return [load_file(path) for path in files_to_judge(paths)]


def judged_nothing(reports: Sequence[FileReport], as_json: bool = False) -> bool:
    """True, said on stderr, when no file held an SNO (each one's problems are printed already): the
    command stops there, before the critics' models load (with ``as_json``, its JSON says the errors)."""
    if any(report.snos for report in reports):
        return False
    if as_json:
        print(json.dumps({"results": [], "errors": [{"file": r.path, "problems": r.problems} for r in reports]},
                         indent=2))
    print("nothing to judge: no SNO could be read from the files given", file=sys.stderr)
    return True


def print_problems(reports: Sequence[FileReport]) -> list[FileReport]:
    """Each bad file's problems on stderr, one per line under its path; returns the bad reports."""
    bad = [r for r in reports if not r.ok]
    for report in bad:
        print(f"{printable(report.path)}: {len(report.problems)} problem(s)", file=sys.stderr)
        for problem in report.problems:
            print(f"  - {printable(problem)}", file=sys.stderr)
    return bad


@dataclass(frozen=True)
class ScoringRun:
    """What scoring the loaded SNOs of one command needs: every SNO, the novelty population they
    resolve to, the pipeline (with the command's timeout) and the population's critic context."""

    snos: list[SNO]
    population: Population
    pipeline: CriticPipeline
    context: CriticContext | None

    @classmethod
    def of(cls, reports: Sequence[FileReport], args: argparse.Namespace) -> "ScoringRun":
        snos = [s for r in reports for s in r.snos]
        population = Population.resolve(args.population, snos)
        return cls(snos, population, CriticPipeline(timeout_s=args.timeout),
                   population.context() if population.snos else None)


def evaluate_snos(snos: Sequence[SNO], pipeline: CriticPipeline, weights: str | Mapping[str, float] = "default",
                  context: CriticContext | None = None, progress: Any = None) -> list[Evaluation]:
    """Evaluate each SNO; ``progress`` (a tqdm bar) is advanced once per SNO."""
    out = []
    for sno in snos:
        out.append(pipeline.evaluate(sno, weights, context))
        if progress is not None:
            progress.update(1)
    return out


def evaluate_file(path: str | Path, pipeline: CriticPipeline, weights: str | Mapping[str, float] = "default",
                  context: CriticContext | None = None) -> FileReport:
    """Load and evaluate one file; a bad file comes back with its problems and no evaluations."""
    report = load_file(path)
    if report.ok:
        report.evaluations = evaluate_snos(report.snos, pipeline, weights, context)
    return report


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)


def nli_used(evaluation: Evaluation) -> str | None:
    """The NLI that scored this evaluation, as its critics recorded it (``None`` when none ran)."""
    for result in evaluation.results.values():
        name = (result.evidence or {}).get("nli_backend") if result.ok else None
        if name:
            return str(name)
    return None


def evaluation_to_dict(evaluation: Evaluation, sno: SNO | None = None, path: str | None = None,
                       population: Population | None = None) -> dict[str, Any]:
    """Plain JSON-ready data: trust score, weights, each claim's grounding verdict, the novelty
    population, and every critic's verdict with its issues."""
    score = evaluation.score
    critics = {}
    for name, r in evaluation.results.items():
        critics[name] = {
            "status": r.status, "score": r.score if r.applicable else None, "confidence": r.confidence,
            "explanation": r.explanation,
            "error": r.error, "latency_s": r.latency_s, "sub_scores": r.sub_scores,
            "issues": [{"code": i.code, "message": i.message, "nodes": list(i.nodes), "severity": i.severity}
                       for i in r.issues],
            "evidence": r.evidence,
        }
    data = {"file": path, "sno_id": evaluation.sno_id, "title": sno.title if sno else None,
            "sno_hash": evaluation.sno_hash, "profile": evaluation.profile, "trust_score": score.trust_score,
            "weighted_sum": score.weighted_sum, "capped_by": score.cap_note() or None,
            "weights": score.weights, "requested_weights": score.requested, "contributions": score.contributions,
            "left_out": list(score.left_out), "complete": evaluation.complete, "nli": nli_used(evaluation),
            "not_applicable": evaluation.not_applicable, "abstention_note": score.abstention_note() or None,
            "incomplete_critics": in_critic_order(evaluation.failed),
            "claims": {cid: g.to_dict() for cid, g in claim_verdicts(evaluation.results).items()},
            "population": population.to_dict(sno) if population is not None else None, "critics": critics}
    return json.loads(json.dumps(data, default=_plain))


def _issue_summary(codes: Sequence[str]) -> str:
    counts: dict[str, int] = {}
    for code in codes:
        counts[code] = counts.get(code, 0) + 1
    return ", ".join(f"{c}({n})" if n > 1 else c for c, n in counts.items()) or "-"


def format_table(evaluation: Evaluation, sno: SNO | None = None, path: str | None = None,
                 population: Population | None = None, claims: bool = False) -> str:
    """A readable block: one row per critic, the Trust Score and anything left out, the novelty
    population, and (``claims``) one line per claim with its grounding verdict."""
    title = f'  "{sno.title}"' if sno is not None and sno.title else ""
    lines = [f"{path + '  ' if path else ''}{evaluation.sno_id}{title}",
             f"  {'critic':<10} {'score':>6} {'conf':>5} {'weight':>6} {'contrib':>7}  issues"]
    score = evaluation.score
    for name, r in evaluation.results.items():
        weight = score.weights.get(name, 0.0)
        if r.ok:
            lines.append(f"  {name:<10} {r.score:>6.2f} {r.confidence:>5.2f} {weight:>6.2f} "
                         f"{score.contributions.get(name, 0.0):>7.3f}  {_issue_summary([i.code for i in r.issues])}")
        elif not r.applicable:
            lines.append(f"  {name:<10} {'n/a':>6} {'':>5} {weight:>6.2f} {'':>7}  not applicable: {r.abstention}")
        else:
            lines.append(f"  {name:<10} {'failed':>6} {'':>5} {weight:>6.2f} {'':>7}  {r.error}")
    profile = evaluation.profile or "custom weights"
    note = f"  {incomplete_note(evaluation.failed)}" if not evaluation.complete else ""
    lines.append(f"  Trust Score {score.trust_score:.3f}  ({profile}){note}")
    if score.capped:
        lines.append(f"  {score.cap_note()}")
    if score.left_out:
        lines.append(f"  left out (failed, weight redistributed): {', '.join(score.left_out)}")
    if score.not_applicable:
        lines.append(f"  {score.abstention_note()}")
    nli = nli_used(evaluation)
    if nli:
        lines.append(f"  NLI: {nli}")
    if population is not None:
        lines.append(f"  {population.describe(sno)}")
    verdicts = claim_verdicts(evaluation.results)
    if verdicts:
        counts = {w: sum(1 for g in verdicts.values() if g.label == w)
                  for w in ("supported", "contradicted", "not enough information")}
        lines.append("  claims: " + ", ".join(f"{n} {w}" for w, n in counts.items())
                     + ("" if claims else " (--claims lists them)"))
    if claims:
        texts = {c.id: " ".join(c.text.split()) for c in sno.claims} if sno is not None else {}
        for cid, g in verdicts.items():
            lines.append(f"    {cid:<8} {g.label:<23} p(supported) {g.p_supported or 0.0:.2f}  "
                         f"p(contradicted) {g.p_contradicted or 0.0:.2f}  {texts.get(cid, '')}".rstrip())
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """The ``evaluate`` command; returns 1 when any file could not be read or validated."""
    corpus_flags = (getattr(args, "out", None), getattr(args, "workers", 1) > 1, getattr(args, "address", None),
                    getattr(args, "engine", "auto") != "auto", getattr(args, "gpus_per_worker", 0.0) > 0)
    text = getattr(args, "text", None)
    if not text and (any(corpus_flags) or any(Path(p).is_dir() for p in args.files)):
        if args.weights or args.json:
            raise ValueError("folders, --workers, --address and --out write one table row per SNO with every "
                             "profile; --weights and --json apply to single files")
        from cns_core.engine.batch import run_batch   # a corpus: Ray actors, a results table, resumable

        files_to_judge(args.files)
        return run_batch(args)
    weights = _weights(args)
    if text:
        if args.files:
            raise ValueError("give SNO files or --text FILE..., not both")
        return evaluate_text(args, lambda snos, names: _score_and_print(
            [FileReport(name, snos=[sno]) for sno, name in zip(snos, names)], args, weights))
    if not args.files:
        raise ValueError("give SNO files or folders, or --text FILE")
    return _score_and_print([load_file(path) for path in files_to_judge(args.files)], args, weights)


def _weights(args: argparse.Namespace) -> str | dict[str, float]:
    weights: str | dict[str, float] = parse_weights(args.weights) if args.weights else (args.profile or "default")
    resolve_weights(weights)  # an unknown profile stops here, before any model loads
    return weights


def _score_and_print(reports: list[FileReport], args: argparse.Namespace, weights: str | dict[str, float]) -> int:
    """Score every loaded SNO of ``reports`` and print tables or JSON; 1 when a file was bad."""
    from tqdm import tqdm

    bad = print_problems(reports)
    if judged_nothing(reports, args.json):
        return 1
    scoring = ScoringRun.of(reports, args)
    population = scoring.population
    with tqdm(total=len(scoring.snos), desc="evaluating", unit="SNO", file=sys.stderr,
              disable=None if len(scoring.snos) > 1 else True) as bar:
        for report in reports:
            report.evaluations = evaluate_snos(report.snos, scoring.pipeline, weights, scoring.context, progress=bar)

    if args.json:
        payload = {
            "results": [evaluation_to_dict(ev, sno, r.path, population)
                        for r in reports for sno, ev in zip(r.snos, r.evaluations)],
            "errors": [{"file": r.path, "problems": r.problems} for r in bad],
        }
        print(json.dumps(payload, indent=2))
    else:
        blocks = [format_table(ev, sno, r.path, population, getattr(args, "claims", False))
                  for r in reports for sno, ev in zip(r.snos, r.evaluations)]
        if blocks:
            print("\n\n".join(blocks))
    return 1 if bad else 0


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "evaluate", help="score SNO files with the five critics",
        description="Score SNO files (JSON or YAML, one SNO or a list each) with the five critics and print "
                    "the Trust Score per SNO.")
    parser.add_argument("files", nargs="*", metavar="FILE", help="SNO files (.json, .yaml, .yml) or folders of them")
    parser.add_argument("--text", nargs="+", metavar="FILE",
                        help="text files (.txt, .md) to draft into SNOs (as cns extract does) and score")
    add_text_options(parser)
    choice = parser.add_mutually_exclusive_group()
    choice.add_argument("--profile", help="weight profile from config/profiles.yaml (default: default)")
    choice.add_argument("--weights", help="explicit weights, e.g. grounding=0.5,logic=0.3; critics not named "
                                          "get weight 0")
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    parser.add_argument("--population", default="batch", metavar="batch|none|examples|FILES",
                        help="what novelty is measured against: the other SNOs given (batch, the default), none, "
                             "the bundled examples (examples, as the dashboard), or SNO files, folders or globs "
                             "separated by commas; pin it to reproduce a score")
    parser.add_argument("--claims", action="store_true",
                        help="list each claim's grounding verdict under its table (JSON always has them)")
    parser.add_argument("--timeout", type=float, default=None,
                        help="seconds the critics may take per SNO (default: sized to the SNO, config/pipeline.yaml)")
    parser.add_argument("--workers", type=int, default=1, help="Ray actors for a corpus (cns_core.engine.batch); "
                                                                   "1, or a corpus below corpus.ray_min_snos "
                                                                   "(config/pipeline.yaml), runs in this process")
    parser.add_argument("--address", help="join the Ray cluster at host:port, ray://host:port or auto "
                                          "(default: RAY_ADDRESS, else a local Ray)")
    parser.add_argument("--gpus-per-worker", type=float, default=0.0, help="GPUs each Ray actor reserves")
    parser.add_argument("--engine", choices=("auto", "local", "ray"), default="auto",
                        help="auto: in this process for one worker without --address or a corpus too "
                             "small to pay for starting Ray, Ray otherwise; ray: Ray in any case")
    parser.add_argument("--out", metavar="FILE", help="results table (.parquet or .csv); resumes from it if present")
    parser.set_defaults(func=run)
    return parser
