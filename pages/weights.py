"""Weights: tune the critic weights and see the Trust Score move, without re-running any critic."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from pages import _frame as frame
from cns_core.views import display, ui_state
from cns_core.critics.base import CRITIC_NAMES
from cns_core.scoring import score_shown

frame.page("Weights", "Move a weight and the Trust Score, quality band and contributions follow at once: the "
           "critics' cached results are only re-weighted. Compare with the chosen profile below.")

SLIDERS = {name: f"cns_w_{name}" for name in CRITIC_NAMES}
PRESET, BLEND = "cns_w_preset", "cns_w_blend"
BLEND_FROM, BLEND_TO = ui_state.BLEND_FROM, ui_state.BLEND_TO


def _slider_weights() -> dict[str, float]:
    return {name: float(st.session_state.get(key, 0.0)) for name, key in SLIDERS.items()}


def _on_preset() -> None:
    name = st.session_state[PRESET]
    if name in frame.profiles():          # the custom entry itself changes nothing
        ui_state.choose_profile(st.session_state, name)     # custom weights and the blend are dropped


def _on_reset() -> None:
    ui_state.choose_profile(st.session_state, frame.in_force().profile)


def _on_blend() -> None:
    t = float(st.session_state[BLEND])
    ui_state.set_custom_weights(st.session_state, ui_state.blend_weights(frame.profiles(), t), blend_at=t)


def _on_slider() -> None:
    ui_state.set_custom_weights(st.session_state, _slider_weights())


with frame.guard("Could not tune the weights"):
    profiles = frame.profiles()
    force = frame.in_force()                  # the one source of truth; every widget below mirrors it
    profile = force.profile
    set_to_zero = isinstance(st.session_state.get(ui_state.KEY_WEIGHTS), dict) and not force.custom
    for name, key in SLIDERS.items():
        if not set_to_zero and st.session_state.get(key) != round(force.weights[name], 2):
            st.session_state[key] = round(force.weights[name], 2)
    if not force.custom:                      # a profile in force (chosen here or in the sidebar): blend reset
        st.session_state[BLEND] = ui_state.blend_rest(profile)
    elif force.blend is not None:
        st.session_state[BLEND] = force.blend
    else:
        st.session_state.setdefault(BLEND, ui_state.blend_rest(profile))   # hand-tuned: the blend is not in force
    if st.session_state.get(PRESET) != force.label:
        st.session_state[PRESET] = force.label

    label, sno = frame.current()
    results = frame.results(sno)

    controls, view = st.columns([2, 3], gap="large")
    with controls:
        st.selectbox("Profile preset", ui_state.profile_options(force, profiles), key=PRESET, on_change=_on_preset,
                     help="Loads a profile's weights (and resets the blend); the last profile chosen is the "
                          "'before' of the comparison.")
        if BLEND_FROM in profiles and BLEND_TO in profiles:
            st.slider(f"Blend: {BLEND_FROM} → {BLEND_TO}", 0.0, 1.0, step=0.05, key=BLEND, on_change=_on_blend,
                      help="0 is the exploration profile, 1 the verification profile; in between a linear mix. "
                           "Moving it puts custom weights in force.")
        st.markdown("**Weight per critic** (normalised when used)")
        for name, key in SLIDERS.items():
            st.slider(display.critic_label(name), 0.0, 1.0, step=0.01, key=key, on_change=_on_slider)
        st.button("Back to the profile's weights", on_click=_on_reset, key="cns_w_reset")
        st.caption(f"In force on every page: **{frame.md(force.label)}**"
                   + (ui_state.blend_note(force) if BLEND_FROM in profiles and BLEND_TO in profiles else ""))

    chosen = force.weights
    with view:
        st.markdown(f"**{frame.md(sno.title or sno.id)}**")
        if set_to_zero:
            st.warning("All weights are zero: set at least one weight above zero to get a Trust Score. Until "
                       f"then the {profile} profile's weights stay in force on every page.")
            frame.end_page()
        before = frame.assess(sno, results, profiles[profile], profile)
        after = frame.assess(sno, results, chosen, force.label)
        m1, m2, m3 = st.columns([1, 1.25, 1.25])     # the band and gate badges whole on one line
        changed = f"{after.score:.3f}" != f"{before.score:.3f}"
        with m1:
            st.metric("Trust Score", f"{after.score:.3f}",
                      delta=f"{after.score - before.score:+.3f} vs {profile}" if changed else None,
                      help=f"With the weights in force: {force.label}.")
            frame.incomplete_badge(after.failed)
            frame.cap_note(after)
            frame.abstention_note(after)
            st.caption(f"weights: {frame.md(force.label)}")
            st.caption(f"{display.band_label(after.band)} with {frame.md(force.label)}"
                       + ("" if not force.custom else
                          f"; {display.band_label(before.band)} with the {frame.md(profile)} profile"))
        frame.band_and_gate(after, m2, m3, force.label)
        if after.failed:
            st.warning("Left out (failed): " + ", ".join(display.critic_label(n) for n in after.failed))

        fig = go.Figure()
        labels = [display.critic_label(n) for n in CRITIC_NAMES]
        fig.add_bar(x=labels, y=[before.weighted.contributions.get(n, 0.0) for n in CRITIC_NAMES],
                    name=f"before ({profile})", marker_color="#cbd5e1",
                    hovertemplate="%{x}: %{y:.3f}<extra>before</extra>")
        fig.add_bar(x=labels, y=[after.weighted.contributions.get(n, 0.0) for n in CRITIC_NAMES],
                    name="now", marker_color=[display.critic_colour(n) for n in CRITIC_NAMES],
                    hovertemplate="%{x}: %{y:.3f}<extra>now</extra>")
        fig.update_layout(barmode="group", height=300, margin=dict(l=10, r=10, t=40, b=10),
                          title="Contribution to the Trust Score", yaxis=dict(title="weight × score"),
                          legend=dict(orientation="h", y=1.12, x=1, xanchor="right"))
        st.plotly_chart(fig, width="stretch", key="cns_weights_chart")

    with st.container():     # full width: six number columns do not fit beside the sliders
        table = pd.DataFrame([{
            "Critic": display.critic_label(n) + (" (not applicable)" if n in results and not results[n].applicable
                                                 else ""),
            "Score": score_shown(results[n].score) if n in results and results[n].ok else None,
            f"Weight ({profile})": before.weights.get(n, 0.0),
            "Weight now": after.weights.get(n, 0.0),
            f"Contribution ({profile})": before.weighted.contributions.get(n, 0.0),
            "Contribution now": after.weighted.contributions.get(n, 0.0),
        } for n in CRITIC_NAMES])
        st.dataframe(table, hide_index=True, width="stretch",
                     column_config={"Score": st.column_config.NumberColumn(
                                        "Score", format="%.2f", help="As on Overview and Meta-Critic (2 decimals): "
                                        "a gap between two critics is read from these."),
                                    **{c: st.column_config.NumberColumn(c, format="%.3f") for c in table.columns[2:]}})
