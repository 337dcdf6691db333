"""The development set of claims with injected errors: each kind changes exactly what it names,
leaves claims it cannot change alone, and the set is deterministic and balanced over kinds."""

from __future__ import annotations

import pytest

from cns_core.training.claim_errors import claim_error_set, scifact_supported_claims, supported_claims
from cns_core.training.fact_swaps import ERROR_KINDS, inject_error
from cns_core.training.grounding_fusion import DevClaim

POSEIDON = "The film Poseidon earned $181,674,817 worldwide, exceeding its $160 million budget."
DONOR = "Barack Obama visited Paris in 2009."


@pytest.mark.parametrize("claim, kind, changed", [
    (POSEIDON, "number", "The film Poseidon earned $981,674,817 worldwide, exceeding its $160 million budget."),
    (POSEIDON, "quantity", "The film Poseidon earned $181,674,817 worldwide, exceeding its $160 billion budget."),
    ("In 1954, the court ruled with 5 votes.", "number", "In 1954, the court ruled with 9 votes."),   # not the year
    ("He has two children.", "number", "He has three children."),
    ("On August 22, 2017, he won.", "date", "On April 22, 2017, he won."),
    ("The bridge opened in 1932.", "date", "The bridge opened in 1930."),
    ("She moved to Leicestershire with her family.", "name", "She moved to Paris with her family."),
    ("Aspirin lowers stroke risk.", "added_fact", "Aspirin lowers stroke risk, and Barack Obama visited Paris in 2009."),
    ("The tax increased prices.", "quantity", "The tax decreased prices."),
])
def test_each_kind_changes_what_it_names(claim, kind, changed):
    assert inject_error(claim, kind, DONOR) == changed


@pytest.mark.parametrize("claim, kind", [
    ("On August 22, 2017, he won.", "number"),         # a day and a year are dates, not numbers
    ("Caspase-11 binds CED-10 in 9th-grade cells.", "number"),   # parts of names and ordinals
    ("Teaneck High School is big.", "quantity"),        # a quantity word inside a name
    ("Cells divide.", "date"),
    ("cells divide quickly.", "name"),
])
def test_claims_without_that_kind_are_left_alone(claim, kind):
    assert inject_error(claim, kind, DONOR) is None


def test_unknown_kind_is_named():
    with pytest.raises(ValueError, match="kind: 'typo' is not one of number, date, name, quantity, added_fact"):
        inject_error(POSEIDON, "typo", DONOR)


def _claims() -> list[DevClaim]:
    texts = [POSEIDON, "The bridge opened in 1932.", "She moved to Leicestershire with her family.",
             "The tax increased prices.", "Cells divide.", "He met Barack Obama with his two children."]
    return [DevClaim("toy", f"g{i}", "original", "supported", t, "source text") for i, t in enumerate(texts)]


def test_set_pairs_each_original_with_one_corrupted_claim_kinds_taking_turns():
    claims = claim_error_set(_claims())
    originals, corrupted = claims[::2], claims[1::2]
    assert [c.claim for c in originals] == [c.claim for c in _claims()]
    assert all(c.verdict == "supported" and c.label == "original" for c in originals)
    assert all(c.verdict == "not_enough_info" for c in corrupted)
    assert [(o.group, o.source) for o in originals] == [(c.group, c.source) for c in corrupted]
    # kinds in turn, each claim taking the first kind in turn that it admits
    assert [c.label for c in corrupted] == ["number", "date", "name", "quantity", "added_fact", "number"]
    assert corrupted[2].claim == "She moved to Barack Obama with her family."   # the name from another claim
    assert corrupted[4].claim == "Cells divide, and the bridge opened in 1932."
    assert claim_error_set(_claims()) == claims
    assert set(ERROR_KINDS) == {c.label for c in corrupted}


def test_real_set_holds_wice_and_held_out_scifact_supported_claims(shared_data):
    claims = supported_claims(shared_data)
    assert {c.dataset for c in claims} == {"wice", "scifact"}
    from cns_core.training.nli_data import read_scifact_pairs

    trained = set(read_scifact_pairs(shared_data / "scifact_train" / "train_claim_doc_pairs.jsonl").hypotheses)
    assert not {c.claim for c in claims if c.dataset == "scifact"} & trained     # held-out folds only
    errors = claim_error_set(claims)
    assert len(errors) % 2 == 0 and len(errors) >= 500
    assert {c.label for c in errors[1::2]} == set(ERROR_KINDS)


def test_dev_set_is_scifact_training_folds_disjoint_from_the_held_out_claims(shared_data):
    from cns_core.training.answer_sets import answer_set

    held = {c.claim for c in supported_claims(shared_data) if c.dataset == "scifact"}
    dev = scifact_supported_claims(shared_data, wanted_folds=(2, 3, 4))     # the folds the verifier trains on
    assert dev and not {c.claim for c in dev} & held
    turns = answer_set("swaps_dev", root=shared_data)
    assert len(turns) == len(claim_error_set(dev)) and sum(t.right for t in turns) * 2 == len(turns)
    assert all(t.sources and t.reference is None for t in turns)
