"""Evidence for a drafted claim's figures: the source sentence that states the same numbers.

The sources become the SNO's evidence as passages of a few sentences. A claim stating a figure
("NO2 fell 38%") is judged against its most similar passage, and a passage that also states
other things dilutes the NLI model's entailment (measured: 0.65 against a two-sentence source,
0.91 against the one sentence). So drafting adds, for each claim with a figure, the source
sentence that states the same figures as an evidence item of its own, with its provenance and
the claim it was found for: the grounding critic then judges the claim against exactly the
sentence that states it. Nothing is added when no sentence states the claim's figures.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Sequence

from cns_core.text.segment import sentence_spans
from cns_core.text.sources import UNSTATED_VALIDITY, UNSTATED_VALIDITY_WHY, SourceText

__all__ = ["figures", "StatingSentence", "stating_sentences", "with_stating_evidence"]

_FIGURE = re.compile(r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(\s*(?:%|per\s*cent\b|percent\b))?", re.IGNORECASE)
_WORD = re.compile(r"[a-z]{4,}")
MAX_PER_CLAIM = 2
MAX_SOURCE_CHARS = 2_000_000      # sentences of longer sources are not searched (the passages still are)


def figures(text: str) -> frozenset[str]:
    """The numbers ``text`` states, normalised ("38 per cent" and "38%" are one figure, "1,200" is "1200")."""
    out = set()
    for number, percent in _FIGURE.findall(text):
        out.add(number.replace(",", "") + ("%" if percent else ""))
    return frozenset(out)


@dataclass(frozen=True)
class StatingSentence:
    """A source sentence that states the figures of the claims it was found for."""

    source: str
    start: int
    end: int
    text: str
    claims: tuple[str, ...]
    states: tuple[str, ...]


def _overlap(a: str, b: str) -> int:
    return len(set(_WORD.findall(a.lower())) & set(_WORD.findall(b.lower())))


def stating_sentences(claims: Sequence[tuple[str, str]], sources: Sequence[SourceText]) -> list[StatingSentence]:
    """For each ``(claim id, text)`` with figures, up to two source sentences stating them all (or, for a
    claim with several, every one but a bare year or count), best first by shared words."""
    wanted = {cid: figures(text) for cid, text in claims}
    wanted = {cid: f for cid, f in wanted.items() if f}
    if not wanted:
        return []
    sentences = [(s.name, span) for s in sources if len(s.text) <= MAX_SOURCE_CHARS for span in sentence_spans(s.text)]
    stated = [figures(span.text) for _, span in sentences]
    found: dict[tuple[str, int], dict[str, Any]] = {}
    texts = dict(claims)
    for cid, need in wanted.items():
        percents = {f for f in need if f.endswith("%") or "." in f}
        ranked = []
        for k, have in enumerate(stated):
            shared = need & have
            if not shared or (shared != need and not (percents and percents <= shared)):
                continue
            ranked.append((len(shared), _overlap(texts[cid], sentences[k][1].text), k, shared))
        for _, _, k, shared in sorted(ranked, reverse=True)[:MAX_PER_CLAIM]:
            name, span = sentences[k]
            entry = found.setdefault((name, span.start), {"k": k, "claims": [], "states": set()})
            entry["claims"].append(cid)
            entry["states"] |= shared
    out = []
    for (name, _), entry in sorted(found.items(), key=lambda item: item[1]["k"]):
        span = sentences[entry["k"]][1]
        out.append(StatingSentence(name, span.start, span.end, span.text, tuple(entry["claims"]),
                                   tuple(sorted(entry["states"]))))
    return out


def with_stating_evidence(sno_data: dict[str, Any], sources: Sequence[SourceText]) -> dict[str, Any]:
    """An SNO's data with an evidence item for each source sentence stating a claim's figures."""
    found = stating_sentences([(c["id"], c["text"]) for c in sno_data.get("claims", [])], sources)
    if not found:
        return sno_data
    evidence = list(sno_data.get("evidence", []))
    taken = {e["id"] for e in evidence}
    k = len(evidence)
    for s in found:
        k += 1
        while f"e{k}" in taken:
            k += 1
        evidence.append({"id": f"e{k}", "text": " ".join(s.text.split()), "source": s.source,
                         "validity": UNSTATED_VALIDITY,
                         "metadata": {"source": s.source, "start": s.start, "end": s.end, "for_claims": list(s.claims),
                                      "why": f"the source sentence stating {', '.join(s.states)}, "
                                             f"as claim(s) {', '.join(s.claims)} do",
                                      "validity_note": UNSTATED_VALIDITY_WHY}})
    return {**sno_data, "evidence": evidence}
