"""Reasoning graph: the current SNO's claims and relations, coloured by grounding."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from pages import _frame as frame
from cns_core.views.graph_html import claim_grounding, graph_findings, sno_graph_html

frame.page("Reasoning graph", "Claims coloured by how well evidence entails them (red → amber → green, grey: "
           "not scored). Solid arrows support, dashed arrows rebut, dotted arrows with a bar undercut. "
           "Hover a claim for its best evidence; drag to rearrange, scroll to zoom.")


@st.cache_data(show_spinner=False, max_entries=32)
def _page_html(_sno, sno_hash: str, per_claim: tuple, height: int) -> str:
    """The offline graph page, rebuilt only when the SNO or its grounding changes."""
    grounding = claim_grounding({cid: {"best_evidence": b, "entailment": e, "contradiction": c}
                                 for cid, b, e, c in per_claim})
    return sno_graph_html(_sno, grounding, height_px=height)


with frame.guard("Could not draw the reasoning graph"):
    label, sno = frame.current()
    results = frame.results(sno)
    grounding_result = results.get("grounding")
    per_claim_raw = (grounding_result.evidence.get("claims") if grounding_result is not None and grounding_result.ok
                     else None) or {}
    grounding = claim_grounding(per_claim_raw)
    if grounding_result is not None and not grounding_result.ok:
        st.warning(f"The Grounding critic failed ({grounding_result.error}); claims are shown grey.")
    height = st.select_slider("Height", options=[420, 560, 720, 900], value=560, key="cns_graph_height")
    per_claim = tuple((cid, g.best_evidence, g.entailment, g.contradiction) for cid, g in sorted(grounding.items()))
    with st.spinner("Drawing the graph…"):
        page_html = _page_html(sno, sno.content_hash(), per_claim, height)
    st.iframe(page_html, height=height + 20)

    findings = graph_findings(sno)
    c1, c2, c3 = st.columns(3)
    with c1:
        st.markdown("**Cycles** (circular reasoning)")
        if findings.cycles:
            for cycle in findings.cycles:
                st.markdown("- " + " → ".join(frame.md(n) for n in [*cycle, cycle[0]]))
        else:
            st.caption("None.")
    for column, title, claims in ((c2, "**Orphans** (argue for no other claim)", findings.orphans),
                                  (c3, "**Detached** (no path to the hypothesis)", findings.detached)):
        with column:
            st.markdown(title)
            if claims:
                st.markdown(", ".join(frame.md(n) for n in sorted(claims)))
            else:
                st.caption("None.")

    st.markdown("**Claims and their grounding**")
    evidence = {e.id: e for e in sno.evidence}
    rows = []
    for claim in sno.claims:
        g = grounding.get(claim.id)
        best = evidence.get(g.best_evidence) if g and g.best_evidence else None
        rows.append({"Claim": claim.id, "Text": claim.text, "Role": claim.role,
                     "Entailment": g.entailment if g else None,
                     "Contradiction": g.contradiction if g else None,
                     "Best evidence": f"{best.id}: {best.text}" if best else ""})
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", column_config={
        "Entailment": st.column_config.ProgressColumn("Entailment", min_value=0.0, max_value=1.0, format="%.2f"),
        "Contradiction": st.column_config.NumberColumn("Contradiction", format="%.2f"),
        "Text": st.column_config.TextColumn("Text", width="large")})
