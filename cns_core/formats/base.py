"""What every importer shares: the one error type, per-file results, the evidence rule.

Argument corpora come from other tools, so nothing in them is trusted: a
problem is raised as :class:`FormatError` naming the file, the element and the
problem, and a folder import turns each file's error into its own
:class:`ImportResult` so one bad file never stops the others.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Literal, Mapping

from cns_core.sno import SNO, SNOLimits, SNOValidationError, parse_snos

__all__ = [
    "EVIDENCE_RULES",
    "EvidenceRule",
    "Draft",
    "FormatError",
    "ImportResult",
    "build_sno",
    "check_evidence_rule",
    "leaf_premise_evidence",
    "pick_hypothesis",
    "read_text",
]

EvidenceRule = Literal["leaf_premises", "none"]
EVIDENCE_RULES: tuple[str, ...] = ("leaf_premises", "none")


class FormatError(ValueError):
    """A file that cannot be imported: which file, which element in it, what is wrong."""

    def __init__(self, file: str | Path, element: str, problem: str):
        self.file = str(file)
        self.element = element
        self.problem = problem
        super().__init__(f"{self.file}: {element}: {problem}")


@dataclass(frozen=True)
class ImportResult:
    """The outcome for one input document: an SNO, or the error that stopped it.

    ``warnings`` name what was imported with a compromise (a skipped node, a
    locution promoted to a claim, a span that does not match its text).
    """

    file: str
    sno: SNO | None = None
    error: FormatError | None = None
    warnings: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.sno is not None and self.error is None


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
    warnings: list[str] = field(default_factory=list)
    evidence_given: bool = False   # the file states its evidence (maybe none): no rule applies

    def warn(self, element: str, problem: str) -> None:
        self.warnings.append(f"{element}: {problem}")


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
    """Validate a draft into an SNO, applying the evidence rule when it brings no evidence."""
    if not draft.claims:
        raise FormatError(draft.file, "document", "holds no claims (argumentative units)")
    if draft.hypothesis is None:
        raise FormatError(draft.file, "document", "no claim could be chosen as the hypothesis")
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
        def named(match: re.Match) -> str:   # relations[3] -> relations[3] (id c4): the file's own name
            i = int(match.group(1))
            rid = draft.relations[i].get("id") if i < len(draft.relations) else None
            return f"{match.group(0)} (id {rid})" if rid else match.group(0)

        problems = [re.sub(r"relations\[(\d+)\]", named, p) for p in err.problems[:10]]
        raise FormatError(draft.file, "document", "does not make a valid SNO: " + "; ".join(problems)) from None
    return ImportResult(file=draft.file, sno=sno, warnings=tuple(draft.warnings))


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
    """Read a UTF-8 input file, checking the size limit before reading it."""
    limits = limits or SNOLimits.from_config()
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise FormatError(path, "file", f"cannot be read: {exc.strerror}") from None
    if size > limits.max_file_bytes:
        raise FormatError(path, "file", f"{size:,} bytes exceed the limit of {limits.max_file_bytes:,} bytes")
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise FormatError(path, "file", f"not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise FormatError(path, "file", f"cannot be read: {exc.strerror}") from None
    if not text.strip():
        raise FormatError(path, "file", "is empty")
    return text

