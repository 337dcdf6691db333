"""Corpus: a whole folder of SNOs at once — score distributions, conflicts, a sortable table."""

from __future__ import annotations

import os

import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

from pages import _frame as frame
from cns_core.access import confine
from cns_core.engine import corpus
from cns_core.views import display, ui_state

KEY_FRAME = "cns_corpus_frame"     # the loaded results table


def _columns(table) -> dict:
    """Human labels and widths for a results table (no raw names): text that fits is never cut (an SNO id, the
    label "Trust (default)"); long text (a title, an error) gets a wide column."""
    out = {}
    for name in table.columns:
        label = display.column_label(name)
        numeric = name.startswith(("trust_", "score_"))
        values = ["0.000"] if numeric else [str(v) for v in table[name].tolist()]
        width = display.fit_width(label, values) if display.column_width(name) != "large" else "large"
        if name.startswith("trust_"):     # left-aligned: a number at the page's edge shows its first digits
            out[name] = st.column_config.NumberColumn(label, format="%.3f", width=width, alignment="left")
        elif name.startswith("score_"):
            out[name] = st.column_config.NumberColumn(label, format="%.2f", width=width, alignment="left")
        elif name == "n_conflicts":       # left-aligned, whole: right-aligned it sat past the table's edge
            out[name] = st.column_config.NumberColumn(label, format="%d", width=width, alignment="left")
        elif name == "complete":
            out[name] = st.column_config.CheckboxColumn(label, width=width,
                                                        help="False where a critic failed: the Trust Score leaves it out.")
        else:            # the SNO id stays in view while the table scrolls sideways
            out[name] = st.column_config.Column(label, width=width, pinned=name == "sno_id" or None)
    return out

KEY_ORIGIN = "cns_corpus_origin"   # where it came from (shown above the charts)

frame.page("Corpus", "Many SNOs at once: load a results table from `cns evaluate DIR --out FILE`, or evaluate "
           "a folder of SNO files here (resumable). Open any SNO on the other pages from the table.")

source = st.radio("Source", ["Results file", "Folder of SNO files"], horizontal=True, key="cns_corpus_source")
if source == "Results file":
    path = st.text_input("Results file (.parquet or .csv)", key="cns_corpus_path",
                         placeholder="results.parquet")
    if st.button("Load results", key="cns_corpus_load"):
        with frame.guard("Could not load the results"):
            st.session_state[KEY_FRAME] = corpus.load_results(confine(path, "Results file"))
            st.session_state[KEY_ORIGIN] = path.strip()
else:
    folder = st.text_input("Folder of SNO files (.json, .yaml)", key="cns_corpus_folder",
                           placeholder="imported/")
    workers = st.number_input("Workers (Ray actors; 1 runs here)", min_value=1, max_value=max(1, os.cpu_count() or 1), value=1,
                              key="cns_corpus_workers")
    if st.button("Evaluate folder", key="cns_corpus_evaluate"):
        with frame.guard("Could not evaluate the folder"):
            bar = st.progress(0.0, text="Reading the folder…")
            st.session_state[KEY_FRAME] = corpus.evaluate_folder(
                confine(folder, "Folder of SNO files"), workers=int(workers),
                on_progress=lambda done, total: bar.progress(done / total if total else 1.0,
                                                             text=corpus.progress_text(done, total)))
            bar.empty()
            st.session_state[KEY_ORIGIN] = folder.strip()

if KEY_FRAME not in st.session_state:   # a fresh session opens on the latest finished run
    latest = corpus.latest_run()
    if latest is not None:
        with frame.guard("Could not open the latest corpus run"), st.spinner("Opening the latest corpus run…"):
            st.session_state[KEY_FRAME] = corpus.load_results(latest.results)
            st.session_state[KEY_ORIGIN] = f"{latest.origin} (latest finished run)"

data = st.session_state.get(KEY_FRAME)
if data is None and frame.demo_data_running():
    st.info("Nothing loaded yet: `make run` is writing its demo data, the bundled examples evaluated as a corpus run "
            "among it (the line above says how far); this page opens on that run by itself.")
elif data is None:
    st.info("Nothing loaded yet. Import argument maps with `cns import FORMAT PATH -o DIR`, then evaluate DIR.")
else:
    with frame.guard("Could not show the corpus"):
        counts = corpus.summary(data)
        st.caption(f"Source: {frame.md(st.session_state.get(KEY_ORIGIN, ''))}")
        m1, m2, m3, m4, m5 = st.columns(5)
        m1.metric("SNOs evaluated", counts["snos"])
        m2.metric("Unreadable files / SNOs", counts["errors"])
        m3.metric("Incomplete Trust Scores", counts["incomplete"],
                  help="SNOs where a critic failed or timed out: their Trust Scores leave it out "
                       "(column complete in the table).")
        m4.metric("Critic failures", counts["critic_failures"])
        m5.metric("SNOs with conflicts", counts["with_conflicts"])

        critics = corpus.critics_in(data)
        hist = corpus.score_histograms(data)
        st.markdown("**Critic scores**")
        fig = make_subplots(rows=1, cols=max(1, len(critics)), shared_yaxes=True,
                            subplot_titles=[display.critic_label(c) for c in critics])
        for i, name in enumerate(critics, start=1):
            part = hist[hist["critic"] == name]
            fig.add_bar(x=(part["bin_start"] + part["bin_end"]) / 2, y=part["count"],
                        width=(part["bin_end"] - part["bin_start"]) * 0.95, row=1, col=i,
                        marker_color=display.critic_colour(name), name=display.critic_label(name),
                        hovertemplate="%{x:.2f}: %{y} SNOs<extra></extra>")
            fig.update_xaxes(range=[0, 1], row=1, col=i)
        fig.update_layout(height=260, showlegend=False, margin=dict(l=10, r=10, t=40, b=10))
        st.plotly_chart(fig, width="stretch", key="cns_corpus_critics")
        idle = corpus.abstention_counts(data)
        if idle:
            st.caption("Not applicable (nothing to judge: no score, left out of its histogram, its weight went to the "
                       "critics that judged): " + "; ".join(f"{display.critic_label(n)} in {k} SNO{'s' if k != 1 else ''}"
                                                          for n, k in idle.items()))

        profiles = corpus.profiles_in(data)
        chosen_default = ui_state.current_profile(st.session_state, frame.profiles())
        shown = st.multiselect("Trust Score under profiles", profiles, key="cns_corpus_profiles",
                               default=[chosen_default] if chosen_default in profiles else profiles[:1])
        trust = corpus.trust_histograms(data, profiles=shown)
        fig = go.Figure()
        for k, name in enumerate(shown):      # side by side in solid colours: overlaid, they mixed into colours
            part = trust[trust["profile"] == name]   # the legend does not have
            fig.add_bar(x=(part["bin_start"] + part["bin_end"]) / 2, y=part["count"], name=name,
                        marker_color=display.SERIES_COLOURS[k % len(display.SERIES_COLOURS)],
                        hovertemplate=f"{name}: %{{x:.2f}}: %{{y}} SNOs<extra></extra>")
        fig.update_layout(barmode="group", bargap=0.1, height=260, margin=dict(l=10, r=10, t=30, b=10),
                          xaxis=dict(range=[0, 1], title="Trust Score"),
                          yaxis=display.count_axis(trust["count"].max() if len(trust) else 0, "SNOs"))
        st.plotly_chart(fig, width="stretch", key="cns_corpus_trust")

        conflicts = corpus.conflict_frequencies(data)
        st.markdown("**Conflicts between critics** (score gaps above the Meta-Critic's threshold)")
        if conflicts.empty:
            st.caption("No two critics disagree on any SNO of this corpus.")
        else:
            shown_conflicts = conflicts.assign(pair=[f"{display.critic_label(h)} over {display.critic_label(lo)}"
                                                     for h, lo in zip(conflicts["higher"], conflicts["lower"])])
            st.dataframe(shown_conflicts[["pair", "count", "share", "mean_delta"]], hide_index=True, width="stretch",
                         key="cns_corpus_conflicts", column_config={
                             **_columns(shown_conflicts[["pair", "count"]]),
                             "share": st.column_config.ProgressColumn("Share of SNOs", min_value=0.0,
                                                                      max_value=1.0, format="%.2f"),
                             "mean_delta": st.column_config.NumberColumn("Mean gap", format="%.2f")})

        st.markdown("**SNOs**")
        columns = list(corpus.corpus_table(data, profiles=shown).columns)   # Trust Scores of the profiles shown above
        c1, c2 = st.columns([3, 1])
        sort_by = c1.selectbox("Sort by", columns, index=columns.index(f"trust_{shown[0]}")
                               if shown and f"trust_{shown[0]}" in columns else 0, key="cns_corpus_sort",
                               format_func=display.column_label)
        ascending = c2.toggle("Ascending", value=False, key="cns_corpus_ascending")
        table = corpus.corpus_table(data, sort_by=sort_by, ascending=ascending, profiles=shown)
        event = st.dataframe(table, hide_index=True, width="stretch", on_select="rerun",
                             selection_mode="single-row", key="cns_corpus_table", column_config=_columns(table))
        rows = {f"{r.file}::{r.sno_id}": i for i, r in enumerate(table.itertuples()) if r.sno_id}
        selected = [i for i in getattr(getattr(event, "selection", None), "rows", []) if table.at[i, "sno_id"]]
        if selected:   # a row clicked in the table becomes the SNO to open
            clicked = f"{table.at[selected[0], 'file']}::{table.at[selected[0], 'sno_id']}"
            if st.session_state.get("cns_corpus_clicked") != clicked:
                st.session_state["cns_corpus_clicked"] = st.session_state["cns_corpus_pick"] = clicked
        if st.session_state.get("cns_corpus_pick") not in rows:
            st.session_state.pop("cns_corpus_pick", None)
        if rows:
            pick = st.selectbox("SNO to open (or click a row)", list(rows), key="cns_corpus_pick",
                                format_func=lambda k: f"{table.at[rows[k], 'sno_id']} — {table.at[rows[k], 'file']}")
            if st.button("Open on every page", key="cns_corpus_open", type="primary"):
                with frame.guard("Could not open the SNO"):
                    label, sno = corpus.sno_for_row(table.loc[rows[pick]])
                    ui_state.select_sno(st.session_state, label, sno)
                    st.switch_page("pages/overview.py")
