"""What every importer shares: errors, warnings, per-file results, repairs, the evidence rule.

Argument corpora come from other tools, so nothing in them is trusted, but one
faulty relation or node must never cost a whole document. Importers leave out
what is faulty and :func:`build_sno` repairs what has one safe meaning
(:func:`repair_relations`: duplicates merged, self-loops and dangling relations
dropped, the first of two conflicting relations kept); each compromise is a
:class:`FormatWarning` naming its cause and the line or node. Only a document
from which no valid SNO can be made is refused, with a :class:`FormatError`
naming the file, the element, the problem and its cause; a folder import turns
each file's error into its own :class:`ImportResult`, so one bad file never
stops the others.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Literal, Mapping

from cns_core.bounds import InputTooLarge, read_bounded
from cns_core.sno import SNO, SNOLimits, SNOValidationError, parse_snos

__all__ = [
    "ERROR_CAUSES",
    "EVIDENCE_RULES",
    "WARNING_CAUSES",
    "EvidenceRule",
    "Draft",
    "FormatError",
    "FormatWarning",
    "ImportResult",
    "build_sno",
    "check_evidence_rule",
    "leaf_premise_evidence",
    "pick_hypothesis",
    "read_text",
    "repair_relations",
]

EvidenceRule = Literal["leaf_premises", "none"]
EVIDENCE_RULES: tuple[str, ...] = ("leaf_premises", "none")


# Why a document was refused (FormatError.cause), for the import summary.
ERROR_CAUSES: dict[str, str] = {
    "file": "missing, unreadable, empty, too large or not UTF-8",
    "syntax": "not well-formed (JSON, XML, YAML or Argdown syntax)",
    "structure": "a required part is missing or malformed",
    "no-claims": "no claim to build an argument from",
    "invalid-sno": "no valid SNO could be made",
    "importer-error": "the importer failed (a bug: please report it)",
}

# What was imported with a compromise (FormatWarning.cause).
WARNING_CAUSES: dict[str, str] = {
    "duplicate-relation": "the same relation given twice; merged into one",
    "conflicting-relation": "two relations between the same claims disagree; the first kept",
    "stance-conflict": "a stance disagrees with the explicit relation; the relation kept",
    "self-loop": "a relation from a claim to itself; dropped",
    "dangling-relation": "a relation to a claim or relation that is not there; dropped",
    "bad-relation": "a malformed relation; dropped",
    "bad-unit": "a malformed claim or node; left out",
    "unconnected-claim": "a claim that argues about nothing and nothing argues about; kept",
    "span-mismatch": "a span's text differs from the document text",
    "no-text-file": "no document text beside the annotations",
    "not-argument": "an annotation or node that is not part of the argument; ignored",
    "promoted-locution": "a locution used as a premise became a claim",
    "hypothesis-choice": "several candidates for the hypothesis; one chosen",
    "text-conflict": "one statement given two texts; the first kept",
}


class FormatError(ValueError):
    """A file that cannot be imported: which file, which element in it, what is wrong, and why (``cause``)."""

    def __init__(self, file: str | Path, element: str, problem: str, cause: str = "structure"):
        self.file = str(file)
        self.element = element
        self.problem = problem
        self.cause = cause if cause in ERROR_CAUSES else "structure"
        super().__init__(f"{self.file}: {element}: {problem}")


@dataclass(frozen=True)
class FormatWarning:
    """One compromise made while importing: its cause (a key of ``WARNING_CAUSES``), where, what."""

    cause: str
    location: str     # the line, node, element or relation it concerns ("line 12 (A1)", "node 42")
    message: str

    def __post_init__(self) -> None:
        if self.cause not in WARNING_CAUSES:      # a cause the summary could not name: a bug here
            raise ValueError(f"FormatWarning: unknown cause {self.cause!r}")

    def __str__(self) -> str:
        return f"{self.location}: {self.message}"


@dataclass(frozen=True)
class ImportResult:
    """The outcome for one input document: an SNO, or the error that stopped it.

    ``warnings`` name what was imported with a compromise (a repaired relation, a
    skipped node, a locution promoted to a claim, a span that does not match its text).
    """

    file: str
    sno: SNO | None = None
    error: FormatError | None = None
    warnings: tuple[FormatWarning, ...] = ()

    @property
    def ok(self) -> bool:
        return self.sno is not None and self.error is None

    @property
    def repaired(self) -> bool:
        """Imported, with at least one compromise."""
        return self.ok and bool(self.warnings)


@dataclass
class Draft:
    """An SNO being assembled by an importer, with the warnings collected on the way."""

    file: str
    id: str
    title: str = ""
    hypothesis: str | None = None
    claims: list[dict[str, Any]] = field(default_factory=list)
    relations: list[dict[str, Any]] = field(default_factory=list)
    evidence: list[dict[str, Any]] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    warnings: list[FormatWarning] = field(default_factory=list)
    evidence_given: bool = False   # the file states its evidence (maybe none): no rule applies

    def warn(self, element: str, problem: str, *, cause: str) -> None:
        self.warnings.append(FormatWarning(cause, element, problem))


def check_evidence_rule(rule: str) -> EvidenceRule:
    if rule not in EVIDENCE_RULES:
        raise ValueError(f"evidence_rule: must be one of {', '.join(EVIDENCE_RULES)} (got {rule!r})")
    return rule  # type: ignore[return-value]


def leaf_premise_evidence(claims: Iterable[Mapping[str, Any]], relations: Iterable[Mapping[str, Any]],
                          hypothesis: str, source: str) -> list[dict[str, Any]]:
    """Evidence under the ``leaf_premises`` rule.

    A *leaf premise* is a claim that supports another claim while no claim supports
    it (it is where the argument rests on something it does not argue for). It stays
    a claim in the graph and is also copied, text unchanged, as evidence
    ``ev-<claim id>`` with ``source`` ``<file>#<claim id>`` and validity 1.0, so the
    Grounding critic has the author's own ground to check the other claims against.
    The hypothesis and claims that only attack are never evidence.
    """
    relations = list(relations)
    supports_something = {r["source"] for r in relations if r["kind"] == "support"}
    supported = {r["target"] for r in relations if r["kind"] == "support"}
    taken = {str(c["id"]) for c in claims}
    evidence = []
    for claim in claims:
        cid = claim["id"]
        if cid == hypothesis or cid not in supports_something or cid in supported:
            continue
        eid = f"ev-{cid}"
        while eid in taken:
            eid += "_"
        taken.add(eid)
        evidence.append({"id": eid, "text": claim["text"], "source": f"{source}#{cid}", "validity": 1.0})
    return evidence


def build_sno(draft: Draft, evidence_rule: str) -> ImportResult:
    """Repair a draft's claims and relations, then validate it into an SNO.

    The evidence rule applies when the file brings no evidence. A draft relation
    may carry ``"at"`` (the line or element it came from), used to name it in
    warnings and errors. Raises :class:`FormatError` only when no valid SNO can be made.
    """
    draft.claims = _repair_claims(draft)
    if not draft.claims:
        raise FormatError(draft.file, "document", "holds no claims (argumentative units)", "no-claims")
    if draft.hypothesis is None or draft.hypothesis not in {c["id"] for c in draft.claims}:
        raise FormatError(draft.file, "document", "no claim could be chosen as the hypothesis", "no-claims")
    relations = repair_relations(draft)
    locations = [r.pop("at", None) for r in relations]
    draft.relations = relations
    evidence = list(draft.evidence)
    given = draft.evidence_given or bool(evidence)
    if not given and check_evidence_rule(evidence_rule) == "leaf_premises":
        evidence = leaf_premise_evidence(draft.claims, draft.relations, draft.hypothesis, Path(draft.file).name)
    metadata = {**draft.metadata, "evidence_rule": "from_file" if given else evidence_rule}
    data = {"id": draft.id, "title": draft.title, "hypothesis": draft.hypothesis, "claims": draft.claims,
            "relations": draft.relations, "evidence": evidence, "metadata": metadata}
    try:
        # Through parse_snos so that the limits apply and every problem is named by its path.
        (sno,) = parse_snos(json.dumps(data, ensure_ascii=False), name=draft.file, fmt="json")
    except SNOValidationError as err:
        def named(match: re.Match) -> str:   # relations[3] -> relations[3] (line 7 (R2)): the file's own name
            i = int(match.group(1))
            where = (locations[i] or draft.relations[i].get("id")) if i < len(draft.relations) else None
            return f"{match.group(0)} ({where})" if where else match.group(0)

        problems = [re.sub(r"relations\[(\d+)\]", named, p) for p in err.problems[:10]]
        raise FormatError(draft.file, "document", "does not make a valid SNO: " + "; ".join(problems),
                          "invalid-sno") from None
    return ImportResult(file=draft.file, sno=sno, warnings=tuple(draft.warnings))


def _repair_claims(draft: Draft) -> list[dict[str, Any]]:
    """Claims with an id and a text, each id once (the first kept); the rest left out with a warning."""
    kept: dict[str, dict[str, Any]] = {}
    for i, claim in enumerate(draft.claims):
        ident, text = str(claim.get("id") or "").strip(), str(claim.get("text") or "").strip()
        where = f"claim {ident}" if ident else f"claims[{i}]"
        if not ident or not text:
            draft.warn(where, f"has no {'id' if not ident else 'text'}; left out", cause="bad-unit")
        elif ident in kept:
            draft.warn(where, "uses an id already taken by another claim; left out", cause="bad-unit")
        else:
            kept[ident] = claim
    return list(kept.values())


def repair_relations(draft: Draft) -> list[dict[str, Any]]:
    """The draft's relations made fit for the SNO's one-relation-per-pair graph.

    In file order, relations to claims first, then undercuts (which need the
    relation they target): a relation whose source or target is not there is
    dropped (``dangling-relation``), as is a support aimed at a relation
    (``bad-relation``) and a relation from a claim to itself (``self-loop``). A
    second relation between the same pair of claims (an undercut counts at the
    claim it attacks) is merged into the first when it says the same
    (``duplicate-relation``; undercuts of it move to the first), otherwise
    dropped (``conflicting-relation``). Every change is a warning naming both lines.
    """
    claims = {c["id"] for c in draft.claims}
    relations = draft.relations
    where = [r.get("at") or (f"relation {r['id']}" if r.get("id") else f"relations[{i}]")
             for i, r in enumerate(relations)]
    ids = {r.get("id"): i for i, r in enumerate(relations) if r.get("id")}
    alias: dict[str, str] = {}          # relation id -> id of the kept relation it is (merged or itself)
    anchor: dict[str, str] = {}          # kept relation id -> the claim it finally points at
    pairs: dict[tuple[str, str], int] = {}
    kept: dict[int, dict[str, Any]] = {}
    decided: set[int] = set()

    def drop(i: int, problem: str, cause: str) -> None:
        decided.add(i)
        draft.warn(where[i], problem, cause=cause)

    def settle(i: int, rel: dict[str, Any], target_claim: str) -> None:
        decided.add(i)
        if rel["source"] == rel["target"]:
            return drop(i, f"relates {rel['source']!r} to itself; dropped", "self-loop")
        pair = (rel["source"], target_claim)
        if pair in pairs:
            j = pairs[pair]
            first = kept[j]
            same = (first["kind"], first.get("attack_type"), first["target"]) == (
                rel["kind"], rel.get("attack_type"), rel["target"])
            if same:
                if rel.get("id"):
                    alias[rel["id"]] = alias.get(first.get("id"), first.get("id"))
                return drop(i, f"repeats {where[j]} ({rel['source']!r} {rel['kind']}s {target_claim!r}); merged",
                            "duplicate-relation")
            return drop(i, f"{rel['source']!r} already argues about {target_claim!r} in {where[j]} "
                           f"({first['kind']}), this one says {rel['kind']}; the first is kept", "conflicting-relation")
        pairs[pair] = i
        kept[i] = rel
        if rel.get("id"):
            alias[rel["id"]] = rel["id"]
            anchor[rel["id"]] = target_claim

    for i, rel in enumerate(relations):          # relations to claims (and the malformed)
        source, target = rel.get("source"), rel.get("target")
        if source not in claims:
            drop(i, f"source {source!r} is not a claim of the document; dropped", "dangling-relation")
        elif target in claims:
            settle(i, rel, target)
        elif target not in ids:
            drop(i, f"target {target!r} is neither a claim nor a relation of the document; dropped",
                 "dangling-relation")
        elif rel.get("kind") == "support":
            drop(i, f"a support must target a claim, {target!r} is a relation; dropped", "bad-relation")
    progress = True
    while progress:                              # undercuts, once the relation they target is settled
        progress = False
        for i, rel in enumerate(relations):
            if i in decided or ids.get(rel["target"]) not in decided:
                continue
            progress = True
            target = alias.get(rel["target"])
            if target is None:
                drop(i, f"undercuts {where[ids[rel['target']]]}, which was dropped; dropped", "dangling-relation")
                continue
            settle(i, {**rel, "target": target, "attack_type": "undercut"}, anchor[target])
    for i in range(len(relations)):
        if i not in decided:                     # undercuts that only undercut each other
            drop(i, "undercuts itself, or a relation that undercuts it back; dropped", "bad-relation")
    return [kept[i] for i in sorted(kept)]


def pick_hypothesis(candidates: Iterable[str], relations: Iterable[Mapping[str, Any]]) -> str | None:
    """Of several root candidates, the one with the most claims arguing towards it.

    Ties go to the candidate listed first (file order), so the choice is stable.
    An undercut counts towards the claim the relation it undercuts points at.
    """
    relations = list(relations)
    by_id = {r["id"]: r for r in relations if r.get("id")}

    def anchor(target: str) -> str:
        seen: set[str] = set()
        while target in by_id and target not in seen:
            seen.add(target)
            target = by_id[target]["target"]
        return target

    incoming: dict[str, set[str]] = {}
    for r in relations:
        incoming.setdefault(anchor(r["target"]), set()).add(r["source"])

    def reach(root: str) -> int:
        seen, stack = {root}, [root]
        while stack:
            for src in incoming.get(stack.pop(), ()):
                if src not in seen:
                    seen.add(src)
                    stack.append(src)
        return len(seen) - 1

    best, best_reach = None, -1
    for cand in candidates:
        n = reach(cand)
        if n > best_reach:
            best, best_reach = cand, n
    return best


def read_text(path: Path, limits: SNOLimits | None = None) -> str:
    """Read a UTF-8 input file, checking the size limit while reading it (``stat`` can say 0 for a device)."""
    limits = limits or SNOLimits.from_config()
    try:
        text = read_bounded(path, limits.max_file_bytes).decode("utf-8-sig")
    except InputTooLarge as exc:
        raise FormatError(path, "file", str(exc), "file") from None
    except UnicodeDecodeError as exc:
        raise FormatError(path, "file", f"not UTF-8 text (byte {exc.start})", "file") from None
    except OSError as exc:
        raise FormatError(path, "file", f"cannot be read: {exc.strerror or exc}", "file") from None
    if not text.strip():
        raise FormatError(path, "file", "is empty", "file")
    return text

