"""Each example SNO shows the profile it was written for, with the real offline backends.

All examples are evaluated once (module fixture) through the default pipeline, with the
other examples as the novelty population, as ``cns evaluate examples/*.yaml`` does.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cns_core.cli.evaluate import load_file
from cns_core.engine.population import population_context
from cns_core.pipeline import CriticPipeline

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
PROFILES = {"grounded", "contradicted", "circular", "novel-ungrounded", "one-sided-loaded", "correlation-as-causation"}


@pytest.fixture(scope="module")
def evaluated():
    snos = [s for path in sorted(EXAMPLES.glob("*.yaml")) for s in load_file(path).snos]
    pipe = CriticPipeline()
    context = population_context(snos)
    return {s.metadata["profile"]: (s, pipe.evaluate(s, context=context)) for s in snos}


def _scores(evaluated, critic):
    """The critic's score per example, where it judged (an abstaining critic has none)."""
    return {profile: ev.results[critic].score for profile, (_, ev) in evaluated.items() if ev.results[critic].ok}


def test_every_example_is_valid_and_sized():
    for path in sorted(EXAMPLES.glob("*.yaml")):
        report = load_file(path)
        assert report.ok, report.problems
        for sno in report.snos:
            assert 5 <= len(sno.claims) <= 25 and sno.evidence
            assert all(e.source for e in sno.evidence)


def test_all_profiles_present_and_all_critics_ran(evaluated):
    assert set(evaluated) == PROFILES
    for _, ev in evaluated.values():
        assert not ev.failed


def test_grounded_example(evaluated):
    sno, ev = evaluated["grounded"]
    grounding = ev.results["grounding"]
    assert grounding.score >= 0.8 and "contradiction" not in grounding.issue_codes
    assert all(c["entailment"] >= 0.5 for c in grounding.evidence["claims"].values())
    assert ev.results["causal"].score >= 0.8 and ev.results["bias"].score >= 0.8
    trust = {p: e.trust_score for p, (_, e) in evaluated.items()}
    assert max(trust, key=trust.get) == "grounded"


def test_contradicted_example(evaluated):
    _, ev = evaluated["contradicted"]
    grounding = ev.results["grounding"]
    contradictions = [i for i in grounding.issues if i.code == "contradiction"]
    assert len(contradictions) >= 3
    claims = grounding.evidence["claims"]
    assert claims["c5"]["contradicted_by"] == "e6" and claims["c5"]["max_contradiction"] >= 0.6
    assert claims["c2"]["contradicted_by"] == "e3"
    assert grounding.score < 0.5                      # more of it contradicted than supported
    assert grounding.score < evaluated["grounded"][1].results["grounding"].score - 0.4


def test_circular_example_names_its_cycles(evaluated):
    _, ev = evaluated["circular"]
    logic = ev.results["logic"]
    messages = [i.message for i in logic.issues if i.code == "circular_reasoning"]
    assert any("c1 -> c3 -> c2 -> c1" in m for m in messages)
    assert any("h -> c5 -> c4 -> c1 -> h" in m for m in messages)
    assert logic.score < 0.4 and logic.score == min(_scores(evaluated, "logic").values())


def test_novel_ungrounded_example(evaluated):
    _, ev = evaluated["novel-ungrounded"]
    novelty, grounding = ev.results["novelty"].score, ev.results["grounding"].score
    assert novelty == max(_scores(evaluated, "novelty").values())
    assert grounding < 0.2 and novelty - grounding > 0.6
    assert "unsupported_claim" in ev.results["grounding"].issue_codes


def test_one_sided_loaded_example(evaluated):
    _, ev = evaluated["one-sided-loaded"]
    bias = ev.results["bias"]
    assert {"one_sided", "loaded_language", "absolutist_language", "low_source_diversity"} <= set(bias.issue_codes)
    assert bias.score < 0.3 and bias.score == min(_scores(evaluated, "bias").values())


def test_correlation_example(evaluated):
    _, ev = evaluated["correlation-as-causation"]
    causal = ev.results["causal"]
    assert causal.score < 0.4 and causal.score == min(_scores(evaluated, "causal").values())
    assert "correlational_support" in causal.evidence["claims"]["h"]["flaws"]
    # the correlations themselves are sourced: the flaw is the causal leap, not the evidence. Held relative to the
    # examples whose evidence does not back them, not to a fixed cut (0.603 with stage 8, 0.592 with stage 11)
    grounding = ev.results["grounding"].score
    unbacked = _scores(evaluated, "grounding")
    assert grounding > max(unbacked[p] for p in ("contradicted", "one-sided-loaded", "novel-ungrounded")) + 0.15
    assert grounding - causal.score > 0.3


def test_every_example_button_says_what_it_shows_in_words_not_its_tag():
    """Issue 70 item 6: the example buttons' tooltips showed internal tags ("one-sided-loaded")."""
    from cns_core.views.ui_state import example_hint, load_examples

    hints = {label: example_hint(sno) for label, sno in load_examples().items()}
    assert len(hints) == len(PROFILES) and all(hints.values()), hints
    assert not any(tag in hint for hint in hints.values() for tag in PROFILES if "-" in tag)
    assert all(hint.endswith(".") and " " in hint for hint in hints.values())        # a sentence, not a handle
