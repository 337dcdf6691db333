"""Meta-Critic: where the critics disagree, what that means, and what to improve first."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from pages import _frame as frame
from cns_core.views import display, ui_state
from cns_core.critics.base import CRITIC_NAMES

frame.page("Meta-Critic", "The conflict matrix shows the score gap between every two critics; gaps above the "
           "threshold are conflicts, and hovering a cell says what the disagreement means. Below: the "
           "quality gate, suggestions and an improvement plan whose impact is measured, not guessed.")

_GATE_WIDGET = "cns_meta_gate"


def _on_gate() -> None:
    ui_state.set_gate(st.session_state, st.session_state[_GATE_WIDGET], frame.meta_config())


with frame.guard("Could not run the Meta-Critic"):
    from cns_core.meta import interpret_conflict
    from cns_core.scoring import GAP_DIGITS, score_gap

    config = frame.meta_config()
    label, sno = frame.current()
    weights, origin = frame.weights()
    results = frame.results(sno)
    ev = frame.assess(sno, results, weights, origin)

    st.markdown(f"**{frame.md(sno.title or sno.id)}** · weights: {frame.md(origin)} · Trust Score "
                f"**{ev.score:.3f}**")
    frame.incomplete_badge(ev.failed)
    frame.cap_note(ev)
    frame.abstention_note(ev)
    m1, m2, m3 = st.columns(3)
    m1.metric("Largest share of the Trust Score", display.critic_label(ev.dominant_critic) if ev.dominant_critic
              else "–", help="The critic contributing most to the Trust Score: weight × score, so a heavy weight can "
                             "win it with a low score (the spec's dominant critic).")
    m1.caption(ev.share_note(ev.dominant_critic))
    m2.metric("Lowest score (with weight)", display.critic_label(ev.weakest_dimension) if ev.weakest_dimension
              else "–", help="The lowest-scoring critic that carries weight (the spec's weakest dimension).")
    if ev.weakest_dimension in ev.critic_scores:
        m2.caption(f"score {ev.critic_scores[ev.weakest_dimension]:.3f}")
    m3.metric("Conflicts", len(ev.conflicts), help=f"Pairs whose scores differ by more than {config.conflict_threshold:.2f}.")
    if ev.roles_note(display.critic_label):
        st.caption(ev.roles_note(display.critic_label))

    # ----- conflict matrix -------------------------------------------------------
    names = [n for n in CRITIC_NAMES if n in ev.critic_scores]
    thr = config.conflict_threshold
    z, text, hover = [], [], []
    for a in names:
        zr, tr, hr = [], [], []
        for b in names:
            gap = score_gap(ev.critic_scores[a], ev.critic_scores[b])
            zr.append(gap)
            conflict = gap > thr + 1e-9
            tr.append(f"{display.beside_threshold(gap, thr)}{' ⚠' if conflict else ''}" if a != b else "")
            if a == b:
                hr.append(f"{display.critic_label(a)}: {ev.critic_scores[a]:.2f}")
                continue
            hi, lo = (a, b) if ev.critic_scores[a] >= ev.critic_scores[b] else (b, a)
            verdict = "conflict" if conflict else "within the threshold"
            d = GAP_DIGITS
            hr.append(f"{display.critic_label(hi)} {ev.critic_scores[hi]:.{d}f} over {display.critic_label(lo)} "
                      f"{ev.critic_scores[lo]:.{d}f}<br>gap {gap:.{d}f}: {verdict} ({thr:.2f})<br>"
                      f"<i>{interpret_conflict(hi, lo, config)}</i>")
        z.append(zr)
        text.append(tr)
        hover.append(hr)
    labels = [display.critic_label(n) for n in names]
    fig = go.Figure(go.Heatmap(
        z=z, x=labels, y=labels, zmin=0.0, zmax=1.0, colorscale=display.HEATMAP_COLOURSCALE,
        text=text, texttemplate="%{text}", customdata=hover, hovertemplate="%{customdata}<extra></extra>",
        colorbar=dict(title="score gap", tickvals=[0, thr, 1], ticktext=["0", f"threshold {thr:.2f}", "1"])))
    fig.update_layout(height=420, margin=dict(l=10, r=10, t=40, b=10), title="Conflict matrix (|score gap|)",
                      yaxis=dict(autorange="reversed"))
    if ev.failed:
        st.warning("Failed critics have no score and are not in the matrix: "
                   + ", ".join(display.critic_label(n) for n in ev.failed))
    if ev.not_applicable:
        st.caption("Not in the matrix, having nothing to judge (no score, so no conflict): "
                   + "; ".join(f"{display.critic_label(n)} ({frame.md(why)})" for n, why in ev.not_applicable.items()))
    left, right = st.columns([3, 2], gap="large")
    with left:
        st.plotly_chart(fig, width="stretch", key="cns_meta_heatmap")
    with right:
        st.markdown("**Conflicts**")
        if not ev.conflicts:
            st.info(f"No pair of critics differs by more than {thr:.2f}.")
        for c in sorted(ev.conflicts, key=lambda c: -c.delta):
            note = c.weight_note(weights, display.critic_label)
            st.markdown(f"- {c.describe(display.critic_label)}: *{c.interpretation}*")
            if note:
                st.caption(f"{note}.")

        st.markdown("**Quality gate**")
        gate_force = frame.gate_in_force()
        if st.session_state.get(_GATE_WIDGET) != gate_force.threshold:
            st.session_state[_GATE_WIDGET] = gate_force.threshold
        bands = {b.min_score: b for b in config.bands}
        st.select_slider("Gate threshold: the lowest band it accepts", options=list(config.gate_choices),
                         key=_GATE_WIDGET, on_change=_on_gate,
                         format_func=lambda t: f"{t:.2f} {display.band_label(bands[t])}",
                         help="The gate accepts whole quality bands: the one starting at the threshold and every "
                              "band above. The threshold stays in force for this session on every page "
                              f"(default {config.gate_threshold:.2f}, config/meta.yaml).")
        decision = ev.gate
        (st.success if decision.passed else st.error)(
            f"{'Passes' if decision.passed else 'Fails'}: {decision.reason}. Band: "
            f"{display.band_label(decision.band)} ({decision.band.span}): {decision.action}.")

    st.markdown("**Suggestions** (what to do and where, in the improvement plan's order: priority under the weights "
                "in force, then the Trust Score a critic costs)")
    if not ev.suggestions:
        st.info("No suggestions: every critic scores above the suggestion threshold and nothing conflicts.")
    for s in ev.suggestions:
        places = "".join(f"\n    - {frame.md(p)}" for p in s.places)
        st.markdown(f"- **{frame.md(s.advice)}** · {display.critic_label(s.critic)} {s.standing}{places}")
        if not s.in_force:
            st.caption(f"Not in force: {display.critic_label(s.critic)} has weight 0 under the weights in force "
                       f"({frame.md(origin)}), so acting on it changes no Trust Score.")
        elif s.because:
            st.caption("Why now: " + "; ".join(frame.md(b) for b in s.because))

    st.markdown("**Improvement plan** (expected impact: the Trust Score gain if that critic reached its target)")
    plan = ev.plan
    if not plan:
        st.info("Every critic already reaches its target score.")
    else:
        rows = [{"Priority": step.priority if k == 0 else "",
                 "Critic": f"{display.critic_label(step.critic)} {step.current_score:.2f} → {step.target_score:.2f}",
                 "Action": s.advice, "Where": s.node_list or "the SNO as a whole",
                 "Expected impact": step.expected_impact if k == 0 else None}
                for step in plan for k, s in enumerate(step.suggestions)]
        # Pixel widths that fit the page at 1400-1440 px (about 930 in all); rows tall enough that each action and
        # place wraps uncut (the Suggestions above quote the critic's words in full too).
        widths = {"Priority": display.fit_width("Priority"), "Critic": display.fit_width("Critic: now → target"),
                  "Action": 390, "Where": 150}
        height = max(display.wrapped_row_height([r[c] for r in rows], w) for c, w in widths.items())
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="cns_meta_plan", row_height=height,
                     height=display.table_height(len(rows), height, most_rows=15),
                     column_config={
            "Priority": st.column_config.TextColumn("Priority", width=widths["Priority"]),
            "Critic": st.column_config.TextColumn("Critic: now → target", width=widths["Critic"]),
            "Action": st.column_config.TextColumn("Action", width=widths["Action"],
                                                  help="What to do; the Suggestions above quote the critic."),
            "Where": st.column_config.TextColumn("Where", width=widths["Where"],
                                                 help="Claims and evidence it concerns, most costly first."),
            "Expected impact": st.column_config.ProgressColumn(
                "Expected impact", min_value=0.0, max_value=max(0.01, max(s.expected_impact for s in plan)),
                format="+%.3f", width=110)})
        for step in plan:
            if step.note:
                st.caption(f"{display.critic_label(step.critic)} gains +{step.expected_impact:.3f}: {step.note}.")
