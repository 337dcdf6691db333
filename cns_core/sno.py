"""The Structured Narrative Object (SNO): a hypothesis, its reasoning graph and evidence.

An SNO is a pydantic model, so the same class is the file schema (JSON or YAML)
and the in-memory value. Its reasoning graph is derived from the claims and
relations as a networkx ``DiGraph`` whose nodes are claim ids.

Edges point from the arguing claim to the claim it argues about: ``c1 -> c0``
means *c1 supports (or attacks) c0*, so the hypothesis is a sink. Two kinds of
attack are kept apart:

* a **rebut** attacks a claim (target is a claim id);
* an **undercut** attacks a relation (target is a relation id). In the graph it
  becomes an edge from the undercutter to the claim the undercut relation
  points at, with ``undercuts=<relation id>``, so the undercutter stays
  connected to the argument it weakens.

Loading never trusts its input: every problem found in a file is collected and
raised once as :class:`SNOValidationError`, each with a path such as
``claims[3].text: must not be empty``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Iterable, Literal, Sequence

import networkx as nx
import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from cns_core.bounds import (InputTooLarge, NotARegularFile, bounded_int, digits_problem, excerpt, expanded_size_over,
                             json_depth_over, looks_binary, read_bounded, unreadable_problem)
from cns_core.config import UniqueKeyLoader, yaml_problem

__all__ = [
    "Claim",
    "Evidence",
    "Relation",
    "SNO",
    "SNOLimits",
    "limits_from_config",
    "SNOValidationError",
    "parse_snos",
    "load_snos",
    "serialize_snos",
    "dump_snos",
]

Role = Literal["proponent", "opponent", "none"]
RelationKind = Literal["support", "attack"]
AttackType = Literal["rebut", "undercut"]


def _non_empty(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return value


def _unit_interval(value: float) -> float:
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"must be between 0 and 1 (got {value:g})")
    return value


NonEmptyStr = Annotated[str, AfterValidator(_non_empty)]
UnitFloat = Annotated[float, AfterValidator(_unit_interval)]

_STRICT = ConfigDict(extra="forbid", frozen=True)


def _is_empty(value: Any) -> bool:
    """Left out of dumps when empty, so files and hashes of SNOs without item metadata stay as they were."""
    return not value


class Claim(BaseModel):
    """One assertion in the argument. ``role`` says which side puts it forward.

    ``metadata`` (on claims, evidence and relations alike) carries what a person should see
    but the critics do not judge: why a drafted item is there, where it came from.
    """

    model_config = _STRICT
    id: NonEmptyStr
    text: NonEmptyStr
    role: Role = "none"
    metadata: dict[str, Any] = Field(default_factory=dict, exclude_if=_is_empty)


class Evidence(BaseModel):
    """A piece of evidence. ``validity`` is how far the source is trusted (1.0 when omitted)."""

    model_config = _STRICT
    id: NonEmptyStr
    text: NonEmptyStr
    source: str = ""
    validity: UnitFloat = 1.0
    metadata: dict[str, Any] = Field(default_factory=dict, exclude_if=_is_empty)


class Relation(BaseModel):
    """``source`` supports or attacks ``target`` (a claim id, or a relation id for an undercut).

    ``attack_type`` may be left out: it is then derived from what the target is.
    """

    model_config = _STRICT
    id: str | None = None
    source: NonEmptyStr
    target: NonEmptyStr
    kind: RelationKind
    attack_type: AttackType | None = None
    metadata: dict[str, Any] = Field(default_factory=dict, exclude_if=_is_empty)


@dataclass(frozen=True)
class SNOLimits:
    """Input limits for reading SNO files (``config/sno.yaml``)."""

    max_file_bytes: int = 5_000_000
    max_claims: int = 5_000
    max_evidence: int = 5_000
    max_relations: int = 10_000

    @classmethod
    def from_config(cls) -> "SNOLimits":
        return limits_from_config(cls)


def limits_from_config(cls: type) -> Any:
    """A dataclass of whole-number limits (each field a key of ``config/sno.yaml``), checked and named."""
    from cns_core.config import config_number, load_config

    cfg = load_config("sno")
    return cls(**{name: config_number(cfg, name, file="config/sno.yaml", default=getattr(cls, name), low=1,
                                      integer=True)
                  for name in cls.__dataclass_fields__})


class SNOValidationError(ValueError):
    """Every problem found while reading SNO input, each prefixed by its path."""

    def __init__(self, problems: Sequence[str], source: str = "<input>"):
        self.problems = list(dict.fromkeys(problems))  # keep order, drop repeats
        self.source = source
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"{source}: {len(self.problems)} problem(s)\n{lines}")


def _with_relation_ids(data: Any) -> Any:
    """Give unnamed relations a stable id (``r1``, ``r2``, ...) that no claim or relation uses."""
    if not isinstance(data, dict) or not isinstance(data.get("relations"), list):
        return data
    taken = {str(x.get("id")) for key in ("claims", "relations") for x in data.get(key) or [] if isinstance(x, dict)}
    named, counter = [], 0
    for rel in data["relations"]:
        if isinstance(rel, dict) and not rel.get("id"):
            counter += 1
            while f"r{counter}" in taken:
                counter += 1
            rel = {**rel, "id": f"r{counter}"}
            taken.add(rel["id"])
        named.append(rel)
    return {**data, "relations": named}


def _reference_problems(raw: dict[str, Any]) -> list[str]:
    """Problems between fields (ids, references), tolerant of malformed shapes.

    Works on plain data so that it can run beside field validation and report
    an unknown edge target in the same error as an empty claim text.
    """
    problems: list[str] = []

    def ids_of(section: str) -> dict[str, int]:
        seen: dict[str, int] = {}
        items = raw.get(section)
        if not isinstance(items, list):
            return seen
        for i, item in enumerate(items):
            if not isinstance(item, dict) or not isinstance(item.get("id"), str) or not item["id"].strip():
                continue
            ident = item["id"]
            if ident in seen:
                problems.append(f"{section}[{i}].id: duplicate id {_q(ident)} (first at {section}[{seen[ident]}])")
            else:
                seen[ident] = i
        return seen

    claim_ids = ids_of("claims")
    ids_of("evidence")
    relations = raw.get("relations") if isinstance(raw.get("relations"), list) else []
    relation_ids: dict[str, int] = {}
    for i, rel in enumerate(relations):
        if isinstance(rel, dict) and isinstance(rel.get("id"), str) and rel["id"]:
            rid = rel["id"]
            if rid in claim_ids:
                problems.append(f"relations[{i}].id: {_q(rid)} is already a claim id")
            elif rid in relation_ids:
                problems.append(f"relations[{i}].id: duplicate id {_q(rid)} (first at relations[{relation_ids[rid]}])")
            else:
                relation_ids[rid] = i

    hypothesis = raw.get("hypothesis")
    if isinstance(hypothesis, str) and hypothesis.strip() and claim_ids and hypothesis not in claim_ids:
        problems.append(f"hypothesis: unknown claim {_q(hypothesis)}")

    for i, rel in enumerate(relations):
        if not isinstance(rel, dict):
            continue
        source, target = rel.get("source"), rel.get("target")
        if isinstance(source, str) and source.strip() and source not in claim_ids:
            problems.append(f"relations[{i}].source: unknown claim {_q(source)}")
        if not (isinstance(target, str) and target.strip()):
            continue
        declared = rel.get("attack_type")
        if target in claim_ids:
            if declared == "undercut":
                problems.append(f"relations[{i}].attack_type: an undercut must target a relation, {_q(target)} is a claim")
        elif target in relation_ids:
            if rel.get("kind") == "support":
                problems.append(f"relations[{i}].target: a support must target a claim, {_q(target)} is a relation")
            elif declared == "rebut":
                problems.append(f"relations[{i}].attack_type: a rebut must target a claim, {_q(target)} is a relation")
            elif relation_ids[target] == i:
                problems.append(f"relations[{i}].target: a relation cannot undercut itself")
        else:
            problems.append(f"relations[{i}].target: unknown claim or relation {_q(target)}")
        if rel.get("kind") == "support" and declared is not None:
            problems.append(f"relations[{i}].attack_type: only an attack has an attack type")
    problems.extend(_edge_collisions(relations, relation_ids))
    return problems


def _edge_collisions(relations: list[Any], relation_ids: dict[str, int]) -> list[str]:
    """Two relations that would become the same graph edge (an undercut counts at its anchor claim).

    The reasoning graph keeps one edge per ordered pair of claims, so a second relation
    between the same claims would silently replace the first: refuse it instead.
    """
    def anchor(target: str) -> str:
        seen: set[str] = set()
        while target in relation_ids and target not in seen:
            seen.add(target)
            nxt = relations[relation_ids[target]]
            target = nxt.get("target") if isinstance(nxt, dict) else target
            if not isinstance(target, str):
                return ""
        return target

    problems: list[str] = []
    first: dict[tuple[str, str], int] = {}
    for i, rel in enumerate(relations):
        if not isinstance(rel, dict) or not isinstance(rel.get("source"), str) or not isinstance(rel.get("target"), str):
            continue
        edge = (rel["source"], anchor(rel["target"]))
        if edge in first:
            problems.append(f"relations[{i}]: {_q(edge[0])} already argues about {_q(edge[1])} in "
                            f"relations[{first[edge]}]; the reasoning graph holds one relation per pair "
                            f"of claims (an undercut counts at the claim it attacks), keep one")
        else:
            first[edge] = i
    return problems


_MAX_DEPTH = 64     # nesting an SNO file may use (an SNO itself needs about 5 levels; metadata a few more)


def _q(value: Any) -> str:
    """A value from the input as quoted in a problem: bounded, whatever its size (an id may be megabytes)."""
    return excerpt(value, 80)


def _format_pydantic_error(err: dict[str, Any]) -> str:
    path = ""
    for part in err["loc"]:
        part = part if isinstance(part, int) or len(str(part)) <= 60 else excerpt(part, 60)
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    kind = err["type"]
    if kind == "missing":
        message = "is required"
    elif kind == "extra_forbidden":
        message = "unknown field"
    elif kind == "value_error":
        message = str(err["ctx"]["error"])[:500]
    elif kind == "literal_error":
        message = f"must be one of {err['ctx']['expected']} (got {_q(err.get('input'))})"
    elif kind in {"string_type", "str_type"}:
        message = "must be a string"
    elif kind.startswith("float") or kind.startswith("int"):
        message = f"must be a number (got {_q(err.get('input'))})"
    elif kind == "too_short":
        message = f"must hold at least {err['ctx']['min_length']} item(s)"
    elif kind in {"list_type", "dict_type", "model_type"}:
        message = f"must be a {'list' if kind == 'list_type' else 'mapping'}"
    else:
        message = err["msg"][:1].lower() + err["msg"][1:500]
    return f"{path or '(root)'}: {message}"


class SNO(BaseModel):
    """A Structured Narrative Object. ``hypothesis`` is the id of the root claim."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    id: NonEmptyStr
    title: str = ""
    hypothesis: NonEmptyStr
    claims: list[Claim] = Field(min_length=1)
    relations: list[Relation] = Field(default_factory=list)
    evidence: list[Evidence] = Field(default_factory=list)
    embedding: list[float] | None = None
    trust_score: UnitFloat | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _name_relations(cls, data: Any) -> Any:
        return _with_relation_ids(data)

    @model_validator(mode="after")
    def _check_references(self) -> "SNO":
        # only the ids and ends are needed: dumping the whole SNO would copy its metadata (and did, once,
        # expand a YAML alias bomb held there to gigabytes)
        problems = _reference_problems({
            "hypothesis": self.hypothesis, "claims": [{"id": c.id} for c in self.claims],
            "evidence": [{"id": e.id} for e in self.evidence],
            "relations": [{"id": r.id, "source": r.source, "target": r.target, "kind": r.kind,
                           "attack_type": r.attack_type} for r in self.relations]})
        if problems:
            raise ValueError("; ".join(problems))
        claim_ids = {c.id for c in self.claims}
        fixed = [
            r if r.kind == "support" or r.attack_type else
            r.model_copy(update={"attack_type": "rebut" if r.target in claim_ids else "undercut"})
            for r in self.relations
        ]
        object.__setattr__(self, "relations", fixed)
        return self

    # ----- derived views -------------------------------------------------
    @cached_property
    def claims_by_id(self) -> dict[str, Claim]:
        return {c.id: c for c in self.claims}

    @cached_property
    def relations_by_id(self) -> dict[str, Relation]:
        return {r.id: r for r in self.relations if r.id}

    @property
    def hypothesis_claim(self) -> Claim:
        return self.claims_by_id[self.hypothesis]

    @property
    def hypothesis_text(self) -> str:
        return self.hypothesis_claim.text

    @cached_property
    def graph(self) -> nx.DiGraph:
        """The reasoning graph: claim nodes (``text``, ``role``) and relation edges.

        Edge attributes: ``kind`` (support/attack), ``attack_type``, ``relation`` (id)
        and, for undercuts, ``undercuts`` (the undercut relation's id). Treat it as read-only.
        """
        g = nx.DiGraph(sno_id=self.id, hypothesis=self.hypothesis)
        for c in self.claims:
            g.add_node(c.id, text=c.text, role=c.role, is_hypothesis=c.id == self.hypothesis)
        for r in self.relations:
            attrs = {"kind": r.kind, "attack_type": r.attack_type, "relation": r.id}
            if r.attack_type == "undercut":
                target = self._undercut_anchor(r.target)
                attrs["undercuts"] = r.target
            else:
                target = r.target
            g.add_edge(r.source, target, **attrs)
        return g

    def _undercut_anchor(self, relation_id: str) -> str:
        """The claim an undercut ultimately points at (following undercuts of undercuts)."""
        seen: set[str] = set()
        rel = self.relations_by_id[relation_id]
        while rel.target in self.relations_by_id and rel.target not in seen:
            seen.add(rel.target)
            rel = self.relations_by_id[rel.target]
        return rel.target

    def content_hash(self) -> str:
        """A stable hash of what critics judge (hypothesis, claims, relations, evidence).

        Ids of the SNO itself, its title, embedding, trust score and metadata (its own and
        its items') are left out, so an edited title does not invalidate cached critic results.
        """
        payload = {
            "hypothesis": self.hypothesis,
            "claims": [c.model_dump(exclude={"metadata"}) for c in self.claims],
            "relations": [r.model_dump(exclude={"metadata"}) for r in self.relations],
            "evidence": [e.model_dump(exclude={"metadata"}) for e in self.evidence],
        }
        blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def to_data(self) -> dict[str, Any]:
        """Plain data for JSON/YAML: defaults that carry no information are left out."""
        return self.model_dump(mode="json", exclude_none=True, exclude_defaults=False)


# ----- reading and writing --------------------------------------------------

class _BoundedLoader(UniqueKeyLoader):
    """PyYAML's SafeLoader whose integers are bounded like JSON's (:func:`cns_core.bounds.bounded_int`) and
    whose mappings refuse a key written twice (:class:`~cns_core.config.UniqueKeyLoader`)."""

    def construct_yaml_int(self, node: yaml.Node) -> int:
        problem = digits_problem(str(node.value))
        if problem:
            raise yaml.constructor.ConstructorError(None, None, problem, node.start_mark)
        return super().construct_yaml_int(node)


_BoundedLoader.add_constructor("tag:yaml.org,2002:int", _BoundedLoader.construct_yaml_int)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are all different (ValueError naming the key written twice)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"the key {key[:60]!r} is written twice in one object; keep one")
        out[key] = value
    return out


def _decode(text: str, name: str, fmt: str | None, limits: SNOLimits) -> Any:
    """The parsed file, bounded: nesting is checked before parsing, and what YAML aliases expand to after
    parsing but before anything walks the tree (validation, hashing, dumping would expand it)."""
    fmt = fmt or (Path(name).suffix.lower().lstrip(".") or None)
    looks_json = text.lstrip()[:1] in ("{", "[")
    too_deep = f"file: nested more than {_MAX_DEPTH} levels deep; an SNO needs a handful"
    if json_depth_over(text, _MAX_DEPTH):       # flow brackets, in JSON and in YAML alike
        raise SNOValidationError([too_deep], name)
    try:
        if fmt == "json" or (fmt is None and looks_json):
            try:
                raw = json.loads(text, parse_int=bounded_int, object_pairs_hook=_unique_keys)
            except json.JSONDecodeError as exc:
                raise SNOValidationError([f"file: not valid JSON: {exc.msg} at line {exc.lineno} column "
                                          f"{exc.colno}"], name)
            except ValueError as exc:               # an integer over MAX_INT_DIGITS
                raise SNOValidationError([f"file: {exc}"], name)
            return raw
        try:
            raw = yaml.load(text, Loader=_BoundedLoader)    # noqa: S506 - a SafeLoader with bounded integers
        except yaml.YAMLError as exc:
            raise SNOValidationError([f"file: not valid JSON or YAML: {yaml_problem(exc)[:500]}"], name)
    except RecursionError:                      # block nesting by indentation
        raise SNOValidationError([too_deep], name) from None
    over = expanded_size_over(raw, limits.max_file_bytes, _MAX_DEPTH)
    if over:
        raise SNOValidationError([f"file: {over} once its YAML aliases are expanded (config/sno.yaml "
                                  "max_file_bytes); write the repeated parts out, or remove the aliases"], name)
    return raw


def _validate_one(raw: Any, prefix: str, limits: SNOLimits) -> tuple[SNO | None, list[str]]:
    if not isinstance(raw, dict):
        return None, [f"{prefix.rstrip('.') or '(root)'}: expected a mapping describing one SNO, got {type(raw).__name__}"]
    over = [f"{prefix}{key}: {len(raw[key]):,} {key} exceed the limit of {limit:,} (config/sno.yaml {name})"
            for key, name, limit in (("claims", "max_claims", limits.max_claims),
                                     ("evidence", "max_evidence", limits.max_evidence),
                                     ("relations", "max_relations", limits.max_relations))
            if isinstance(raw.get(key), list) and len(raw[key]) > limit]
    if over:   # refused before validation: the critics are only measured up to these sizes
        return None, over
    raw = _with_relation_ids(raw)
    problems = [prefix + p for p in _reference_problems(raw)]
    try:
        return SNO.model_validate(raw), problems
    except ValidationError as exc:
        for err in exc.errors():
            if err["type"] == "value_error" and not err["loc"]:
                continue  # the reference check above already reported these one by one
            problems.append(prefix + _format_pydantic_error(err))
        return None, problems


def parse_snos(data: str | bytes, name: str = "<input>", fmt: str | None = None,
               limits: SNOLimits | None = None) -> list[SNO]:
    """Parse JSON or YAML text holding one SNO or a list of them.

    ``fmt`` ('json' or 'yaml') overrides the guess from ``name``'s suffix and the content.
    Raises :class:`SNOValidationError` listing every problem found.
    """
    limits = limits or SNOLimits.from_config()
    size = len(data)
    if size > limits.max_file_bytes:
        raise SNOValidationError([f"file: {size:,} bytes exceed the limit of {limits.max_file_bytes:,} bytes "
                                  f"(config/sno.yaml max_file_bytes)"], name)
    if isinstance(data, bytes):
        if looks_binary(data):
            raise SNOValidationError(["file: not an SNO file (binary); give a .json or .yaml SNO"], name)
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SNOValidationError([f"file: not UTF-8 text (byte {exc.start})"], name)
    if not data.strip():
        raise SNOValidationError(["file: is empty"], name)
    raw = _decode(data, name, fmt, limits)
    if isinstance(raw, list):
        if not raw:
            raise SNOValidationError(["file: the list holds no SNO"], name)
        items = [(item, f"[{i}].") for i, item in enumerate(raw)]
    elif isinstance(raw, dict):
        items = [(raw, "")]
    else:
        raise SNOValidationError(
            [f"file: expected a mapping (one SNO) or a list of SNOs, got "
             f"{'plain text' if isinstance(raw, str) else type(raw).__name__}"], name)
    snos, problems = [], []
    for item, prefix in items:
        sno, found = _validate_one(item, prefix, limits)
        problems.extend(found)
        if sno is not None:
            snos.append(sno)
    if problems:
        raise SNOValidationError(problems, name)
    return snos


def load_snos(path: str | Path, limits: SNOLimits | None = None) -> list[SNO]:
    """Read one JSON/YAML file; always returns a list. The size limit is checked while reading (``stat`` says
    0 bytes for ``/dev/zero`` and a pipe)."""
    path = Path(path)
    limits = limits or SNOLimits.from_config()
    try:
        data = read_bounded(path, limits.max_file_bytes)
    except InputTooLarge as exc:
        raise SNOValidationError([f"file: {exc} (config/sno.yaml max_file_bytes)"], str(path)) from None
    except NotARegularFile as exc:
        raise SNOValidationError([f"file: {exc}"], str(path)) from None
    except OSError as exc:
        raise SNOValidationError([f"file: {unreadable_problem(exc)}"], str(path)) from None
    return parse_snos(data, name=str(path), limits=limits)


# Characters YAML reads as line breaks; PyYAML writes them raw in plain style, so a
# string holding one would not read back the same. Double quotes escape them.
_YAML_BREAKS = ("\x85", "\u2028", "\u2029")


class _SNODumper(yaml.SafeDumper):
    """Safe YAML output that keeps every string intact through a round trip."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = '"' if any(ch in value for ch in _YAML_BREAKS) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_SNODumper.add_representer(str, _represent_str)


def serialize_snos(snos: SNO | Iterable[SNO], fmt: Literal["json", "yaml"] = "json") -> str:
    """One SNO becomes a mapping, several a list; round-trips through :func:`parse_snos`."""
    data: Any = snos.to_data() if isinstance(snos, SNO) else [s.to_data() for s in snos]
    if fmt == "json":
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    if fmt == "yaml":
        return yaml.dump(data, Dumper=_SNODumper, sort_keys=False, allow_unicode=True, width=100)
    raise ValueError(f"fmt: must be 'json' or 'yaml' (got {fmt!r})")


def dump_snos(snos: SNO | Iterable[SNO], path: str | Path) -> Path:
    """Write by the path's suffix (``.json``, ``.yaml``/``.yml``)."""
    path = Path(path)
    suffix = path.suffix.lower()
    fmt = "json" if suffix == ".json" else "yaml" if suffix in (".yaml", ".yml") else None
    if fmt is None:
        raise ValueError(f"{path}: unknown suffix {suffix!r}; use .json, .yaml or .yml")
    path.write_text(serialize_snos(snos, fmt), encoding="utf-8")
    return path
