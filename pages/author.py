"""Author / Load: upload an SNO file, build one in a form, or draft one from text; live validation."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from pages import _frame as frame
from cns_core.views import display, refit_job, text_draft, ui_state
from cns_core.views.graph_html import graph_height, sno_graph_html
from cns_core.sno import serialize_snos
from cns_core.text import TextInputError

frame.page("Author / Load", "Upload an SNO as JSON or YAML, build one in a form, or draft one from text (an "
           "answer, an essay, a report) and its sources. Every problem is listed with the field it concerns; "
           "a valid SNO can be opened on every page or downloaded.")

KEY_DRAFT = "cns_author_draft"        # text_draft.DraftTables of the latest draft
KEY_DRAFTS = "cns_author_drafts"      # how many drafts this session made (new editors for each)
KEY_KEPT = "cns_author_kept"          # what the last "Keep my corrections" did, shown after the rerun it asks for
TEXT_PX, WHY_PX = 340, 300            # the editors' text and reason columns: wrapped in tall rows, never cut


def _problems(problems: list[str], where: str) -> None:
    """Every problem as ``field: message`` in plain text (a data grid is a canvas: unreadable to search/copy)."""
    st.error(f"{where}: {len(problems)} problem(s) found. Nothing was loaded.")
    rows = [p.split(": ", 1) if ": " in p else ["(file)", p] for p in problems]
    st.markdown("\n".join(f"- `{field.replace('`', '')}`: {frame.md(message)}" for field, message in rows))


def _downloads(sno, left, right, key: str) -> None:
    left.download_button("Download JSON", serialize_snos(sno, "json"), file_name=f"{sno.id}.json",
                         mime="application/json", key=f"{key}_json")
    right.download_button("Download YAML", serialize_snos(sno, "yaml"), file_name=f"{sno.id}.yaml",
                          mime="application/yaml", key=f"{key}_yaml")


def _editors(claims_df: pd.DataFrame, relations_df: pd.DataFrame, evidence_df: pd.DataFrame, keys: str,
             default_h: str | None, h_key: str, why: bool = False):
    """The claims, hypothesis, relations and evidence editors (the form's and the draft's); ``why``
    adds each draft row's read-only reason. Returns the edited tables and the chosen hypothesis."""
    extra = {"why": st.column_config.TextColumn("why (as drafted)", disabled=True, width=WHY_PX)} if why else {}

    def rows_px(table: pd.DataFrame) -> int:
        """A row height that wraps the table's longest text and reason uncut."""
        texts = table["text"].tolist() if "text" in table else []
        reasons = table["why"].tolist() if why and "why" in table else []
        return max(display.wrapped_row_height(texts, TEXT_PX, most_lines=4),
                   display.wrapped_row_height(reasons, WHY_PX, most_lines=4))

    drafted_as = {"drafted_as": st.column_config.TextColumn(
        "drafted as", disabled=True, help="The role the argument miner read and its confidence")} if why else {}
    st.markdown("**Claims** (the hypothesis is one of them"
                + ("; each with the reason it was drafted)" if why else ")"))
    # Text columns of a fixed width, in rows tall enough to wrap the longest text uncut; an empty cell (an
    # attack_type of a support) reads as empty, not "None".
    claims = st.data_editor(claims_df, num_rows="dynamic", key=f"{keys}claims", width="stretch", placeholder="",
                            row_height=rows_px(claims_df),
                            height=display.table_height(len(claims_df) + 1, rows_px(claims_df), most_rows=15),
                            column_config={
                                "id": st.column_config.TextColumn("id", required=True),
                                "text": st.column_config.TextColumn("text", width=TEXT_PX),
                                "role": st.column_config.SelectboxColumn(
                                    "role", options=["proponent", "opponent", "none"], default="none"),
                                **drafted_as, **extra})
    claim_ids = [str(c) for c in claims["id"].tolist() if isinstance(c, str) and c.strip()]
    default_h = default_h if default_h in claim_ids else (claim_ids[0] if claim_ids else None)
    hypothesis = st.selectbox("Hypothesis (root claim)", claim_ids or ["(add a claim)"],
                              index=claim_ids.index(default_h) if default_h in claim_ids else 0, key=h_key)
    st.markdown("**Relations**: *source* supports or attacks *target* (a claim; an undercut targets a relation id)")
    relations = st.data_editor(relations_df, num_rows="dynamic", key=f"{keys}relations", width="stretch",
                               placeholder="", row_height=rows_px(relations_df),
                               height=display.table_height(len(relations_df) + 1, rows_px(relations_df), most_rows=15),
                               column_config={
                                   "kind": st.column_config.SelectboxColumn("kind", options=["support", "attack"]),
                                   "attack_type": st.column_config.SelectboxColumn(
                                       "attack_type", options=["rebut", "undercut"],
                                       help="Leave empty: derived from the target (claim: rebut, relation: undercut)"),
                                   **extra})
    st.markdown("**Evidence**" + (" (passages of the sources)" if why else ""))
    evidence = st.data_editor(evidence_df.astype({"validity": float}), num_rows="dynamic", key=f"{keys}evidence",
                              width="stretch", placeholder="", row_height=rows_px(evidence_df), column_config={
                                  "text": st.column_config.TextColumn("text", width=TEXT_PX),
                                  "validity": st.column_config.NumberColumn(
                                      "validity", min_value=0.0, max_value=1.0, step=0.05, default=1.0), **extra})
    return claims, (hypothesis if claim_ids else ""), relations, evidence


def _valid(result, where: str):
    """The validated SNO with a success line, or None with every problem listed."""
    if result.problems:
        _problems(result.problems, where)
        return None
    sno = result.sno
    st.success(f"Valid SNO: {len(sno.claims)} claims, {len(sno.relations)} relations, {len(sno.evidence)} evidence.")
    return sno


upload_tab, form_tab, text_tab = st.tabs(["Upload a file", "Build in a form", "From text"])

with upload_tab:
    uploaded = st.file_uploader("SNO file (.json, .yaml, .yml); one SNO or a list of them",
                                type=["json", "yaml", "yml"], key="cns_author_upload")
    if uploaded is not None:
        with frame.guard(f"Could not read {uploaded.name}"):
            snos, problems = ui_state.parse_upload(uploaded.name, uploaded.getvalue())
            if problems:
                _problems(problems, uploaded.name)
            else:
                labels = ui_state.add_snos(st.session_state, snos, uploaded.name)
                if st.session_state.get("cns_author_loaded") != (uploaded.file_id, labels):
                    ui_state.select_sno(st.session_state, labels[0])
                    st.session_state["cns_author_loaded"] = (uploaded.file_id, labels)
                    st.rerun()  # so the sidebar shows the new current SNO
                st.success(f"Loaded {len(snos)} SNO(s) from {uploaded.name}: {', '.join(labels)}. "
                           f"The first is now the current SNO.")

with form_tab:
    try:
        _, base = frame.current()
    except LookupError:
        base = None
    seed_key = "cns_author_seed"
    c1, c2 = st.columns([3, 1])
    with c2:
        start = st.radio("Start from", ["current SNO", "blank"], key="cns_author_start", horizontal=True)
    seed = base if start == "current SNO" else None
    seed_id = seed.content_hash() if seed else "blank"
    if st.session_state.get(seed_key) != seed_id:
        # A new starting point: forget the editors' edits of the previous one.
        for k in ("cns_author_claims", "cns_author_relations", "cns_author_evidence"):
            st.session_state.pop(k, None)
        st.session_state[seed_key] = seed_id
    with c1:
        ident = st.text_input("SNO id", value=seed.id if seed else "my-sno", key=f"cns_author_id_{seed_id[:8]}")
        title = st.text_input("Title", value=seed.title if seed else "", key=f"cns_author_title_{seed_id[:8]}")

    claims, hypothesis, relations, evidence = _editors(
        pd.DataFrame([c.model_dump() for c in seed.claims] if seed else [{"id": "h", "text": "", "role": "proponent"}],
                     columns=["id", "text", "role"]),
        pd.DataFrame([r.model_dump() for r in seed.relations] if seed else [],
                     columns=["id", "source", "target", "kind", "attack_type"]),
        pd.DataFrame([e.model_dump() for e in seed.evidence] if seed else [],
                     columns=["id", "text", "source", "validity"]),
        "cns_author_", seed.hypothesis if seed else None, f"cns_author_h_{seed_id[:8]}")

    with frame.guard("Could not validate the form"):
        sno = _valid(ui_state.sno_from_tables(ident, title, hypothesis, claims.to_dict("records"),
                                              relations.to_dict("records"), evidence.to_dict("records")), "The form")
        if sno is not None:
            b1, b2, b3 = st.columns(3)
            if b1.button("Open on every page", type="primary", key="cns_author_use"):
                label = ui_state.add_snos(st.session_state, [sno], "authored")[0]
                ui_state.select_sno(st.session_state, label)
                st.rerun()
            _downloads(sno, b2, b3, "cns_author")

def _drafter_panel() -> None:
    """Which drafter drafts, a refit on the kept corrections (in the background, followed on the page), and the
    way back."""
    status, refit = text_draft.drafter_status(), text_draft.refit_state()
    with st.expander(f"Drafter: {status.active} ({status.identity}); {status.corrections} corrected text(s) kept",
                     expanded=refit.running):
        st.caption("Corrections you keep (roles, relations, the main claim) stay in the state folder, and a text "
                   "you corrected drafts as you corrected it from then on. A refit learns from them and the three "
                   "shipped genres, so other texts draft better too; it takes about "
                   f"{refit_job.duration_words(refit.expected_seconds)} "
                   f"({'the last refit here' if refit.last_seconds else 'on two CPU cores'}), into the state folder: "
                   "the shipped model is never overwritten, and you can go back to it.")
        r1, r2 = st.columns(2)
        if r1.button("Refit the drafter on my corrections", key="cns_author_refit_button",
                     disabled=status.corrections == 0 or refit.running):
            text_draft.start_refit()
            st.rerun()
        if r2.button("Use the shipped drafter", key="cns_author_revert", disabled=status.active == "shipped"):
            st.info(text_draft.revert_drafter())
        _refit_progress(refit.running)


def _refit_progress(running: bool) -> None:
    """The refit as it goes (read from its status file every two seconds), then the whole page again."""
    def show() -> None:
        refit = text_draft.refit_state()
        if refit.running:
            st.progress(refit.fraction(), text=refit.words())
            st.code(refit.log_tail(600) or "(no output yet)")
        elif running:
            st.rerun()             # it ended: the panel's drafter and buttons change
        elif refit.state != "none":
            (st.error if refit.state in ("failed", "interrupted") else st.caption)(refit.words())
            if refit.state == "failed":
                st.code(refit.log_tail() or "(no output)")

    st.fragment(show, run_every=2.0 if running else None)()


with text_tab:
    _drafter_panel()
    st.caption("Drafting runs offline with the shipped models: the argument miner reads each sentence or clause "
               "as the main claim, a claim, a premise or not argumentative, and links the argumentative ones into "
               "one graph of supports and attacks; a question is never a claim, and the sources' passages become "
               "the evidence. Every row says why it was drafted and how sure the miner was; correct what is wrong, "
               "then evaluate.")
    pasted = st.text_area("Text to judge", key="cns_author_text", height=160,
                          placeholder="Paste an answer, an essay or a report here …")
    t1, t2 = st.columns(2)
    text_file = t1.file_uploader("… or upload it (.txt, .md)", type=list(text_draft.TEXT_TYPES),
                                 key="cns_author_text_file")
    source_files = t2.file_uploader("Sources (.txt, .md, .pdf): their passages become the evidence",
                                    type=list(text_draft.SOURCE_TYPES), accept_multiple_files=True,
                                    key="cns_author_sources")
    source_text = t2.text_area("… or paste a source's text", key="cns_author_source_text", height=100,
                               placeholder="Paste the text of a source (a study, an article) here …")
    question = st.text_input("The question it answers (optional; picks the main claim)", key="cns_author_question")
    if st.button("Draft the SNO", type="primary", key="cns_author_draft_button"):
        with frame.guard("Could not draft the SNO"):
            try:
                text, sources = text_draft.read_inputs(
                    pasted, (text_file.name, text_file.getvalue()) if text_file is not None else None,
                    [(f.name, f.getvalue()) for f in source_files or []], source_text)
                with st.spinner("Drafting (the models load on the first draft) …"):
                    st.session_state[KEY_DRAFT] = text_draft.draft_tables(text, sources, question)
                st.session_state[KEY_DRAFTS] = st.session_state.get(KEY_DRAFTS, 0) + 1
                st.session_state.pop(KEY_KEPT, None)
            except TextInputError as exc:
                st.error(f"Nothing was drafted: {exc}")

    drafted = st.session_state.get(KEY_DRAFT)
    if drafted is not None:
        n = st.session_state.get(KEY_DRAFTS, 0)      # fresh editors for every draft
        st.caption(f"Drafted by: {drafted.method}")
        for note in drafted.notes:
            st.info(note)
        if drafted.left_out:
            st.markdown(f"**Left out of the graph** ({len(drafted.left_out)}: context, not argumentative, "
                        "or a question)")
            left_px = display.wrapped_row_height([x["why"] for x in drafted.left_out], 500)
            st.dataframe(pd.DataFrame(drafted.left_out, columns=["text", "why"]), hide_index=True, width="stretch",
                         key=f"cns_author_left_out_{n}", row_height=max(left_px, display.wrapped_row_height(
                             [x["text"] for x in drafted.left_out], 400)),
                         column_config={"text": st.column_config.TextColumn("sentence", width=400),
                                        "why": st.column_config.TextColumn("why", width=500)})
        d_ident = st.text_input("SNO id", value=drafted.sno_id, key=f"cns_author_draft_id_{n}")
        d_title = st.text_input("Title", value=drafted.title, key=f"cns_author_draft_title_{n}")
        d_claims, d_hypothesis, d_relations, d_evidence = _editors(
            pd.DataFrame(drafted.claims, columns=list(text_draft.CLAIM_COLUMNS)),
            pd.DataFrame(drafted.relations, columns=list(text_draft.RELATION_COLUMNS)),
            pd.DataFrame(drafted.evidence, columns=list(text_draft.EVIDENCE_COLUMNS)),
            f"cns_author_draft_{n}_", drafted.hypothesis, f"cns_author_draft_h_{n}", why=True)

        with frame.guard("Could not validate the draft"):
            sno = _valid(text_draft.sno_from_draft(drafted, d_ident, d_title, d_hypothesis,
                                                   d_claims.to_dict("records"), d_relations.to_dict("records"),
                                                   d_evidence.to_dict("records")), "The draft")
            if sno is not None:
                preview_px = graph_height(sno)        # the whole graph fitted, as the Reasoning graph opens it
                st.iframe(sno_graph_html(sno, height_px=preview_px), height=preview_px + 20)
                e1, e2, e3 = st.columns(3)
                if e1.button("Evaluate", type="primary", key="cns_author_evaluate"):
                    label = ui_state.add_snos(st.session_state, [sno], "drafted")[0]
                    ui_state.select_sno(st.session_state, label)
                    st.session_state["cns_author_evaluated"] = label
                    st.rerun()   # so the sidebar shows the new current SNO
                _downloads(sno, e2, e3, "cns_author_draft")
                if st.button("Keep my corrections (the drafter learns from them)", key="cns_author_keep"):
                    st.session_state[KEY_KEPT] = text_draft.keep_correction(drafted, sno)
                    st.rerun()         # so the drafter panel above counts it and the refit can start
                if st.session_state.get(KEY_KEPT):
                    st.info(st.session_state[KEY_KEPT])
                label = st.session_state.get("cns_author_evaluated")
                library = st.session_state.get(ui_state.KEY_LIBRARY, {})
                if label in library and library[label].content_hash() == sno.content_hash():
                    weights, origin = frame.weights()
                    ev = frame.assess(sno, frame.results(sno), weights, origin)
                    m1, m2 = st.columns([1, 3])
                    with m1:
                        st.metric("Trust Score", f"{ev.score:.3f}", help=f"Weights: {origin}.")
                        frame.incomplete_badge(ev.failed)
                    m2.markdown(f"**{frame.md(label)}** is now the current SNO: see its critics on the Overview, "
                                "its graph coloured by grounding on Reasoning graph, tune it on Weights and "
                                "Meta-Critic.")
                    if m2.button("Open the Overview", key="cns_author_overview"):
                        st.switch_page("pages/overview.py")
