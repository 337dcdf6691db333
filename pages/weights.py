"""Weights: tune the critic weights and see the Trust Score move, without re-running any critic."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from pages import _frame as frame
from cns_core.views import display, ui_state
from cns_core.critics.base import CRITIC_NAMES
from cns_core.scoring import blend

frame.page("Weights", "Move a weight and the Trust Score, quality band and contributions follow at once: the "
           "critics' cached results are only re-weighted. Compare with the chosen profile below.")

SLIDERS = {name: f"cns_w_{name}" for name in CRITIC_NAMES}
PRESET, BLEND = "cns_w_preset", "cns_w_blend"
BLEND_FROM, BLEND_TO = "exploration", "verification"


def _sliders_to(weights: dict[str, float]) -> None:
    for name, key in SLIDERS.items():
        st.session_state[key] = round(float(weights.get(name, 0.0)), 2)


def _slider_weights() -> dict[str, float]:
    return {name: float(st.session_state.get(key, 0.0)) for name, key in SLIDERS.items()}


def _on_preset() -> None:
    name = st.session_state[PRESET]
    st.session_state[ui_state.KEY_PROFILE] = name
    st.session_state[ui_state.KEY_WEIGHTS] = None
    _sliders_to(frame.profiles()[name])


def _on_blend() -> None:
    profiles = frame.profiles()
    mixed = blend(profiles[BLEND_FROM], profiles[BLEND_TO], float(st.session_state[BLEND]))
    _sliders_to(mixed)
    st.session_state[ui_state.KEY_WEIGHTS] = _slider_weights()


def _on_slider() -> None:
    st.session_state[ui_state.KEY_WEIGHTS] = _slider_weights()


with frame.guard("Could not tune the weights"):
    profiles = frame.profiles()
    profile = ui_state.current_profile(st.session_state, profiles)
    weights, origin = frame.weights()
    for name, key in SLIDERS.items():
        if key not in st.session_state:
            st.session_state[key] = round(weights[name], 2)
    st.session_state.setdefault(BLEND, 0.5)
    if st.session_state.get(PRESET) != profile:
        st.session_state[PRESET] = profile

    label, sno = frame.current()
    results = frame.results(sno)

    controls, view = st.columns([2, 3], gap="large")
    with controls:
        st.selectbox("Profile preset", list(profiles), key=PRESET, on_change=_on_preset,
                     help="Loads a profile's weights into the sliders; it is the 'before' of the comparison.")
        if BLEND_FROM in profiles and BLEND_TO in profiles:
            st.slider(f"Blend: {BLEND_FROM} → {BLEND_TO}", 0.0, 1.0, step=0.05, key=BLEND, on_change=_on_blend,
                      help="0 is the exploration profile, 1 the verification profile; in between a linear mix.")
        st.markdown("**Weight per critic** (normalised when used)")
        for name, key in SLIDERS.items():
            st.slider(display.critic_label(name), 0.0, 1.0, step=0.01, key=key, on_change=_on_slider)
        st.button("Back to the profile's weights", on_click=_on_preset, key="cns_w_reset")

    chosen = _slider_weights()
    with view:
        st.markdown(f"**{frame.md(sno.title or sno.id)}**")
        if sum(chosen.values()) <= 0:
            st.warning("All weights are zero: set at least one weight above zero to get a Trust Score.")
            st.stop()
        before = frame.assess(sno, results, profiles[profile], profile)
        after = frame.assess(sno, results, chosen, "custom")
        m1, m2 = st.columns(2)
        changed = f"{after.score:.3f}" != f"{before.score:.3f}"
        with m1:
            st.metric("Trust Score", f"{after.score:.3f}",
                      delta=f"{after.score - before.score:+.3f} vs {profile}" if changed else None)
            frame.incomplete_badge(after.failed)
        with m2:
            frame.stat("Quality band", frame.badge(display.band_label(after.band), display.band_colour(after.band)),
                       f"{display.band_label(before.band)} with the {profile} profile")
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
            "Critic": display.critic_label(n),
            "Score": results[n].score if n in results and results[n].ok else None,
            f"Weight ({profile})": before.weights.get(n, 0.0),
            "Weight now": after.weights.get(n, 0.0),
            f"Contribution ({profile})": before.weighted.contributions.get(n, 0.0),
            "Contribution now": after.weighted.contributions.get(n, 0.0),
        } for n in CRITIC_NAMES])
        st.dataframe(table, hide_index=True, width="stretch",
                     column_config={c: st.column_config.NumberColumn(c, format="%.3f") for c in table.columns[1:]})
