"""The Coherence page's words around its numbers: when to offer "check again without a time limit",
what a share rests on, and which chains had nothing to compare.

The SNO check and the engram stream are both summed up as a
:class:`~cns_core.coherence.schemas.ModelCoverage` (its ``sentence`` is what the page
prints); the page offers a re-check only for a result the budget cut short, not for one
that no model could help (unavailable or failing).
"""

from __future__ import annotations

from typing import Any

from cns_core.critics.grounding_verdict import shown_probability

__all__ = ["offers_unlimited", "stream_note", "share_note", "uncompared_note", "COHERENCE_HELP", "density_help",
           "density_note", "claim_rows", "pair_rows", "CLAIMS_NOTE", "PAIRS_NOTE", "blocked_note"]

COHERENCE_HELP = ("The mean over the claims of p(supported) minus p(contradicted) of each claim's verdict (the table "
                  "below; the hook's entail minus contradict for a claim without one). From -1 (every claim "
                  "contradicted) to 1 (every claim supported); below 0, contradiction outweighs support.")
CLAIMS_NOTE = ("Verdict and its probabilities: the Grounding critic's, the same as on Reasoning graph; they make the "
               "Coherence metric. Conflicts with: the nodes this claim forms a contradiction pair with (the pairs "
               "table below; e… is evidence, anything else a claim); they make the contradiction density. Hook "
               "columns: the coherence hook's own tag of the claim against the claims and evidence most like it "
               "(what the engram stream is judged by). It is not the verdict: a high hook contradiction beside a "
               "supported verdict is a sentence that reads against a neighbour, not against the evidence's best "
               "passage.")
PAIRS_NOTE = ("Score, claim-evidence: the claim's verdict p(contradicted) times the validity of the evidence its "
              "verdict reads (e.g. 0.713 × 0.95 = 0.68), computed from the unrounded probability; the tables show a "
              "probability cut to 2 decimals (never rounded up past a threshold), so 0.71 × 0.95 may read 0.67 or "
              "0.68. Claim-claim: the hook's calibrated "
              "contradiction between the two claims. The passage numbers on Reasoning graph are the NLI model's "
              "per passage; the verdict fuses them (see there). Declared: an attack relation already states the "
              "conflict (a rebuttal, not an inconsistency).")

# degradations a check without a time limit can lift (an unavailable or failing model it cannot)
_TIME_LIMITED = frozenset({"model_budget", "model_timeout", "model_dropped"})


def offers_unlimited(report: Any) -> bool:
    """True when the time limit cut the check short (a re-check without it can judge more)."""
    return report.coverage.budget_ms is not None and bool(_TIME_LIMITED & set(report.degraded))


def stream_note(unrecorded: int) -> str:
    """What the stream's counts leave out: chains logged before the log recorded who judged them."""
    return (f" {unrecorded:,} older chain(s) in the log predate this record and are not counted."
            if unrecorded else "")


def share_note(part: int, whole: int, what: str, too_few: bool) -> str:
    """The count behind a percentage ("2 of 2 drift chains"), flagged when too few to read."""
    if whole == 0:
        return f"no {what} yet"
    return f"{part:,} of {whole:,} {what}" + ("; too few to read" if too_few else "")


def blocked_note(blocked_in_log: int, counts: Any) -> str:
    """What became of the chains the log counts as blocked, in the memory's own count (``MemoryCounts``): a
    blocked turn waits in the quarantine until a re-check releases it, so the log's "Blocked" and the Engrams
    page's "quarantined" differ by the releases, and this says so."""
    said = (f"The memory now: {counts.quarantine_words()}." if counts.released
            else f"The memory now: {counts.quarantined:,} quarantined, none released.")
    if blocked_in_log == counts.blocked:
        return (f"Blocked: chains the hook held back in the quarantine; a re-check releases one into the engrams "
                f"once later evidence clears it. {said}")
    return (f"Blocked: chains the hook held back; a re-check releases one once later evidence clears it. {said} "
            f"The log's {blocked_in_log:,} and the memory's {counts.blocked:,} differ: checks that store nothing "
            "(`cns coherence check`) log a block too, and a log outlives a memory that was cleared.")


def uncompared_note(uncompared: int) -> str:
    """Chains whose coherence is n/a because they had nothing to compare (not plotted as 0)."""
    if not uncompared:
        return ""
    return (f"{uncompared:,} chain(s) had nothing to compare (no earlier engram or evidence on the topic): their "
            "coherence is n/a, so they are left out of the chart, the means and the drift indicator.")


def density_help(report: Any) -> str:
    """The density metric's tooltip: what it counts, with the counts."""
    n, hit = len(report.claims), len(report.contradicted_claims)
    return (f"Share of claims in at least one contradiction pair (the table at the bottom): {hit} of {n}. "
            "A claim with a contradicted verdict is always in one, with the evidence that contradicts it most.")


def density_note(report: Any) -> str:
    """The count behind the density, under the metric ("5 of 7 claims: c1, c3, ...")."""
    hit = report.contradicted_claims
    return f"{len(hit)} of {len(report.claims)} claims" + (": " + ", ".join(hit) if hit else "")


def claim_rows(report: Any) -> list[dict[str, Any]]:
    """One row per claim: its verdict (the Grounding critic's), the nodes it conflicts with, the hook's tag."""
    rows = []
    for cid, cc in report.claims.items():
        v = cc.verdict
        rows.append({"Claim": cid, "Verdict": v.label if v is not None else cc.status,
                     "p(supported)": shown_probability(v.p_supported) if v is not None else None,
                     "p(contradicted)": shown_probability(v.p_contradicted) if v is not None else None,
                     "Conflicts with": ", ".join(report.partners(cid)) or "–",
                     "Hook entail": cc.tag.entail, "Hook contradict": cc.tag.contradict,
                     "Uncertainty": cc.tag.uncertainty, "Types": ", ".join(cc.tag.contradiction_types)})
    return rows


def pair_rows(report: Any, validity: dict[str, float]) -> list[dict[str, Any]]:
    """One row per contradiction pair, with the two numbers its score is made of (claim-evidence pairs)."""
    rows = []
    for p in report.pairs:
        verdict = report.claims[p.a].verdict if p.a in report.claims else None
        grounded = p.kind == "claim-evidence" and "grounding" in p.types and verdict is not None
        rows.append({"A": p.a, "B": p.b, "Score": p.score,
                     "p(contradicted)": shown_probability(verdict.p_contradicted) if grounded else None,
                     "Evidence validity": validity.get(p.b) if grounded else None,
                     "Kind": p.kind, "Types": ", ".join(p.types),
                     "Declared": "attack relation" if p.declared else "not declared"})
    return rows
