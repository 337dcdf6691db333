"""Argument maps made elsewhere, as SNOs: AIF JSON, arg-microtexts XML, brat standoff, Argdown.

``import_path(fmt, path)`` reads a file or every matching file of a folder and
returns one :class:`ImportResult` per document; a file that cannot be read
carries its :class:`FormatError` and never stops the others. ``to_aif`` and
``to_argdown`` write an SNO back out. Each format's mapping rules are in its
module's docstring.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from cns_core.formats import aif, argdown, brat, microtexts
from cns_core.formats.aif import dumps_aif, parse_aif, to_aif
from cns_core.formats.argdown import parse_argdown, to_argdown
from cns_core.formats.base import (
    ERROR_CAUSES,
    EVIDENCE_RULES,
    WARNING_CAUSES,
    FormatError,
    FormatWarning,
    ImportResult,
    check_evidence_rule,
)
from cns_core.formats.brat import parse_brat
from cns_core.formats.microtexts import parse_microtext
from cns_core.sno import SNO

__all__ = [
    "ERROR_CAUSES",
    "EVIDENCE_RULES",
    "EXPORTERS",
    "FORMATS",
    "Format",
    "FormatError",
    "FormatWarning",
    "ImportResult",
    "import_file",
    "import_path",
    "parse_aif",
    "parse_argdown",
    "parse_brat",
    "parse_microtext",
    "to_aif",
    "to_argdown",
    "WARNING_CAUSES",
]


@dataclass(frozen=True)
class Format:
    """An input format: its name, the file suffixes it claims in a folder, its reader."""

    name: str
    suffixes: tuple[str, ...]
    read: Callable[..., ImportResult]   # read(path, *, evidence_rule) -> ImportResult


FORMATS: dict[str, Format] = {
    "aif": Format("aif", aif.SUFFIXES, aif.read_aif),
    "microtexts": Format("microtexts", microtexts.SUFFIXES, microtexts.read_microtext),
    "brat": Format("brat", brat.SUFFIXES, brat.read_brat),
    "argdown": Format("argdown", argdown.SUFFIXES, argdown.read_argdown),
}

# Writers: SNO -> text in the format (suffix for files in the second place).
EXPORTERS: dict[str, tuple[Callable[[SNO], str], str]] = {
    "aif": (dumps_aif, ".json"),
    "argdown": (to_argdown, ".argdown"),
}


def _format(fmt: str) -> Format:
    try:
        return FORMATS[fmt]
    except KeyError:
        raise ValueError(f"format: unknown format {fmt!r} (known: {', '.join(FORMATS)})") from None


def import_file(fmt: str, path: str | Path, *, evidence_rule: str = "leaf_premises") -> ImportResult:
    """One document; any problem comes back as the result's ``error``, never raised."""
    spec = _format(fmt)
    check_evidence_rule(evidence_rule)
    path = Path(path)
    try:
        return spec.read(path, evidence_rule=evidence_rule)
    except FormatError as exc:
        return ImportResult(file=str(path), error=exc)
    except RecursionError:
        return ImportResult(file=str(path), error=FormatError(path, "document", "is nested too deeply", "structure"))
    except Exception as exc:  # an importer bug must not stop a folder: report it against the file
        return ImportResult(file=str(path), error=FormatError(
            path, "document", f"could not be imported ({type(exc).__name__}: {exc})", "importer-error"))


def import_path(fmt: str, path: str | Path, *, evidence_rule: str = "leaf_premises") -> list[ImportResult]:
    """A file, or every file of a folder (recursively) with one of the format's suffixes, in name order."""
    spec = _format(fmt)
    check_evidence_rule(evidence_rule)
    path = Path(path)
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in spec.suffixes)
        return [import_file(fmt, f, evidence_rule=evidence_rule) for f in files]
    if not path.exists():
        return [ImportResult(file=str(path), error=FormatError(path, "file", "does not exist", "file"))]
    return [import_file(fmt, path, evidence_rule=evidence_rule)]
