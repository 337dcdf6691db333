"""brat standoff argument annotation, as in the Argument Annotated Essays (Stab & Gurevych).

One ``.ann`` file (with the ``.txt`` of the same name beside it) is one SNO.

* text-bound annotations ``T<n>`` of type ``MajorClaim``, ``Claim`` or
  ``Premise`` become claims (id kept); their text is the span text of the
  ``.ann`` line, checked against the ``.txt`` at the given offsets (a mismatch
  is a warning). Discontinuous spans (``0 5;9 14``) are allowed.
* the **hypothesis** is the first ``MajorClaim`` in text order. Further major
  claims restate it (as in the essays' introduction and conclusion): they stay
  claims and are listed in ``metadata["rephrases"]`` as rephrasings of it.
  Without a MajorClaim, the first ``Claim`` is the hypothesis.
* ``R<n>	supports Arg1:T<a> Arg2:T<b>`` becomes ``T<a>`` supports ``T<b>``,
  ``attacks`` an attack (rebut); the relation keeps the ``R`` id.
* ``A<n>	Stance T<c> For|Against`` relates the claim to the hypothesis:
  ``For`` a support, ``Against`` an attack (rebut), relation id ``A<n>``.
* **roles** are not annotated in the essays; they are derived: the hypothesis
  and ``For`` claims are the proponent's, ``Against`` claims the opponent's, and
  a premise takes the role of what it supports (the opposite of what it
  attacks). Units the rule cannot reach keep role ``none``.
* ``#`` notes are ignored; other annotation kinds (events, normalisations) are
  warned about and ignored. The title is the ``.txt``'s first line.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from cns_core.formats.base import Draft, FormatError, ImportResult, build_sno, read_text

__all__ = ["SUFFIXES", "parse_brat", "read_brat"]

SUFFIXES: tuple[str, ...] = (".ann",)
_UNIT_TYPES = ("MajorClaim", "Claim", "Premise")
_RELATION_TYPES = {"supports": "support", "attacks": "attack"}
_OPPOSITE = {"proponent": "opponent", "opponent": "proponent"}
_SPAN = re.compile(r"^(\d+) (\d+)$")


def read_brat(path: str | Path, *, evidence_rule: str = "leaf_premises") -> ImportResult:
    """Read ``X.ann`` and, when present, ``X.txt`` beside it."""
    path = Path(path)
    ann = read_text(path)
    txt_path = path.with_suffix(".txt")
    text = read_text(txt_path) if txt_path.is_file() else None
    return parse_brat(ann, text, str(path), evidence_rule=evidence_rule)


def _spans(file: str, element: str, field: str) -> list[tuple[int, int]]:
    spans = []
    for part in field.split(";"):
        match = _SPAN.match(part.strip())
        if not match:
            raise FormatError(file, element, f"offsets {field!r} are not 'START END' pairs")
        start, end = int(match[1]), int(match[2])
        if end < start:
            raise FormatError(file, element, f"offset end {end} is before start {start}")
        spans.append((start, end))
    return spans


def parse_brat(ann: str, text: str | None, file: str = "<input>", *,
               evidence_rule: str = "leaf_premises") -> ImportResult:
    """Parse one ``.ann`` document (``text`` is its ``.txt``, or None when absent)."""
    stem = Path(file).stem
    title = next((line.strip() for line in (text or "").splitlines() if line.strip()), stem)
    draft = Draft(file=file, id=stem, title=title)
    if text is None:
        draft.warn("file", "no .txt beside it: spans are not checked and the title is the file name")

    units: dict[str, dict[str, Any]] = {}
    starts: dict[str, int] = {}
    relations: list[dict[str, Any]] = []
    stances: dict[str, tuple[str, str]] = {}
    for lineno, line in enumerate(ann.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        ident = fields[0].strip()
        element = f"line {lineno} ({ident})"
        if len(fields) < 2:
            raise FormatError(file, element, "expected tab-separated fields")
        head = fields[1].split()
        if not head:
            raise FormatError(file, element, "has no annotation type")
        if ident.startswith("T"):
            if head[0] not in _UNIT_TYPES:
                draft.warn(element, f"unit type {head[0]!r} is not one of {', '.join(_UNIT_TYPES)}; ignored")
                continue
            if len(fields) < 3 or not fields[2].strip():
                raise FormatError(file, element, "a text-bound annotation needs its span text after a tab")
            spans = _spans(file, element, fields[1][len(head[0]):].strip())
            span_text = fields[2].strip()
            if text is not None:
                found = " ".join(text[a:b] for a, b in spans)
                if spans[-1][1] > len(text):
                    draft.warn(element, f"offset {spans[-1][1]} is beyond the end of the .txt ({len(text)} characters)")
                elif " ".join(found.split()) != " ".join(span_text.split()):
                    draft.warn(element, f"span text differs from the .txt at {spans[0][0]}: {found[:40]!r}")
            if ident in units:
                raise FormatError(file, element, "duplicate id")
            units[ident] = {"id": ident, "text": span_text, "role": "none", "type": head[0]}
            starts[ident] = spans[0][0]
        elif ident.startswith("R"):
            if head[0] not in _RELATION_TYPES:
                draft.warn(element, f"relation type {head[0]!r} is not supports or attacks; ignored")
                continue
            args = dict(a.split(":", 1) for a in head[1:] if ":" in a)
            if "Arg1" not in args or "Arg2" not in args:
                raise FormatError(file, element, "a relation needs Arg1:<id> and Arg2:<id>")
            rel = {"id": ident, "source": args["Arg1"], "target": args["Arg2"], "kind": _RELATION_TYPES[head[0]],
                   "element": element}
            relations.append(rel)
        elif ident.startswith("A"):
            if head[0] != "Stance":
                draft.warn(element, f"attribute {head[0]!r} is not Stance; ignored")
                continue
            if len(head) != 3 or head[2] not in ("For", "Against"):
                raise FormatError(file, element, "expected 'Stance T<n> For|Against'")
            stances[head[1]] = (ident, head[2])
        else:
            draft.warn(element, "annotation kind not used for arguments; ignored")

    if not units:
        raise FormatError(file, "document", "holds no MajorClaim, Claim or Premise annotation")
    for rel in relations:
        for end in ("source", "target"):
            if rel[end] not in units:
                raise FormatError(file, rel["element"], f"{'Arg1' if end == 'source' else 'Arg2'} "
                                  f"{rel[end]!r} is not a MajorClaim, Claim or Premise")
    for unit_id, (ident, _) in stances.items():
        if unit_id not in units:
            raise FormatError(file, f"attribute {ident}", f"{unit_id!r} is not a MajorClaim, Claim or Premise")

    ordered = sorted(units, key=lambda u: (starts[u], u))
    majors = [u for u in ordered if units[u]["type"] == "MajorClaim"]
    hypothesis = (majors or [u for u in ordered if units[u]["type"] == "Claim"] or ordered)[0]
    for unit_id, (ident, stance) in stances.items():
        if unit_id == hypothesis:
            continue
        rel: dict[str, Any] = {"id": ident, "source": unit_id, "target": hypothesis,
                               "kind": "support" if stance == "For" else "attack"}
        relations.append(rel)
    for rel in relations:
        rel.pop("element", None)
        if rel["kind"] == "attack":
            rel["attack_type"] = "rebut"

    _derive_roles(units, relations, hypothesis, stances)
    draft.claims = [{k: units[u][k] for k in ("id", "text", "role")} for u in ordered]
    draft.relations = relations
    draft.hypothesis = hypothesis
    draft.metadata = {
        "format": "brat",
        "source_file": Path(file).name,
        "unit_types": {u: units[u]["type"] for u in ordered},
        "stances": {u: s for u, (_, s) in stances.items()},
        "rephrases": [{"id": f"restates-{m}", "source": m, "target": hypothesis, "scheme": "MajorClaim restatement"}
                      for m in majors[1:]],
    }
    return build_sno(draft, evidence_rule)


def _derive_roles(units: dict[str, dict[str, Any]], relations: list[dict[str, Any]], hypothesis: str,
                  stances: dict[str, tuple[str, str]]) -> None:
    """Proponent/opponent by the rule in the module docstring, spreading from claims to premises."""
    for unit in units.values():
        if unit["type"] == "MajorClaim":
            unit["role"] = "proponent"
    units[hypothesis]["role"] = "proponent"
    for unit_id, (_, stance) in stances.items():
        units[unit_id]["role"] = "proponent" if stance == "For" else "opponent"
    changed = True
    while changed:
        changed = False
        for rel in relations:
            src, dst = units[rel["source"]], units[rel["target"]]
            if src["role"] != "none" or dst["role"] == "none":
                continue
            src["role"] = dst["role"] if rel["kind"] == "support" else _OPPOSITE[dst["role"]]
            changed = True
