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
    assert not ok and share < 0.10


def test_windows_line_endings_keep_paragraphs_and_headings():
    text = "# Title\r\n\r\nThe tax works well, because prices rise.\r\nSo we should tax.\r\n\r\nThe end is near."
    units, headings = segment_units(text)
    assert [h.text for h in headings] == ["# Title"]
    assert [(u.text, u.paragraph) for u in units] == [("The tax works well", 0), ("because prices rise.", 0),
                                                      ("So we should tax.", 0), ("The end is near.", 1)]


ENGLISH_TEXTS = [
    "The film Poseidon earned $181,674,817 worldwide, exceeding its $160 million budget.",
    "Apple reported quarterly revenue of $94.8 billion, up 6% year over year, on iPhone sales.",
    "Aspirin reduced mortality by 23% (95% CI 15-30%) among 17,187 patients with suspected infarction.",
    "Toyota sold 10.5 million vehicles in 2022, ahead of Volkswagen's 8.3 million.",
    "Mount Everest, at 8,849 metres, is Earth's highest mountain above sea level.",
    "Vitamin D supplementation lowers fracture risk in elderly women over 70 years.",
    "In 2008, Riley began dating American billionaire entrepreneur Elon Musk.",
    "Colchicine increased lung injury in experimental acute respiratory distress syndrome",
    "Q3 revenue $81.8B, iPhone $39.7B, Mac $7.4B.",                 # under 8 alphabetic words: not judged
]
FOREIGN_TEXTS = [
    "Der Hund läuft schnell über die Straße und die Katze schläft auf dem Sofa.",
    "Le film Poseidon a rapporté 181 674 817 dollars dans le monde, dépassant son budget de 160 millions.",
    "Nous pensons que cette loi est injuste parce qu'elle frappe surtout les familles modestes.",
    "Die Regierung hat am Montag beschlossen, die Steuern für kleine Unternehmen zu senken.",
    "El gobierno anunció el lunes que reducirá los impuestos para las pequeñas empresas en 2024.",
    "La película ganó 181 millones de dólares en todo el mundo, superando su presupuesto.",
    "Il governo ha annunciato lunedì che ridurrà le tasse per le piccole imprese nel 2024.",
    "O governo anunciou na segunda-feira que vai reduzir os impostos para as pequenas empresas.",
    "De regering heeft maandag besloten de belastingen voor kleine bedrijven te verlagen.",
    "Правительство объявило в понедельник о снижении налогов для малого бизнеса в этом году.",
]


@pytest.mark.parametrize("text", ENGLISH_TEXTS)
def test_short_english_with_numbers_names_and_currency_is_english(text):
    assert looks_english(text)[0]


@pytest.mark.parametrize("text", FOREIGN_TEXTS)
def test_french_german_spanish_and_others_are_not_english(text):
    assert not looks_english(text)[0]
