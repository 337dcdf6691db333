"""draft_sno with the rule drafter (the fallback when the argument miner cannot load): main claim, relations
with their reasons, evidence with provenance, one-claim and refused text."""

from __future__ import annotations

import pytest

from critic_doubles import TableEmbedder, TableNLI
from cns_core.sno import parse_snos, serialize_snos
from cns_core.text import SourceText, TextInputError, TextLimits, check_text, draft_sno, draft_snos

ESSAY = ("The city should tax sugary drinks. Sugar taxes cut consumption, because people buy less when prices "
         "rise. Admittedly, the tax costs poor households more. But they gain the most from better health.")


def relation_map(sno):
    return {(r.source, r.target): (r.kind, r.attack_type) for r in sno.relations}


def test_cues_and_position_give_the_graph():
    nli = TableNLI()
    draft = draft_sno(ESSAY, nli=nli, sno_id="sugar", rules=True)
    sno = draft.sno
    assert [c.text for c in sno.claims] == [
        "The city should tax sugary drinks.", "Sugar taxes cut consumption",
        "because people buy less when prices rise.", "Admittedly, the tax costs poor households more.",
        "But they gain the most from better health."]
    assert sno.id == "sugar" and sno.hypothesis == "c1"
    assert "stance cue 'should'" in sno.hypothesis_claim.metadata["why"]
    assert relation_map(sno) == {
        ("c2", "c1"): ("support", None),           # no marker: supports the main claim
        ("c3", "c2"): ("support", None),           # "because": a reason for the clause before
        ("c4", "c1"): ("attack", "rebut"),         # "admittedly": a point conceded against the main claim
        ("c5", "r4"): ("attack", "undercut"),      # "but" after the objection: undercuts its relation
    }
    why = {r.source: r.metadata["why"] for r in sno.relations}
    assert why["c3"].startswith("cue 'because'") and why["c4"].startswith("cue 'admittedly'")
    assert {c.id: c.role for c in sno.claims} == {"c1": "proponent", "c2": "proponent", "c3": "proponent",
                                                   "c4": "opponent", "c5": "proponent"}
    assert len(nli.calls) == 1                     # one batched NLI pass
    assert ESSAY[sno.claims[2].metadata["start"]:sno.claims[2].metadata["end"]] == sno.claims[2].text
    assert draft.notes == ["no sources given: the SNO has no evidence, so grounding scores 0",
                           "drafted by the rules (cues, position, NLI): the rule drafter was asked for"]
    assert parse_snos(serialize_snos(sno, "yaml"), fmt="yaml")[0] == sno


def test_nli_probabilities_are_recorded_and_a_strong_contradiction_attacks():
    text = "Tuition fees should be abolished. Fees keep poor students away. Fees pay for better teaching."
    nli = TableNLI({("Fees pay for better teaching.", "Tuition fees should be abolished."): (0.02, 0.03, 0.95),
                    ("Fees keep poor students away.", "Tuition fees should be abolished."): (0.7, 0.2, 0.1)})
    sno = draft_sno(text, nli=nli, rules=True).sno
    rel = {r.source: r for r in sno.relations}
    assert (rel["c2"].kind, rel["c2"].metadata["nli_entail"]) == ("support", 0.7)
    assert (rel["c3"].kind, rel["c3"].attack_type) == ("attack", "rebut")
    assert rel["c3"].metadata["nli_contradict"] == 0.95 and "contradicts its target (0.95)" in rel["c3"].metadata["why"]
    assert {c.id: c.role for c in sno.claims}["c3"] == "opponent"


def test_the_question_picks_the_main_claim():
    text = "Cities grow fast. Bus lanes should come first. Cars fill the streets."
    embedder = TableEmbedder({"What should come first?": [1, 0, 0], "Bus lanes should come first.": [0.9, 0.1, 0],
                              "Cities grow fast.": [0, 1, 0], "Cars fill the streets.": [0, 0, 1]}, dim=3)
    sno = draft_sno(text, question="What should come first?", nli=TableNLI(), embedder=embedder, rules=True).sno
    assert sno.hypothesis_text == "Bus lanes should come first."
    assert sno.hypothesis_claim.metadata["why"].startswith("main claim: answers the question (similarity 0.99)")
    assert sno.metadata["question"] == "What should come first?"


def test_sources_become_evidence_with_provenance():
    source = SourceText("study.txt", "Sugar taxes cut sales by 10%. Poor households cut most.\n\nSales fell again.")
    sno = draft_sno(ESSAY, sources=[source], nli=TableNLI(), rules=True).sno
    assert [(e.id, e.text, e.source) for e in sno.evidence] == [
        ("e1", "Sugar taxes cut sales by 10%. Poor households cut most.", "study.txt"),
        ("e2", "Sales fell again.", "study.txt")]
    meta = sno.evidence[1].metadata
    assert source.text[meta["start"]:meta["end"]] == "Sales fell again." and meta["source"] == "study.txt"


def test_passage_limit_is_named_in_the_notes():
    source = SourceText("long.txt", " ".join(f"Fact number {i} holds." for i in range(30)))
    draft = draft_sno(ESSAY, sources=[source], nli=TableNLI(),
                      limits=TextLimits(passage_sentences=2, max_passages=5))
    assert len(draft.sno.evidence) == 5
    assert draft.notes[:1] == ["10 source passages beyond the limit of 5 were left out (config/sno.yaml max_passages)"]


def test_text_without_argumentative_marker_is_one_claim():
    nli = TableNLI()
    draft = draft_sno("Paris lies on the Seine. It has many bridges.", nli=nli, rules=True)
    assert [c.text for c in draft.sno.claims] == ["Paris lies on the Seine. It has many bridges."]
    assert draft.sno.relations == [] and nli.calls == []
    assert "no argumentative marker (because, therefore, but, should, ...): drafted as a one-claim SNO" in draft.notes


@pytest.mark.parametrize("text, message", [
    ("   \n ", "text: is empty"),
    ("Der Hund läuft schnell über die Straße und die Katze schläft auf dem Sofa.", "does not look like English"),
    ("Le film Poseidon a rapporté 181 674 817 dollars dans le monde, dépassant son budget de 160 millions.",
     "does not look like English"),
    ("a\x00b", "NUL bytes"),
    (b"bytes", "must be a string"),
])
def test_refused_text(text, message):
    with pytest.raises(TextInputError, match=message):
        draft_sno(text, nli=TableNLI(), rules=True)


def test_short_english_answer_with_figures_drafts():
    text = "The film Poseidon earned $181,674,817 worldwide, exceeding its $160 million budget."
    draft = draft_sno(text, nli=TableNLI())
    assert [c.text for c in draft.sno.claims] == [text]


def test_text_over_the_size_limit():
    with pytest.raises(TextInputError, match=r"text: 2,001 bytes exceed the limit of 2,000 bytes \(config/sno.yaml"):
        draft_sno("a" * 2001, nli=TableNLI(), limits=TextLimits(max_text_bytes=2000), rules=True)


def test_unit_limit_keeps_the_first_units():
    text = " ".join(f"Point {i} should count." for i in range(8))
    draft = draft_sno(text, nli=TableNLI(), limits=TextLimits(max_units=3), rules=True)
    assert len(draft.sno.claims) == 3
    assert "only the first 3 of 8 units became claims (config/sno.yaml max_units)" in draft.notes


def test_many_texts_share_one_nli_pass_and_draft_as_one_by_one():
    other = "Bus lanes should come first, because buses carry most commuters. However, cars pay road tax."
    nli = TableNLI({("because buses carry most commuters.", "Bus lanes should come first"): (0.9, 0.05, 0.05)})
    together = draft_snos([ESSAY, "Paris lies on the Seine.", other], sno_ids=["a", "b", "c"], nli=nli,
                          rules=True)
    assert len(nli.calls) == 1
    alone = [draft_sno(t, sno_id=i, nli=TableNLI(nli.table), rules=True) for t, i in
             [(ESSAY, "a"), ("Paris lies on the Seine.", "b"), (other, "c")]]
    assert [d.sno for d in together] == [d.sno for d in alone]
    assert together[2].sno.relations[0].metadata["nli_entail"] == 0.9
    with pytest.raises(ValueError, match="sno_ids: 1 ids for 2 texts"):
        draft_snos([ESSAY, other], sno_ids=["a"], nli=nli, rules=True)
    assert check_text(ESSAY) == ESSAY


def test_a_failing_nli_model_degrades_the_draft():
    class Broken:
        name = "broken"

        def predict(self, pairs):
            raise RuntimeError("model file is corrupt")

    draft = draft_sno(ESSAY, nli=Broken(), rules=True)
    assert relation_map(draft.sno)[("c3", "c2")] == ("support", None)     # cues still draft
    assert all("nli_entail" not in r.metadata for r in draft.sno.relations)
    assert ("the NLI model failed (RuntimeError: model file is corrupt): relations come from cues and position "
            "only") in draft.notes


def test_with_the_shipped_nli_model():
    """The real default backend: the draft is valid, its relations carry real NLI probabilities."""
    sno = draft_sno(ESSAY, rules=True).sno
    assert sno.hypothesis == "c1"
    assert sno.metadata["nli"].startswith("nli-minilm-l6")
    probs = [r.metadata["nli_entail"] for r in sno.relations]
    assert all(0.0 <= p <= 1.0 for p in probs) and len(set(probs)) > 1


def test_yes_affirms_unless_a_turn_follows_and_so_draws_a_conclusion():
    text = ("Yes, you should rotate your API keys regularly.\n\n"
            "Leaked keys stay valid until they are rotated, so rotation limits the damage.")
    sno = draft_sno(text, nli=TableNLI(), rules=True).sno
    assert sno.hypothesis == "c1" and {c.role for c in sno.claims} == {"proponent"}
    assert relation_map(sno) == {("c2", "c3"): ("support", None), ("c3", "c1"): ("support", None)}
    assert sno.relations[0].metadata["why"] == "the unit after it draws a conclusion from it ('so')"
    conceding = draft_sno("Yes, keys are a chore to rotate. But leaked keys stay valid for years. "
                          "So you should rotate them.", nli=TableNLI(), rules=True).sno
    assert relation_map(conceding)[("c1", "c3")] == ("attack", "rebut")


def test_an_ordinal_opening_a_paragraph_stands_beside_the_paragraph_before():
    text = ("In my opinion, children benefit from starting school early.\n\n"
            "First, early schooling builds social skills. Children who meet peers learn to share. "
            "For example, a study of pupils found fewer problems.\n\n"
            "Second, school gives children a structure for their day.")
    sno = draft_sno(text, nli=TableNLI(), rules=True).sno
    assert relation_map(sno) == {("c2", "c1"): ("support", None), ("c3", "c2"): ("support", None),
                                 ("c4", "c3"): ("support", None), ("c5", "c1"): ("support", None)}
    why = {r.source: r.metadata["why"] for r in sno.relations}
    assert why["c5"] == "cue 'second': a further argument beside unit c2"
