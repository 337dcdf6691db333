"""CDCP user comments (Park & Cardie 2018, ``NNNNN.ann.json`` beside ``NNNNN.txt``) as SNOs.

Mapping (one comment is one SNO, its id the file stem):

* every proposition (a ``prop_offsets`` span of the text) is a claim ``p<index>``, role
  ``proponent`` (a comment is one author's argument); its type (value, policy, fact,
  testimony, reference) is kept in ``metadata["type"]``;
* ``reasons`` and ``evidences`` ``[[from, to], target]`` make each proposition from..to a
  ``support`` of ``target`` (the corpus has no attacks);
* the hypothesis is the proposition most others argue towards (a comment has no marked main
  claim), ties to the first; a comment with no link keeps its first proposition.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cns_core.formats.base import Draft, FormatError, ImportResult, build_sno, pick_hypothesis, read_text

__all__ = ["SUFFIXES", "parse_cdcp", "read_cdcp"]

SUFFIXES: tuple[str, ...] = (".json",)


def read_cdcp(path: str | Path, *, evidence_rule: str = "leaf_premises") -> ImportResult:
    """Read ``X.ann.json`` and the comment ``X.txt`` beside it."""
    path = Path(path)
    stem = path.name[: -len(".ann.json")] if path.name.endswith(".ann.json") else path.stem
    txt = path.with_name(stem + ".txt")
    if not txt.is_file():
        raise FormatError(path, "document", f"no comment text {txt.name} beside the annotations", "no-text-file")
    return parse_cdcp(read_text(path), read_text(txt), str(path), sno_id=stem, evidence_rule=evidence_rule)


def _links(ann: dict[str, Any], key: str, n: int, file: str) -> list[tuple[int, int]]:
    out = []
    for i, link in enumerate(ann.get(key) or []):
        try:
            (start, end), target = link
            start, end, target = int(start), int(end), int(target)
        except (TypeError, ValueError):
            raise FormatError(file, f"{key}[{i}]", "must be [[from, to], target]", "bad-relation") from None
        if not (0 <= start <= end < n and 0 <= target < n):
            raise FormatError(file, f"{key}[{i}]", f"refers to a proposition outside 0..{n - 1}", "bad-relation")
        out.extend((src, target) for src in range(start, end + 1) if src != target)
    return out


def parse_cdcp(ann_text: str, text: str, file: str = "<input>", *, sno_id: str = "cdcp",
               evidence_rule: str = "leaf_premises") -> ImportResult:
    try:
        ann = json.loads(ann_text)
    except json.JSONDecodeError as exc:
        raise FormatError(file, f"line {exc.lineno}", f"not valid JSON ({exc.msg})", "syntax") from None
    if not isinstance(ann, dict) or not isinstance(ann.get("prop_offsets"), list):
        raise FormatError(file, "prop_offsets", "must be a list of [start, end] spans")
    labels = ann.get("prop_labels") or []
    draft = Draft(file=file, id=sno_id, metadata={"format": "cdcp"})
    for i, span in enumerate(ann["prop_offsets"]):
        try:
            start, end = int(span[0]), int(span[1])
        except (TypeError, ValueError, IndexError):
            raise FormatError(file, f"prop_offsets[{i}]", "must be [start, end]", "bad-unit") from None
        claim = " ".join(text[start:end].split())
        meta = {"type": str(labels[i])} if i < len(labels) else {}
        draft.claims.append({"id": f"p{i}", "text": claim or f"(empty proposition {i})", "role": "proponent",
                             "metadata": meta})
    n = len(draft.claims)
    seen: set[tuple[int, int]] = set()
    for key in ("reasons", "evidences"):
        for src, tgt in _links(ann, key, n, file):
            if (src, tgt) not in seen:
                seen.add((src, tgt))
                draft.relations.append({"id": f"r{len(draft.relations)}", "source": f"p{src}",
                                        "target": f"p{tgt}", "kind": "support"})
    sources = {r["source"] for r in draft.relations}
    roots = [c["id"] for c in draft.claims if c["id"] not in sources]
    draft.hypothesis = pick_hypothesis(roots or [c["id"] for c in draft.claims], draft.relations)
    return build_sno(draft, evidence_rule)
