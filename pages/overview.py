"""Overview: the current SNO's Trust Score, band, critics, conflicts and suggestions."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from pages import _frame as frame
from cns_core.views import display, ui_state
from cns_core.critics.base import CRITIC_NAMES

frame.page("Overview", "The Trust Score of the current SNO, what each critic found, and what to fix first. "
           "Pick an example below or another SNO in the sidebar.")

with frame.guard("Could not show the examples"):
    examples = ui_state.load_examples()
    if examples:
        st.markdown("**Examples**")
        st.html(display.WRAPPED_BUTTONS_CSS.format(key="cns_examples"))     # whole titles, on two lines if need be
        cols = st.container(key="cns_examples").columns(min(len(examples), 3))
        for i, (label, sno) in enumerate(examples.items()):
            if cols[i % len(cols)].button(label, key=f"cns_example_{i}", help=ui_state.example_hint(sno),
                                          width="stretch"):
                ui_state.ensure_library(st.session_state, examples)
                ui_state.select_sno(st.session_state, label, sno)
                st.rerun()

with frame.guard("Could not evaluate the current SNO"):
    label, sno = frame.current()
    weights, origin = frame.weights()
    results = frame.results(sno)
    ev = frame.assess(sno, results, weights, origin)

    st.subheader(frame.md(sno.title or sno.id))
    st.markdown(f"**Hypothesis** ({frame.md(sno.hypothesis)}): {frame.md(sno.hypothesis_text)}")
    st.caption(f"{len(sno.claims)} claims · {len(sno.relations)} relations · {len(sno.evidence)} evidence · "
               f"weights: {frame.md(origin)} · {frame.md(frame.population().describe(sno))}")

    m1, m2, m3, m4 = st.columns(4)
    with m1:
        st.metric("Trust Score", f"{ev.score:.3f}", help="Weight-normalised sum of the critic scores, capped "
                                                        "while the SNO's own evidence contradicts its claims.")
        frame.incomplete_badge(ev.failed)
        frame.cap_note(ev)
        frame.abstention_note(ev)
    lo, hi = ev.confidence_band
    m3.metric("Confidence band", f"{lo:.3f} – {hi:.3f}", help="From the critics' confidences and their spread.")
    frame.band_and_gate(ev, m2, m4, origin)
    if ev.failed:
        st.warning("Failed critics (left out, weight redistributed): "
                   + "; ".join(f"{display.critic_label(n)}: {why}" for n, why in ev.failed.items()))

    rows = []
    for name in CRITIC_NAMES:
        r = results.get(name)
        rows.append({
            "Critic": display.critic_label(name) + (" (not applicable)" if r and not r.applicable else ""),
            "Score": r.score if r and r.ok else None,
            "Weight": ev.weights.get(name, 0.0),
            "Contribution": ev.weighted.contributions.get(name, 0.0),
            "Confidence": r.confidence if r and r.ok else None,
            "Costs most": display.costliest_parts(r, {c.id: c.text for c in sno.claims}) if r and r.ok
            else "",
        })
    fig = go.Figure()
    for name in CRITIC_NAMES:
        fig.add_bar(y=[""], x=[ev.weighted.contributions.get(name, 0.0)], orientation="h",
                    name=display.critic_label(name), marker_color=display.critic_colour(name),
                    hovertemplate=f"{display.critic_label(name)}: %{{x:.3f}}<extra></extra>")
    if ev.weighted.capped:          # the bars sum to the weighted sum; the score stops at the cap
        fig.add_vline(x=ev.score, line=dict(color=display.RED, width=3), annotation_position="top right",
                      annotation=dict(text=f"capped at {ev.score:.3f}", font=dict(color=display.RED, size=12),
                                      bgcolor="rgba(255,255,255,0.9)"))
    fig.update_layout(barmode="stack", height=150, margin=dict(l=10, r=10, t=36, b=10),
                      xaxis=dict(range=[0, 1]), title=dict(text="Contributions to the Trust Score", x=0),
                      legend=dict(orientation="h", y=1.25, x=1, xanchor="right", traceorder="normal"))
    st.plotly_chart(fig, width="stretch", key="cns_overview_contrib")
    st.markdown("**Per critic**")
    # Numbers narrow and every header whole, so "Costs most" gets the room left and wraps uncut.
    costs_px = 340
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="cns_overview_critics",
                 row_height=(row_px := display.wrapped_row_height([r["Costs most"] for r in rows], costs_px)),
                 height=display.table_height(len(rows), row_px), column_config={
        "Critic": st.column_config.TextColumn("Critic", width=display.fit_width("Critic", [r["Critic"] for r in rows])),
        "Score": st.column_config.ProgressColumn("Score", min_value=0.0, max_value=1.0, format="%.2f", width=110),
        "Weight": st.column_config.NumberColumn("Weight", format="%.2f", width=display.fit_width("Weight", ["0.00"])),
        "Contribution": st.column_config.NumberColumn("Contribution", format="%.3f",
                                                      width=display.fit_width("Contribution", ["0.000"])),
        "Confidence": st.column_config.NumberColumn("Confidence", format="%.2f",
                                                    width=display.fit_width("Confidence", ["0.00"])),
        "Costs most": st.column_config.TextColumn("Costs most", width=costs_px,
                                                  help="Claims and relations whose removal raises the score "
                                                       "most (leave-one-out), with how much")})
    # The explanations are sentences: listed in full below the table rather than cut off in a cell.
    st.markdown("\n".join(f"- **{display.critic_label(name)}**: "
                           f"{frame.md(results[name].explanation if name in results else 'no result')}"
                           for name in CRITIC_NAMES))

    c1, c2 = st.columns(2)
    with c1:
        st.markdown("**Top conflicts**")
        if not ev.conflicts:
            st.info("No two critics disagree by more than the conflict threshold.")
        for c in sorted(ev.conflicts, key=lambda c: -c.delta)[:3]:
            note = c.weight_note(weights, display.critic_label)
            st.markdown(f"- {c.describe(display.critic_label)}: {c.interpretation}"
                        + (f" *({note}.)*" if note else ""))
    with c2:
        st.markdown("**Suggestions**")
        if not ev.suggestions:
            st.info("No suggestions: every critic is above the suggestion threshold.")
        for s in ev.suggestions[:5]:
            st.markdown(f"- **{frame.md(s.advice)}**: {frame.md(s.where)}")
        if len(ev.suggestions) > 5:
            st.caption(f"{len(ev.suggestions) - 5} more on the Meta-Critic page.")
