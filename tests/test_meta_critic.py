"""The Meta-Critic over the REAL critic pipeline: the spec's section 8 scenarios and failures."""

from __future__ import annotations

import dataclasses
import importlib
import re
import threading
from pathlib import Path

import pytest

from cns_core.config import ConfigError, load_config
from cns_core.critics import CRITIC_CLASSES, default_critics
from cns_core.critics.base import CRITIC_NAMES, CriticResult
from cns_core.meta import PRIORITY_ORDER, MetaCritic, expected_gain, quality_band
from cns_core.meta.gain import priority_of
from cns_core.pipeline import CriticPipeline
from cns_core.scoring import load_profiles, normalise, weigh
from cns_core.sno import SNO, load_snos

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def example(name: str) -> SNO:
    return load_snos(EXAMPLES / f"{name}.yaml")[0]


def sno(ident: str, claims: list[tuple[str, str]], supports: list[tuple[str, str]],
        evidence: list[dict] = ()) -> SNO:
    return SNO(id=ident, hypothesis=claims[0][0],
               claims=[{"id": cid, "text": text} for cid, text in claims],
               relations=[{"source": s, "target": t, "kind": "support"} for s, t in supports],
               evidence=list(evidence))


# Spec 8.1 "detects conflicts": logically sound (modus ponens), no evidence at all.
MODUS_PONENS = sno("modus-ponens",
                   [("h", "Therefore the street is wet."), ("c1", "If it rains, the street gets wet."),
                    ("c2", "It is raining.")],
                   [("c1", "h"), ("c2", "h")])

# Spec 8.1 "improvement_plan": a claim with one weak piece of evidence (validity 0.4).
NEEDS_WORK = sno("walking-mood",
                 [("h", "Walking every day improves mood in older adults."),
                  ("c1", "Older adults who walk daily report feeling happier.")],
                 [("c1", "h")],
                 [{"id": "e1", "text": "A small survey found that some walkers said they felt happier.",
                   "source": "Local newsletter", "validity": 0.4}])


@pytest.fixture(scope="module")
def pipeline() -> CriticPipeline:
    return CriticPipeline()


@pytest.fixture(scope="module")
def meta(pipeline) -> MetaCritic:
    return MetaCritic(pipeline=pipeline)


@pytest.fixture(scope="module")
def grounded() -> SNO:
    return example("grounded_exercise_bp")


# ----- spec 8.1 -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def examples_population():
    """The novelty population the dashboard uses: the bundled examples (without it novelty abstains)."""
    from cns_core.engine.population import Population

    return Population.examples().context()


def test_evaluate_aggregates_all_five_critics(meta, grounded, examples_population):
    ev = meta.evaluate(grounded, critic_context=examples_population)
    assert set(ev.critic_scores) == set(CRITIC_NAMES) and ev.failed == {} and ev.not_applicable == {}
    default = load_profiles()["default"]
    assert ev.score == pytest.approx(weigh(ev.results, default).trust_score, abs=5e-4)
    assert 0.0 <= ev.score <= 1.0 and ev.context == "default"
    assert ev.band == quality_band(ev.score, meta.config)
    lo, hi = ev.confidence_band
    assert lo <= ev.score <= hi
    contributions = {n: default[n] * ev.critic_scores[n] for n in CRITIC_NAMES}
    assert ev.dominant_critic == max(contributions, key=contributions.get)
    assert ev.critic_scores[ev.weakest_dimension] == min(ev.critic_scores.values())
    assert ev.sno_hash == grounded.content_hash()


def test_an_argument_citing_nothing_is_not_scored_on_grounding_and_no_conflict_is_invented(meta):
    """No evidence is nothing to read: grounding abstains (issue 69 item 3) instead of a 0 that sank the Trust
    Score and made a "coherent but ungrounded" conflict out of an abstention."""
    ev = meta.evaluate(MODUS_PONENS)
    assert "grounding" not in ev.critic_scores and ev.not_applicable["grounding"] == "no evidence to read"
    assert "no_evidence" in [i.code for i in ev.issues["grounding"]]
    assert not any(c.involves("grounding", "logic") for c in ev.conflicts)
    assert ev.weakest_dimension != "grounding"


def test_suggestions_mention_evidence(meta):
    ev = meta.evaluate(MODUS_PONENS)
    [first] = [s for s in ev.suggestions if s.advice == meta.config.suggestions["no_evidence"]]
    assert first.nodes == ("h", "c1", "c2") and "h, c1, c2" in first.text
    assert first.because == ("grounding abstains: no evidence to read",) and first.score is None
    assert first.standing == "not scored yet: acting on this lets it judge"
    assert not any(s.text.startswith("Address:") for s in ev.suggestions)
    assert len(ev.suggestions) == len({s.text for s in ev.suggestions})


@pytest.mark.parametrize("name", ["loaded_homework", "circular_forecasts", "novel_fungal_signals",
                                  "correlation_coffee", "contradicted_vitamin_c"])
def test_real_suggestions_name_every_place_in_the_plans_order(meta, name):
    ev = meta.evaluate(example(name))
    advised = {s.critic for s in ev.suggestions}
    named = {(s.critic, n) for s in ev.suggestions for n in s.nodes}
    for critic in advised:                       # every place a critic flagged is named by a suggestion
        for issue in ev.results[critic].issues:
            assert all((critic, n) in named for n in issue.nodes), (critic, issue)
    keys = [(PRIORITY_ORDER[priority_of(ev.results[s.critic], s.cost, meta.config)], -s.cost)
            for s in ev.suggestions]
    assert keys == sorted(keys)                  # priority under the weights, then cost: the plan's order
    in_plan = [p.critic for p in ev.plan]
    assert [c for c in dict.fromkeys(s.critic for s in ev.suggestions) if c in in_plan] == [
        c for c in in_plan if c in {s.critic for s in ev.suggestions}]
    for s in ev.suggestions:
        assert not s.text.startswith("Address:") and s.where in s.text
    plan = meta.improvement_plan(example(name))
    for step in plan:
        unnamed = [n for n in step.nodes if not re.search(rf"\b{re.escape(n)}\b", step.action)]
        assert not unnamed or f"and {len(unnamed)} more" in step.action      # a long list names some, counts the rest
        flagged = {n for i in ev.results[step.critic].issues for n in i.nodes}
        assert set(step.nodes) == flagged


def test_unsupported_claims_are_listed_lowest_p_supported_first(meta):
    ev = meta.evaluate(example("loaded_homework"))
    grounding = ev.results["grounding"]
    unsupported = [i.nodes[0] for i in grounding.issues if i.code == "unsupported_claim"]
    by_p = sorted(unsupported, key=lambda c: (grounding.evidence["claims"][c]["p_supported"], unsupported.index(c)))
    [s] = [s for s in ev.suggestions if s.codes == ("unsupported_claim",)]
    assert s is ev.suggestions[0]                # grounding costs the most Trust Score here
    assert s.nodes == tuple(by_p) and len(by_p) >= 2      # supported only from p(supported) 0.5 on
    assert all(grounding.evidence["claims"][c]["p_supported"] < 0.5 for c in by_p)
    assert s.text.index(f"claim {by_p[0]} ") < s.text.index(f"claim {by_p[1]} ")


def test_scientific_context_weights_grounding_more(meta, pipeline, grounded):
    default = meta.evaluate(grounded, "default")
    runs_before = {n: s.count for n, s in pipeline.statistics().items()}
    scientific = meta.evaluate(grounded, "scientific")
    assert {n: s.count for n, s in pipeline.statistics().items()} == runs_before   # no critic re-ran
    assert scientific.critic_scores == default.critic_scores
    assert scientific.weights["grounding"] > default.weights["grounding"]
    assert scientific.weighted.contributions["grounding"] > default.weighted.contributions["grounding"]
    # Without evidence grounding abstains: no profile's grounding weight reaches the score.
    assert "grounding" not in meta.evaluate(MODUS_PONENS, "scientific").weighted.contributions


def test_every_context_is_a_profile_and_unknown_ones_are_refused(meta, grounded, examples_population):
    profiles = load_profiles()
    assert set(meta.contexts) == {"default", "scientific", "philosophical", "empirical", "analytical"}
    for ctx in meta.contexts:
        ev = meta.evaluate(grounded, ctx, critic_context=examples_population)
        assert ev.context == ctx
        assert ev.weights == pytest.approx(normalise(profiles[ctx]))
    with pytest.raises(ValueError, match="analytical"):
        meta.evaluate(grounded, "poetic")
    custom = meta.evaluate(grounded, {"logic": 1.0})
    assert custom.context == "custom" and custom.score == pytest.approx(custom.critic_scores["logic"], abs=5e-4)


def test_quality_gate_passes_a_strong_sno_and_fails_a_poor_one(meta, grounded):
    assert meta.passes_quality_gate(grounded)
    assert not meta.passes_quality_gate(MODUS_PONENS)
    decision = meta.quality_gate(MODUS_PONENS)
    assert not decision.passed and decision.threshold == 0.7 and "below" in decision.reason
    assert meta.passes_quality_gate(grounded, threshold=0.85) == (meta.evaluate(grounded).score >= 0.85)
    with pytest.raises(ValueError, match="where a band starts"):
        meta.passes_quality_gate(grounded, threshold=0.99)
    with pytest.raises(ValueError, match="threshold"):
        meta.passes_quality_gate(grounded, threshold=1.5)


def test_improvement_plan_ordered_by_priority_with_measured_impact(meta):
    plan = meta.improvement_plan(NEEDS_WORK)
    assert plan, "a one-claim SNO on weak evidence must leave something to improve"
    keys = [(PRIORITY_ORDER[s.priority], -s.expected_impact) for s in plan]
    assert keys == sorted(keys)
    results = meta.evaluate(NEEDS_WORK).results
    default = load_profiles()["default"]
    for step in plan:
        assert step.current_score < step.target_score
        assert step.expected_impact == pytest.approx(
            expected_gain(results, default, step.critic, step.target_score), abs=1e-4)
        assert step.action


@pytest.mark.parametrize("name,weakest", [
    ("contradicted_vitamin_c", ("grounding",)), ("circular_forecasts", ("logic",)),
    ("correlation_coffee", ("causal",)), ("novel_fungal_signals", ("grounding",)),
    # absolutist claims over anecdotes: the NLI model finds them unsupported as well as loaded
    ("loaded_homework", ("bias", "grounding")),
])
def test_examples_name_their_weakest_dimension(meta, name, weakest):
    ev = meta.evaluate(example(name))
    assert ev.weakest_dimension in weakest
    assert any(c.lower == ev.weakest_dimension for c in ev.conflicts)
    if name == "loaded_homework":
        assert ev.results["bias"].score < 0.2


def test_every_issue_code_the_critics_emit_has_its_own_advice(meta):
    codes: set[str] = set()
    for cls in CRITIC_CLASSES.values():
        module = importlib.import_module(cls.__module__)
        codes |= set(re.findall(r'Issue\(\s*"([a-z_]+)"', Path(module.__file__).read_text()))
        codes |= set(getattr(module, "ISSUE_CODES", ()) or getattr(module, "_MESSAGES", {}))
    assert len(codes) >= 15
    assert sorted(codes - set(meta.config.suggestions)) == []


# ----- cache and statistics -------------------------------------------------------------------

def test_result_cache_keyed_by_content_hash_and_context_with_ttl(pipeline, grounded):
    now = [0.0]
    meta = MetaCritic(pipeline=pipeline, clock=lambda: now[0])
    first = meta.evaluate(grounded)
    assert meta.evaluate(grounded) is first
    retitled = grounded.model_copy(update={"title": "Another title", "id": "other-id"})
    assert meta.evaluate(retitled) is first              # same content hash
    assert meta.evaluate(grounded, "scientific") is not first
    now[0] = meta.config.cache_ttl_s + 1.0
    fresh = meta.evaluate(grounded)
    assert fresh is not first and fresh.score == first.score
    stats = meta.statistics()
    assert (stats["evaluations"], stats["cache_hits"]) == (3, 2)
    uncached = MetaCritic(pipeline=pipeline, config=dataclasses.replace(meta.config, cache_ttl_s=0.0))
    assert uncached.evaluate(grounded) is not uncached.evaluate(grounded)
    assert set(stats["critics"]) == set(CRITIC_NAMES)
    assert all(s.count + s.cache_hits >= 1 for s in stats["critics"].values())


def test_bad_config_handed_in_is_refused_with_its_key(pipeline):
    with pytest.raises(ConfigError, match="conflict_threshold"):
        MetaCritic(pipeline=pipeline, config=load_config("meta") | {"conflict_threshold": -0.1})


# ----- failing critics ------------------------------------------------------------------------

class ExplodingCritic:
    """A causal critic whose model blows up."""

    name = "causal"
    requires = frozenset()

    def config_key(self) -> str:
        return "exploding"

    def evaluate(self, sno, context):
        raise RuntimeError("causal model exploded")


class StuckCritic:
    """A bias critic that hangs until released (the test releases it afterwards)."""

    name = "bias"
    requires = frozenset()

    def __init__(self):
        self.release = threading.Event()

    def config_key(self) -> str:
        return "stuck"

    def evaluate(self, sno, context):
        self.release.wait(60)
        return CriticResult(critic="bias", score=1.0, confidence=1.0, explanation="too late")


def _with(replacement) -> list:
    return [replacement if c.name == replacement.name else c for c in default_critics()]


def test_a_raising_critic_is_reported_and_the_rest_aggregates(grounded):
    meta = MetaCritic(pipeline=CriticPipeline(_with(ExplodingCritic())))
    ev = meta.evaluate(grounded)
    assert set(ev.failed) == {"causal"} and "causal model exploded" in ev.failed["causal"]
    assert set(ev.critic_scores) == {"grounding", "logic", "bias"}
    assert set(ev.not_applicable) == {"novelty"}          # no population: nothing to be novel against, not a failure
    assert ev.weighted.left_out == ("causal",) and not ev.complete
    assert ev.weights["causal"] == 0.0
    assert ev.score == pytest.approx(weigh(ev.results, load_profiles()["default"]).trust_score, abs=5e-4)
    assert ev.confidence_band[1] - ev.confidence_band[0] >= 0.10 - 1e-6   # causal's 0.10 is unknown
    assert not any(c.involves("causal", x) for c in ev.conflicts for x in CRITIC_NAMES)
    assert meta.statistics()["failures"] == {"causal": 1}
    # an incomplete score never passes the gate, however little weight the failed critic carried
    decision = meta.quality_gate(grounded)
    assert not decision.passed and decision.score >= 0.6
    assert "incomplete: causal failed" in decision.reason
    assert ev.to_dict()["complete"] is False and ev.to_dict()["incomplete_critics"] == ["causal"]


def test_a_timed_out_critic_is_reported_and_the_rest_aggregates():
    stuck = StuckCritic()
    meta = MetaCritic(pipeline=CriticPipeline(_with(stuck), timeout_s=3.0))
    try:
        ev = meta.evaluate(MODUS_PONENS)
    finally:
        stuck.release.set()
    assert set(ev.failed) == {"bias"} and "timed out" in ev.failed["bias"]
    assert set(ev.critic_scores) == {"logic"}
    assert set(ev.not_applicable) == {"grounding", "novelty", "causal"} and ev.weighted.left_out == ("bias",)
    assert ev.to_dict()["failed"] == {"bias": ev.failed["bias"]}
    assert ev.score == pytest.approx(weigh(ev.results, load_profiles()["default"]).trust_score, abs=5e-4)


def test_gate_refuses_to_vouch_when_heavy_critics_failed(grounded):
    class BrokenGrounding(ExplodingCritic):
        name = "grounding"

    meta = MetaCritic(pipeline=CriticPipeline(_with(BrokenGrounding())))
    decision = meta.quality_gate(grounded)
    assert not decision.passed and "grounding" in decision.reason and not decision.complete
