"""Issue 42's essay, drafted as a new user would (the shipped miner, the pasted source, the grounding critic):
a question first line, a signpost, an anecdote, two statistics, an objection answered twice."""

from __future__ import annotations

from pathlib import Path

import pytest

from cns_core.critics.grounding import GroundingCritic
from cns_core.text import draft_sno
from cns_core.text.context import has_verb
from cns_core.text.sources import read_source_bytes

FIXTURES = Path(__file__).parent / "fixtures" / "text"
ESSAY = (FIXTURES / "diesel_essay.md").read_text(encoding="utf-8")
SOURCE = read_source_bytes((FIXTURES / "diesel_source.txt").read_bytes(), "pasted source")


@pytest.fixture(scope="module")
def drafted():
    return draft_sno(ESSAY, sources=[SOURCE]).sno


def _claim(sno, start: str):
    found = [c for c in sno.claims if c.text.startswith(start)]
    assert len(found) == 1, (start, [c.text for c in sno.claims])
    return found[0]


def test_the_essay_has_about_230_words_a_question_and_two_statistics():
    assert 200 <= len(ESSAY.split()) <= 260 and ESSAY.splitlines()[0].endswith("?")
    assert "38%" in ESSAY and "15%" in ESSAY and "38%" in SOURCE.text and "15%" in SOURCE.text


def test_no_signpost_anecdote_or_fragment_is_a_claim(drafted):
    texts = [c.text for c in drafted.claims]
    assert not any(t.startswith(("This essay", "Last summer", "In conclusion")) for t in texts)
    left = {item["text"][:20]: item["why"] for item in drafted.metadata["left_out"]}
    assert "signpost" in left["This essay looks at "] and "anecdote" in left["Last summer my neigh"]
    for t in texts:    # sentences or clauses with a verb, read as sentences
        assert t[0].isupper() and t.endswith(".") and has_verb(t), t
        assert not t.lower().startswith(("but ", "because ", "as long as", "so ")), t
    assert "The city can offer grants to replace old diesel cars, as long as they invest" in " ".join(texts) \
        or any("as long as they invest" in t and t.startswith("However") for t in texts)
    _claim(drafted, "Cleaner air matters")                          # with its reason, in the graph
    _claim(drafted, "Dirty air shortens lives")


def test_the_objections_attack_and_their_answers_attack_them(drafted):
    edges = {(r.source, r.target): r.kind for r in drafted.relations}
    shops, windows = _claim(drafted, "Critics say"), _claim(drafted, "Loading windows")
    families, grants = _claim(drafted, "Some argue"), _claim(drafted, "However, the city can offer grants")
    assert edges[(shops.id, drafted.hypothesis)] == "attack"
    assert edges[(families.id, drafted.hypothesis)] == "attack"
    assert edges[(windows.id, shops.id)] == "attack" and edges[(grants.id, families.id)] == "attack"
    assert shops.role == families.role == "opponent" and windows.role == grants.role == "proponent"


def test_both_statistics_are_supported_by_the_pasted_source(drafted):
    result = GroundingCritic().evaluate(drafted)
    for start in ("When London introduced", "In Madrid"):
        verdict = result.evidence["claims"][_claim(drafted, start).id]
        assert verdict["verdict"] == "supported" and verdict["p_supported"] >= 0.5, (start, verdict)
    stating = [e for e in drafted.evidence if e.metadata.get("for_claims")]
    assert len(stating) == 2 and all(SOURCE.text[e.metadata["start"]:e.metadata["end"]] == e.text for e in stating)
