"""A documented subset of Argdown (https://argdown.org) to SNO and back.

What is read (one ``.argdown``/``.ad`` file is one SNO):

* front matter between two ``===`` lines (YAML): ``id``, ``title``, ``hypothesis``
  (a statement title); ``#`` headings (the first one is the title when the front
  matter gives none); ``//`` line and ``/* */`` block comments.
* statements ``[Title]: text`` and arguments ``<Title>: text`` both become
  claims with the title as id; a bare ``[Title]`` refers to one (its text is the
  title if never given), a line of plain text is an untitled statement
  (``anon-<n>``). The first text given for a title wins (a different one later is
  a warning). A trailing ``{...}`` is YAML data: ``role`` (proponent, opponent,
  none), and for evidence ``source`` and ``validity``; ``#tags`` are dropped,
  except ``#evidence``, which makes the statement an SNO evidence item (it may not
  take part in relations). ``\\`` escapes the next character.
* relations are written under an element, indented deeper than it:
  ``+ X`` / ``<+ X`` (X supports the element above), ``- X`` / ``<- X`` (X
  attacks it: a rebut), ``+> X`` / ``-> X`` (the element above supports /
  attacks X), ``_ X`` / ``<_ X`` (X undercuts: nested under a relation line it
  undercuts *that relation*; under a plain element it undercuts the element's
  only outgoing relation) and ``_> X`` (the element above undercuts X's only
  outgoing relation). Relations are trees: children may have children.
  The same relation written twice is one relation; relation ids are ``r1``, ``r2``...
  A second, different relation between the same two statements, a self-loop or
  an ambiguous undercut is left out with a warning naming its line.
* the hypothesis is the front matter's, else the statement that the most claims
  argue towards among those that argue for nothing, ties to the first.

Not read, with an error naming the line: premise-conclusion structures
(``(1)`` lines, ``----`` inference lines) and contradictions (``><``).

:func:`to_argdown` writes front matter (id, title, hypothesis), every claim and
evidence item as a statement titled by its id, then each claim with its
incoming relations, undercuts nested under the relation they undercut, so
``parse_argdown(to_argdown(sno))`` keeps claims, roles, evidence and relations
(relation ids become ``r<n>``; newlines in texts become spaces).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from cns_core.formats.base import (
    Draft,
    FormatError,
    FormatWarning,
    ImportResult,
    build_sno,
    pick_hypothesis,
    read_text,
)
from cns_core.sno import SNO, Relation

__all__ = ["SUFFIXES", "parse_argdown", "read_argdown", "to_argdown"]

SUFFIXES: tuple[str, ...] = (".argdown", ".ad")
_SYMBOL = re.compile(r"(<\+|<-|<_|\+>|->|_>|><|\+|-|_)(?=\s)")
_PCS = re.compile(r"^\s*(\(\d+\)|-{2,}.*$)")
_BLOCK_COMMENT = re.compile(r"(?<!\\)/\*.*?\*/", re.DOTALL)
_TAG = re.compile(r"(?<!\S)#(\([^)]*\)|[A-Za-z][\w-]*)")
_ROLES = ("proponent", "opponent", "none")
_ESCAPE = re.compile(r"\\(.)")


def read_argdown(path: str | Path, *, evidence_rule: str = "leaf_premises") -> ImportResult:
    path = Path(path)
    return parse_argdown(read_text(path), str(path), evidence_rule=evidence_rule)


@dataclass
class _Element:
    id: str
    line: int
    text: str | None = None
    data: dict[str, Any] = field(default_factory=dict)
    evidence: bool = False


@dataclass
class _Raw:
    """A relation as written, before duplicates are merged and undercut targets resolved."""

    source: str
    kind: str
    line: int
    target_claim: str | None = None     # support / rebut
    target_raw: int | None = None       # undercut of the relation written on the parent line
    target_out_of: str | None = None    # undercut of an element's only outgoing relation


class _Reader:
    def __init__(self, text: str, file: str):
        self.file = file
        self.text = text
        self.elements: dict[str, _Element] = {}
        self.kinds: dict[str, str] = {}     # id -> "statement" | "argument"
        self.raws: list[_Raw] = []
        self.front: dict[str, Any] = {}
        self.heading: str | None = None
        self.anonymous = 0
        self.warnings: list[FormatWarning] = []

    def error(self, line: int, problem: str, cause: str = "syntax") -> FormatError:
        return FormatError(self.file, f"line {line}", problem, cause)

    def warn(self, line: int, problem: str, cause: str) -> None:
        self.warnings.append(FormatWarning(cause, f"line {line}", problem))

    # ----- lines --------------------------------------------------------
    def read(self) -> None:
        lines = self.text.splitlines()
        start = self._front_matter(lines)   # lines taken by the front matter
        body = _BLOCK_COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), "\n".join(lines[start:]))
        lines = lines[:start] + body.split("\n")
        stack: list[tuple[int, str, int | None]] = []   # (indent, element id, raw relation index)
        previous: _Element | None = None
        for lineno in range(start + 1, len(lines) + 1):   # 1-based
            line = _strip_line_comment(lines[lineno - 1]).expandtabs(4).rstrip()
            if not line.strip():
                previous = None
                continue
            if re.match(r"#+\s", line):
                self.heading = self.heading or self._text(line.lstrip("#"), lineno)[0]
                stack, previous = [], None
                continue
            if _PCS.match(line):
                raise self.error(lineno, "premise-conclusion structures ((1) ... ----) are not supported; "
                                 "write premises as relations (+ / -)")
            indent = len(line) - len(line.lstrip())
            rest = line.strip()
            symbol_match = _SYMBOL.match(rest)
            if symbol_match is None and indent > 0 and previous is not None and rest[:1] not in "[<":
                previous.text = f"{previous.text or ''} {self._text(rest, lineno)[0]}".strip()
                continue
            while stack and stack[-1][0] >= indent:
                stack.pop()
            if symbol_match is None:
                if indent > 0 and stack:
                    raise self.error(lineno, "an indented element needs a relation symbol (+, -, +>, ->, _, ...)")
                element = self._element(rest, lineno)
                stack = [(indent, element.id, None)]
                previous = element
                continue
            symbol = symbol_match.group(1)
            if not stack:
                raise self.error(lineno, f"relation {symbol!r} has no element above it to relate to")
            element = self._element(rest[symbol_match.end():].strip(), lineno)
            parent_indent, parent, parent_raw = stack[-1]
            raw_index = self._relation(symbol, parent, parent_raw, element.id, lineno)
            stack.append((indent, element.id, raw_index))
            previous = element

    def _front_matter(self, lines: list[str]) -> int:
        first = next((i for i, line in enumerate(lines) if line.strip()), None)
        if first is None or lines[first].strip() != "===":
            return 0
        end = next((i for i in range(first + 1, len(lines)) if lines[i].strip() == "==="), None)
        if end is None:
            raise self.error(first + 1, "front matter opened with === is never closed")
        try:
            data = yaml.safe_load("\n".join(lines[first + 1:end])) or {}
        except yaml.YAMLError as exc:
            raise FormatError(self.file, "front matter", f"not valid YAML: {getattr(exc, 'problem', exc)}",
                              "syntax") from None
        if not isinstance(data, dict):
            raise FormatError(self.file, "front matter", "must be a mapping (key: value lines)", "syntax")
        self.front = data
        return end + 1

    def _relation(self, symbol: str, parent: str, parent_raw: int | None, child: str, line: int) -> int:
        if symbol == "><":
            raise self.error(line, "contradictions (><) are not supported")
        if symbol in ("+", "<+", "-", "<-"):
            raw = _Raw(source=child, kind="support" if "+" in symbol else "attack", line=line, target_claim=parent)
        elif symbol in ("+>", "->"):
            raw = _Raw(source=parent, kind="support" if "+" in symbol else "attack", line=line, target_claim=child)
        elif symbol in ("_", "<_"):
            raw = _Raw(source=child, kind="undercut", line=line, target_raw=parent_raw,
                       target_out_of=parent if parent_raw is None else None)
        else:  # _>
            raw = _Raw(source=parent, kind="undercut", line=line, target_out_of=child)
        self.raws.append(raw)
        return len(self.raws) - 1

    # ----- elements -----------------------------------------------------
    def _element(self, spec: str, line: int) -> _Element:
        if spec[:1] in ("[", "<"):
            closing = "]" if spec[0] == "[" else ">"
            title, end = _read_title(spec, closing)
            if end is None:
                raise self.error(line, f"title opened with {spec[0]!r} is never closed with {closing!r}")
            if not title.strip():
                raise self.error(line, "empty title")
            title = title.strip()
            kind = "statement" if spec[0] == "[" else "argument"
            after = spec[end + 1:].strip()
            body = after[1:].strip() if after.startswith(":") else after
            text, tags, data = self._text(body, line)
            if not after.startswith(":") and text:
                raise self.error(line, f"text after {spec[0]}{title}{closing} needs a colon: "
                                 f"{spec[0]}{title}{closing}: text")
            known = self.kinds.setdefault(title, kind)
            if known != kind:
                raise self.error(line, f"{title!r} is used both as a statement and as an argument")
        else:
            text, tags, data = self._text(spec, line)
            if not text:
                raise self.error(line, "expected [Title], <Title> or statement text")
            self.anonymous += 1
            title = f"anon-{self.anonymous}"
            self.kinds[title] = "statement"
        element = self.elements.setdefault(title, _Element(id=title, line=line))
        if text:
            if element.text is None:
                element.text = text
            elif element.text != text:
                self.warn(line, f"[{title}] already has a different text (line {element.line}); the first is kept",
                          "text-conflict")
        element.data.update(data)
        element.evidence = element.evidence or "evidence" in tags
        return element

    def _text(self, body: str, line: int) -> tuple[str, set[str], dict[str, Any]]:
        """Unescaped text, its tags and its trailing ``{...}`` data."""
        data: dict[str, Any] = {}
        starts = _data_starts(body)
        for brace in starts:   # the first that parses: a "{" inside the data's strings is no start
            try:
                loaded = yaml.safe_load(body[brace:])
            except yaml.YAMLError:
                continue
            if not isinstance(loaded, dict):
                raise self.error(line, f"data {body[brace:]!r} must be a mapping")
            data, body = loaded, body[:brace]
            break
        else:
            if starts:
                raise self.error(line, f"data {body[starts[0]:]!r} is not valid YAML")
        tags = {t.strip("()").strip() for t in _TAG.findall(body)}   # an escaped \\# is no tag
        text = _unescape(_TAG.sub("", body))
        return " ".join(text.split()), tags, data

    # ----- the SNO ------------------------------------------------------
    def draft(self) -> Draft:
        front = self.front
        draft = Draft(file=self.file, id=str(front.get("id") or Path(self.file).stem),
                      title=str(front.get("title") or self.heading or Path(self.file).stem))
        relations = self._resolve()
        draft.warnings.extend(self.warnings)
        in_relations = {r["source"] for r in relations} | {r["target"] for r in relations}
        for element in self.elements.values():
            text = element.text or element.id
            if element.evidence:
                if element.id in in_relations:
                    raise self.error(element.line, f"evidence [{element.id}] cannot take part in relations "
                                     "(drop #evidence to make it a claim)", "structure")
                item: dict[str, Any] = {"id": element.id, "text": text,
                                        "source": str(element.data.get("source") or "")}
                if "validity" in element.data:
                    item["validity"] = _validity(element, self)
                draft.evidence.append(item)
                continue
            role = element.data.get("role", "none")
            if role not in _ROLES:
                raise self.error(element.line, f"role must be one of {', '.join(_ROLES)} (got {role!r})", "structure")
            draft.claims.append({"id": element.id, "text": text, "role": role})
        draft.relations = relations
        claim_ids = [c["id"] for c in draft.claims]
        wanted = front.get("hypothesis")
        if wanted is not None:
            if str(wanted) not in claim_ids:
                raise FormatError(self.file, "front matter", f"hypothesis {wanted!r} is not a statement", "structure")
            draft.hypothesis = str(wanted)
        else:
            arguing = {r["source"] for r in relations}
            draft.hypothesis = pick_hypothesis([c for c in claim_ids if c not in arguing] or claim_ids, relations)
        draft.metadata = {"format": "argdown", "source_file": Path(self.file).name,
                          "arguments": [i for i, k in self.kinds.items() if k == "argument"]}
        return draft

    def _resolve(self) -> list[dict[str, Any]]:
        """Relations with ids ``r1``, ``r2``...; the same relation written twice is one.

        Each carries ``at`` (its line), so that :func:`build_sno`'s repairs (a second,
        different relation between the same statements; a self-loop) name the line.
        """
        taken = set(self.elements)
        counter = 0

        def new_id() -> str:
            nonlocal counter
            counter += 1
            while f"r{counter}" in taken:
                counter += 1
            return f"r{counter}"

        relations: list[dict[str, Any]] = []
        alias: dict[int, str] = {}
        seen: dict[tuple, str] = {}
        for index, raw in enumerate(self.raws):   # supports and rebuts first: undercuts point at them
            if raw.kind == "undercut":
                continue
            key = (raw.source, raw.target_claim, raw.kind)
            if key not in seen:
                seen[key] = new_id()
                rel = {"id": seen[key], "source": raw.source, "target": raw.target_claim, "kind": raw.kind,
                       "at": f"line {raw.line}"}
                if raw.kind == "attack":
                    rel["attack_type"] = "rebut"
                relations.append(rel)
            alias[index] = seen[key]
        for index, raw in enumerate(self.raws):   # in writing order: a nested undercut follows its parent
            if raw.kind != "undercut":
                continue
            if raw.target_raw is not None:
                target = alias.get(raw.target_raw)
                if target is None:
                    self.warn(raw.line, "undercuts an undercut that was left out; left out", "dangling-relation")
                    continue
            else:
                outs = [r["id"] for r in relations if r["source"] == raw.target_out_of and
                        r.get("attack_type") != "undercut"]
                if len(outs) != 1:
                    self.warn(raw.line, f"the undercut of [{raw.target_out_of}] is ambiguous: it has {len(outs)} "
                              "outgoing relations (nest the undercut under the relation line); left out",
                              "bad-relation")
                    continue
                target = outs[0]
            key = (raw.source, target, "undercut")
            if key not in seen:
                seen[key] = new_id()
                relations.append({"id": seen[key], "source": raw.source, "target": target, "kind": "attack",
                                  "attack_type": "undercut", "at": f"line {raw.line}"})
            alias[index] = seen[key]
        return relations


def _validity(element: _Element, reader: _Reader) -> float:
    try:
        return float(element.data["validity"])
    except (TypeError, ValueError):
        raise reader.error(element.line, f"validity must be a number (got {element.data['validity']!r})",
                           "structure") from None


def _strip_line_comment(line: str) -> str:
    """Cut a ``//`` comment (at the line start or after whitespace, so URLs survive)."""
    match = re.search(r"(?<!\S)//", line)
    return line[:match.start()] if match else line


def _unescape(text: str) -> str:
    return _ESCAPE.sub(r"\1", text)


def _read_title(spec: str, closing: str) -> tuple[str, int | None]:
    """The title in ``[...]`` / ``<...>`` (backslash escapes allowed) and the index of its closing mark."""
    mark = re.escape(closing)
    match = re.match(rf"{re.escape(spec[0])}((?:\\.|[^\\{mark}])*){mark}", spec)
    return (_unescape(match.group(1)), match.end() - 1) if match else ("", None)


def _data_starts(body: str) -> list[int]:
    """Where a trailing ``{...}`` may open: unescaped ``{`` at the start or after whitespace."""
    if not body.rstrip().endswith("}") or body.rstrip().endswith("\\}"):
        return []
    return [m.start() for m in re.finditer(r"(?<![^\s])\{", body)]


def parse_argdown(text: str, file: str = "<input>", *, evidence_rule: str = "leaf_premises") -> ImportResult:
    """Parse one Argdown document (the subset in the module docstring)."""
    reader = _Reader(text, file)
    reader.read()
    if not reader.elements:
        raise FormatError(file, "document", "holds no statements", "no-claims")
    return build_sno(reader.draft(), evidence_rule)


# ----- export ---------------------------------------------------------------

def _escape_text(text: str) -> str:
    text = " ".join(text.split()).replace("\\", "\\\\")
    for char in "#{}":
        text = text.replace(char, "\\" + char)
    return text.replace("//", "/\\/").replace("/*", "/\\*")


def _data(**values: Any) -> str:
    """``{...}`` data as JSON (valid YAML); ``/`` as ``\\u002f`` so no comment can start inside it."""
    return json.dumps(values, ensure_ascii=False).replace("/", "\\u002f")


def _title(ident: str) -> str:
    return "[" + " ".join(ident.split()).replace("\\", "\\\\").replace("]", "\\]") + "]"


def to_argdown(sno: SNO) -> str:
    """The SNO in the Argdown subset that :func:`parse_argdown` reads back."""
    front = yaml.safe_dump({"id": sno.id, "title": sno.title, "hypothesis": sno.hypothesis},
                           sort_keys=False, allow_unicode=True, width=10_000).strip()
    out = ["===", front, "===", ""]
    if sno.title.strip():
        out += [f"# {_escape_text(sno.title)}", ""]
    for claim in sno.claims:
        data = f" {_data(role=claim.role)}" if claim.role != "none" else ""
        out.append(f"{_title(claim.id)}: {_escape_text(claim.text)}{data}")
    if sno.evidence:
        out.append("")
        for ev in sno.evidence:
            data = {k: v for k, v in (("source", ev.source), ("validity", ev.validity)) if v not in ("", 1.0)}
            suffix = f" {_data(**data)}" if data else ""
            out.append(f"{_title(ev.id)}: {_escape_text(ev.text)} #evidence{suffix}")

    undercuts: dict[str, list[Relation]] = {}
    incoming: dict[str, list[Relation]] = {}
    for rel in sno.relations:
        (undercuts if rel.attack_type == "undercut" else incoming).setdefault(rel.target, []).append(rel)

    def nested(rel: Relation, depth: int, trail: frozenset[str]) -> None:
        for under in undercuts.get(rel.id, []):
            if under.id in trail:
                continue
            out.append(f"{'  ' * depth}<_ {_title(under.source)}")
            nested(under, depth + 1, trail | {under.id})

    for claim in sno.claims:
        if claim.id not in incoming:
            continue
        out += ["", _title(claim.id)]
        for rel in incoming[claim.id]:
            out.append(f"  {'<+' if rel.kind == 'support' else '<-'} {_title(rel.source)}")
            nested(rel, 2, frozenset({rel.id}))
    return "\n".join(out) + "\n"
