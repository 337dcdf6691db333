"""Author / Load: upload an SNO file or build one in a form, with live validation."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from pages import _frame as frame
from cns_core.views import ui_state
from cns_core.sno import serialize_snos

frame.page("Author / Load", "Upload an SNO as JSON or YAML, or build one below. Every problem is listed "
           "with the field it concerns; a valid SNO can be opened on every page or downloaded.")


def _problems(problems: list[str], where: str) -> None:
    """Every problem as ``field: message`` in plain text (a data grid is a canvas: unreadable to search/copy)."""
    st.error(f"{where}: {len(problems)} problem(s) found. Nothing was loaded.")
    rows = [p.split(": ", 1) if ": " in p else ["(file)", p] for p in problems]
    st.markdown("\n".join(f"- `{field.replace('`', '')}`: {frame.md(message)}" for field, message in rows))


upload_tab, form_tab = st.tabs(["Upload a file", "Build in a form"])

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

    claims_df = pd.DataFrame([c.model_dump() for c in seed.claims] if seed else
                             [{"id": "h", "text": "", "role": "proponent"}], columns=["id", "text", "role"])
    evidence_df = pd.DataFrame([e.model_dump() for e in seed.evidence] if seed else [],
                               columns=["id", "text", "source", "validity"]).astype({"validity": float})
    relations_df = pd.DataFrame([r.model_dump() for r in seed.relations] if seed else [],
                                columns=["id", "source", "target", "kind", "attack_type"])

    st.markdown("**Claims** (the hypothesis is one of them)")
    claims = st.data_editor(claims_df, num_rows="dynamic", key="cns_author_claims", width="stretch",
                            column_config={
                                "id": st.column_config.TextColumn("id", required=True),
                                "text": st.column_config.TextColumn("text", width="large"),
                                "role": st.column_config.SelectboxColumn(
                                    "role", options=["proponent", "opponent", "none"], default="none")})
    claim_ids = [str(c) for c in claims["id"].tolist() if isinstance(c, str) and c.strip()]
    default_h = seed.hypothesis if seed and seed.hypothesis in claim_ids else (claim_ids[0] if claim_ids else None)
    hypothesis = st.selectbox("Hypothesis (root claim)", claim_ids or ["(add a claim)"],
                              index=claim_ids.index(default_h) if default_h in claim_ids else 0,
                              key=f"cns_author_h_{seed_id[:8]}")
    st.markdown("**Relations**: *source* supports or attacks *target* (a claim; an undercut targets a relation id)")
    relations = st.data_editor(relations_df, num_rows="dynamic", key="cns_author_relations", width="stretch",
                               column_config={
                                   "kind": st.column_config.SelectboxColumn("kind", options=["support", "attack"]),
                                   "attack_type": st.column_config.SelectboxColumn(
                                       "attack_type", options=["rebut", "undercut"],
                                       help="Leave empty: derived from the target (claim: rebut, relation: undercut)")})
    st.markdown("**Evidence**")
    evidence = st.data_editor(evidence_df, num_rows="dynamic", key="cns_author_evidence", width="stretch",
                              column_config={
                                  "text": st.column_config.TextColumn("text", width="large"),
                                  "validity": st.column_config.NumberColumn(
                                      "validity", min_value=0.0, max_value=1.0, step=0.05, default=1.0)})

    with frame.guard("Could not validate the form"):
        result = ui_state.sno_from_tables(ident, title, hypothesis if claim_ids else "",
                                          claims.to_dict("records"), relations.to_dict("records"),
                                          evidence.to_dict("records"))
        if result.problems:
            _problems(result.problems, "The form")
        else:
            sno = result.sno
            st.success(f"Valid SNO: {len(sno.claims)} claims, {len(sno.relations)} relations, "
                       f"{len(sno.evidence)} evidence.")
            b1, b2, b3 = st.columns(3)
            if b1.button("Open on every page", type="primary", key="cns_author_use"):
                label = ui_state.add_snos(st.session_state, [sno], "authored")[0]
                ui_state.select_sno(st.session_state, label)
                st.rerun()
            b2.download_button("Download JSON", serialize_snos(sno, "json"), file_name=f"{sno.id}.json",
                               mime="application/json", key="cns_author_json")
            b3.download_button("Download YAML", serialize_snos(sno, "yaml"), file_name=f"{sno.id}.yaml",
                               mime="application/yaml", key="cns_author_yaml")
