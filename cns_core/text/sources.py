"""Reading the text to judge and its sources, with the checks every user input gets.

Text and Markdown are read as UTF-8; PDF through pypdf (text layer only: a scanned PDF
without one is refused with that reason). Every refusal is a :class:`TextInputError`
whose message names the input and the problem, never a traceback.
Sources are split into passages that keep their provenance (source name, character
offsets into the source's text), which become the SNO's evidence.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from cns_core.bounds import InputTooLarge, NotARegularFile, looks_binary, read_bounded
from cns_core.sno import limits_from_config
from cns_core.text.segment import paragraphs, sentence_spans

__all__ = ["UNSTATED_VALIDITY", "UNSTATED_VALIDITY_WHY", "SourceText", "Passage", "TextInputError", "TextLimits",
           "read_text_file", "read_text_bytes",
           "read_source_files", "read_source_bytes", "source_passages", "check_size", "TEXT_SUFFIXES",
           "SOURCE_SUFFIXES"]

# How far a drafted source is trusted when nobody said: neither trusted (1.0, what an SNO's evidence defaults to)
# nor distrusted. A pasted source drafted at validity 1.00 read as fully trusted; the Author page lets the person
# set it, and each item's reason says it is unset.
UNSTATED_VALIDITY = 0.5
UNSTATED_VALIDITY_WHY = "validity 0.50: nobody stated how far this source is trusted (set it if you know)"
TEXT_SUFFIXES = (".txt", ".md", ".markdown", ".text", "")
SOURCE_SUFFIXES = (*TEXT_SUFFIXES, ".pdf")


class TextInputError(ValueError):
    """Text or a source that cannot be drafted from; the message names the input and the problem."""


@dataclass(frozen=True)
class SourceText:
    """One source document for evidence: its file name or label, and its text."""

    name: str
    text: str


@dataclass(frozen=True)
class Passage:
    """A few sentences of a source, with where they stand in it (``source.text[start:end]``)."""

    source: str
    start: int
    end: int
    text: str


@dataclass(frozen=True)
class TextLimits:
    """Limits of ``config/sno.yaml`` that apply to text input."""

    max_text_bytes: int = 1_000_000
    max_source_bytes: int = 20_000_000
    max_units: int = 200
    max_passages: int = 2_000
    passage_sentences: int = 3

    @classmethod
    def from_config(cls) -> "TextLimits":
        return limits_from_config(cls)


def _decode(data: bytes, name: str) -> str:
    if looks_binary(data):
        raise TextInputError(f"{name}: is a binary file, not text (give .txt or .md; PDF only as a source)")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise TextInputError(f"{name}: not UTF-8 text (byte {exc.start}); save it as UTF-8") from None
    if not text.strip():
        raise TextInputError(f"{name}: is empty")
    return text


def check_size(size: int, limit: int, name: str, key: str) -> None:
    """Refuse ``name`` when ``size`` bytes exceed ``limit`` (the ``key`` of config/sno.yaml)."""
    if size > limit:
        raise TextInputError(f"{name}: {size:,} bytes exceed the limit of {limit:,} bytes (config/sno.yaml {key})")


def read_text_bytes(data: bytes, name: str, limits: TextLimits | None = None) -> str:
    """The text of an upload: refuses binary, non-UTF-8, empty and over-size input."""
    limits = limits or TextLimits.from_config()
    check_size(len(data), limits.max_text_bytes, name, "max_text_bytes")
    return _decode(data, name)


def _read_bytes(path: Path, limit: int, key: str) -> bytes:
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise TextInputError(f"{path}: cannot be read: {exc.strerror}") from None
    if path.is_dir():
        raise TextInputError(f"{path}: is a folder, not a file")
    check_size(size, limit, str(path), key)
    try:
        return read_bounded(path, limit)        # bounded while reading; a device or a pipe is refused
    except InputTooLarge as exc:
        raise TextInputError(f"{path}: {exc} (config/sno.yaml {key})") from None
    except NotARegularFile as exc:
        raise TextInputError(f"{path}: {exc}") from None
    except OSError as exc:
        raise TextInputError(f"{path}: cannot be read: {exc.strerror}") from None


def read_text_file(path: str | Path, limits: TextLimits | None = None) -> str:
    """The text of a .txt or .md file, with the checks of :func:`read_text_bytes` (size checked first)."""
    path = Path(path)
    limits = limits or TextLimits.from_config()
    if path.suffix.lower() == ".pdf":
        raise TextInputError(f"{path}: a PDF can be a source (--sources), not the text to judge; "
                             "give the text as .txt or .md")
    if path.suffix.lower() not in TEXT_SUFFIXES:
        raise TextInputError(f"{path}: the text to draft from must be .txt or .md (got {path.suffix!r}); "
                             "an SNO file is scored with `cns evaluate FILE`")
    return read_text_bytes(_read_bytes(path, limits.max_text_bytes, "max_text_bytes"), str(path), limits)


def _pdf_text(data: bytes, name: str) -> str:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise TextInputError(f"{name}: the PDF is encrypted; give an unlocked copy")
        pages = [page.extract_text() or "" for page in reader.pages]
    except TextInputError:
        raise
    except (PdfReadError, ValueError, KeyError, TypeError, OSError) as exc:
        raise TextInputError(f"{name}: not a readable PDF ({exc})") from None
    text = "\n\n".join(p.strip() for p in pages if p.strip())
    if not text.strip():
        raise TextInputError(f"{name}: the PDF has no text layer (a scan?); give its text as .txt")
    return text


def read_source_bytes(data: bytes, name: str, limits: TextLimits | None = None) -> SourceText:
    """One uploaded source (.txt, .md or .pdf by its name)."""
    limits = limits or TextLimits.from_config()
    check_size(len(data), limits.max_source_bytes, name, "max_source_bytes")
    if Path(name).suffix.lower() == ".pdf" or data[:5] == b"%PDF-":
        return SourceText(Path(name).name, _pdf_text(data, name))
    return SourceText(Path(name).name, _decode(data, name))


def read_source_files(paths: Iterable[str | Path], limits: TextLimits | None = None) -> list[SourceText]:
    """The sources named by ``paths`` (.txt, .md, .pdf); the first bad one stops with its reason."""
    limits = limits or TextLimits.from_config()
    paths = [Path(raw) for raw in paths]   # walked twice below: a generator would be spent after the first
    out = []
    for path in paths:
        if path.suffix.lower() not in SOURCE_SUFFIXES:
            raise TextInputError(f"{path}: a source must be .txt, .md or .pdf (got {path.suffix!r})")
        out.append(read_source_bytes(_read_bytes(path, limits.max_source_bytes, "max_source_bytes"), str(path),
                                     limits))
    names = [s.name for s in out]
    if len(set(names)) < len(names):   # two "notes.txt" from different folders stay apart
        out = [SourceText(str(p), s.text) for p, s in zip(paths, out)]
    return out


def source_passages(sources: Sequence[SourceText], sentences: int, max_passages: int) -> tuple[list[Passage], int]:
    """Passages of up to ``sentences`` sentences within a paragraph, in source order; headings are left out.

    Returns the passages kept (at most ``max_passages``) and how many were left out.
    """
    passages: list[Passage] = []
    dropped = 0
    for source in sources:
        for para in paragraphs(source.text):
            if para.heading:
                continue
            spans = sentence_spans(para.span.text)
            for k in range(0, len(spans), sentences):
                group = spans[k:k + sentences]
                start, end = para.span.start + group[0].start, para.span.start + group[-1].end
                if len(passages) < max_passages:
                    passages.append(Passage(source.name, start, end, " ".join(source.text[start:end].split())))
                else:
                    dropped += 1
    return passages, dropped
