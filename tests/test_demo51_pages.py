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
