"""The Author page's "From text": text and sources in, a drafted SNO as editable tables, back out
as a validated SNO.

Drafting itself is :func:`cns_core.text.draft_sno`; this module only turns its input widgets
into its arguments and its result into the rows of the page's three editors, each row with
the reason the draft gave for it (``why``, read-only), and the edited rows back into an SNO.
A row left as drafted keeps its metadata (cue, NLI probabilities, character offsets); an
edited or added row says so instead, since the drafted reason no longer describes it.
Every problem is a message naming the input or the field, never a traceback.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from cns_core.sno import SNO
from cns_core.text import (Draft, SourceText, TextInputError, draft_sno, drafter_identity, read_source_bytes,
                           read_text_bytes)
from cns_core.text.corrections import active_refit, corrections_dir, record_correction, refit_dir, revert_to_shipped
from cns_core.views import refit_job
from cns_core.views.refit_job import RefitStatus
from cns_core.views.ui_state import FormResult, is_blank, sno_from_tables

__all__ = ["CLAIM_COLUMNS", "RELATION_COLUMNS", "EVIDENCE_COLUMNS", "TEXT_TYPES", "SOURCE_TYPES", "DraftTables",
           "PASTED_SOURCE", "read_inputs", "draft_tables", "tables_of", "sno_from_draft", "drafted_as",
           "keep_correction", "DrafterStatus", "drafter_status", "refit_command", "start_refit", "refit_state",
           "revert_drafter"]

CLAIM_COLUMNS = ("id", "text", "role", "drafted_as", "why")
RELATION_COLUMNS = ("id", "source", "target", "kind", "attack_type", "why")
EVIDENCE_COLUMNS = ("id", "text", "source", "validity", "why")
TEXT_TYPES = ("txt", "md")           # the text to judge
SOURCE_TYPES = ("txt", "md", "pdf")  # its sources
EDITED = "edited by hand"            # the reason of a row that is no longer as drafted

# what identifies a row as "as drafted" (the reason describes it only while these are unchanged)
_SAME = {"claims": ("text",), "relations": ("source", "target", "kind", "attack_type"),
         "evidence": ("text", "source")}


@dataclass(frozen=True)
class DraftTables:
    """A draft as the editors show it: rows per table (with ``why``), its notes and where it came from."""

    sno_id: str
    title: str
    hypothesis: str
    claims: list[dict[str, Any]]
    relations: list[dict[str, Any]]
    evidence: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)
    drafted: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)   # table -> id -> item as drafted
    sno_metadata: dict[str, Any] = field(default_factory=dict)
    left_out: list[dict[str, str]] = field(default_factory=list)    # sentences kept out of the graph, with why
    text: str = ""                                                   # the text drafted from
    drafted_sno: dict[str, Any] = field(default_factory=dict)        # the draft as it came, to see corrections

    @property
    def method(self) -> str:
        """Who drafted: the argument miner, or the rules when it could not load (and why not)."""
        method = str(self.sno_metadata.get("method", ""))
        problem = self.sno_metadata.get("drafter_problem")
        return f"{method} ({problem})" if problem else method


PASTED_SOURCE = "pasted source"      # the name a source pasted into the page goes by


def read_inputs(pasted: str, upload: tuple[str, bytes] | None,
                sources: Iterable[tuple[str, bytes]] = (), pasted_source: str = "") -> tuple[str, list[SourceText]]:
    """The text to judge (an upload wins over pasted text) and the sources (uploads, then a pasted
    source's text when not blank), each checked by :mod:`cns_core.text` (binary, not UTF-8, empty,
    too big, unreadable PDF): TextInputError names it."""
    if upload is not None:
        name, data = upload
        text = read_text_bytes(data, name)
    elif isinstance(pasted, str) and pasted.strip():
        text = pasted
    else:
        raise TextInputError("text: paste the text to judge or upload a .txt or .md file")
    read = [read_source_bytes(data, name) for name, data in sources]
    if isinstance(pasted_source, str) and pasted_source.strip():
        read.append(read_source_bytes(pasted_source.encode("utf-8"), PASTED_SOURCE))
    return text, read


def _why(metadata: Mapping[str, Any]) -> str:
    """The draft's reason in one line: its ``why`` and the NLI probabilities it used."""
    why = str(metadata.get("why", ""))
    numbers = [f"{k.replace('nli_', 'NLI ')} {v:.2f}" for k, v in metadata.items()
               if k.startswith("nli_") and isinstance(v, (int, float))]
    if "source" in metadata and "start" in metadata:
        numbers.append(f"{metadata['source']}, characters {metadata['start']}-{metadata.get('end', '?')}")
    return "; ".join(p for p in [why, ", ".join(numbers), str(metadata.get("validity_note") or "")] if p)


def drafted_as(metadata: Mapping[str, Any]) -> str:
    """A claim's drafted role and how sure the miner was: "main claim 0.82", "premise 0.91" (blank for the rules).

    The confidence is p(main claim) for the main claim, else p(argumentative) = 1 - p(not argumentative).
    """
    role, probs = metadata.get("unit_role"), metadata.get("role_p")
    if not role or not isinstance(probs, Mapping):
        return ""
    confidence = probs.get("main", 0.0) if role == "main claim" else 1.0 - probs.get("none", 0.0)
    return f"{role} {confidence:.2f}"


def tables_of(draft: Draft, text: str = "") -> DraftTables:
    """The editors' rows of a draft."""
    sno = draft.sno
    claims = [{"id": c.id, "text": c.text, "role": c.role, "drafted_as": drafted_as(c.metadata),
               "why": _why(c.metadata)} for c in sno.claims]
    relations = [{"id": r.id or "", "source": r.source, "target": r.target, "kind": r.kind,
                  "attack_type": r.attack_type or "", "why": _why(r.metadata)} for r in sno.relations]
    evidence = [{"id": e.id, "text": e.text, "source": e.source, "validity": float(e.validity),
                 "why": _why(e.metadata)} for e in sno.evidence]
    drafted = {"claims": {c.id: c.model_dump(mode="json") for c in sno.claims},
               "relations": {r.id: r.model_dump(mode="json") for r in sno.relations if r.id},
               "evidence": {e.id: e.model_dump(mode="json") for e in sno.evidence}}
    left_out = [{"text": str(item.get("text", "")), "why": str(item.get("why", ""))}
                for item in sno.metadata.get("left_out", []) if isinstance(item, Mapping)]
    return DraftTables(sno.id, sno.title, sno.hypothesis, claims, relations, evidence, list(draft.notes), drafted,
                       dict(sno.metadata), left_out, text, sno.model_dump(mode="json"))


def draft_tables(text: str, sources: Sequence[SourceText] = (), question: str | None = None) -> DraftTables:
    """Draft ``text`` (with its sources as evidence) into the editors' rows; TextInputError names bad input."""
    return tables_of(draft_sno(text, sources=sources, question=question or None), text)


def keep_correction(tables: DraftTables, sno: SNO, root: Path | None = None) -> str:
    """Keep the person's corrected SNO with its text for the drafter to learn from; what happened, in words."""
    if not tables.text or not tables.drafted_sno:
        return "This draft has no text kept with it: draft it again to keep corrections."
    path = record_correction(tables.text, SNO.model_validate(tables.drafted_sno), sno, root)
    if path is None:
        return "Nothing to keep: roles, relations, claims and the main claim are as drafted."
    count = len(list(corrections_dir(root).glob("*.json")))
    return f"Kept ({count} corrected text(s) in the state folder); refit the drafter to learn from them."


@dataclass(frozen=True)
class DrafterStatus:
    """Which drafter drafts now, and what a refit would learn from."""

    active: str            # "shipped" or "refit on your corrections"
    identity: str
    corrections: int
    refit_ready: bool      # a refit exists in the state folder (active or not)


def drafter_status(root: Path | None = None) -> DrafterStatus:
    refit = active_refit(root)
    return DrafterStatus("refit on your corrections" if refit else "shipped", drafter_identity(),
                         len(list(corrections_dir(root).glob("*.json"))) if corrections_dir(root).is_dir() else 0,
                         (refit_dir(root) / "miner.json").is_file())


def refit_command(root: Path | None = None) -> list[str]:
    """``cns train-drafter --corrections <state>/drafter/corrections`` as the page's button runs it."""
    return [sys.executable, "-m", "cns_core.cli", "train-drafter", "--corrections", str(corrections_dir(root))]


def start_refit(root: Path | None = None) -> RefitStatus:
    """Run the refit in the background (it takes minutes; :mod:`cns_core.views.refit_job` follows it and reaps
    the process), its output to ``<state>/drafter/refit.log``."""
    return refit_job.start_refit(refit_command(root), root)


def refit_state(root: Path | None = None) -> RefitStatus:
    """The latest refit of this state folder (running, done, failed, interrupted or none)."""
    return refit_job.refit_status(root)


def revert_drafter(root: Path | None = None) -> str:
    return ("The shipped drafter drafts again (the refit stays in the state folder)."
            if revert_to_shipped(root) else "The shipped drafter was already the active one.")


def _same(row: Mapping[str, Any], drafted: Mapping[str, Any], keys: Sequence[str]) -> bool:
    def norm(v: Any) -> Any:
        return None if is_blank(v) else (v.strip() if isinstance(v, str) else v)

    return all(norm(row.get(k)) == norm(drafted.get(k)) for k in keys)


def sno_from_draft(tables: DraftTables, sno_id: str, title: str, hypothesis: str | None,
                   claims: Iterable[Mapping[str, Any]], relations: Iterable[Mapping[str, Any]],
                   evidence: Iterable[Mapping[str, Any]]) -> FormResult:
    """The edited rows as a validated SNO (problems as ``field: message``, as the form and uploads
    report them). Rows left as drafted keep their metadata; edited or added rows are marked so."""
    rows = {"claims": list(claims), "relations": list(relations), "evidence": list(evidence)}
    result = sno_from_tables(sno_id, title, hypothesis, rows["claims"], rows["relations"], rows["evidence"])
    if result.sno is None:
        return result
    data = result.sno.model_dump(mode="json")
    for table, items in (("claims", data["claims"]), ("relations", data["relations"]), ("evidence", data["evidence"])):
        for item in items:
            drafted = tables.drafted.get(table, {}).get(item.get("id") or "")
            item["metadata"] = (dict(drafted.get("metadata") or {})
                                if drafted is not None and _same(item, drafted, _SAME[table]) else {"why": EDITED})
    data["metadata"] = {**tables.sno_metadata, **data.get("metadata", {})}
    sno = SNO.model_validate(json.loads(json.dumps(data)))
    return FormResult(result.data, sno, [])
