"""The argumentative microtexts XML (Peldszus & Stede, ``arggraph.dtd``) as SNOs.

Mapping (one ``<arggraph>`` file is one SNO, its id the graph id):

* every ``<adu>`` is a claim (id kept); its text is the text of the ``<edu>``
  segments joined to it by ``seg`` edges, in document order; ``type="pro"``
  becomes role ``proponent``, ``type="opp"`` role ``opponent``;
* ``sup`` and ``exa`` (support by example) edges become ``support`` relations,
  ``reb`` an ``attack``/``rebut`` on a claim, ``und`` an ``attack``/``undercut``
  whose target is the undercut edge's id (edge ids are kept as relation ids);
* **linked premises**: an ``add`` edge joins its source to the edge it targets.
  It becomes a relation of its own (the ``add`` edge's id) with the same kind,
  attack type and target as the edge it joins, and
  ``metadata["linked_premises"]`` maps the joined edge's id to every relation of
  the group, first the joined edge, then the ``add`` edges in file order;
* ``metadata["edge_types"]`` keeps each relation's original edge type, so
  ``exa`` and ``add`` stay distinguishable; ``topic_id`` and ``stance`` are kept;
* the hypothesis is the central claim: the ADU with no outgoing relation edge
  (if several, the one most other units argue towards, then the first).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from cns_core.formats.base import Draft, FormatError, ImportResult, build_sno, pick_hypothesis, read_text

__all__ = ["SUFFIXES", "parse_microtext", "read_microtext"]

SUFFIXES: tuple[str, ...] = (".xml",)
_ROLES = {"pro": "proponent", "opp": "opponent"}
_EDGE_TYPES = ("seg", "sup", "exa", "reb", "und", "add")


def read_microtext(path: str | Path, *, evidence_rule: str = "leaf_premises") -> ImportResult:
    path = Path(path)
    return parse_microtext(read_text(path), str(path), evidence_rule=evidence_rule)


def _element(tag: str, node: ET.Element, index: int) -> str:
    ident = node.get("id")
    return f'<{tag} id="{ident}">' if ident else f"<{tag}> #{index + 1}"


class _Skip(Exception):
    """One element cannot be used: it is left out with a warning (``cause``), the document goes on."""

    def __init__(self, element: str, problem: str, cause: str):
        super().__init__(problem)
        self.element, self.problem, self.cause = element, problem, cause

    def report(self, draft: Draft) -> None:
        """The warning that says this element was left out."""
        draft.warn(self.element, f"{self.problem}; left out", cause=self.cause)


def _required(tag: str, node: ET.Element, index: int, attr: str, cause: str) -> str:
    value = (node.get(attr) or "").strip()
    if not value:
        raise _Skip(_element(tag, node, index), f"missing attribute {attr!r}", cause)
    return value


def _parse_xml(text: str, file: str) -> ET.Element:
    if re.search(r"<!(ENTITY|DOCTYPE[^>]*\[)", text):
        raise FormatError(file, "<!DOCTYPE>", "entity declarations are not allowed", "syntax")
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        line, col = exc.position
        reason = str(exc).split(":")[0]
        raise FormatError(file, f"line {line} column {col + 1}", f"not well-formed XML ({reason})", "syntax") from None
    if root.tag != "arggraph":
        raise FormatError(file, f"<{root.tag}>", "the root element must be <arggraph>")
    return root


def parse_microtext(text: str, file: str = "<input>", *, evidence_rule: str = "leaf_premises") -> ImportResult:
    """Parse one ``<arggraph>`` document; a faulty element is left out with a warning naming it."""
    root = _parse_xml(text, file)
    graph_id = (root.get("id") or "").strip() or Path(file).stem
    draft = Draft(file=file, id=graph_id, title=graph_id)

    edus: dict[str, str] = {}
    for i, node in enumerate(root.iter("edu")):
        try:
            eid = _required("edu", node, i, "id", "bad-unit")
            if eid in edus:
                raise _Skip(_element("edu", node, i), "duplicate id", "bad-unit")
            edus[eid] = " ".join((node.text or "").split())
        except _Skip as err:
            err.report(draft)

    adus: dict[str, str] = {}
    for i, node in enumerate(root.iter("adu")):
        try:
            aid = _required("adu", node, i, "id", "bad-unit")
            if aid in adus or aid in edus:
                raise _Skip(_element("adu", node, i), "duplicate id", "bad-unit")
        except _Skip as err:
            err.report(draft)
            continue
        kind = (node.get("type") or "").strip()
        if kind not in _ROLES:
            draft.warn(_element("adu", node, i), f"type must be 'pro' or 'opp' (got {kind!r}); role none",
                       cause="bad-unit")
        adus[aid] = _ROLES.get(kind, "none")
    if not adus:
        raise FormatError(file, "<arggraph>", "holds no <adu> elements", "no-claims")

    edges: dict[str, dict[str, str]] = {}
    order: list[str] = []
    for i, node in enumerate(root.iter("edge")):
        element = _element("edge", node, i)
        try:
            ident = _required("edge", node, i, "id", "bad-relation")
            if ident in edges or ident in adus or ident in edus:
                raise _Skip(element, "duplicate id", "bad-relation")
            edge = {attr: _required("edge", node, i, attr, "bad-relation") for attr in ("src", "trg", "type")}
            if edge["type"] not in _EDGE_TYPES:
                raise _Skip(element, f"type must be one of {', '.join(_EDGE_TYPES)} (got {edge['type']!r})",
                            "bad-relation")
        except _Skip as err:
            err.report(draft)
            continue
        edge["element"] = element
        edges[ident] = edge
        order.append(ident)

    segments: dict[str, list[str]] = {aid: [] for aid in adus}
    for ident in order:
        edge = edges[ident]
        if edge["type"] != "seg":
            continue
        if edge["src"] not in edus:
            draft.warn(edge["element"], f"src {edge['src']!r} is not an <edu>; left out", cause="dangling-relation")
        elif edge["trg"] not in adus:
            draft.warn(edge["element"], f"trg {edge['trg']!r} is not an <adu>; left out", cause="dangling-relation")
        else:
            segments[edge["trg"]].append(edge["src"])
    edu_order = {eid: n for n, eid in enumerate(edus)}
    for aid, role in list(adus.items()):
        parts = [edus[e] for e in sorted(segments[aid], key=edu_order.__getitem__) if edus[e]]
        if not parts:
            draft.warn(f'<adu id="{aid}">', "has no text: no seg edge joins an <edu> with text to it; left out",
                       cause="bad-unit")
            del adus[aid]
            continue
        draft.claims.append({"id": aid, "text": " ".join(parts), "role": role})
    if not adus:
        raise FormatError(file, "<arggraph>", "holds no <adu> with text", "no-claims")

    relations = _relations(edges, order, adus, draft)
    draft.relations = [relations[i] for i in order if i in relations]
    draft.metadata = {
        "format": "microtexts",
        "source_file": Path(file).name,
        "topic_id": root.get("topic_id"),
        "stance": root.get("stance"),
        "edge_types": {i: edges[i]["type"] for i in order if i in relations},
        "linked_premises": draft.metadata.get("linked_premises", {}),
    }
    arguing = {r["source"] for r in draft.relations}
    roots = [aid for aid in adus if aid not in arguing]
    if len(roots) != 1:
        draft.warn("<arggraph>", f"{len(roots)} ADUs have no outgoing edge; the hypothesis is chosen among "
                   f"{'them' if roots else 'all ADUs'} by the number of units arguing towards it",
                   cause="hypothesis-choice")
    draft.hypothesis = pick_hypothesis(roots or list(adus), draft.relations)
    return build_sno(draft, evidence_rule)


def _relations(edges: dict[str, dict[str, str]], order: list[str], adus: dict[str, str],
               draft: Draft) -> dict[str, dict[str, Any]]:
    """Resolve every non-``seg`` edge into a relation (``add`` edges need their joined edge first).

    An edge that cannot be one (a wrong end, an ``add`` joining a left-out edge) is left out with a warning.
    """
    resolved: dict[str, dict[str, Any]] = {}
    failed: set[str] = set()
    linked: dict[str, list[str]] = {}

    def resolve(ident: str, trail: tuple[str, ...]) -> dict[str, Any]:
        if ident in resolved:
            return resolved[ident]
        edge = edges[ident]
        element, kind, src, trg = edge["element"], edge["type"], edge["src"], edge["trg"]
        if src not in adus:
            raise _Skip(element, f"src {src!r} is not an <adu> with text", "dangling-relation")
        targets_edge = trg in edges and edges[trg]["type"] != "seg"
        if trg not in adus and not targets_edge:
            what = "a seg edge" if trg in edges else "not an <adu> with text or a relation edge"
            raise _Skip(element, f"trg {trg!r} is {what}", "dangling-relation")
        if kind in ("sup", "exa"):
            if targets_edge:
                raise _Skip(element, f"a {kind} edge must target an <adu>, {trg!r} is an edge", "bad-relation")
            rel = {"id": ident, "source": src, "target": trg, "kind": "support"}
        elif kind == "reb":
            if targets_edge:
                draft.warn(element, f"a reb edge targets the edge {trg!r}; read as an undercut", cause="bad-relation")
            rel = {"id": ident, "source": src, "target": trg, "kind": "attack",
                   "attack_type": "undercut" if targets_edge else "rebut"}
        elif kind == "und":
            if not targets_edge:
                raise _Skip(element, f"an und edge must target an edge, {trg!r} is an <adu>", "bad-relation")
            rel = {"id": ident, "source": src, "target": trg, "kind": "attack", "attack_type": "undercut"}
        else:  # add: a linked premise joins the edge it targets
            if not targets_edge:
                raise _Skip(element, f"an add edge must target an edge, {trg!r} is an <adu>", "bad-relation")
            if trg in trail:
                raise _Skip(element, "add edges form a cycle: " + " -> ".join((*trail, trg)), "bad-relation")
            if trg in failed:
                raise _Skip(element, f"joins the edge {trg!r}, which was left out", "dangling-relation")
            try:
                joined = resolve(trg, (*trail, ident))
            except _Skip as err:   # names the joined edge (resolve re-raises under its own element): say so once
                failed.add(trg)
                err.report(draft)
                raise _Skip(element, f"joins the edge {trg!r}, which was left out", "dangling-relation") from None
            rel = {**joined, "id": ident, "source": src}
            primary = next((p for p, group in linked.items() if trg in group), trg)
            linked.setdefault(primary, [primary]).append(ident)
        rel["at"] = element
        resolved[ident] = rel
        return rel

    for ident in order:
        if edges[ident]["type"] != "seg" and ident not in resolved and ident not in failed:
            try:
                resolve(ident, ())
            except _Skip as err:
                failed.add(ident)
                err.report(draft)
    draft.metadata["linked_premises"] = linked
    return resolved
