"""Sentences, clauses, headings and discourse cues of cns_core.text, with their character offsets."""

from __future__ import annotations

import pytest

from cns_core.text import segment_units, sentence_spans, split_sentences
from cns_core.text.cues import has_argument_marker, leading_cue, looks_english, stance_cues
from cns_core.text.segment import paragraphs


@pytest.mark.parametrize("text, expected", [
    ("One. Two! Three?", ["One.", "Two!", "Three?"]),
    ("Smith et al. found it. It held.", ["Smith et al. found it.", "It held."]),
    ("Dr. Smith gave 2.5 mg to J. Doe. It worked.", ["Dr. Smith gave 2.5 mg to J. Doe.", "It worked."]),
    ("See No. 5 here. I said no. Then I left.", ["See No. 5 here.", "I said no.", "Then I left."]),
    ("The dose was\nraised in May. Then it fell.", ["The dose was\nraised in May.", "Then it fell."]),   # wrapped line
    ("Findings\nThe dose was raised.", ["Findings", "The dose was raised."]),                            # title line
    ("We need:\n- more staff\n- less paper", ["We need:", "more staff", "less paper"]),
    ("First part.\n\nSecond part", ["First part.", "Second part"]),
    ("It works; it is cheap.", ["It works; it is cheap."]),
    ("", []),
])
def test_sentences(text, expected):
    assert split_sentences(text) == expected


def test_offsets_point_into_the_text_and_semicolons_are_optional():
    text = "  Alpha is first; beta is second.\n\nGamma ends it."
    spans = sentence_spans(text, semicolons=True)
    assert [s.text for s in spans] == ["Alpha is first", "beta is second.", "Gamma ends it."]
    assert all(text[s.start:s.end] == s.text for s in spans)


def test_clauses_split_a_claim_from_its_reason_and_headings_are_not_units():
    text = ("# Sugar tax\n\nThe city should tax soda, because people buy less when prices rise. "
            "Although the tax costs the poor more, their health gains most.\n\nTherefore we should act.")
    units, headings = segment_units(text)
    assert [h.text for h in headings] == ["# Sugar tax"]
    assert [u.text for u in units] == [
        "The city should tax soda", "because people buy less when prices rise.",
        "Although the tax costs the poor more", "their health gains most.", "Therefore we should act."]
    assert [(u.paragraph, u.sentence, u.clause) for u in units] == [(0, 0, 0), (0, 0, 1), (0, 1, 0), (0, 1, 1),
                                                                   (1, 2, 0)]
    assert all(text[u.span.start:u.span.end] == u.text for u in units)


@pytest.mark.parametrize("sentence, pieces", [
    ("Costs rose as well as the prices of bread.", 1),                  # "as well as" is no clause
    ("It is cheap, but it breaks quickly after a year.", 2),
    ("Dogs bark and cats purr.", 1),                                    # too short to split, no marker
    ("Fees must go, since they keep poor students away from university.", 2),
])
def test_clause_boundaries(sentence, pieces):
    units, _ = segment_units(sentence)
    assert len(units) == pieces


def test_a_single_title_line_paragraph_is_a_heading_only_among_others():
    assert [p.heading for p in paragraphs("Title Line\n\nThe body says something.")] == [True, False]
    assert [p.heading for p in paragraphs("Just one short line")] == [False]


@pytest.mark.parametrize("text, kind, phrase", [
    ("Because it rains, we stay.", "reason", "because"),
    ("As the data show, it works.", "reason", "as"),
    ("As usual.", None, None),
    ("For example, Mexico taxed soda.", "example", "for example"),
    ("Mexico's tax, for instance, cut sales.", "example", "for instance"),
    ("For this reason we act.", "conclusion", "for this reason"),
    ("That's why we act.", "conclusion", "that's why"),
    ("Admittedly, it costs more.", "concession", "admittedly"),
    ("However, nobody checked.", "contrast", "however"),
    ("Moreover, it is cheap.", "addition", "moreover"),
    ("In conclusion, tax it.", "summary", "in conclusion"),
    ("The tax works.", None, None),
])
def test_leading_cue(text, kind, phrase):
    cue = leading_cue(text)
    assert (cue.kind, cue.phrase) == (kind, phrase) if kind else cue is None


def test_stance_markers_and_language():
    assert stance_cues("I strongly believe we should act") == ["i strongly believe", "should"]
    assert has_argument_marker(["It is unfair to tenants."])
    assert not has_argument_marker(["Paris lies on the Seine.", "It has many bridges."])
    assert looks_english("The council met on Monday and agreed on the budget for the year.")[0]
    ok, share = looks_english("Der Hund läuft schnell über die Straße und die Katze schläft auf dem Sofa.")
    assert not ok and share < 0.12


def test_windows_line_endings_keep_paragraphs_and_headings():
    text = "# Title\r\n\r\nThe tax works well, because prices rise.\r\nSo we should tax.\r\n\r\nThe end is near."
    units, headings = segment_units(text)
    assert [h.text for h in headings] == ["# Title"]
    assert [(u.text, u.paragraph) for u in units] == [("The tax works well", 0), ("because prices rise.", 0),
                                                      ("So we should tax.", 0), ("The end is near.", 1)]
