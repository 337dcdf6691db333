"""``cns annotate``: a person's verdicts on stored answers (correct / incorrect / unsure, with a note).

One id on the command line, or a CSV / JSONL file of many; a file is checked whole (every row, every
id against the memory) before anything is written, so a bad file changes nothing.
"""

from __future__ import annotations

import argparse
import getpass

__all__ = ["register", "run_annotate"]


def register(subparsers: argparse._SubParsersAction) -> None:
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
    from cns_core.annotations import Annotation, read_annotation_file
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
