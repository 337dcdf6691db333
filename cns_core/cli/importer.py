"""``cns import FORMAT PATH... -o DIR``: argument maps from other tools as SNO files.

Each input document becomes ``DIR/<sno id>.json`` (``.yaml`` with ``--yaml``).
A faulty relation or node is repaired or left out with a warning (``-v`` lists
them); a file that cannot be imported at all is refused and reported with its
file, element and problem; the others are still written, and the exit status
is 1. The command ends with a summary: documents imported whole, repaired and
refused, with warnings and refusals counted by cause. An existing file with
different content is never overwritten unless ``--overwrite`` is given.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cns_core.formats import EVIDENCE_RULES, FORMATS, ImportResult, import_path
from cns_core.formats.summary import ImportSummary
from cns_core.sno import SNO, serialize_snos

__all__ = ["register", "run", "write_results"]


def _target(out_dir: Path, sno: SNO, suffix: str, used: set[str]) -> Path:
    """``<id><suffix>``, made safe as a file name and unique within this run."""
    stem = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in sno.id).strip(".") or "sno"
    name, n = f"{stem}{suffix}", 1
    while name in used:
        n += 1
        name = f"{stem}-{n}{suffix}"
    used.add(name)
    return out_dir / name


def write_results(results: list[ImportResult], out_dir: Path, *, fmt: str = "json",
                  overwrite: bool = False) -> tuple[list[Path], list[str]]:
    """Write every imported SNO; returns the paths written and one error line per document that failed."""
    out_dir.mkdir(parents=True, exist_ok=True)
    suffix = ".json" if fmt == "json" else ".yaml"
    written, errors, used = [], [], set()
    for result in results:
        if not result.ok:
            errors.append(str(result.error))
            continue
        path = _target(out_dir, result.sno, suffix, used)
        text = serialize_snos(result.sno, fmt)
        if path.exists() and not overwrite and path.read_text(encoding="utf-8") != text:
            errors.append(f"{result.file}: output: {path} exists with other content (use --overwrite)")
            continue
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written, errors


def run(args: argparse.Namespace) -> int:
    results: list[ImportResult] = []
    for path in args.paths:
        found = import_path(args.format, path, evidence_rule=args.evidence_rule)
        if not found:
            print(f"cns import: {path}: no {args.format} files ({', '.join(FORMATS[args.format].suffixes)})",
                  file=sys.stderr)
        results.extend(found)
    written, errors = write_results(results, Path(args.output), fmt="yaml" if args.yaml else "json",
                                    overwrite=args.overwrite)
    for line in errors:
        print(f"error: {line}", file=sys.stderr)
    if args.verbose:
        for result in results:
            for warning in result.warnings if result.ok else ():
                print(f"warning: {result.file}: {warning} [{warning.cause}]", file=sys.stderr)
    summary = ImportSummary.of(results)
    unwritten = summary.imported - len(written)
    print(f"imported {len(written)} of {len(results)} document(s) into {args.output}"
          + (f" ({unwritten} not written: see the errors above)" if unwritten else ""))
    for line in summary.lines(listed=args.verbose):
        print(line)
    return 1 if errors or not results else 0


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "import", help="convert argument maps (AIF, microtexts, brat, Argdown) to SNO files",
        description="Convert argument maps made elsewhere into SNO files, one per input document.")
    parser.add_argument("format", choices=sorted(FORMATS), metavar="FORMAT",
                        help=f"input format: {', '.join(FORMATS)}")
    parser.add_argument("paths", nargs="+", metavar="PATH", help="files or folders (searched recursively)")
    parser.add_argument("-o", "--output", required=True, metavar="DIR", help="folder for the SNO files")
    parser.add_argument("--evidence-rule", choices=EVIDENCE_RULES, default="leaf_premises",
                        help="when a document has no evidence: copy leaf premises as evidence (default) or none")
    parser.add_argument("--yaml", action="store_true", help="write YAML instead of JSON")
    parser.add_argument("--overwrite", action="store_true", help="replace existing SNO files with other content")
    parser.add_argument("-v", "--verbose", action="store_true", help="list import warnings")
    parser.set_defaults(func=run)
    return parser
