"""People in the loop: ``cns annotate``, ``cns calibrate``, ``cns export``.

``annotate``: a person's verdicts on stored answers (correct / incorrect / unsure, with a note); one id
on the command line, or a CSV / JSONL file of many, checked whole (every row, every id against the
memory) before anything is written, so a bad file changes nothing. ``calibrate``: the answer verdict's
threshold fitted to those verdicts (:mod:`cns_core.judging.verdict_calibration`), reversible.
``export``: every engram with its scores and verdicts, as CSV or JSONL (:mod:`cns_core.people.export`).
"""

from __future__ import annotations

import argparse
import getpass
import sys

__all__ = ["register", "run_annotate", "run_calibrate", "run_export"]


def register(subparsers: argparse._SubParsersAction) -> None:
    register_annotate(subparsers)
    register_calibrate(subparsers)
    register_export(subparsers)


def register_annotate(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("annotate", help="mark stored answers correct, incorrect or unsure (a person's "
                                               "verdict beside the machine's)")
    p.add_argument("id", nargs="?", help="the engram id (its query id)")
    p.add_argument("--verdict", choices=("correct", "incorrect", "unsure"), help="your verdict on the answer")
    p.add_argument("--note", default="", help="why (optional, at most 2,000 characters)")
    p.add_argument("--who", help="your name (default: the login name)")
    p.add_argument("--file", help="a CSV (header id,verdict,note) or JSONL file of verdicts, instead of an id")
    p.add_argument("--path", help="embedded Chroma folder (default: the configured memory)")
    p.set_defaults(func=run_annotate)


def _who(args: argparse.Namespace) -> str:
    if args.who is not None:
        return args.who
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return ""


def run_annotate(args: argparse.Namespace) -> int:
    from cns_core.people.annotations import Annotation, read_annotation_file
    from cns_core.memory import MemoryService

    if args.file and (args.id or args.verdict or args.note):
        raise ValueError("give either --file or an id with --verdict, not both")
    if not args.file and not args.id:
        raise ValueError("give an engram id with --verdict, or --file FILE")
    if args.id and not args.file and not args.verdict:
        raise ValueError("--verdict: required with an id (correct, incorrect or unsure)")
    memory = MemoryService(path=args.path, create=False)     # verdicts go on stored answers: no store, no answer
    if args.file:   # every row and every id checked, all problems at once, before anything is written
        annotations = read_annotation_file(args.file, who=_who(args), unknown_ids=memory.unknown_ids)
    else:
        annotations = [Annotation(args.id, args.verdict, args.note, _who(args))]
    stored = memory.record_annotations(annotations)
    counts = {v: sum(a.verdict == v for a in annotations) for v in ("correct", "incorrect", "unsure")}
    print(f"annotate: {len(stored)} verdict(s) stored ({', '.join(f'{n} {v}' for v, n in counts.items() if n)}) "
          f"in {memory.url or memory.path}")
    return 0


def register_calibrate(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("calibrate", help="fit the answer verdict's threshold to your verdicts "
                                                "(cross-validated by question; --revert undoes it)")
    p.add_argument("--revert", action="store_true", help="go back to the calibration (or configuration) before")
    p.add_argument("--path", help="embedded Chroma folder (default: the configured memory)")
    p.set_defaults(func=run_calibrate)


def run_calibrate(args: argparse.Namespace) -> int:
    from cns_core.memory import MemoryService, MemoryStoreError
    from cns_core.judging.verdict_calibration import UnscoredMarks
    from cns_core.people.calibrate import annotated_engrams, calibrate, relabel_stored, revert_message

    if args.revert:
        print(f"calibrate: {revert_message()}", flush=True)
        try:
            memory = MemoryService(path=args.path, create=False)
        except MemoryStoreError as exc:
            print(f"calibrate: nothing stored to judge again ({exc})")
            return 0
    else:
        memory = MemoryService(path=args.path, create=False)
        try:
            outcome = calibrate(annotated_engrams(memory))
        except UnscoredMarks as exc:
            raise ValueError(f"{exc} (cns trust-backfill scores them)") from None
        print(f"calibrate: {outcome.message}", flush=True)
        if not outcome.adopted:
            return 0

    def progress(done: int, todo: int) -> None:
        if todo and (done == todo or done % 256 == 0):
            print(f"calibrate: {done:,} of {todo:,} stored answers", file=sys.stderr, flush=True)

    print(f"calibrate: {relabel_stored(memory, progress)}")
    return 0


def register_export(subparsers: argparse._SubParsersAction) -> None:
    from cns_core.people.export import EXPORT_FORMATS, EXPORT_KINDS

    p = subparsers.add_parser("export", help="every stored answer with its grade, verdicts, Trust Score and your "
                                             "verdicts, as CSV or JSONL; or preference pairs, or rewards",
                              description="cns export [csv|jsonl] -o FILE: every stored answer as CSV or JSONL, safe "
                                          "to open (formulas and control characters neutralised, times in ISO 8601). "
                                          "cns export preferences -o FILE: prompt/chosen/rejected JSON lines (DPO) "
                                          "from answers to the same question. cns export rewards -o FILE: one reward "
                                          "per turn (CSV or JSONL).")
    p.add_argument("format_word", nargs="?", choices=EXPORT_FORMATS + EXPORT_KINDS,
                   metavar="csv|jsonl|preferences|rewards",
                   help="the format as a word (same as --format), or what to export instead of the answers")
    p.add_argument("-o", "--output", help="the file to write (its folder must exist; replaced only when complete)")
    p.add_argument("--format", choices=EXPORT_FORMATS, help="default: from the file's extension, else csv")
    p.add_argument("--force", action="store_true", help="replace a read-only file or a symbolic link given to -o")
    p.add_argument("--path", help="embedded Chroma folder (default: the configured memory)")
    p.set_defaults(func=run_export)


def run_export(args: argparse.Namespace) -> int:
    from pathlib import Path

    from cns_core.cli.output import output_problem, write_output
    from cns_core.people.export import EXPORT_KINDS, export_rows, preference_rows, render_export, reward_rows
    from cns_core.memory import MemoryService

    kind = args.format_word if args.format_word in EXPORT_KINDS else "answers"
    if kind != "answers":
        args.format_word = None
    if kind == "preferences" and args.format not in (None, "jsonl"):
        raise ValueError(f"--format {args.format}: preference pairs are written as JSON lines (jsonl) only")
    if args.format_word and args.format and args.format_word != args.format:
        raise ValueError(f"give the format once: {args.format_word} or --format {args.format}")
    if not args.output:
        example = {"preferences": "preferences -o pairs.jsonl", "rewards": "rewards -o rewards.csv"}.get(
            kind, f"{args.format_word or args.format or 'csv'} -o answers.{args.format_word or args.format or 'csv'}")
        raise ValueError(f"-o FILE: required, e.g. cns export {example}")
    out = Path(args.output)
    fmt = "jsonl" if kind == "preferences" else \
        args.format_word or args.format or ("jsonl" if out.suffix.lower() in (".jsonl", ".ndjson") else "csv")
    problem = output_problem(out, args.force)          # before the memory opens: a typo costs nothing
    if problem:
        raise ValueError(f"-o {args.output}: {problem}")
    memory = MemoryService(path=args.path, create=False)
    count = 0

    rows, columns, noun = export_rows(memory), None, "engram(s)"
    if kind == "preferences":
        rows, noun = preference_rows(memory), "preference pair(s)"
    elif kind == "rewards":
        from cns_core.memory.rewards import REWARD_COLUMNS

        rows, columns, noun = reward_rows(memory.iter_engrams(), memory.recall_settings), REWARD_COLUMNS, "reward(s)"

    def counted():
        nonlocal count
        for row in rows:
            count += 1
            yield row

    with write_output(args.output, args.force) as tmp, open(tmp, "w", encoding="utf-8", newline="") as handle:
        for chunk in render_export(counted(), fmt, *([columns] if columns else [])):
            handle.write(chunk)
    print(f"export: {count} {noun} as {fmt} to {out}")
    return 0
