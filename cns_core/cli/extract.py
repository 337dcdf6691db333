"""``cns extract FILE... [--sources PATH...] [--question TEXT] [-o DIR]``: text in, SNO files out.

Each text file (.txt, .md) becomes ``DIR/<stem>.yaml``; one file without ``-o`` is
printed to stdout. The sources (.txt, .md, .pdf) are read once and become every
draft's evidence; the models load once for all files. A file that cannot be drafted
from (empty, binary, not UTF-8, too big, not English) is named with its problem on
stderr, the others are still written, and the exit status is 1.

``cns evaluate --text FILE`` (see :func:`evaluate_text`) drafts and scores in one step.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable, Sequence

from cns_core.sno import SNO, serialize_snos
from cns_core.text import Draft, SourceText, TextInputError, check_text, draft_snos, read_source_files, read_text_file

__all__ = ["register", "run", "evaluate_text", "add_text_options"]


def _safe_stem(path: Path) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in path.stem).strip(".") or "text"


def _drafts(files: Sequence[str], sources: list[SourceText], question: str | None, command: str,
            failed: list[str]) -> list[tuple[str, Draft]]:
    """Each readable file's draft, all from one NLI pass; a file that cannot be drafted from is named with
    its problem on stderr and added to ``failed``. A draft's SNO id is its file's stem."""
    good: list[tuple[str, str]] = []
    for raw in files:
        try:
            good.append((raw, check_text(read_text_file(raw))))
        except TextInputError as exc:   # "text: ..." becomes "<file>: ..."
            message = str(exc)
            print(f"cns {command}: {raw}: {message.removeprefix('text: ')}" if message.startswith("text: ")
                  else f"cns {command}: {message}", file=sys.stderr)
            failed.append(raw)
    drafts = draft_snos([text for _, text in good], sources=sources, question=question,
                        sno_ids=[_safe_stem(Path(raw)) for raw, _ in good])
    return [(raw, draft) for (raw, _), draft in zip(good, drafts)]


def _summary(draft: Draft) -> str:
    sno = draft.sno
    return (f"{len(sno.claims)} claim(s), {len(sno.relations)} relation(s), {len(sno.evidence)} evidence; "
            f"main claim: {sno.hypothesis_text!r}")


def _read_sources(paths: list[str] | None) -> list[SourceText]:
    return read_source_files(paths) if paths else []


def run(args: argparse.Namespace) -> int:
    if len(args.files) > 1 and not args.output:
        raise ValueError("several files need -o DIR (one SNO file each); a single file without -o goes to stdout")
    sources = _read_sources(args.sources)
    out_dir = Path(args.output) if args.output else None
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
    failed: list[str] = []
    used: set[str] = set()
    for raw, draft in _drafts(args.files, sources, args.question, "extract", failed):
        notes = "".join(f"\n  note: {n}" for n in draft.notes)
        if out_dir is None:
            sys.stdout.write(serialize_snos(draft.sno, "yaml"))
            print(f"{raw}: {_summary(draft)}{notes}", file=sys.stderr)
            continue
        name = f"{draft.sno.id}.yaml"
        while name in used:
            name = f"{Path(name).stem}-2.yaml"
        used.add(name)
        target = out_dir / name
        target.write_text(serialize_snos(draft.sno, "yaml"), encoding="utf-8")
        print(f"{raw} -> {target}: {_summary(draft)}{notes}")
    if failed:
        print(f"cns extract: {len(failed)} of {len(args.files)} file(s) could not be drafted", file=sys.stderr)
    return 1 if failed else 0


def evaluate_text(args: argparse.Namespace, evaluate: Callable[[Sequence[SNO], Sequence[str]], int]) -> int:
    """``cns evaluate --text FILE``: draft each text, then score the drafts as ``evaluate`` scores SNOs.

    ``evaluate(snos, names)`` is the evaluate command's own scoring and printing.
    """
    sources = _read_sources(args.sources)
    snos: list[SNO] = []
    names: list[str] = []
    failed: list[str] = []
    for raw, draft in _drafts(args.text, sources, args.question, "evaluate", failed):
        print(f"{raw}: drafted {_summary(draft)}", file=sys.stderr)
        for note in draft.notes:
            print(f"  note: {note}", file=sys.stderr)
        snos.append(draft.sno)
        names.append(str(raw))
    status = evaluate(snos, names) if snos else 0
    return 1 if failed or status else 0


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "extract", help="draft SNO files from text (an answer, an essay, a report) and its sources",
        description="Draft one SNO per text file: argumentative units become claims, the main claim the "
                    "hypothesis, discourse markers, position and NLI give support and attack relations (each "
                    "with the reason in its metadata), and the sources' passages become evidence. Offline, "
                    "with the shipped models.")
    parser.add_argument("files", nargs="+", metavar="FILE", help="text files (.txt, .md)")
    add_text_options(parser)
    parser.add_argument("-o", "--output", metavar="DIR", help="folder for DIR/<stem>.yaml (default: stdout, "
                                                              "one file only)")
    parser.set_defaults(func=run)
    return parser


def add_text_options(parser: argparse.ArgumentParser) -> None:
    """``--sources`` and ``--question``, shared by ``extract`` and ``evaluate --text``."""
    parser.add_argument("--sources", nargs="+", metavar="PATH",
                        help="source documents (.txt, .md, .pdf) whose passages become evidence")
    parser.add_argument("--question", metavar="TEXT",
                        help="the question the text answers: its main claim is the unit that answers it")
