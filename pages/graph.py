"""Reasoning graph: the current SNO's claims and relations, coloured by grounding."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from pages import _frame as frame
from cns_core.views import display
from cns_core.critics.grounding_verdict import claim_verdicts
from cns_core.views.graph_html import (passages_note, claim_passage_rows, claim_verdict_rows, graph_findings,
                                       graph_height, sno_graph_html)

frame.page("Reasoning graph", "Each claim shows its grounding verdict: ✓ supported (green box), ✗ contradicted "
           "(red ellipse), ? not enough information (slate), – not scored (grey); paler means less sure. The label "
           "gives the verdict's probability, or for not enough information how near each side came. Solid arrows "
           "support, dashed arrows rebut, dotted arrows with a bar undercut. Hover a claim for its best passage; "
           "drag to rearrange, scroll to zoom.")


@st.cache_data(show_spinner=False, max_entries=32)
def _page_html(_sno, _grounding, sno_hash: str, grounding_key: str, height: int) -> str:
    """The offline graph page, rebuilt only when the SNO or its grounding changes."""
    return sno_graph_html(_sno, _grounding, height_px=height)


with frame.guard("Could not draw the reasoning graph"):
    label, sno = frame.current()
    results = frame.results(sno)
    grounding_result = results.get("grounding")
    grounding = claim_verdicts(results)          # the one verdict per claim, as every page reads it
    if grounding_result is not None and grounding_result.broke:
        st.warning(f"The Grounding critic failed ({grounding_result.error}); claims are shown grey.")
    elif grounding_result is not None and not grounding_result.applicable:
        st.info(f"Grounding is not applicable ({frame.md(grounding_result.abstention)}); claims are shown grey.")
    heights = [420, 560, 720, 900, 1100]
    fitting = next((h for h in heights if h >= graph_height(sno, grounding)), heights[-1])    # every layer at a readable size
    height = st.select_slider("Height", options=heights, value=fitting, key=f"cns_graph_height_{sno.content_hash()}",
                              help="Set from the graph's layers; a graph wider than the page opens at a readable "
                                   "zoom on its hypothesis: drag to pan, scroll to zoom out.")
    with st.spinner("Drawing the graph…"):
        page_html = _page_html(sno, grounding, sno.content_hash(), repr(sorted(grounding.items())), height)
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

    st.markdown("**Claims: grounding verdict and the passages behind it**")
    claim_rows = claim_verdict_rows(sno, grounding)
    text_px, best_px = 200, 170        # with the numbers and headers whole, the page's 940 px; text wraps uncut
    row_px = max(display.wrapped_row_height([r["Text"] for r in claim_rows], text_px),
                 display.wrapped_row_height([r["Verdict reads"] for r in claim_rows], best_px))
    st.dataframe(pd.DataFrame(claim_rows), hide_index=True, width="stretch", key="cns_graph_claims", row_height=row_px,
                 height=display.table_height(len(claim_rows), row_px, most_rows=20), column_config={
        "Claim": st.column_config.TextColumn("Claim", width=display.fit_width("Claim", [r["Claim"] for r in claim_rows],
                                                                            least=56)),
        "Text": st.column_config.TextColumn("Text", width=text_px),
        "Role": st.column_config.TextColumn("Role", width=display.fit_width("Role", [r["Role"] for r in claim_rows])),
        "Verdict": st.column_config.TextColumn("Verdict", width=120),
        "p(supported)": st.column_config.ProgressColumn("p(supported)", min_value=0.0, max_value=1.0, format="%.2f",
                                                        width=display.fit_width("p(supported)")),
        "p(contradicted)": st.column_config.NumberColumn("p(contradicted)", format="%.2f",
                                                         width=display.fit_width("p(contradicted)")),
        "Verdict reads": st.column_config.TextColumn("Verdict reads", width=best_px,
                                                     help="The passage the verdict rests on (for a contradicted claim "
                                                          "the one contradicting it most, for a supported claim the "
                                                          "one entailing it most, else the most similar), its item and "
                                                          "part, and what it shows; the passages table below quotes "
                                                          "it in full. The Coherence page names the same item.")})
    scored = [c.id for c in sno.claims if grounding.get(c.id) and grounding[c.id].passages]
    if scored:
        chosen = st.selectbox("Passages judged for claim", scored, key="cns_graph_passages_claim")
        st.caption(passages_note(chosen, grounding[chosen]))
        passage_rows = claim_passage_rows(grounding[chosen], {e.id: e.text for e in sno.evidence})
        # Every column whole within the page's 940 px: the numbers under short headers (explained on hover),
        # the passage in the width left, wrapped in rows tall enough.
        numbers = {"Similarity": ("Sim.", "How similar the passage is to the claim (cosine of the embeddings)."),
                   "Entailment": ("Entail.", "p(entailment) of the NLI model, on this passage alone."),
                   "Contradiction": ("Contra.", "p(contradiction) of the NLI model, on this passage alone.")}
        widths = {c: display.fit_width(c, [r[c] for r in passage_rows])
                  for c in ("Evidence", "Part", "Shows", "Verdict reads")}
        widths.update({c: display.fit_width(short, ["0.00"]) for c, (short, _) in numbers.items()})
        passage_px = max(240, 930 - sum(widths.values()))
        st.dataframe(pd.DataFrame(passage_rows), hide_index=True, width="stretch", key="cns_graph_passages",
                     row_height=(row_px := display.wrapped_row_height([r["Passage"] for r in passage_rows],
                                                                      passage_px, most_lines=8)),
                     height=display.table_height(len(passage_rows), row_px, most_rows=20),
                     column_config={"Passage": st.column_config.TextColumn("Passage", width=passage_px),
                                    **{c: st.column_config.TextColumn(c, width=widths[c])
                                       for c in ("Evidence", "Part", "Shows", "Verdict reads")},
                                    **{c: st.column_config.NumberColumn(short, format="%.2f", width=widths[c],
                                                                        help=why)
                                       for c, (short, why) in numbers.items()}})
