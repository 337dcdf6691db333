"""Issue 51 item 7: what the Author page drafted wrong after a correction.

An objection with no concession word ("Shop owners often fear losing customers. But ...") was drafted as a
supporting premise, a "Therefore ..." conclusion restating the thesis as a premise (or as the main claim, with
the thesis supporting it), the pasted source at validity 1.00, and a text the person corrected drafted the same
way again. The shipped miner (no retraining) with its decoding rules (cns_core/text/miner.py), the text of
``tests/fixtures/text/high_street_essay.md``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cns_core.sno import SNO
from cns_core.text import draft_sno
from cns_core.text.corrections import record_correction
from cns_core.text.sources import UNSTATED_VALIDITY, read_source_bytes

FIXTURES = Path(__file__).parent / "fixtures" / "text"
ESSAY = (FIXTURES / "high_street_essay.md").read_text(encoding="utf-8")
SOURCE = read_source_bytes((FIXTURES / "high_street_source.txt").read_bytes(), "pasted source")


@pytest.fixture(scope="module")
def drafted() -> SNO:
    return draft_sno(ESSAY, sources=[SOURCE]).sno


def _claim(sno: SNO, start: str):
    (claim,) = [c for c in sno.claims if c.text.startswith(start)]
    return claim


def test_an_objection_answered_by_but_attacks_the_thesis_and_the_answer_attacks_it(drafted):
    edges = {(r.source, r.target): r.kind for r in drafted.relations}
    thesis, shops = _claim(drafted, "The town should close"), _claim(drafted, "Shop owners often fear")
    answer = _claim(drafted, "But in towns that closed")
    assert drafted.hypothesis == thesis.id
    assert edges[(shops.id, thesis.id)] == "attack" and shops.role == "opponent"
    assert edges[(answer.id, shops.id)] == "attack" and answer.role == "proponent"
    for reason in ("Fewer cars make", "Cleaner air is"):
        assert edges[(_claim(drafted, reason).id, thesis.id)] == "support"


def test_a_therefore_that_restates_the_thesis_is_not_a_premise(drafted):
    assert not [c for c in drafted.claims if c.text.startswith("Therefore")]
    (restated,) = [x for x in drafted.metadata["left_out"] if x["text"].startswith("Therefore")]
    assert restated["why"].startswith("restates the main claim (similarity 0.")


def test_a_pasted_source_is_not_taken_as_fully_trusted(drafted):
    assert drafted.evidence and all(e.validity == UNSTATED_VALIDITY for e in drafted.evidence)
    assert all("nobody stated how far this source is trusted" in e.metadata["validity_note"] for e in drafted.evidence)


def test_a_turn_to_an_objection_does_not_make_the_reasoned_claim_before_it_one():
    """'Because ..., streets must become safer. However, some people need a car' turns to the objection."""
    sno = draft_sno("Cities should limit cars in their centres. Because traffic kills thousands of people every year, "
                    "streets must become safer. However, some people need a car for their work.").sno
    edges = {(r.source, r.target): r.kind for r in sno.relations}
    safer, car = _claim(sno, "Streets must become safer"), _claim(sno, "However, some people need")
    assert (car.id, safer.id) not in edges
    assert edges[(car.id, sno.hypothesis)] == "attack"


def test_a_text_the_person_corrected_drafts_as_corrected(state_dir, drafted):
    first = draft_sno(ESSAY, sources=[SOURCE])
    data = first.sno.model_dump(mode="json")
    shops = _claim(first.sno, "Shop owners often fear").id
    for r in data["relations"]:         # the person reads the shop owners' fear as a reason, on purpose
        if r["source"] == shops:
            r["kind"], r["attack_type"] = "support", None
    corrected = SNO.model_validate(data)
    assert record_correction(ESSAY, first.sno, corrected) is not None
    again = draft_sno(ESSAY, sources=[SOURCE])
    kinds = {(r.source, r.target): r.kind for r in again.sno.relations}
    assert kinds == {(r.source, r.target): r.kind for r in corrected.relations}
    assert again.sno.metadata["method"] == "your kept correction"
    assert again.notes[0].startswith("you corrected this text before")
    assert [e.text for e in again.sno.evidence][:len(first.sno.evidence)] == [e.text for e in first.sno.evidence]
    assert {(r.source, r.target): r.kind for r in draft_sno(ESSAY + " ").sno.relations}[(shops, drafted.hypothesis)] \
        == "attack"                                                   # another text drafts as the miner reads it


def test_a_conclusion_that_shares_words_with_a_claim_but_says_something_else_stays_the_main_claim():
    """'But people who take vitamin C every day feel healthier.' does not restate 'So everyone should take vitamin
    C every day.' (cosine above the bar, but no stance of its own): the conclusion stays the main claim."""
    sno = draft_sno("Does vitamin C prevent colds?\n\nVitamin C prevents the common cold. Large randomized trials "
                    "have confirmed a preventive effect of vitamin C on colds.\n\nSome say the evidence is weak. But "
                    "people who take vitamin C every day feel healthier.\n\nSo everyone should take vitamin C every "
                    "day.\n").sno
    assert sno.claims_by_id[sno.hypothesis].text == "So everyone should take vitamin C every day."
    assert not [x for x in sno.metadata.get("left_out", []) if x["why"].startswith("restates")]
    assert any(c.text.startswith("But people who take vitamin C") for c in sno.claims)
