"""Issue 51 (the demo, third pass) on the pages, with AppTest: the Meta-Critic's wording (item 6), the numbers
that were cut off (item 5) and the small things (item 9). Graph layout and zoom: tests/test_graph_layout.py and
tests/test_browser_graph.py; reader verdicts: tests/test_reader_verdicts.py; gaps: tests/test_dashboard_one_count.py."""

from __future__ import annotations

from test_dashboard_verdicts import app_state, meta_critic_with_grounding_only  # noqa: F401  (app_state: state dir)


# ----- item 6: Meta-Critic wording --------------------------------------------------------------------------
def test_the_critic_with_the_largest_share_and_the_lowest_score_is_explained_not_contradictory():
    """With Grounding the only weight, it both carries the Trust Score and scores lowest: "Dominant critic
    Grounding" beside "Weakest dimension Grounding" read as a contradiction."""
    at = meta_critic_with_grounding_only()
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Largest share of the Trust Score"] == "Grounding"
    assert metrics["Lowest score (with weight)"] == "Grounding"
    captions = [c.value for c in at.caption]
    assert any(c.startswith("weight 1.00 × score ") and c.endswith("of the Trust Score") for c in captions)
    assert any(c.startswith("Grounding is both: it scores lowest, but its weight (1.00)") for c in captions)


def test_a_conflict_with_logic_at_weight_zero_says_it_moves_no_trust_score():
    at = meta_critic_with_grounding_only()
    listed = [m.value for m in at.markdown if m.value.startswith("- ") and " vs " in m.value and "(gap " in m.value]
    with_logic = [m for m in listed if "Logic" in m]
    assert with_logic, listed
    notes = [c.value for c in at.caption if "weight 0 in force: this gap does not move the Trust Score" in c.value]
    assert len(notes) == len(listed)         # every critic but Grounding is at weight 0: every conflict says so
    assert any(n.startswith("Logic has weight 0") or "and Logic have weight 0" in n for n in notes)


# ----- item 5: nothing cut off ---------------------------------------------------------------------------------
MAIN_PX = 940          # the page's main column at the browser tests' 1400 px window


def test_corpus_table_shows_every_number_before_the_page_edge(state_dir):
    """A Trust Score column at the page's right edge showed its values as "0": the numbers now come first and fit
    the page (the profiles shown above choose the Trust Score columns), left-aligned, with the SNO id pinned."""
    import json

    from test_page_corpus import corpus_page, make_results

    at = corpus_page()
    at.text_input(key="cns_corpus_path").input(str(make_results(state_dir)))
    at.button(key="cns_corpus_load").click()
    at.run()
    assert not at.exception
    table = next(d for d in at.dataframe if "sno_id" in d.value.columns)
    names = list(table.value.columns)
    config = json.loads(table.proto.columns)
    numeric = [n for n in names if n.startswith(("trust_", "score_")) or n == "n_conflicts"]
    assert [n for n in names if n.startswith("trust_")] == ["trust_default"]       # the profile shown above
    last = max(names.index(n) for n in numeric)
    assert names[:last + 1] == ["sno_id", *numeric]                                 # numbers first, then text
    assert sum(config[n]["width"] for n in names[:last + 1]) <= MAIN_PX
    assert all(config[n].get("alignment") == "left" for n in numeric if n != "n_conflicts")
    assert config["sno_id"].get("pinned") is True


def test_the_agreement_panel_fits_the_page():
    """Engrams' "Agreement with you" was one table of eight columns (1,308 px): its right columns were off the page
    until scrolled. Two tables now, each narrower than the expander, with their widest values."""
    from cns_core.judging.agreement import SCORES, ScoreAgreement
    from cns_core.views.display import fit_widths
    from cns_core.views.people_view import agreement_tables

    results = [ScoreAgreement(name, 1200, 1150, 0.8347, (0.8012, 0.8651), 0.9123, 1200,
                              {"right/right": 1000, "right/wrong": 100, "wrong/right": 25, "wrong/wrong": 25})
               for name, _, _ in SCORES]
    tables = agreement_tables(results)
    assert {k for rows in tables for k in rows[0]} >= {"accuracy (95% interval)", "AUC", "wrong, person wrong"}
    for rows in tables:
        assert sum(fit_widths(rows).values()) <= MAIN_PX - 40      # the expander's padding


# ----- item 7: Author after a correction ---------------------------------------------------------------------
def test_keeping_a_correction_counts_it_at_once_and_enables_the_refit(state_dir):
    """After "Kept (1 corrected text(s) ...)" the panel above still said "0 corrected text(s) kept" and Refit stayed
    disabled until the next rerun; the drafted tables showed "None" in empty cells and cut long texts."""
    import json

    from streamlit.testing.v1 import AppTest
    from test_author_from_text import ROOT, TEXT

    at = AppTest.from_file(str(ROOT / "dashboard.py"), default_timeout=180)
    at.run()
    at.switch_page("pages/author.py").run()
    at.text_area(key="cns_author_text").input(TEXT)
    at.button(key="cns_author_draft_button").click().run()
    assert not at.exception
    drafted = at.session_state["cns_author_draft"]
    assert any(e.label.endswith("0 corrected text(s) kept") for e in at.expander)
    assert at.button(key="cns_author_refit_button").disabled
    other = next(c["id"] for c in drafted.claims if c["id"] != drafted.hypothesis)
    at.selectbox(key="cns_author_draft_h_1").set_value(other).run()       # the person picks another main claim
    at.button(key="cns_author_keep").click().run()
    assert not at.exception
    assert any(i.value.startswith("Kept (1 corrected text(s)") for i in at.info)
    assert any(e.label.endswith("1 corrected text(s) kept") for e in at.expander)       # in the same click
    assert not at.button(key="cns_author_refit_button").disabled
    editors = [d.proto for d in at.dataframe if d.proto.editing_mode]
    assert editors and all(p.placeholder == "" for p in editors)               # an empty cell is empty, not "None"
    claims = next(p for p in editors if "drafted_as" in json.loads(p.columns))
    width = json.loads(claims.columns)["text"]["width"]
    longest = max(len(c["text"]) for c in drafted.claims)
    lines = max(1, (claims.row_height - 12) // 21) if claims.row_height > 64 else 1
    assert longest <= lines * ((width - 28) // 8)                              # the longest claim text wraps uncut
