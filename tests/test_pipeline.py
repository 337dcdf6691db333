"""CriticPipeline: caching, pure re-weighting, failures and timeouts, profiles, statistics."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from critic_doubles import TableEmbedder, TableNLI, build_sno

from cns_core.critics import CRITIC_NAMES, default_critics
from cns_core.critics.base import CriticContext, CriticResult
from cns_core.pipeline import CriticPipeline, Evaluation, resolve_weights
from cns_core.scoring import blend, load_profiles, weigh

SCORES = {"grounding": 0.8, "logic": 0.6, "novelty": 0.4, "causal": 1.0, "bias": 0.2}


class CountingCritic:
    """A critic with a fixed score that counts how often it really runs."""

    def __init__(self, name, score, requires=frozenset(), key="v1"):
        self.name, self.score, self.requires, self.key = name, score, frozenset(requires), key
        self.calls = 0

    def config_key(self):
        return f"{self.name}/{self.key}"

    def evaluate(self, sno, context):
        self.calls += 1
        return CriticResult(critic=self.name, score=self.score, confidence=1.0, explanation="fixed")


class RaisingCritic(CountingCritic):
    def evaluate(self, sno, context):
        self.calls += 1
        raise RuntimeError("NLI model crashed")


class BlockingCritic(CountingCritic):
    """Blocks until released: stands for a critic that exceeds its time limit."""

    def __init__(self, name):
        super().__init__(name, 0.5)
        self.release = threading.Event()

    def evaluate(self, sno, context):
        self.calls += 1
        self.release.wait(30)
        return super().evaluate(sno, context)


def _critics(**replace):
    return [replace.get(n) or CountingCritic(n, s, requires={"population"} if n == "novelty" else ())
            for n, s in SCORES.items()]


def _sno(text="Claim h."):
    return build_sno({"h": text, "a": "Premise a."}, [("a", "h", "support")], [("e1", "Evidence.")])


def test_cache_hit_runs_no_critic_again():
    critics = _critics()
    pipe = CriticPipeline(critics)
    first = pipe.evaluate(_sno())
    second = pipe.evaluate(_sno())            # an equal SNO built again: same content hash
    assert [c.calls for c in critics] == [1] * 5
    assert second.results == first.results
    stats = pipe.statistics()
    assert stats["grounding"].count == 1 and stats["grounding"].cache_hits == 1
    pipe.evaluate(_sno("Another claim."))
    assert [c.calls for c in critics] == [2] * 5


def test_cache_key_follows_config_and_population():
    critics = _critics()
    pipe = CriticPipeline(critics)
    pipe.run_critics(_sno())
    critics[0].key = "v2"                                   # grounding's settings changed
    pipe.run_critics(_sno(), CriticContext(population=np.eye(3)))   # a population appeared
    assert [c.calls for c in critics] == [2, 1, 2, 1, 1]   # only grounding and novelty re-ran
    pipe.run_critics(_sno(), CriticContext(population=np.eye(3)))
    assert [c.calls for c in critics] == [2, 1, 2, 1, 1]


def test_lru_evicts_the_oldest():
    critic = CountingCritic("logic", 0.5)
    pipe = CriticPipeline([critic], cache_size=2)
    for text in ("one.", "two.", "three.", "three.", "one."):
        pipe.run_critics(_sno(text))
    assert critic.calls == 4 and pipe.cache_len() == 2


def test_cache_size_counts_snos_not_results():
    critics = _critics()
    pipe = CriticPipeline(critics, cache_size=3)
    snos = [_sno(f"claim {i}.") for i in range(3)]
    for _ in range(2):
        for sno in snos:                # 3 SNOs x 5 critics = 15 results all fit
            pipe.run_critics(sno)
    assert [c.calls for c in critics] == [3] * 5 and pipe.cache_len() == 3


def test_reweighting_is_pure_and_runs_nothing():
    critics = _critics()
    pipe = CriticPipeline(critics)
    ev = pipe.evaluate(_sno())
    assert ev.trust_score == pytest.approx(0.4 * 0.8 + 0.3 * 0.6 + 0.15 * 0.4 + 0.1 * 1.0 + 0.05 * 0.2)
    again = ev.reweighted({"grounding": 1.0, "bias": 1.0})
    assert again.trust_score == pytest.approx((0.8 + 0.2) / 2) and again.profile is None
    assert ev.trust_score == pytest.approx(0.4 * 0.8 + 0.3 * 0.6 + 0.15 * 0.4 + 0.1 * 1.0 + 0.05 * 0.2)
    explored = pipe.evaluate(_sno(), "exploration")
    assert explored.profile == "exploration"
    assert explored.trust_score == pytest.approx(0.1 * 0.8 + 0.1 * 0.6 + 0.8 * 0.4)
    assert [c.calls for c in critics] == [1] * 5


@pytest.mark.parametrize("profile", sorted(load_profiles()))
def test_every_profile_is_the_weight_normalised_sum(profile):
    pipe = CriticPipeline(_critics())
    ev = pipe.evaluate(_sno(), profile)
    weights = load_profiles()[profile]
    expected = sum(weights[n] * SCORES[n] for n in SCORES) / sum(weights.values())
    assert ev.trust_score == pytest.approx(expected) and ev.profile == profile


def test_profiles_and_blend():
    profiles = load_profiles()
    assert {"default", "exploration", "verification", "scientific", "philosophical", "empirical",
            "analytical"} <= set(profiles)
    pipe = CriticPipeline(_critics())
    ev = pipe.evaluate(_sno())
    a, b = profiles["exploration"], profiles["verification"]
    for t in (0.0, 0.25, 1.0):
        mixed = ev.reweighted(blend(a, b, t))
        expected = sum(((1 - t) * a[n] + t * b[n]) * SCORES[n] for n in SCORES)
        assert mixed.trust_score == pytest.approx(expected)
    assert ev.reweighted(blend(a, b, 0.0)).trust_score == pytest.approx(ev.reweighted("exploration").trust_score)


def test_raising_critic_is_left_out_and_flagged():
    broken = RaisingCritic("novelty", 0.0)
    pipe = CriticPipeline(_critics(novelty=broken))
    ev = pipe.evaluate(_sno())
    failed = ev.results["novelty"]
    assert not failed.ok and "RuntimeError: NLI model crashed" in failed.error
    assert ev.score.left_out == ("novelty",) and ev.failed == ("novelty",)
    rest = {n: w for n, w in load_profiles()["default"].items() if n != "novelty"}
    assert ev.trust_score == pytest.approx(sum(w * SCORES[n] for n, w in rest.items()) / sum(rest.values()))
    assert ev.score.weights["novelty"] == 0.0
    assert all(ev.results[n].ok for n in SCORES if n != "novelty")
    pipe.evaluate(_sno())                       # failures are not cached: it is tried again
    assert broken.calls == 2 and pipe.statistics()["novelty"].failures == 2


def test_slow_critic_times_out_and_the_rest_stand():
    slow = BlockingCritic("causal")
    pipe = CriticPipeline(_critics(causal=slow), timeout_s=0.2)
    try:
        ev = pipe.evaluate(_sno())
    finally:
        slow.release.set()
    assert not ev.results["causal"].ok and "timed out after 0.2 s" in ev.results["causal"].error
    assert ev.score.left_out == ("causal",)
    assert ev.results["grounding"].score == 0.8


def test_default_time_limit_grows_with_the_sno():
    from cns_core.pipeline import TimeLimit

    limit = TimeLimit(base_s=30.0, per_claim_s=0.03, per_evidence_s=0.01, max_s=200.0)
    small = build_sno({"h": "A.", "c": "B."}, [("c", "h", "support")], [("e1", "E.")])
    assert limit.for_sno(small) == pytest.approx(30.0 + 2 * 0.03 + 0.01)
    big = build_sno({f"c{i}": f"Claim {i}." for i in range(5000)}, hypothesis="c0")
    assert limit.for_sno(big) == 180.0                          # 30 + 5000 x 0.03
    assert TimeLimit(max_s=60.0).for_sno(big) == 60.0            # capped
    # a pipeline without a fixed timeout_s sizes it per SNO; a given timeout_s is used as is
    assert CriticPipeline(_critics(), time_limit=limit).limit_for(big) == 180.0
    assert CriticPipeline(_critics(), timeout_s=5.0).limit_for(big) == 5.0


def test_sized_time_limit_is_the_one_a_slow_critic_is_stopped_at():
    from cns_core.pipeline import TimeLimit

    slow = BlockingCritic("causal")
    pipe = CriticPipeline(_critics(causal=slow), time_limit=TimeLimit(base_s=0.2, per_claim_s=0.0,
                                                                       per_evidence_s=0.0))
    try:
        ev = pipe.evaluate(_sno())
    finally:
        slow.release.set()
    assert "timed out after 0.2 s" in ev.results["causal"].error


@pytest.mark.parametrize("section, message", [
    ({"time_limit": {"per_claim_s": "fast"}}, "pipeline.yaml: time_limit.per_claim_s: expected a number"),
    ({"time_limit": {"per_claim_s": -1}}, "pipeline.yaml: time_limit.per_claim_s: must be >= 0"),
    ({"time_limit": {"base_s": 0}}, "time_limit.base_s and time_limit.max_s: must be positive"),
    ({"time_limit": {"per_relation_s": 1}}, "time_limit: unknown field(s) ['per_relation_s']"),
    ({"time_limit": [1, 2]}, "pipeline.yaml: time_limit: expected a mapping"),
])
def test_bad_time_limit_config_names_the_field(section, message):
    from cns_core.config import ConfigError
    from cns_core.pipeline import TimeLimit

    with pytest.raises(ConfigError) as err:
        TimeLimit.from_config(section)
    assert message in str(err.value)


def test_the_shipped_time_limit_fits_the_large_benchmark_sno():
    from cns_core.pipeline import TimeLimit

    limit = TimeLimit.from_config()
    big = build_sno({f"c{i}": f"Claim {i}." for i in range(5000)}, hypothesis="c0",
                    evidence=[(f"e{i}", f"Evidence {i}.") for i in range(5000)])
    assert limit.for_sno(big) >= 150.0 and limit.for_sno(_sno()) <= 31.0


def test_critics_run_in_parallel_threads():
    barrier = threading.Barrier(5, timeout=10)

    class Meeting(CountingCritic):
        def evaluate(self, sno, context):
            barrier.wait()          # only returns when all five critics are running at once
            return super().evaluate(sno, context)

    ev = CriticPipeline([Meeting(n, s) for n, s in SCORES.items()]).evaluate(_sno())
    assert all(r.ok for r in ev.results.values())


@pytest.mark.parametrize("bad", [1.5, -0.1, float("nan")])
def test_out_of_range_score_is_a_failure(bad):
    ev = CriticPipeline(_critics(bias=CountingCritic("bias", bad))).evaluate(_sno())
    assert not ev.results["bias"].ok and "outside [0, 1]" in ev.results["bias"].error


def test_statistics():
    critics = _critics(bias=RaisingCritic("bias", 0.0))
    pipe = CriticPipeline(critics)
    pipe.evaluate(_sno("one."))
    pipe.evaluate(_sno("two."))
    stats = pipe.statistics()
    assert stats["grounding"].count == 2 and stats["grounding"].mean_score == pytest.approx(0.8)
    assert stats["grounding"].mean_latency_s >= 0.0 and stats["grounding"].failures == 0
    assert stats["bias"].failures == 2 and stats["bias"].mean_score == 0.0


def test_weights_are_checked():
    with pytest.raises(ValueError, match="unknown weight profile 'fast'"):
        resolve_weights("fast")
    with pytest.raises(ValueError, match="grounding"):
        resolve_weights({"grounding": -1})
    assert resolve_weights({"logic": 2}) == ({"logic": 2.0}, None)


def test_default_critics_through_the_pipeline():
    critics = default_critics()
    assert [c.name for c in critics] == list(CRITIC_NAMES)
    nli = TableNLI({("Evidence.", "Claim h."): (0.9, 0.05, 0.05)})
    pipe = CriticPipeline(nli=nli, embedder=TableEmbedder())
    ev = pipe.evaluate(_sno())
    assert isinstance(ev, Evaluation) and ev.sno_hash == _sno().content_hash()
    assert list(ev.results) == list(CRITIC_NAMES) and all(r.ok or not r.applicable for r in ev.results.values())
    assert ev.complete and set(ev.not_applicable) <= {"novelty", "causal"}
    assert ev.results["grounding"].evidence["claims"]["h"]["entailment"] == pytest.approx(0.9)
    assert ev.trust_score == pytest.approx(weigh(ev.results, load_profiles()["default"]).trust_score)
    # another NLI backend means other grounding and logic results, but the same bias result
    pipe.evaluate(_sno(), context=CriticContext(nli=TableNLI()))
    stats = pipe.statistics()
    assert stats["grounding"].count == 2 and stats["logic"].count == 2 and stats["bias"].count == 1
