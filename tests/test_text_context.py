"""Units a reader would mark: context (signposts, anecdotes), stated facts, reader text, figures and their
source sentences, and clauses that keep their verb."""

from __future__ import annotations

import pytest

from cns_core.text.context import context_reason, has_verb, reader_text, states_fact
from cns_core.text.segment import Span, clause_spans
from cns_core.text.sources import SourceText
from cns_core.text.stated import figures, stating_sentences, with_stating_evidence


@pytest.mark.parametrize("text, kind", [
    ("This essay looks at whether a diesel ban is worth its cost.", "signpost"),
    ("In this post, I will explain how the levy works.", "signpost"),
    ("Let us look at the costs first.", "signpost"),
    ("In conclusion.", "signpost"),
    ("Last summer my neighbour had to sell her old van", "anecdote"),
    ("A few years ago I lost my job at the plant.", "anecdote"),
    ("My uncle was fined twice for parking there.", "anecdote"),
])
def test_signposts_and_anecdotes_are_context(text, kind):
    assert kind in (context_reason(text) or "")


@pytest.mark.parametrize("text", [
    "This essay argues that the ban is unfair.",                 # a thesis, not a signpost
    "I believe the city should ban diesel cars from the centre.",
    "Last year the city should have acted sooner.",              # a stance in the past
    "Cars pollute the air.",
])
def test_arguments_are_not_context(text):
    assert context_reason(text) is None


@pytest.mark.parametrize("text, fact", [
    ("Roadside NO2 fell 38% within a year.", True),
    ("The ban started in March 2018.", True),
    ("A survey of 40 cities found that bans cut traffic.", True),
    ("A recent study showed that the levy changed habits.", True),
    ("Cleaner air matters.", False),
])
def test_stated_facts(text, fact):
    assert states_fact(text) is fact


@pytest.mark.parametrize("text, split_off, read", [
    ("but loading windows can be kept for delivery vans.", True, "Loading windows can be kept for delivery vans."),
    ("because dirty air shortens lives", True, "Dirty air shortens lives."),
    ("so the city should adopt it.", True, "The city should adopt it."),
    ("In conclusion, the evidence shows that a ban pays", False, "The evidence shows that a ban pays."),
    ("However, the city can offer grants.", False, "However, the city can offer grants."),   # a sentence keeps it
    ("but not always", True, "But not always."),                 # nothing with a verb would be left
])
def test_reader_text(text, split_off, read):
    assert reader_text(text, split_off) == read


def _clauses(sentence: str) -> list[str]:
    return [s.text for s in clause_spans(Span(0, len(sentence), sentence))]


def test_conditions_and_verbless_pieces_stay_with_their_clause():
    assert _clauses("The city can offer grants, as long as they invest the income from the charge.") == [
        "The city can offer grants, as long as they invest the income from the charge."]
    assert _clauses("Fares rose sharply, unless the council paid the difference.") == [
        "Fares rose sharply, unless the council paid the difference."]
    assert _clauses("Prices went up, because of the new tariff on imports.") == [
        "Prices went up, because of the new tariff on imports."]          # "because of ..." has no verb
    assert _clauses("Critics say the ban hurts small shops, but loading windows can be kept.") == [
        "Critics say the ban hurts small shops", "but loading windows can be kept."]
    assert has_verb("loading windows can be kept") and not has_verb("because of the new tariff")


def test_figures_are_normalised():
    assert figures("NO2 fell 38 per cent, from 1,200 to 744 in 2018.") == {"38%", "1200", "744", "2018"}
    assert figures("no numbers here") == frozenset()


def test_the_sentence_stating_a_claims_figures_becomes_its_evidence():
    source = SourceText("review.txt", "Low emission zones are common. Roadside NO2 in London fell 38% within a "
                                      "year. Asthma admissions fell 15% in Madrid after 2018. Costs were 12% higher.")
    found = stating_sentences([("c1", "NO2 fell 38% in London."), ("c2", "Admissions dropped 15% after 2018."),
                               ("c3", "Cleaner air matters."), ("c4", "Fares fell 7%.")], [source])
    assert [(s.text, s.claims, s.states) for s in found] == [
        ("Roadside NO2 in London fell 38% within a year.", ("c1",), ("38%",)),
        ("Asthma admissions fell 15% in Madrid after 2018.", ("c2",), ("15%", "2018"))]
    assert source.text[found[0].start:found[0].end] == found[0].text
    data = with_stating_evidence({"claims": [{"id": "c1", "text": "NO2 fell 38% in London."}],
                                  "evidence": [{"id": "e1", "text": source.text}]}, [source])
    assert [e["id"] for e in data["evidence"]] == ["e1", "e2"]
    assert data["evidence"][1]["metadata"]["for_claims"] == ["c1"]
