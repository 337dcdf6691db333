"""Reading text and sources: .txt/.md/.pdf, and every refusal names the file and the problem."""

from __future__ import annotations

import pytest

from cns_core.config import ConfigError
from cns_core.text import (SourceText, TextInputError, TextLimits, read_source_bytes, read_source_files,
                           read_text_bytes, read_text_file, source_passages)


def minimal_pdf(lines: list[str]) -> bytes:
    """A one-page PDF with a text layer, written by hand (objects, then an xref table of byte offsets)."""
    stream = "BT /F1 12 Tf 72 720 Td 14 TL " + " ".join(f"({line}) '" for line in lines) + " ET"
    objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        "/Resources << /Font << /F1 5 0 R >> >> >>",
        f"<< /Length {len(stream)} >>\nstream\n{stream}\nendstream",
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = b"%PDF-1.4\n"
    offsets = []
    for n, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{n} 0 obj\n{body}\nendobj\n".encode("latin-1")
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += "".join(f"{o:010d} 00000 n \n" for o in offsets).encode()
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return out


def test_pdf_source_is_read_through_its_text_layer(tmp_path):
    path = tmp_path / "report.pdf"
    path.write_bytes(minimal_pdf(["Sugar taxes cut sales by ten percent.", "Poor households cut the most."]))
    [source] = read_source_files([path])
    assert source.name == "report.pdf"
    assert "Sugar taxes cut sales by ten percent." in source.text and "Poor households cut the most." in source.text


def test_text_and_markdown_sources_and_their_passages(tmp_path):
    (tmp_path / "a.md").write_text("# Notes\n\nOne fact. Two facts. Three facts. Four facts.", encoding="utf-8")
    (tmp_path / "b.txt").write_text("Other source.", encoding="utf-8")
    sources = read_source_files([tmp_path / "a.md", tmp_path / "b.txt"])
    passages, dropped = source_passages(sources, sentences=3, max_passages=10)
    assert [(p.source, p.text) for p in passages] == [
        ("a.md", "One fact. Two facts. Three facts."), ("a.md", "Four facts."),
        ("b.txt", "Other source.")]
    assert dropped == 0
    assert all(sources[0].text[p.start:p.end] == p.text for p in passages[:2])


def test_same_file_names_in_two_folders_stay_apart(tmp_path):
    for sub in ("x", "y"):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "notes.txt").write_text(f"From {sub}.", encoding="utf-8")
    names = [s.name for s in read_source_files([tmp_path / "x" / "notes.txt", tmp_path / "y" / "notes.txt"])]
    assert names == [str(tmp_path / "x" / "notes.txt"), str(tmp_path / "y" / "notes.txt")]


@pytest.mark.parametrize("data, message", [
    (b"", "is empty"),
    (b"  \n\t", "is empty"),
    (b"\x89PNG\r\n\x1a\n\x00\x00", "is a binary file, not text"),
    ("caf\u00e9".encode("latin-1"), r"not UTF-8 text \(byte 3\)"),
])
def test_bad_uploads(data, message):
    with pytest.raises(TextInputError, match=rf"^answer.txt: {message}"):
        read_text_bytes(data, "answer.txt")


def test_limits_come_from_config_and_are_named(tmp_path):
    big = tmp_path / "big.txt"
    big.write_bytes(b"a" * 5_000_000)
    with pytest.raises(TextInputError, match=r"big.txt: 5,000,000 bytes exceed the limit of 1,000,000 bytes "
                                             r"\(config/sno.yaml max_text_bytes\)"):
        read_text_file(big)
    assert TextLimits.from_config().max_text_bytes == 1_000_000
    with pytest.raises(TextInputError, match="max_source_bytes"):
        read_source_bytes(b"x" * 11, "s.txt", TextLimits(max_source_bytes=10))


def test_bad_config_limit_is_named(tmp_path, monkeypatch):
    (tmp_path / "sno.yaml").write_text("max_units: many\n", encoding="utf-8")
    monkeypatch.setenv("CNS_CONFIG_DIR", str(tmp_path))
    with pytest.raises(ConfigError, match=r"config/sno.yaml: max_units: expected a number, got 'many'"):
        TextLimits.from_config()


def test_other_file_problems(tmp_path):
    with pytest.raises(TextInputError, match="missing.txt: cannot be read"):
        read_text_file(tmp_path / "missing.txt")
    with pytest.raises(TextInputError, match="is a folder"):
        read_text_file(tmp_path)
    pdf = tmp_path / "a.pdf"
    pdf.write_bytes(minimal_pdf(["Text."]))
    with pytest.raises(TextInputError, match="a PDF can be a source"):
        read_text_file(pdf)
    with pytest.raises(TextInputError, match=r"a source must be .txt, .md or .pdf \(got '.docx'\)"):
        read_source_files([tmp_path / "report.docx"])
    with pytest.raises(TextInputError, match="broken.pdf: not a readable PDF"):
        read_source_bytes(b"%PDF-1.4\nnonsense", "broken.pdf")
    with pytest.raises(TextInputError, match="empty.pdf: the PDF has no text layer"):
        read_source_bytes(minimal_pdf([]), "empty.pdf")
    assert read_source_bytes("Plain.".encode(), "notes.md") == SourceText("notes.md", "Plain.")
