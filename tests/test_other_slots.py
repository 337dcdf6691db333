"""Numbers in other slots: the recipe's neutral pairs of sentences from one true document."""

from __future__ import annotations

import json

from cns_core.models.nli import NEUTRAL
from cns_core.training.fact_swaps import numbers_in
from cns_core.training.nli_data import scifact_fold
from cns_core.training.other_slots import documents_in, other_slot_pairs

TRIAL = [
    "Aerobic exercise lowered systolic blood pressure by 8.3 mmHg in the treated adults.",
    "Aerobic exercise lowered diastolic blood pressure by 5.2 mmHg in the treated adults.",
    "Aerobic exercise lowered systolic blood pressure by 8.3 mmHg after twelve weeks of training.",
    "The trial enrolled 412 participants from 9 clinics.",
]


def test_numbers_in_counts_quantities_not_dates():
    assert numbers_in("On March 3, 2019 the firm sold 1,250 cars for 3.5 million dollars.") == {"1250", "3.5"}
    assert numbers_in("CED-10 and caspase-11 in the 9th cohort.") == set()


def test_sentences_with_numbers_for_other_slots_pair_as_neutral_both_ways():
    pairs = other_slot_pairs([TRIAL], limit=100, seed=1)
    found = set(zip(pairs.premises, pairs.hypotheses))
    assert (TRIAL[0], TRIAL[1]) in found and (TRIAL[1], TRIAL[0]) in found
    assert set(pairs.labels) == {NEUTRAL}
    # the premise writes every number of the hypothesis (it may entail it): left out
    assert (TRIAL[0], TRIAL[2]) not in found and (TRIAL[2], TRIAL[0]) not in found
    # too few words in common to tempt a model: left out
    assert all(TRIAL[3] not in pair for pair in found)


def test_each_document_gives_its_most_alike_pairs_and_the_limit_holds():
    pairs = other_slot_pairs([TRIAL], limit=100, seed=1, per_document=1)
    assert len(pairs) == 1
    assert {pairs.premises[0], pairs.hypotheses[0]} in ({TRIAL[0], TRIAL[1]}, {TRIAL[1], TRIAL[2]})
    assert len(other_slot_pairs([TRIAL, TRIAL[::-1]], limit=1, seed=1)) == 1


def test_scifact_abstracts_a_held_out_claim_cites_are_not_read(tmp_path):
    held_id = next(i for i in range(100) if scifact_fold(i, 5) == 0)
    train_id = next(i for i in range(100) if scifact_fold(i, 5) == 3)
    rows = [{"claim_id": train_id, "doc_id": 1, "abstract": ["Shared abstract, also cited by a held claim."]},
            {"claim_id": held_id, "doc_id": 1, "abstract": ["Shared abstract, also cited by a held claim."]},
            {"claim_id": train_id, "doc_id": 2, "abstract": TRIAL},
            "not json"]
    path = tmp_path / "train_claim_doc_pairs.jsonl"
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    assert documents_in(path, folds=5, held_folds=[0, 1]) == [TRIAL]
    assert documents_in(path, folds=5, held_folds=[0, 1], held=True) == [["Shared abstract, also cited by a held claim."]]


def test_boolq_passages_are_read_in_sentences(tmp_path):
    path = tmp_path / "boolq_dev.jsonl"
    path.write_text(json.dumps({"question": "q", "answer": True, "passage": " ".join(TRIAL[:2])}) + "\n")
    assert documents_in(path, folds=5, held_folds=[0]) == [TRIAL[:2]]
