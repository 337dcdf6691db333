"""AIF JSON (AIFdb, OVA, xAIF) to SNO and back.

Import rules (one AIF file is one SNO, its id the file name's stem):

* **I-nodes** become claims (``nodeID`` kept as the claim id, role ``none``).
* an **RA** node (inference) becomes one ``support`` relation per premise, from
  the premise to its conclusion. The relation of the first premise takes the RA
  node's id; further (linked) premises get ``<id>.2``, ``<id>.3``, ... and
  ``metadata["linked_premises"][<id>]`` lists the whole group.
* a **CA** node (conflict) becomes ``attack`` relations in the same way: on an
  I-node a ``rebut``; on an RA or CA node an ``undercut`` whose target is that
  S-node's (first) relation.
* **MA** (rephrase) and **PA** (preference) carry no support or attack: they are
  kept in ``metadata["rephrases"]`` (``{id, source, target, scheme}``) and
  ``metadata["preferences"]`` (``{id, preferred, over, scheme}``).
* every S-node is listed in ``metadata["s_nodes"]`` (``{type, scheme,
  relations}``), so RA/CA/MA/PA counts survive even where a node could not become
  a relation (which is then a warning, never silence).
* L, YA and TA nodes (dialogue) are not part of the argument. A locution used
  directly as a premise is replaced by the I-node its illocution (L -> YA -> I)
  anchors; when it anchors none, the locution is promoted to a claim, listed in
  ``metadata["promoted_locutions"]``, with a warning.
* the **hypothesis** is the root I-node: a conclusion of some RA that is no
  premise of an RA or CA. With several roots, the one that the most claims argue
  towards (transitively) wins, ties to the first in file order; the others are
  listed in ``metadata["roots"]``. Without any RA, the most-argued-towards
  I-node that attacks nothing, else the first I-node.
* xAIF / OVA3's wrapper ``{"AIF": {...}, ...}`` is unwrapped; edges may name
  their nodes as ``fromID``/``toID`` or OVA's ``from``/``to`` objects.

Export (:func:`to_aif`) writes the same shapes back: one RA per support group,
one CA per attack group (linked groups from ``metadata["linked_premises"]``),
MA/PA from metadata, and a ``"cns"`` block (our extension; other AIF readers
ignore it) with the SNO's id, title, hypothesis, roles, evidence, relation ids
and metadata, so ``parse_aif(to_aif(sno))`` gives the SNO back.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cns_core.formats.base import Draft, FormatError, ImportResult, build_sno, pick_hypothesis, read_text
from cns_core.sno import SNO

__all__ = ["SUFFIXES", "parse_aif", "read_aif", "to_aif", "dumps_aif"]

SUFFIXES: tuple[str, ...] = (".json",)
_S_NODES = ("RA", "CA", "MA", "PA")
_DEFAULT_SCHEME = {"RA": "Default Inference", "CA": "Default Conflict", "MA": "Default Rephrase",
                   "PA": "Default Preference"}


def read_aif(path: str | Path, *, evidence_rule: str = "leaf_premises") -> ImportResult:
    path = Path(path)
    return parse_aif(read_text(path), str(path), evidence_rule=evidence_rule)


def _node_ref(value: Any) -> str | None:
    """An edge end: a plain id, or OVA's ``{"nodeID": ...}`` / ``{"id": ...}`` object."""
    if isinstance(value, dict):
        value = value.get("nodeID", value.get("id"))
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, str)) and str(value).strip():
        return str(value).strip()
    return None


def _load(text: str, file: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FormatError(file, f"line {exc.lineno} column {exc.colno}", f"not valid JSON: {exc.msg}", "syntax") from None
    if isinstance(data, dict) and isinstance(data.get("AIF"), dict):
        inner = dict(data["AIF"])
        if "cns" in data and "cns" not in inner:
            inner["cns"] = data["cns"]
        data = inner
    if not isinstance(data, dict):
        raise FormatError(file, "(root)", f"expected a JSON object with 'nodes' and 'edges', got {type(data).__name__}")
    for key in ("nodes", "edges"):
        if not isinstance(data.get(key), list):
            raise FormatError(file, key, "missing" if key not in data else "must be a list")
    return data


def parse_aif(text: str, file: str = "<input>", *, evidence_rule: str = "leaf_premises") -> ImportResult:
    """Parse one AIF JSON document; raises :class:`FormatError` naming the node or edge."""
    data = _load(text, file)
    cns = data.get("cns") if isinstance(data.get("cns"), dict) else {}
    stem = Path(file).stem
    draft = Draft(file=file, id=str(cns.get("id") or stem), title=str(cns.get("title") or stem))
    nodes: dict[str, dict[str, str]] = {}
    for i, node in enumerate(data["nodes"]):   # a faulty node is left out, never the whole map
        ident = _node_ref(node.get("nodeID", node.get("id"))) if isinstance(node, dict) else None
        kind = node.get("type") if isinstance(node, dict) else None
        if not isinstance(node, dict):
            draft.warn(f"nodes[{i}]", "must be an object; left out", cause="bad-unit")
        elif ident is None:
            draft.warn(f"nodes[{i}]", "missing 'nodeID'; left out", cause="bad-unit")
        elif not isinstance(kind, str) or not kind.strip():
            draft.warn(f"node {ident}", "missing 'type'; left out", cause="bad-unit")
        elif ident in nodes:
            draft.warn(f"node {ident}", "duplicate nodeID; the first is kept", cause="bad-unit")
        else:
            text_value = node.get("text", "")
            nodes[ident] = {"type": kind.strip(),
                            "text": text_value if isinstance(text_value, str) else str(text_value)}

    incoming: dict[str, list[str]] = {n: [] for n in nodes}
    outgoing: dict[str, list[str]] = {n: [] for n in nodes}
    for i, edge in enumerate(data["edges"]):   # and a faulty edge too
        if not isinstance(edge, dict):
            draft.warn(f"edges[{i}]", "must be an object; left out", cause="bad-relation")
            continue
        name = f"edge {edge.get('edgeID', f'#{i + 1}')}"
        ends = [_node_ref(edge.get(key, edge.get(alt))) for key, alt in (("fromID", "from"), ("toID", "to"))]
        missing = [key for key, ref in zip(("fromID", "toID"), ends) if ref is None]
        unknown = [f"{key} {ref!r}" for key, ref in zip(("fromID", "toID"), ends) if ref is not None and ref not in nodes]
        if missing:
            draft.warn(name, f"missing '{missing[0]}'; left out", cause="bad-relation")
        elif unknown:
            draft.warn(name, f"{unknown[0]} is not a node; left out", cause="dangling-relation")
        elif ends[0] == ends[1]:
            draft.warn(name, f"links node {ends[0]} to itself; left out", cause="self-loop")
        elif ends[1] in outgoing[ends[0]]:
            draft.warn(name, f"repeats the edge {ends[0]} -> {ends[1]}; merged", cause="duplicate-relation")
        else:
            outgoing[ends[0]].append(ends[1])
            incoming[ends[1]].append(ends[0])
    _Builder(file, nodes, incoming, outgoing, cns, draft).build()
    return build_sno(draft, evidence_rule)


class _Builder:
    """Turns the node/edge lists into the draft's claims, relations and metadata."""

    def __init__(self, file: str, nodes: dict[str, dict[str, str]], incoming: dict[str, list[str]],
                 outgoing: dict[str, list[str]], cns: dict[str, Any], draft: Draft):
        self.file, self.nodes, self.incoming, self.outgoing, self.cns, self.draft = (
            file, nodes, incoming, outgoing, cns, draft)
        self.claims: dict[str, dict[str, Any]] = {}
        self.promoted: list[str] = []
        roles = cns.get("roles") if isinstance(cns.get("roles"), dict) else {}
        self.roles = {str(k): v for k, v in roles.items() if v in ("proponent", "opponent", "none")}
        ids = cns.get("relation_ids") if isinstance(cns.get("relation_ids"), dict) else {}
        self.relation_ids = {str(k): v for k, v in ids.items() if isinstance(v, dict)}

    def build(self) -> None:
        for ident, node in self.nodes.items():
            if node["type"] == "I":
                if node["text"].strip():
                    self._add_claim(ident, node["text"])
                else:
                    self.draft.warn(f"I-node {ident}", "has no text; left out", cause="bad-unit")
        groups = self._s_node_groups()
        relations: list[dict[str, Any]] = []
        s_nodes: dict[str, dict[str, Any]] = {}
        rephrases, preferences, linked = [], [], {}
        for ident, node in self.nodes.items():
            kind = node["type"]
            if kind not in _S_NODES:
                continue
            entry = {"type": kind, "scheme": node["text"] or _DEFAULT_SCHEME[kind], "relations": []}
            s_nodes[ident] = entry
            group = groups.get(ident)
            if group is None:
                continue
            sources, target = group
            if kind in ("MA", "PA"):
                if target in self.claims:
                    for src in sources:
                        if kind == "MA":
                            rephrases.append({"id": ident, "source": src, "target": target, "scheme": entry["scheme"]})
                        else:
                            preferences.append({"id": ident, "preferred": src, "over": target,
                                                "scheme": entry["scheme"]})
                else:
                    self.draft.warn(f"{kind} node {ident}", "does not point at an I-node; left out", cause="dangling-relation")
                continue
            resolved_target, attack_type = self._relation_target(ident, kind, target, groups)
            if resolved_target is None:
                continue
            ids = self._ids_for(ident, sources)
            for src, rid in zip(sources, ids):
                rel = {"id": rid, "source": src, "target": resolved_target,
                       "kind": "support" if kind == "RA" else "attack"}
                if attack_type:
                    rel["attack_type"] = attack_type
                relations.append(rel)
            entry["relations"] = ids
            if len(ids) > 1:
                linked[ids[0]] = ids

        draft = self.draft
        draft.claims = list(self.claims.values())
        draft.relations = self._drop_dangling(relations, s_nodes, linked)
        extra = self.cns.get("metadata") if isinstance(self.cns.get("metadata"), dict) else {}
        draft.metadata = {**extra, "format": "aif", "source_file": Path(self.file).name, "s_nodes": s_nodes,
                          "linked_premises": linked, "rephrases": rephrases, "preferences": preferences,
                          "promoted_locutions": self.promoted}
        evidence = self.cns.get("evidence")
        if isinstance(evidence, list):
            draft.evidence, draft.evidence_given = evidence, True
        self._choose_hypothesis()

    def _drop_dangling(self, relations: list[dict[str, Any]], s_nodes: dict[str, dict[str, Any]],
                       linked: dict[str, list[str]]) -> list[dict[str, Any]]:
        """Undercuts of inferences that were left out are left out too (repeatedly, for chains)."""
        while True:
            known = set(self.claims) | {r["id"] for r in relations}
            dangling = [r for r in relations if r["target"] not in known]
            if not dangling:
                return relations
            for rel in dangling:
                self.draft.warn(f"relation {rel['id']}", f"undercuts {rel['target']}, which was left out; left out",
                               cause="dangling-relation")
            gone = {r["id"] for r in dangling}
            relations = [r for r in relations if r["id"] not in gone]
            for entry in s_nodes.values():
                entry["relations"] = [r for r in entry["relations"] if r not in gone]
            for key in list(linked):
                linked[key] = [r for r in linked[key] if r not in gone]
                if len(linked[key]) < 2:
                    del linked[key]

    def _add_claim(self, ident: str, text: str) -> None:
        self.claims[ident] = {"id": ident, "text": text.strip(), "role": self.roles.get(ident, "none")}

    def _premise(self, s_node: str, ident: str) -> str | None:
        """The claim a node feeding ``s_node`` stands for (None: not an argument node)."""
        kind = self.nodes[ident]["type"]
        if kind == "I":
            return ident if ident in self.claims else None
        if kind != "L":
            if kind not in ("YA", "TA", *_S_NODES):  # dialogue, or an attack/preference on the S-node
                self.draft.warn(f"{self.nodes[s_node]['type']} node {s_node}",
                                f"input {ident} is a {kind} node, not an I-node; left out", cause="bad-relation")
            return None
        anchored = [i for ya in self.outgoing[ident] if self.nodes[ya]["type"] == "YA"
                    for i in self.outgoing[ya] if self.nodes[i]["type"] == "I" and i in self.claims]
        if anchored:
            return anchored[0]
        if ident not in self.claims:
            if not self.nodes[ident]["text"].strip():
                return None
            self._add_claim(ident, self.nodes[ident]["text"])
            self.promoted.append(ident)
            self.draft.warn(f"L-node {ident}", f"is a premise of {s_node} but anchors no I-node; promoted to a claim",
                            cause="promoted-locution")
        return ident

    def _s_node_groups(self) -> dict[str, tuple[list[str], str]]:
        """For each S-node: its premise claims and its one target node."""
        groups = {}
        for ident, node in self.nodes.items():
            kind = node["type"]
            if kind not in _S_NODES:
                continue
            element = f"{kind} node {ident}"
            targets = [t for t in self.outgoing[ident] if self.nodes[t]["type"] in ("I", *_S_NODES)]
            sources = list(dict.fromkeys(
                p for p in (self._premise(ident, s) for s in self.incoming[ident]) if p is not None))
            if len(targets) > 1:
                self.draft.warn(element, f"has {len(targets)} conclusions ({', '.join(targets)}); an S-node "
                                "points at exactly one node, so which one is meant is unknown; left out",
                                cause="bad-relation")
                continue
            if not targets or not sources:
                self.draft.warn(element, "has no " + ("conclusion" if not targets else "premise") + "; left out",
                                cause="bad-relation")
                continue
            groups[ident] = (sources, targets[0])
        return groups

    def _relation_target(self, ident: str, kind: str, target: str,
                         groups: dict[str, tuple[list[str], str]]) -> tuple[str | None, str | None]:
        target_kind = self.nodes[target]["type"]
        if target_kind == "I":
            if target not in self.claims:
                self.draft.warn(f"{kind} node {ident}", f"points at I-node {target}, which has no text; left out",
                                cause="dangling-relation")
                return None, None
            return target, ("rebut" if kind == "CA" else None)
        if kind == "CA" and target_kind in ("RA", "CA") and target in groups:
            return self._ids_for(target, groups[target][0])[0], "undercut"
        what = "a claim or an inference" if kind == "CA" else "a claim"
        self.draft.warn(f"{kind} node {ident}", f"points at {target_kind} node {target}, which is not {what}; left out",
                        cause="bad-relation")
        return None, None

    def _ids_for(self, s_node: str, sources: list[str]) -> list[str]:
        """Relation ids for an S-node's premises: the exporter's ids if given, else ``id``, ``id.2``, ..."""
        known = self.relation_ids.get(s_node, {})
        ids = []
        for k, src in enumerate(sources):
            rid = known.get(src)
            ids.append(str(rid) if rid else (s_node if k == 0 else f"{s_node}.{k + 1}"))
        return ids

    def _choose_hypothesis(self) -> None:
        draft = self.draft
        claim_ids = list(self.claims)
        wanted = self.cns.get("hypothesis")
        if isinstance(wanted, str) and wanted in self.claims:
            draft.hypothesis = wanted
            return
        sources = {r["source"] for r in draft.relations}
        concluded = [c for c in claim_ids if any(r["target"] == c and r["kind"] == "support" for r in draft.relations)]
        roots = [c for c in concluded if c not in sources]
        if not roots:
            roots = [c for c in claim_ids if c not in sources] or claim_ids
        draft.hypothesis = pick_hypothesis(roots, draft.relations)
        draft.metadata["roots"] = roots if concluded else []


def to_aif(sno: SNO, *, extension: bool = True) -> dict[str, Any]:
    """The SNO as AIF JSON (``nodes``, ``edges``, ``locutions``), plus our ``cns`` block unless disabled."""
    nodes: list[dict[str, Any]] = [{"nodeID": c.id, "text": c.text, "type": "I"} for c in sno.claims]
    edges: list[dict[str, Any]] = []
    meta = sno.metadata or {}
    schemes = {k: v.get("scheme") for k, v in (meta.get("s_nodes") or {}).items() if isinstance(v, dict)}

    def edge(src: str, dst: str) -> None:
        edges.append({"edgeID": len(edges) + 1, "fromID": src, "toID": dst})

    # Group relations into S-nodes: linked groups share one node named after their first relation.
    s_node_of: dict[str, str] = {}
    by_id = sno.relations_by_id
    for primary, group in (meta.get("linked_premises") or {}).items():
        members = [by_id.get(r) for r in group] if isinstance(group, list) else []
        if not members or None in members:
            continue
        shape = {(m.target, m.kind, m.attack_type) for m in members}
        if len(shape) == 1 and not any(m.id in s_node_of for m in members):
            for m in members:
                s_node_of[m.id] = members[0].id
    for rel in sno.relations:
        s_node_of.setdefault(rel.id, rel.id)

    taken = {c.id for c in sno.claims}
    relation_ids: dict[str, dict[str, str]] = {}
    for rel in sno.relations:
        node_id = s_node_of[rel.id]
        if node_id == rel.id:
            kind = "RA" if rel.kind == "support" else "CA"
            nodes.append({"nodeID": node_id, "text": schemes.get(node_id) or _DEFAULT_SCHEME[kind], "type": kind})
            taken.add(node_id)
            target = rel.target if rel.attack_type != "undercut" else s_node_of[rel.target]
            edge(node_id, target)
        edge(rel.source, node_id)
        relation_ids.setdefault(node_id, {})[rel.source] = rel.id

    claim_ids = {c.id for c in sno.claims}
    for kind, key, ends in (("MA", "rephrases", ("source", "target")), ("PA", "preferences", ("preferred", "over"))):
        for item in meta.get(key) or []:
            if not isinstance(item, dict) or not all(item.get(e) in claim_ids for e in ends):
                continue
            node_id = str(item.get("id") or f"{kind.lower()}{len(nodes)}")
            if node_id in taken and not any(n["nodeID"] == node_id and n["type"] == kind for n in nodes):
                node_id = f"{node_id}-{kind.lower()}"
            if node_id not in taken:
                nodes.append({"nodeID": node_id, "text": item.get("scheme") or _DEFAULT_SCHEME[kind], "type": kind})
                taken.add(node_id)
                edge(node_id, item[ends[1]])
            edge(item[ends[0]], node_id)

    data: dict[str, Any] = {"nodes": nodes, "edges": edges, "locutions": []}
    if extension:
        skip = {"s_nodes", "linked_premises", "rephrases", "preferences", "promoted_locutions", "roots", "format",
                "source_file", "evidence_rule"}
        data["cns"] = {
            "id": sno.id,
            "title": sno.title,
            "hypothesis": sno.hypothesis,
            "roles": {c.id: c.role for c in sno.claims if c.role != "none"},
            "evidence": [e.model_dump() for e in sno.evidence],
            "relation_ids": relation_ids,
            "metadata": {k: v for k, v in meta.items() if k not in skip},
        }
    return data


def dumps_aif(sno: SNO) -> str:
    return json.dumps(to_aif(sno), indent=2, ensure_ascii=False) + "\n"
