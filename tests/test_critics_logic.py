"""The Logic critic's heuristic (the fallback and sub-scores of the learned critic) on hand-built graphs:
heuristics by hand, cycles, orphans, attacks, contradictions."""

from __future__ import annotations

import pytest
from critic_doubles import BrokenBackend, TableEmbedder, TableNLI, build_sno

from cns_core.critics import structure
from cns_core.critics.base import CriticContext
from cns_core.critics.logic import HeuristicLogicCritic

TEXT = {k: f"Claim {k}." for k in ("h", "a", "b", "c", "x", "y", "z")}


def _claims(*ids):
    return {k: TEXT[k] for k in ids}


@pytest.fixture
def critic():
    return HeuristicLogicCritic({"contradiction_threshold": 0.5})


def _run(critic, sno, nli=None, embedder=None):
    return critic.evaluate(sno, CriticContext(nli=nli or TableNLI(), embedder=embedder or TableEmbedder()))


def test_chain_scores_the_spec_heuristics(critic):
    # b -> a -> h: no orphan, mean out-degree 2/3, density 2/6
    result = _run(critic, build_sno(_claims("h", "a", "b"), [("a", "h", "support"), ("b", "a", "support")]))
    heuristic = 0.5 * 1.0 + 0.3 * (1 - (2 / 3) / 3) + 0.2 * (1 - 1 / 3)
    assert result.sub_scores["heuristic_score"] == pytest.approx(heuristic)
    assert result.sub_scores["structure_score"] == 1.0
    assert result.score == pytest.approx(heuristic)
    assert result.issues == ()


def test_orphan_is_a_claim_that_argues_for_nothing(critic):
    # a -> h, and b hangs free: b is an orphan and a component cut off from h
    result = _run(critic, build_sno(_claims("h", "a", "b"), [("a", "h", "support")]))
    assert result.sub_scores["orphan_score"] == pytest.approx(0.5)
    heuristic = 0.5 * 0.5 + 0.3 * (1 - (1 / 3) / 3) + 0.2 * (1 - 1 / 6)
    assert result.score == pytest.approx(heuristic * (1 - 0.15))
    assert [(i.code, i.nodes) for i in result.issues if i.code in ("orphan_claim", "disconnected_component")] == [
        ("disconnected_component", ("b",)), ("orphan_claim", ("b",))]


def test_leaf_premises_are_not_orphans(critic):
    # a and b have no incoming edge (basic premises) but both argue for h
    result = _run(critic, build_sno(_claims("h", "a", "b"), [("a", "h", "support"), ("b", "h", "support")]))
    assert result.sub_scores["orphan_score"] == 1.0
    assert "orphan_claim" not in result.issue_codes


def test_cycle_is_named_and_penalised(critic):
    sno = build_sno(_claims("h", "a", "b"), [("a", "h", "support"), ("a", "b", "support"), ("b", "a", "support")])
    result = _run(critic, sno)
    cycles = [i for i in result.issues if i.code == "circular_reasoning"]
    assert len(cycles) == 1 and cycles[0].nodes == ("a", "b")
    assert "a -> b -> a" in cycles[0].message
    heuristic = 0.5 * 1.0 + 0.3 * (1 - 1 / 3) + 0.2 * (1 - 3 / 6)
    assert result.score == pytest.approx(heuristic * 0.7)
    assert result.evidence["cycles"] == [["a", "b"]]


def test_cycle_through_the_hypothesis_starts_at_it():
    sno = build_sno(_claims("h", "a", "b"), [("a", "h", "support"), ("h", "b", "support"), ("b", "a", "support")])
    assert structure.support_cycles(sno) == [("h", "b", "a")]
    assert structure.format_cycle(("h", "b", "a")) == "h -> b -> a -> h"


def test_cycle_enumeration_is_capped_and_says_so():
    # four separate support loops a<->b, c<->d, e<->f, g<->i, all hanging from h
    pairs = [("a", "b"), ("c", "d"), ("e", "f"), ("g", "i")]
    relations = [(x, "h", "support") for x, _ in pairs]
    relations += [r for x, y in pairs for r in ((x, y, "support"), (y, x, "support"))]
    claims = {"h": "Cities should ban cars."} | {n: f"Claim {n} holds." for p in pairs for n in p}
    sno = build_sno(claims, relations)
    assert structure.support_cycles_capped(sno, 4) == (structure.support_cycles(sno, 4), False)
    cycles, capped = structure.support_cycles_capped(sno, 2)
    assert len(cycles) == 2 and capped
    result = _run(HeuristicLogicCritic({"max_cycles": 2}), sno)
    assert result.evidence["cycles_capped"] is True and len(result.evidence["cycles"]) == 2
    assert result.issue_codes.count("circular_reasoning") == 1        # codes are listed once
    assert len([i for i in result.issues if i.code == "circular_reasoning"]) == 2
    assert "cycles_capped" in result.issue_codes and "capped at 2" in result.explanation
    full = _run(HeuristicLogicCritic({"max_cycles": 10}), sno)
    assert full.evidence["cycles_capped"] is False and len(full.evidence["cycles"]) == 4
    assert "cycles_capped" not in full.issue_codes


def test_mutual_attack_is_not_circular(critic):
    sno = build_sno(_claims("h", "a", "x"), [("a", "h", "support"), ("x", "a", "attack"), ("a", "x", "attack")])
    result = _run(critic, sno)
    assert "circular_reasoning" not in result.issue_codes
    assert "unanswered_attack" not in result.issue_codes       # a answers x


def test_unanswered_attack_and_its_answer(critic):
    base = [("a", "h", "support"), ("x", "a", "attack")]
    result = _run(critic, build_sno(_claims("h", "a", "x"), base))
    assert [(i.code, i.nodes) for i in result.issues if i.code == "unanswered_attack"] == [
        ("unanswered_attack", ("x", "a"))]
    answered = _run(critic, build_sno(_claims("h", "a", "x", "y"), base + [("y", "x", "attack")]))
    assert "unanswered_attack" not in answered.issue_codes
    assert result.sub_scores["structure_score"] == pytest.approx(0.9)


def test_undercut_sides_and_answers():
    # x undercuts the support a -> h (relation r1): x is against h; y rebuts x: y is for h
    sno = build_sno(_claims("h", "a", "x", "y"),
                    [("a", "h", "support", "r1"), ("x", "r1", "attack", "r2"), ("y", "x", "attack", "r3")])
    assert structure.claim_sides(sno) == {"h": 1, "a": 1, "x": -1, "y": 1}
    assert structure.unanswered_attacks(sno) == []
    unanswered = build_sno(_claims("h", "a", "x"), [("a", "h", "support", "r1"), ("x", "r1", "attack", "r2")])
    assert structure.unanswered_attacks(unanswered) == [("x", "r1", "r2")]


def test_attack_by_the_hypothesis_side_needs_no_answer():
    # z opposes h (attacks it), c (for h) attacks z: c's attack is the answer, not a flaw
    sno = build_sno(_claims("h", "z", "c"), [("z", "h", "attack"), ("c", "z", "attack")])
    assert structure.claim_sides(sno) == {"h": 1, "z": -1, "c": 1}
    assert structure.unanswered_attacks(sno) == []


def test_claims_about_the_same_thing_that_contradict_each_other_both_ways_are_named(critic):
    # a and b nearly restate each other (cosine 0.99) and no relation joins them: checked, both ways, one call
    sno = build_sno(_claims("h", "a", "b"), [("a", "h", "support"), ("b", "h", "support")])
    near = TableEmbedder({TEXT["a"]: [1.0, 0.1, 0.0], TEXT["b"]: [1.0, 0.0, 0.1], TEXT["h"]: [0.0, 0.0, 1.0]}, dim=3)
    nli = TableNLI({(TEXT["a"], TEXT["b"]): (0.05, 0.05, 0.9), (TEXT["b"], TEXT["a"]): (0.1, 0.1, 0.8)})
    result = _run(critic, sno, nli, near)
    [issue] = [i for i in result.issues if i.code == "contradictory_claims"]
    assert issue.nodes == ("a", "b") and TEXT["a"] in issue.message and TEXT["b"] in issue.message
    assert "0.90 and 0.80" in issue.message                    # both claims quoted, and the numbers
    assert len(nli.calls) == 1 and sorted(nli.calls[0]) == sorted([(TEXT["a"], TEXT["b"]), (TEXT["b"], TEXT["a"])])
    assert result.sub_scores["structure_score"] == pytest.approx(0.8)
    assert result.evidence["contradictory_claims"] == [{"a": "a", "b": "b", "contradiction": [0.9, 0.8]}]


def test_a_one_way_contradiction_is_no_conflict(critic):
    sno = build_sno(_claims("h", "a", "b"), [("a", "h", "support"), ("b", "h", "support")])
    near = TableEmbedder({TEXT["a"]: [1.0, 0.1, 0.0], TEXT["b"]: [1.0, 0.0, 0.1], TEXT["h"]: [0.0, 0.0, 1.0]}, dim=3)
    nli = TableNLI({(TEXT["a"], TEXT["b"]): (0.05, 0.05, 0.9)})       # b -> a reads neutral
    assert not any(i.code == "contradictory_claims" for i in _run(critic, sno, nli, near).issues)


def test_a_premise_is_not_contradicted_by_the_conclusion_it_supports(critic):
    # the verifier's one-way "contradiction" between a reason and its conclusion was reported as a conflict
    sno = build_sno(_claims("h", "a"), [("a", "h", "support")])
    same = TableEmbedder({TEXT["a"]: [1.0, 0.0], TEXT["h"]: [1.0, 0.05]}, dim=2)
    nli = TableNLI({(TEXT["a"], TEXT["h"]): (0.05, 0.05, 0.9), (TEXT["h"], TEXT["a"]): (0.05, 0.05, 0.9)})
    result = _run(critic, sno, nli, same)
    assert not any("contradict" in i.code for i in result.issues) and nli.calls == []
    assert result.sub_scores["structure_score"] == 1.0


def test_broken_nli_degrades_instead_of_failing(critic):
    sno = build_sno(_claims("h", "a", "b"), [("a", "h", "support"), ("b", "h", "support")])
    near = TableEmbedder({TEXT["a"]: [1.0, 0.1, 0.0], TEXT["b"]: [1.0, 0.0, 0.1], TEXT["h"]: [0.0, 0.0, 1.0]}, dim=3)
    result = _run(critic, sno, BrokenBackend(), near)
    assert result.ok and "model weights not found" in result.evidence["nli_error"]
    assert result.confidence == pytest.approx(0.9 * 0.8)


def test_single_claim_has_no_structure_to_judge_and_abstains(critic):
    result = _run(critic, build_sno(_claims("h")))
    assert result.status == "not_applicable" and result.score is None and "single claim" in result.abstention


def test_unfocused_claim(critic):
    claims = _claims("h", "a", "b", "c", "x")
    rels = [("a", "h", "support"), ("b", "h", "support"), ("c", "h", "support"),
            ("x", "a", "support"), ("x", "b", "support"), ("x", "c", "support"), ("x", "h", "support")]
    result = _run(critic, build_sno(claims, rels))
    assert [i.nodes for i in result.issues if i.code == "unfocused_claim"] == [("x",)]


def test_config_changes_the_cache_key():
    assert HeuristicLogicCritic().config_key() == HeuristicLogicCritic().config_key()
    assert HeuristicLogicCritic().config_key() != HeuristicLogicCritic({"penalties": {"circular_reasoning": 0.5}}).config_key()
    assert HeuristicLogicCritic({"penalties": {"circular_reasoning": 0.5}}).settings["penalties"]["unanswered_attack"] == 0.1
