"""brat standoff argument annotation, as in the Argument Annotated Essays (Stab & Gurevych).

One ``.ann`` file (with the ``.txt`` of the same name beside it) is one SNO.

* text-bound annotations ``T<n>`` of type ``MajorClaim``, ``Claim`` or
  ``Premise`` become claims (id kept). Their text is the span text of the
  ``.ann`` line (all of it, even where it holds a tab), checked against the
  ``.txt`` sliced at the given offsets (a mismatch is a warning); a line without
  span text takes the ``.txt`` slice. Discontinuous spans (``0 5;9 14``) are
  joined with a space; runs of whitespace become one space.
* the **hypothesis** is the first ``MajorClaim`` in text order. Further major
  claims restate it (as in the essays' introduction and conclusion): they stay
  claims and are listed in ``metadata["rephrases"]`` as rephrasings of it.
  Without a MajorClaim, the first ``Claim`` is the hypothesis.
* ``R<n>	supports Arg1:T<a> Arg2:T<b>`` becomes ``T<a>`` supports ``T<b>``,
  ``attacks`` an attack (rebut); the relation keeps the ``R`` id. AbstRCT's names
  ``Support``, ``Attack`` and ``Partial-Attack`` read the same way.
* ``A<n>	Stance T<c> For|Against`` is the claim's stance towards the major
  claim. The corpus often also writes it as a relation from the claim to a
  major claim: then the relation stands for both (where they disagree, the
  relation is kept and a ``stance-conflict`` warning names both lines). Only a
  stance with no such relation becomes one: ``For`` a support of the
  hypothesis, ``Against`` an attack (rebut), relation id ``A<n>``. A major
  claim's own stance is ignored.
* **roles** are not annotated in the essays; they are derived: major claims
  are the proponent's, and a unit takes the role of what it supports (the
  opposite of what it attacks), so ``For`` claims are the proponent's and
  ``Against`` claims the opponent's. Units the rule cannot reach keep role
  ``none``; a claim or premise with no stance and no relation stays, with an
  ``unconnected-claim`` warning.
* a faulty line (bad offsets, an unknown argument, a malformed stance) is left
  out with a warning naming it; the rest of the document is imported.
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
# The essay corpus's relation names, and AbstRCT's (Support / Attack / Partial-Attack).
_RELATION_TYPES = {"supports": "support", "attacks": "attack",
                   "Support": "support", "Attack": "attack", "Partial-Attack": "attack"}
_OPPOSITE = {"proponent": "opponent", "opponent": "proponent"}
_SPAN = re.compile(r"^(\d+) (\d+)$")


def read_brat(path: str | Path, *, evidence_rule: str = "leaf_premises") -> ImportResult:
    """Read ``X.ann`` and, when present, ``X.txt`` beside it."""
    path = Path(path)
    ann = read_text(path)
    txt_path = path.with_suffix(".txt")
    text = read_text(txt_path) if txt_path.is_file() else None
    return parse_brat(ann, text, str(path), evidence_rule=evidence_rule)


def parse_brat(ann: str, text: str | None, file: str = "<input>", *,
               evidence_rule: str = "leaf_premises") -> ImportResult:
    """Parse one ``.ann`` document (``text`` is its ``.txt``, or None when absent)."""
    stem = Path(file).stem
    title = next((line.strip() for line in (text or "").splitlines() if line.strip()), stem)
    draft = Draft(file=file, id=stem, title=title)
    if text is None:
        draft.warn("file", "no .txt beside it: spans are not checked and the title is the file name",
                   cause="no-text-file")
    reader = _Reader(file, text, draft)
    for lineno, line in enumerate(ann.splitlines(), 1):
        if line.strip() and not line.startswith("#"):
            reader.line(lineno, line)
    units = reader.units
    if not units:
        raise FormatError(file, "document", "holds no MajorClaim, Claim or Premise annotation", "no-claims")

    ordered = sorted(units, key=lambda u: (reader.starts[u], u))
    majors = [u for u in ordered if units[u]["type"] == "MajorClaim"]
    hypothesis = (majors or [u for u in ordered if units[u]["type"] == "Claim"] or ordered)[0]
    heads = set(majors) | {hypothesis}
    relations = reader.relations + _stance_relations(reader, heads, hypothesis, draft)
    for rel in relations:
        if rel["kind"] == "attack":
            rel["attack_type"] = "rebut"
    _derive_roles(units, relations, heads)
    connected = {r[end] for r in relations for end in ("source", "target")} | {hypothesis}
    for u in ordered:
        if u not in connected and units[u]["type"] != "MajorClaim":
            draft.warn(units[u]["at"], f"{units[u]['type']} has no stance and no relation; it stays unconnected",
                       cause="unconnected-claim")
    draft.claims = [{k: units[u][k] for k in ("id", "text", "role")} for u in ordered]
    draft.relations = relations
    draft.hypothesis = hypothesis
    draft.metadata = {
        "format": "brat",
        "source_file": Path(file).name,
        "unit_types": {u: units[u]["type"] for u in ordered},
        "stances": {u: s["stance"] for u, s in reader.stances.items()},
        "rephrases": [{"id": f"restates-{m}", "source": m, "target": hypothesis, "scheme": "MajorClaim restatement"}
                      for m in majors[1:]],
    }
    return build_sno(draft, evidence_rule)


class _Reader:
    """Reads ``.ann`` lines into units, relations and stances, leaving out faulty lines with a warning."""

    def __init__(self, file: str, text: str | None, draft: Draft):
        self.file, self.text, self.draft = file, text, draft
        self.units: dict[str, dict[str, Any]] = {}
        self.starts: dict[str, int] = {}
        self.relations: list[dict[str, Any]] = []
        self.stances: dict[str, dict[str, str]] = {}

    def line(self, lineno: int, line: str) -> None:
        fields = line.split("\t")
        ident = fields[0].strip()
        element = f"line {lineno} ({ident})"
        kind = {"T": "unit", "R": "relation", "A": "attribute"}.get(ident[:1])
        head = fields[1].split() if len(fields) > 1 else []
        cause = "bad-unit" if kind == "unit" else "bad-relation"
        if kind is None:
            self.draft.warn(element, "annotation kind not used for arguments; ignored", cause="not-argument")
        elif not head:
            self.draft.warn(element, "has no annotation type after a tab; left out", cause=cause)
        elif kind == "unit":
            self._unit(element, head[0], fields)
        elif kind == "relation":
            self._relation(element, ident, head)
        else:
            self._stance(element, ident, head)

    def _unit(self, element: str, unit_type: str, fields: list[str]) -> None:
        draft = self.draft
        if unit_type not in _UNIT_TYPES:
            draft.warn(element, f"unit type {unit_type!r} is not one of {', '.join(_UNIT_TYPES)}; ignored",
                       cause="not-argument")
            return
        spans = _spans(fields[1][fields[1].index(unit_type) + len(unit_type):].strip())
        if isinstance(spans, str):
            draft.warn(element, f"{spans}; left out", cause="bad-unit")
            return
        ident = fields[0].strip()
        if ident in self.units:
            draft.warn(element, f"id {ident} is already used by {self.units[ident]['at']}; left out", cause="bad-unit")
            return
        written = _squash("\t".join(fields[2:]))    # a component holding a tab spans several fields
        found = None
        if self.text is not None:
            if spans[-1][1] > len(self.text):
                draft.warn(element, f"offset {spans[-1][1]} is beyond the end of the .txt "
                           f"({len(self.text)} characters)", cause="span-mismatch")
            else:
                found = _squash(" ".join(self.text[a:b] for a, b in spans))
                if written and found != written:
                    draft.warn(element, f"span text differs from the .txt at {spans[0][0]}: {found[:40]!r}; "
                               "the .ann text is kept", cause="span-mismatch")
        if not (written or found):
            draft.warn(element, "has no span text (none after a tab, and no .txt to slice); left out",
                       cause="bad-unit")
            return
        self.units[ident] = {"id": ident, "text": written or found, "role": "none", "type": unit_type, "at": element}
        self.starts[ident] = spans[0][0]

    def _relation(self, element: str, ident: str, head: list[str]) -> None:
        if head[0] not in _RELATION_TYPES:
            self.draft.warn(element, f"relation type {head[0]!r} is not one of {', '.join(_RELATION_TYPES)}; ignored",
                            cause="not-argument")
            return
        args = dict(a.split(":", 1) for a in head[1:] if ":" in a)
        if not args.get("Arg1") or not args.get("Arg2"):
            self.draft.warn(element, "a relation needs Arg1:<id> and Arg2:<id>; left out", cause="bad-relation")
            return
        self.relations.append({"id": ident, "source": args["Arg1"], "target": args["Arg2"],
                               "kind": _RELATION_TYPES[head[0]], "at": element})

    def _stance(self, element: str, ident: str, head: list[str]) -> None:
        draft = self.draft
        if head[0] != "Stance":
            draft.warn(element, f"attribute {head[0]!r} is not Stance; ignored", cause="not-argument")
        elif len(head) != 3 or head[2] not in ("For", "Against"):
            draft.warn(element, "expected 'Stance T<n> For|Against'; left out", cause="bad-relation")
        elif head[1] in self.stances:
            first = self.stances[head[1]]
            same = first["stance"] == head[2]
            draft.warn(element, f"{head[1]} already has stance {first['stance']} ({first['at']}); "
                       + ("merged" if same else "the first is kept"),
                       cause="duplicate-relation" if same else "conflicting-relation")
        else:
            self.stances[head[1]] = {"id": ident, "stance": head[2], "at": element}


def _stance_relations(reader: _Reader, majors: set[str], hypothesis: str, draft: Draft) -> list[dict[str, Any]]:
    """Relations for the stances the document does not already state as relations (see the module doc)."""
    added = []
    for unit_id, stance in reader.stances.items():
        if unit_id in majors:
            continue
        if unit_id not in reader.units:
            draft.warn(stance["at"], f"{unit_id!r} is not a MajorClaim, Claim or Premise; left out",
                       cause="dangling-relation")
            continue
        kind = "support" if stance["stance"] == "For" else "attack"
        explicit = [r for r in reader.relations if r["source"] == unit_id and r["target"] in majors]
        for rel in explicit:
            if rel["kind"] != kind:
                draft.warn(stance["at"], f"stance {stance['stance']} of {unit_id} disagrees with {rel['at']} "
                           f"({unit_id} {rel['kind']}s {rel['target']}); the relation is kept", cause="stance-conflict")
        if not explicit:
            added.append({"id": stance["id"], "source": unit_id, "target": hypothesis, "kind": kind,
                          "at": stance["at"]})
    return added


def _spans(field: str) -> list[tuple[int, int]] | str:
    """``START END`` pairs separated by ``;``, or what is wrong with them."""
    spans = []
    for part in field.split(";"):
        match = _SPAN.match(part.strip())
        if not match:
            return f"offsets {field!r} are not 'START END' pairs"
        start, end = int(match[1]), int(match[2])
        if end < start:
            return f"offset end {end} is before start {start}"
        spans.append((start, end))
    return spans


def _squash(text: str) -> str:
    return " ".join(text.split())


def _derive_roles(units: dict[str, dict[str, Any]], relations: list[dict[str, Any]], majors: set[str]) -> None:
    """Proponent/opponent by the rule in the module docstring, spreading from the major claims."""
    for unit_id in majors:
        units[unit_id]["role"] = "proponent"
    changed = True
    while changed:
        changed = False
        for rel in relations:
            src, dst = units.get(rel["source"]), units.get(rel["target"])
            if src is None or dst is None or src["role"] != "none" or dst["role"] == "none":
                continue
            src["role"] = dst["role"] if rel["kind"] == "support" else _OPPOSITE[dst["role"]]
            changed = True
