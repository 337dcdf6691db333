"""Coherence: proposition tags and contradictions of the current SNO; chain metrics from the hook's log."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from pages import _frame as frame
from cns_core.agents.pending import memory_counts
from cns_core.views import coherence_view, display
from cns_core.critics.grounding_verdict import claim_verdicts
from cns_core.coherence.drift_indicator import IndicatorSettings, drift_indicator
from cns_core.coherence.log_view import default_log_path, filter_log, load_log, summarise, table_rows

_STATUS_COLOURS = {"contradicted": display.RED, "supported": display.GREEN, "not_enough_info": display.AMBER,
                   "neutral": display.GREY}

frame.page("Coherence", "Two checks, one per tab: which claims of the current SNO contradict each other or "
           "their evidence, and how coherent the stream of stored turns has been (the coherence hook's log).")

sno_tab, stream_tab = st.tabs(["Current SNO: claim check", "Engram stream: the hook's log"])

with sno_tab, frame.guard("Could not check the current SNO"):
    label, sno = frame.current()
    st.subheader(frame.md(sno.title or sno.id))
    hook = frame.coherence_hook()
    verdicts = claim_verdicts(frame.results(sno))     # the Grounding critic's verdicts, as on Reasoning graph
    with st.spinner("Checking the claims against each other and the evidence…"):
        report = hook.check_sno(sno, grounding=verdicts)     # kept by the hook per SNO hash, settings, verdicts
    m = report.metrics
    c1, c2, c3 = st.columns(3)
    c1.metric("Coherence", f"{m.coherence_chain:.2f}", help=coherence_view.COHERENCE_HELP)
    c2.metric("Contradiction density", f"{m.contradiction_density:.2f}",
              help=coherence_view.density_help(report))
    c3.metric("Contradiction pairs", len(report.pairs), help="The table at the bottom: one row per two nodes "
              "(claim and claim, or claim and evidence) that contradict each other.")
    c2.caption(coherence_view.density_note(report))
    st.caption(report.coverage.sentence("claims"))
    if report.degraded:
        st.warning("Degraded: " + "; ".join(report.degraded))
    if coherence_view.offers_unlimited(report):
        if st.button("Check again without a time limit", key="cns_coherence_unlimited"):
            with st.spinner("Checking every claim with the model, without a time limit…"):
                hook.check_sno(sno, unlimited=True, grounding=verdicts)
            st.rerun()

    st.markdown("**Claims: grounding verdict and conflicts**")
    texts = {c.id: c.text for c in sno.claims}
    tags_html = []
    for claim_id, cc in report.claims.items():
        t = cc.tag
        tip = (f"hook tag: entail {t.entail:.2f} · contradict {t.contradict:.2f} · uncertainty {t.uncertainty:.2f}"
               + (f" · types: {', '.join(t.contradiction_types)}" if t.contradiction_types else ""))
        word = cc.verdict.label if cc.verdict is not None else cc.status
        partners = report.partners(claim_id)
        conflicts = " " + frame.badge("conflicts with " + ", ".join(partners), display.RED) if partners else ""
        tags_html.append(
            f'<div style="margin:0.2rem 0">{frame.badge(word, _STATUS_COLOURS.get(cc.status, display.GREY))}'
            f'{conflicts} <b>{display.escape(claim_id)}</b> <span title="{display.escape(tip)}">'
            f'{display.escape(texts.get(claim_id, t.text))}</span></div>')
    st.markdown("".join(tags_html) or "No claims.", unsafe_allow_html=True)
    st.dataframe(pd.DataFrame(coherence_view.claim_rows(report)),
        hide_index=True, width="stretch", key="cns_coherence_tags",
        column_config={c: st.column_config.NumberColumn(c, format="%.2f")
                       for c in ("p(supported)", "p(contradicted)", "Hook entail", "Hook contradict", "Uncertainty")})
    st.caption(coherence_view.CLAIMS_NOTE)

    st.markdown("**Contradiction pairs**")
    if not report.pairs:
        st.info("No two nodes contradict each other above the threshold.")
    else:
        validity = {e.id: e.validity for e in sno.evidence}
        st.dataframe(pd.DataFrame(coherence_view.pair_rows(report, validity)),
                     hide_index=True, width="stretch", key="cns_coherence_pairs",
                     column_config={c: st.column_config.NumberColumn(c, format="%.2f")
                                    for c in ("Score", "p(contradicted)", "Evidence validity")})
        st.caption(coherence_view.PAIRS_NOTE)

def _log_columns(log: pd.DataFrame) -> dict:
    """The log table's columns, each wide enough for its label and longest value, numbers and flags
    left-aligned: the last columns ("Blocked", the pair counts) sat clipped past the table's edge."""
    out = {}
    for name in log.columns:
        label = display.column_label(name)
        width = display.fit_width(label, [str(v) for v in log[name].tolist()])
        if log[name].dtype == bool:
            out[name] = st.column_config.CheckboxColumn(label, width=width)
        elif pd.api.types.is_numeric_dtype(log[name]):
            out[name] = st.column_config.NumberColumn(label, width=width, alignment="left")
        else:
            out[name] = st.column_config.Column(label, width=width)
    return out


with stream_tab, frame.guard("Could not read the coherence log"):
    st.caption("Every turn the judge loop stores is checked against the memory before it is written; one chain "
               "per turn. These numbers are about that stream, not about the SNO of the other tab.")
    path = default_log_path()
    damaged: list[str] = []
    rows = load_log(path, problems=damaged)
    if damaged:
        st.warning("Some lines of the coherence log are damaged and were skipped; the rest is shown:\n\n"
                   + "\n".join(f"- {frame.md(p)}" for p in damaged))
    if not rows:
        st.info(f"No coherence log yet ({path}). It fills when the judge loop runs with the coherence hook "
                "(`cns agents`) or with `cns coherence check`.")
        frame.end_page()
    summary = summarise(rows)      # the one walk over the log: counts, drift points, chart series, coverage
    s1, s2, s3, s4 = st.columns(4)
    s1.metric("Chains checked", f"{summary.chains:,}",
              help="One chain per stored turn. The log below has a line per proposition, plus event lines.")
    s2.metric("Blocked", f"{summary.blocked_chains:,}", help="Chains the hook held back, released since or not.")
    s3.metric("Mean coherence", "n/a" if summary.mean_coherence is None else f"{summary.mean_coherence:.2f}",
              help="Over the chains that had something to compare.")
    s4.metric("Mean contradiction density", "n/a" if summary.mean_density is None else f"{summary.mean_density:.2f}")
    coverage, unrecorded = summary.coverage(frame.coherence_hook().settings.latency.budget("pre_write"))
    st.caption(coverage.sentence("chains", p95=True) + coherence_view.stream_note(unrecorded))
    if summary.uncompared:
        st.caption(coherence_view.uncompared_note(summary.uncompared))
    if summary.blocked_chains:
        st.caption(coherence_view.blocked_note(summary.blocked_chains, memory_counts(frame.memory())))

    settings = IndicatorSettings.from_config()
    drift = drift_indicator(summary.points, settings)
    st.markdown("**Drift leading indicator**")
    d1, d2, d3, d4 = st.columns(4)
    d1.metric("Drift chains followed by a spike", "n/a" if drift.indicator is None else f"{drift.indicator:.0%}",
              help=f"Chains with a drift facet (self_trait / goal_violation) followed within {settings.horizon} "
                   f"chains by a drift spike: coherence below the mean of the previous {settings.window} chains "
                   f"minus {settings.z:g} of their std (at least {settings.min_drop:g}).")
    d1.caption(coherence_view.share_note(drift.drift_followed, drift.drift_chains, "drift chains",
                                         drift.too_few(drift.drift_chains)))
    d2.metric("Base rate (any chain)", "n/a" if drift.base_rate is None else f"{drift.base_rate:.0%}",
              help="The same share over every chain: what the indicator must beat to lead.")
    d2.caption(coherence_view.share_note(drift.judged_followed, drift.judged_chains, "chains",
                                         drift.too_few(drift.judged_chains)))
    d3.metric("Lift", "n/a" if drift.lift is None else f"{drift.lift:.1f}×",
              help="Indicator / base rate; above 1, drift facets precede coherence drops.")
    if drift.lift is not None and drift.too_few(min(drift.drift_chains, drift.judged_chains)):
        d3.caption("too few chains to read")
    d4.metric("Coherence stability", "n/a" if drift.stability is None else f"{drift.stability:.2f}",
              help=f"chain_coherence_stability: std of the last {settings.window} chains' coherence (lower is "
                   "steadier).")
    st.caption(f"{drift.drift_chains:,} drift chain(s) and {len(drift.spikes):,} spike(s) over {drift.chains:,} "
               f"compared chains; chains in the last horizon are not judged yet; a share over fewer than "
               f"{settings.min_chains} chains is too few to read.")

    series = summary.series
    if series:
        fig = go.Figure()
        ticks = [p["tick"] for p in series]
        fig.add_scatter(x=ticks, y=[p["coherence_chain"] for p in series], name="coherence",
                        mode="lines+markers", line=dict(color=display.GREEN))
        fig.add_scatter(x=ticks, y=[p["contradiction_density"] for p in series], name="contradiction density",
                        mode="lines+markers", line=dict(color=display.RED))
        low = min(0.0, *(p["coherence_chain"] for p in series))    # support minus contradiction can go below 0
        fig.update_layout(height=280, margin=dict(l=10, r=10, t=36, b=10), yaxis=dict(range=[low - 0.05, 1.02]),
                          xaxis=dict(title="tick"), title=dict(text="Chain metrics over time (compared chains)", x=0),
                          legend=dict(orientation="h", y=1.15, x=1, xanchor="right"))
        st.plotly_chart(fig, width="stretch", key="cns_coherence_series")

    st.markdown("**Log**")
    f1, f2, f3 = st.columns(3)
    chain = f1.text_input("Chain id contains", key="cns_coherence_chain")
    types = f2.multiselect("Contradiction type", list(summary.types), key="cns_coherence_types")
    blocked = f3.selectbox("Blocked", ["any", "blocked", "passed"], key="cns_coherence_blocked")
    shown = filter_log(rows, chain, types, None if blocked == "any" else blocked == "blocked")
    st.caption(f"{len(shown):,} of {len(rows):,} lines shown · {summary.lines_note()}"
               + (f" · coherence n/a: nothing to compare ({summary.uncompared:,} chains)" if summary.uncompared else ""))
    log_frame = pd.DataFrame(table_rows(shown[-2000:]))
    st.dataframe(log_frame, hide_index=True, width="stretch", key="cns_coherence_log",
                 column_config=_log_columns(log_frame))
