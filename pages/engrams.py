"""Engrams: browse the scored memory (ChromaDB) with filters, pages and a score histogram; the judge's
grade beside the critics' Trust Score, with their disagreements marked."""

from __future__ import annotations

from datetime import datetime, timezone

import plotly.graph_objects as go
import streamlit as st

from pages import _frame as frame
from cns_core.views import display
from cns_core.judging.answer_verdict import ANSWER_VERDICTS, VERDICT_LABELS
from cns_core.people.annotations import HUMAN_VERDICTS, MAX_NOTE_CHARS, MAX_WHO_CHARS
from cns_core.judging.agreement import agreement
from cns_core.judging.verdict_calibration import UnscoredMarks, active_calibration
from cns_core.people.calibrate import annotated_engrams, calibrate, revert_message, threshold_words
from cns_core.views.people_view import agreement_summary, agreement_tables, export_bytes
from cns_core.views.recall_view import preference_bytes, recall_rows
from cns_core.views.relabel_job import relabel_after_calibration, relabel_job
from cns_core.views.review import review_queue, save_annotation, verdict_threshold
from cns_core.views.engram_view import (ANNOTATED_CHOICES, PERSON_CHOICES, DISAGREE_CARD, HISTOGRAM_BUCKETS, badges_html, FilterChoice, build_filters, card_key,
                                        disagreement_count, disagreement_rule, page_count, rule_text,
                                        score_histogram, score_trust, similarity_text)
from cns_core.engrams import UNGRADED
from cns_core.agents.pending import memory_counts

PER_PAGE = 25
_ORDERS = {"Most similar first": "relevance", "Newest first": "newest", "Oldest first": "oldest",
           "Best score first": "score"}


def relabel_progress(memory) -> None:
    """The verdicts stored without readings being judged again by the verifier after a calibration: a progress
    bar that follows the job, then the whole page again (badges, filters and agreement read the new verdicts)."""
    job = relabel_job(memory)
    if job is None:
        return

    def show() -> None:
        if job.running:
            st.session_state["cns_engrams_relabel_running"] = True
            st.progress(job.fraction, text=f"Judging the verdicts stored without readings again: "
                                           f"{job.done:,} of {job.todo:,} answers")
        elif st.session_state.pop("cns_engrams_relabel_running", False):
            st.rerun()
        elif job.error:
            st.error(f"Judging the stored verdicts again failed: {job.error}")
        else:
            st.caption(job.message)

    st.fragment(show, run_every=1.0 if job.running else None)()


def relabel_now(memory, said: str) -> None:
    """The stored verdicts decided again before the next rerun; ``said``: what the calibration did."""
    with st.spinner("Deciding the stored verdicts again…"):
        st.session_state["cns_engrams_marked"] = f"{said} {relabel_after_calibration(memory)}"


frame.page("Engrams", "Every stored turn with the judge's grade and the critics' Trust Score of its answer "
           "(hover a badge for the feedback or the details); a red outline around the card marks where the two "
           "disagree. "
           "Filter by either, time, text or meaning; the histogram counts the filtered memory per grade.")

with frame.guard("Could not open the engram memory"):
    memory = frame.memory()
    total = memory.count()
    if total == 0:
        if frame.demo_data_running():
            st.info("The memory is empty so far: `make run` is writing its demo data (the line above says how "
                    "far); this page fills in by itself.")
        else:
            st.info("The memory is empty: no engram has been stored yet. Start the judge loop with `cns agents` "
                    "and send turns from the Judge page, or run `make run` for a demo memory.")
        frame.end_page()

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
        verdicts = st.multiselect("Answer verdict", list(ANSWER_VERDICTS), key="cns_engrams_verdicts",
                                  format_func=VERDICT_LABELS.get,
                                  help="The verifier's verdict on each answer, against its reference or sources "
                                       "given the question (none picked: any).")
        disagree = st.checkbox("Judge and critics disagree", key="cns_engrams_disagree",
                               help=f"Only the marked turns: {rule_text(rule)} (config/memory.yaml, trust.disagree).")
        st.markdown("### Your verdicts")
        annotated = st.selectbox("Marked by a person", list(ANNOTATED_CHOICES), key="cns_engrams_annotated",
                                 help="Answers a person marked correct, incorrect or unsure (or not yet).")
        person = st.selectbox("Answer verdict vs the person", PERSON_CHOICES, key="cns_engrams_person",
                              help="agrees: the verifier's correct/incorrect matches the person's; disagrees: "
                                   "it says the opposite.")
        queue = st.checkbox("Review queue", key="cns_engrams_queue",
                            help="What to read next: unmarked answers where the judge and the critics disagree, "
                                 "then those whose p(right) is nearest the verdict's threshold.")
        who = st.text_input("Your name", key="cns_engrams_who", max_chars=MAX_WHO_CHARS,
                            help="Stored with each verdict you give.")

    since = until = None
    if isinstance(dates, (tuple, list)) and dates:
        since, until = dates[0], dates[-1]
    try:
        filters = build_filters(FilterChoice(score_range=tuple(score_range), ungraded_only=ungraded, since=since,
                                             until=until, contains=contains, similar_to=similar,
                                             min_similarity=min_similarity,
                                             session_id=session, trust_range=tuple(trust_range),
                                             untrusted_only=untrusted, disagree_only=disagree,
                                             verdicts=tuple(verdicts), annotated=annotated, person=person), rule)
    except ValueError as exc:
        st.error(f"Filter: {exc}")
        frame.end_page()

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
    c1.caption(f"Memory: {memory_counts(memory).words()}",
               help="Read from the memory on every rerun; the Judge page states the same. Ungraded: turns waiting "
                    "for the judge's grade (the pending grades); quarantined: turns the coherence hook held back.")

    with st.expander("Agreement with you: which score should I trust on my data?"):
        marked = annotated_engrams(memory)
        results = agreement(marked)
        st.markdown(agreement_summary(results))
        for k, rows in enumerate(agreement_tables(results)):     # every label and value uncut, on the page
            st.dataframe(rows, hide_index=True, key=f"cns_engrams_agreement{k or ''}", column_config={
                c: st.column_config.Column(c, width=w) for c, w in display.fit_widths(rows).items()})
        st.caption("On the answers a person marked correct or incorrect: the judge's grade (4-5 right, 1-2 wrong), "
                   "the answer verdict (correct / incorrect) and the Trust Score (0.5 and up right). AUC ranks "
                   "by the grade, p(right) and the Trust Score; intervals by a seeded bootstrap.")
        active = active_calibration()
        if active is not None and not active.adopted:   # a fit stored by an older version though not adopted
            active = None
        st.markdown(f"**Verdict threshold in use:** "
                    + (f"{threshold_words()} (calibration version {active.version}: {active.describe()})" if active
                       else f"{verdict_threshold():.3f} (config/memory.yaml)"))
        c_fit, c_revert = st.columns(2)
        if c_fit.button("Fit the verdict to my verdicts", key="cns_engrams_calibrate",
                        help="Recalibrate p(right) to the marked answers and fit the threshold of \"correct\" on "
                             "that scale, cross-validated by question, as `cns calibrate` does; a new version, "
                             "reversible. Every stored verdict is decided again at once from the verifier's "
                             "readings kept with it."):
            try:
                outcome = calibrate(marked)
            except UnscoredMarks as exc:
                st.error(f"Calibration: {exc}. The **Score Trust** button on an answer's card scores it.")
            except ValueError as exc:
                st.error(f"Calibration: {exc}")
            else:
                if outcome.adopted:
                    relabel_now(memory, outcome.message)
                else:
                    st.session_state["cns_engrams_calibration_kept"] = outcome.message
                st.rerun()
        kept = st.session_state.pop("cns_engrams_calibration_kept", None)
        if kept:
            st.info(kept)
        if active and c_revert.button("Revert the calibration", key="cns_engrams_revert"):
            relabel_now(memory, revert_message())
            st.rerun()
        relabel_progress(memory)
        c_csv, c_jsonl = st.columns(2)
        c_csv.download_button("Export CSV", data=lambda: export_bytes(memory, "csv"), file_name="engrams.csv",
                              mime="text/csv", key="cns_engrams_export_csv")
        c_jsonl.download_button("Export JSONL", data=lambda: export_bytes(memory, "jsonl"),
                                file_name="engrams.jsonl", mime="application/jsonl", key="cns_engrams_export_jsonl")

    with st.expander("What a generator would recall"):
        st.caption("The stored answers nearest a question, ranked by how right they were judged: your verdict "
                   "first, then the answer verdict's p(right), the judge's grade and the Trust Score "
                   "(config/memory.yaml, recall.weights), as `cns recall` ranks them.")
        c_q, c_k = st.columns([4, 1])
        question = c_q.text_input("Question", key="cns_engrams_recall_q", max_chars=20_000)
        k = c_k.number_input("How many", 1, 100, 5, key="cns_engrams_recall_k")
        include_wrong = st.checkbox("Include answers judged incorrect and quarantined turns (marked)",
                                    key="cns_engrams_recall_wrong")
        if question.strip():
            try:
                rows = recall_rows(memory, question, int(k), include_wrong)
            except ValueError as exc:
                st.error(f"Recall: {exc}")
            else:
                if rows:
                    st.dataframe(rows, hide_index=True, key="cns_engrams_recall_table")
                else:
                    st.info("No stored answer is near this question" + ("" if include_wrong else
                            " (or every near one was judged incorrect)."))
        st.download_button("Download preference pairs (DPO JSONL)", data=lambda: preference_bytes(memory),
                           file_name="preferences.jsonl", mime="application/jsonl", key="cns_engrams_preferences")

    fig = go.Figure(go.Bar(
        x=[display.score_badge(s if s != UNGRADED else None).label for s in HISTOGRAM_BUCKETS],
        y=[histogram[s] for s in HISTOGRAM_BUCKETS],
        marker_color=[display.score_badge(s if s != UNGRADED else None).colour for s in HISTOGRAM_BUCKETS],
        hovertemplate="%{x}: %{y:,} engrams<extra></extra>"))
    fig.update_layout(height=220, margin=dict(l=10, r=10, t=36, b=10), title=dict(text="Engrams per grade", x=0),
                      yaxis=display.count_axis(max(histogram.values(), default=0), "engrams"))
    st.plotly_chart(fig, width="stretch", key="cns_engrams_histogram")

    with st.spinner("Reading the page…"):
        if queue:
            threshold = verdict_threshold()
            rows = review_queue(memory, rule, threshold, PER_PAGE)
            st.caption(f"Review queue: {len(rows)} unmarked answer(s), disagreements first, then p(right) "
                       f"nearest {threshold:.2f} (the other filters do not apply here).")
        else:
            rows = memory.browse(filters, offset=(page_no - 1) * PER_PAGE, limit=PER_PAGE,
                                 order=_ORDERS[order_label])
    if not rows:
        st.info("No engram matches these filters."
                + (" Lower the minimum similarity to see weaker matches." if filters.similar_to else ""))
    for flash in ("cns_engrams_scored", "cns_engrams_marked"):
        message = st.session_state.pop(flash, None)
        if message:
            st.success(message)
    st.markdown(display.outlined_cards_css(DISAGREE_CARD), unsafe_allow_html=True)
    for e in rows:
        when = datetime.fromtimestamp(e.timestamp, tz=timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        similarity = similarity_text(e)
        with st.container(border=True, key=card_key(e, rule)):
            st.markdown(
                f'<div style="display:flex;justify-content:space-between;gap:1rem">'
                f'<b>{display.escape(e.query)}</b><span style="white-space:nowrap">'
                f'{badges_html(e, rule)}</span></div>'
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
            with st.expander("Your verdict" + (f": {e.human_verdict}" if e.human_verdict else "")):
                with st.form(key=f"cns_engrams_mark_{e.id}"):
                    current = e.human_verdict or "correct"
                    verdict = st.radio("This answer is", HUMAN_VERDICTS, index=HUMAN_VERDICTS.index(current),
                                       horizontal=True, key=f"cns_engrams_verdict_{e.id}")
                    note = st.text_area("Note (optional)", value=str(e.metadata.get("human_note") or ""),
                                        max_chars=MAX_NOTE_CHARS, key=f"cns_engrams_note_{e.id}")
                    if st.form_submit_button("Save verdict"):
                        try:
                            st.session_state["cns_engrams_marked"] = save_annotation(memory, e.id, verdict, note, who)
                        except ValueError as exc:
                            st.error(f"Verdict: {exc}")
                        else:
                            st.rerun()
