"""People in the loop: ``cns annotate``, ``cns calibrate``, ``cns export``.

``annotate``: a person's verdicts on stored answers (correct / incorrect / unsure, with a note); one id
on the command line, or a CSV / JSONL file of many, checked whole (every row, every id against the
memory) before anything is written, so a bad file changes nothing. ``calibrate``: the answer verdict's
threshold fitted to those verdicts (:mod:`cns_core.agents.verdict_calibration`), reversible.
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
    if args.file:
        annotations = read_annotation_file(args.file, who=_who(args))
    elif args.id:
        if not args.verdict:
            raise ValueError("--verdict: required with an id (correct, incorrect or unsure)")
        annotations = [Annotation(args.id, args.verdict, args.note, _who(args))]
    else:
        raise ValueError("give an engram id with --verdict, or --file FILE")
    memory = MemoryService(path=args.path)
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
    from cns_core.memory import MemoryService
    from cns_core.people.calibrate import annotated_engrams, calibrate_message, relabel_stored, revert_message

    memory = MemoryService(path=args.path)
    print(f"calibrate: {revert_message() if args.revert else calibrate_message(annotated_engrams(memory))}", flush=True)

    def progress(done: int, todo: int) -> None:
        if todo and (done == todo or done % 256 == 0):
            print(f"calibrate: {done:,} of {todo:,} stored answers", file=sys.stderr, flush=True)

    print(f"calibrate: {relabel_stored(memory, progress)}")
    return 0


def register_export(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("export", help="every stored answer with its grade, verdicts, Trust Score and your "
                                             "verdicts, as CSV or JSONL")
    p.add_argument("-o", "--output", required=True, help="the file to write (replaced only when complete)")
    p.add_argument("--format", choices=("csv", "jsonl"), help="default: from the file's extension, else csv")
    p.add_argument("--path", help="embedded Chroma folder (default: the configured memory)")
    p.set_defaults(func=run_export)


def run_export(args: argparse.Namespace) -> int:
    from pathlib import Path

    from cns_core.config import replace_atomically
    from cns_core.people.export import export_rows, render_export
    from cns_core.memory import MemoryService

    out = Path(args.output)
    fmt = args.format or ("jsonl" if out.suffix.lower() in (".jsonl", ".ndjson") else "csv")
    if out.is_dir():
        raise ValueError(f"-o {out}: is a folder; give a file name")
    memory = MemoryService(path=args.path)
    count = 0

    def counted():
        nonlocal count
        for row in export_rows(memory):
            count += 1
            yield row

    with replace_atomically(out) as tmp, open(tmp, "w", encoding="utf-8", newline="") as handle:
        for chunk in render_export(counted(), fmt):
            handle.write(chunk)
    print(f"export: {count} engram(s) as {fmt} to {out}")
    return 0
