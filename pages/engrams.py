"""Engrams: browse the scored memory (ChromaDB) with filters, pages and a score histogram; the judge's
grade beside the critics' Trust Score, with their disagreements marked."""

from __future__ import annotations

from datetime import datetime, timezone

import plotly.graph_objects as go
import streamlit as st

from pages import _frame as frame
from cns_core.views import display
from cns_core.views.engram_view import (DISAGREE_CARD, HISTOGRAM_BUCKETS, FilterChoice, build_filters, card_key,
                                        disagreement_count, disagreement_rule, page_count, rule_text,
                                        score_histogram, score_trust, similarity_text, trust_html)
from cns_core.engrams import UNGRADED

PER_PAGE = 25
_ORDERS = {"Most similar first": "relevance", "Newest first": "newest", "Oldest first": "oldest",
           "Best score first": "score"}

frame.page("Engrams", "Every stored turn with the judge's grade and the critics' Trust Score of its answer "
           "(hover a badge for the feedback or the details); a red outline around the card marks where the two "
           "disagree. "
           "Filter by either, time, text or meaning; the histogram counts the filtered memory per grade.")

with frame.guard("Could not open the engram memory"):
    memory = frame.memory()
    total = memory.count()
    if total == 0:
        st.info("The memory is empty: no engram has been stored yet. Start the judge loop with `cns agents` "
                "and send turns from the Judge page, or run `make run` for a demo memory.")
        st.stop()

    with st.sidebar:
        st.markdown("### Engram filters")
        ungraded = st.checkbox("Ungraded only", key="cns_engrams_ungraded",
                               help="Turns the judge has not graded yet.")
        score_range = st.slider("Score range", 1, 5, (1, 5), key="cns_engrams_scores", disabled=ungraded,
                                help="The full range 1-5 also keeps ungraded turns.")
        dates = st.date_input("Time range (UTC)", value=(), key="cns_engrams_dates",
                              help="Pick a first and a last day; leave empty for all time.")
        contains = st.text_input("Text contains", key="cns_engrams_contains",
                                 help="Case-insensitive, in the query or the answer.")
        similar = st.text_input("Similar in meaning to", key="cns_engrams_similar",
                                help="Semantic search with the MiniLM embeddings: ranked by similarity, most "
                                     "similar first, down to the cut-off below.")
        min_similarity = st.slider("Minimum similarity", 0.0, 1.0, float(memory.min_similarity), 0.05,
                                   key="cns_engrams_min_similarity", disabled=not similar.strip(),
                                   help="Cosine similarity of the MiniLM embeddings (1 = the same meaning); "
                                        "default from config/memory.yaml, browse.min_similarity.")
        session = st.text_input("Session id", key="cns_engrams_session")
        rule = disagreement_rule()
        untrusted = st.checkbox("No Trust Score only", key="cns_engrams_untrusted",
                                help="Answers the critics have not scored (yet, or could not: hover the badge).")
        trust_range = st.slider("Trust Score range", 0.0, 1.0, (0.0, 1.0), step=0.05, key="cns_engrams_trust",
                                disabled=untrusted, help="The critics' Trust Score of the answer. The full range "
                                                         "0-1 also keeps answers without one.")
        disagree = st.checkbox("Judge and critics disagree", key="cns_engrams_disagree",
                               help=f"Only the marked turns: {rule_text(rule)} (config/memory.yaml, trust.disagree).")

    since = until = None
    if isinstance(dates, (tuple, list)) and dates:
        since, until = dates[0], dates[-1]
    try:
        filters = build_filters(FilterChoice(score_range=tuple(score_range), ungraded_only=ungraded, since=since,
                                             until=until, contains=contains, similar_to=similar,
                                             min_similarity=min_similarity,
                                             session_id=session, trust_range=tuple(trust_range),
                                             untrusted_only=untrusted, disagree_only=disagree), rule)
    except ValueError as exc:
        st.error(f"Filter: {exc}")
        st.stop()

    # A search by meaning opens ranked by similarity (its own key, so an earlier "Newest first" does not stick).
    orders = list(_ORDERS) if filters.similar_to else list(_ORDERS)[1:]
    c1, c2 = st.columns([3, 1])
    order_label = c2.selectbox("Order", orders,
                               key="cns_engrams_order_similar" if filters.similar_to else "cns_engrams_order")
    with st.spinner("Counting engrams…"):
        histogram = score_histogram(memory, filters)
        matches = memory.count(filters)
        disagreements = disagreement_count(memory, filters, rule, matches)
    pages = page_count(matches, PER_PAGE)
    page_no = c2.number_input("Page", min_value=1, max_value=pages, value=1, step=1, key="cns_engrams_page")
    page_no = min(int(page_no), pages)
    cut = f" (similarity ≥ {filters.min_similarity:.2f})" if filters.similar_to else ""
    c1.markdown(f"**{matches:,}** of **{total:,}** engrams match{cut} · page {page_no} of {pages} · "
                f"**{disagreements:,}** where the judge and the critics disagree",
                help=f"Disagreement: {rule_text(rule)}.")

    fig = go.Figure(go.Bar(
        x=[display.score_badge(s if s != UNGRADED else None).label for s in HISTOGRAM_BUCKETS],
        y=[histogram[s] for s in HISTOGRAM_BUCKETS],
        marker_color=[display.score_badge(s if s != UNGRADED else None).colour for s in HISTOGRAM_BUCKETS],
        hovertemplate="%{x}: %{y:,} engrams<extra></extra>"))
    fig.update_layout(height=220, margin=dict(l=10, r=10, t=36, b=10), title=dict(text="Engrams per grade", x=0),
                      yaxis=display.count_axis(max(histogram.values(), default=0), "engrams"))
    st.plotly_chart(fig, width="stretch", key="cns_engrams_histogram")

    with st.spinner("Reading the page…"):
        rows = memory.browse(filters, offset=(page_no - 1) * PER_PAGE, limit=PER_PAGE, order=_ORDERS[order_label])
    if not rows:
        st.info("No engram matches these filters."
                + (" Lower the minimum similarity to see weaker matches." if filters.similar_to else ""))
    scored = st.session_state.pop("cns_engrams_scored", None)
    if scored:
        st.success(scored)
    st.markdown(display.outlined_cards_css(DISAGREE_CARD), unsafe_allow_html=True)
    for e in rows:
        when = datetime.fromtimestamp(e.timestamp, tz=timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        similarity = similarity_text(e)
        with st.container(border=True, key=card_key(e, rule)):
            st.markdown(
                f'<div style="display:flex;justify-content:space-between;gap:1rem">'
                f'<b>{display.escape(e.query)}</b><span style="white-space:nowrap">'
                f'{display.score_badge_html(e.critic_score, e.feedback)}{trust_html(e, rule)}</span></div>'
                f'<div style="margin-top:0.3rem">{display.escape(e.answer)}</div>'
                f'<div style="color:#6b7280;font-size:0.8em;margin-top:0.3rem">'
                f'{"<b>" + display.escape(similarity) + "</b> · " if similarity else ""}{display.escape(when)} · '
                f'session {display.escape(e.session_id or "–")} · id {display.escape(e.id)}</div>',
                unsafe_allow_html=True)
            if e.feedback:
                with st.expander("Judge feedback"):
                    st.markdown(frame.md(e.feedback))
            if e.trust_score is None and st.button(
                    "Score Trust", key=f"cns_engrams_trust_{e.id}",
                    help="Draft this answer into an SNO and score it with the critics now, as `cns trust-backfill` "
                         "does (config/memory.yaml, trust.profile)."):
                with st.spinner("Drafting and scoring the answer…"):
                    st.session_state["cns_engrams_scored"] = score_trust(memory, frame.answer_scorer(), e.id)
                st.rerun()
