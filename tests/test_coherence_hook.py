"""The coherence hook end to end: stages 0-9, budget degradation, fail-safes, quarantine, log, SNOs.

Real parts: the bundled MiniLM embedder and the offline lexical NLI backend. Slow or broken
models are small wrappers around the real backend (a controllable clock stands in for time
where the latency budget is exercised, so no assertion depends on the machine's speed).
"""

from __future__ import annotations

import json
import threading
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from cns_core.coherence import CoherenceHook, CoherenceSettings, FileQuarantine, MatrixRetriever, MemoryAPI
from cns_core.coherence.log import LOG_FIELDS, CoherenceLog, read_log
from cns_core.coherence.nli import ModelPass
from cns_core.coherence.retrieval import FunctionRetriever
from cns_core.coherence.schemas import EvidenceNode
from cns_core.models import ModelUnavailableError, get_embedder, get_nli_backend
from cns_core.models.textcues import stem
from cns_core.sno import load_snos

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

MEMORY = {
    "m1": "The north gate is locked.",
    "m2": "The project budget is 40 thousand dollars.",
    "m3": "The audit happened before the merger.",
    "m4": "Alice works in the Lisbon office.",
    "m5": "The coffee machine is broken.",
}


@pytest.fixture(scope="module")
def embedder():
    return get_embedder()


@pytest.fixture(scope="module")
def lexical():
    return get_nli_backend("lexical")


@pytest.fixture(scope="module")
def memory_api(embedder):
    matrix = MatrixRetriever.from_texts(list(MEMORY), list(MEMORY.values()), embedder, source="semantic")
    return MemoryAPI(semantic=(matrix,))


def _settings(**latency):
    s = CoherenceSettings.from_config()
    quarantine = {**s.quarantine, "recheck_every_ticks": 0}
    return replace(s, latency=replace(s.latency, **latency), quarantine=quarantine) if latency else \
        replace(s, quarantine=quarantine)


def _hook(tmp_path, mem_api, **kwargs):
    kwargs.setdefault("model", False)
    kwargs.setdefault("settings", _settings())
    return CoherenceHook(kwargs.pop("settings"), mem_api=mem_api, log=tmp_path / "coherence.jsonl",
                         quarantine=FileQuarantine(tmp_path / "quarantine.jsonl"),
                         calibration_path=tmp_path / "cal.json", **kwargs)


class Clock:
    """A clock the test moves by hand."""

    def __init__(self):
        self.t = 1000.0
        self.lock = threading.Lock()

    def __call__(self) -> float:
        return self.t

    def advance(self, ms: float) -> None:
        with self.lock:
            self.t += ms / 1000.0


class ClockedBackend:
    """The real lexical backend, charged ``ms`` of (fake) time per call; counts calls and pairs."""

    name = "clocked"

    def __init__(self, inner, clock: Clock, ms: float):
        self.inner, self.clock, self.ms = inner, clock, ms
        self.calls: list[int] = []

    def predict(self, pairs):
        self.clock.advance(self.ms)
        self.calls.append(len(pairs))
        return self.inner.predict(pairs)


class RecordingRetriever:
    """The memory matrix, recording the k it is asked for (and optionally charging time)."""

    source = "semantic"

    def __init__(self, inner, clock: Clock | None = None, ms: float = 0.0):
        self.inner, self.clock, self.ms = inner, clock, ms
        self.ks: list[int] = []

    def retrieve(self, texts, vectors, k):
        self.ks.append(k)
        if self.clock is not None:
            self.clock.advance(self.ms)
        return self.inner.retrieve(texts, vectors, k)


# ----- the whole chain ----------------------------------------------------------

def test_chain_tags_follow_the_spec(tmp_path, memory_api):
    hook = _hook(tmp_path, memory_api)
    result = hook.check_chain("c1", "The north gate is not locked. The project budget is 90 thousand dollars. "
                                    "Alice works in the Lisbon office. Penguins live in Antarctica.",
                              importance=0.9)
    assert result.error is None and not result.blocked  # important chain: tagged, not blocked
    gate, budget, alice, penguins = result.prop_tags
    assert gate.triplet.subj == "north gate" and gate.triplet.pred == "is locked"
    assert gate.contradiction_types == ("negation",)
    assert gate.contradiction_evidence[0][0] == "m1" and gate.contradiction_evidence[0][2] == "negation"
    assert gate.contradict > 0.85 and gate.entail < 0.01
    assert budget.contradiction_types == ("numeric",) and budget.contradiction_evidence[0][0] == "m2"
    assert alice.contradict < 0.7 and alice.support_evidence[0][0] == "m4" and alice.entail > 0.7
    assert penguins.contradict < 0.01 and penguins.contradiction_types == ()
    for tag in result.prop_tags:
        assert 0 <= tag.entail <= 1 and 0 <= tag.contradict <= 1
        assert tag.neutral == pytest.approx(1 - max(tag.entail, tag.contradict))
        assert 0 <= tag.uncertainty <= 1 and tag.confidence == pytest.approx(1 - tag.uncertainty)
    m = result.chain_metrics
    assert m.n_props == 4
    assert m.coherence_chain == pytest.approx(sum(t.entail - t.contradict for t in result.prop_tags) / 4)
    assert m.contradiction_density == pytest.approx(0.5)
    assert result.degraded == ()  # heuristics only by choice (model=False) is not a degradation


def test_intra_chain_contradiction_and_context(tmp_path, memory_api):
    hook = _hook(tmp_path, memory_api)
    result = hook.check_chain("c2", "The lab door is open. The lab door is closed.",
                              narrative_ctx=["The meeting moved to Friday"], importance=0.9)
    first, second = result.prop_tags
    assert first.contradict < 0.01
    assert second.contradiction_evidence[0][0] == "c2:0" and "antonym" in second.contradiction_types


def test_goal_violation_and_self_trait_flag_drift(tmp_path, memory_api, embedder):
    hook = _hook(tmp_path, memory_api)
    facets = {"honesty": embedder.encode(["I am honest and tell the truth"])[0],
              "thrift": embedder.encode(["I save money"])[0]}
    result = hook.check_chain(
        "c3", "We share user data with advertisers. I do not tell the truth to customers.", importance=0.9,
        goals_ctx=[("g-privacy", "We never share user data with advertisers")], self_facets=facets,
        mem_api=MemoryAPI(semantic=memory_api.semantic, self_=FunctionRetriever(
            lambda p, k: [("s1", "I tell the truth to customers")], source="self")))
    goal, trait = result.prop_tags
    assert "goal_violation" in goal.contradiction_types and goal.drift_facets == ("g-privacy",)
    assert "self_trait" in trait.contradiction_types and trait.drift_facets == ("honesty",)
    m = result.chain_metrics
    assert m.drift_risk == pytest.approx(np.mean([goal.contradict, trait.contradict]) * np.log(3))
    assert m.reward_hint < 0


def test_a_self_statement_found_by_both_searches_counts_as_self_evidence(tmp_path, memory_api):
    """The engram store's semantic search also finds the statements its self search finds, at the same
    similarity; the self copy decides the contradiction's type (self_trait, a drift facet)."""
    statement = {"id": "s1", "text": "I always cite my sources.", "similarity": 0.9, "facet": "sources"}
    both = MemoryAPI(semantic=(FunctionRetriever(lambda p, k: [statement], source="semantic"),),
                     self_=FunctionRetriever(lambda p, k: [statement], source="self"))
    only_semantic = MemoryAPI(semantic=both.semantic)
    hook = _hook(tmp_path, memory_api)
    tag = hook.check_chain("c-self", "I never cite my sources.", importance=0.9, mem_api=both).prop_tags[0]
    assert "self_trait" in tag.contradiction_types and tag.drift_facets == ("sources",)
    tag = hook.check_chain("c-sem", "I never cite my sources.", importance=0.9, mem_api=only_semantic).prop_tags[0]
    assert tag.contradict >= 0.7 and "self_trait" not in tag.contradiction_types and tag.drift_facets == ()


def test_model_pass_is_one_batched_call_over_top_m(tmp_path, memory_api, lexical):
    clock = Clock()
    backend = ClockedBackend(lexical, clock, ms=0)
    hook = _hook(tmp_path, memory_api, model=ModelPass(backend=backend), clock=clock)
    result = hook.check_chain("c4", "The north gate is not locked. The coffee machine works fine. "
                                    "The audit happened after the merger.", importance=0.9)
    assert backend.calls and len(backend.calls) == 1
    assert backend.calls[0] <= 3 * hook.settings.retrieval.m
    scored = [p for p in result.pairs if p.contr_m is not None]
    assert len(scored) == backend.calls[0]
    assert result.model_used and result.degraded == ()
    gate = result.prop_tags[0]
    assert gate.contradict > 0.7 and "negation" in gate.contradiction_types
    audit = result.prop_tags[2]
    assert "temporal" in audit.contradiction_types


# ----- latency budget (spec 11) and fail-safes (spec 19) ---------------------------

def test_slow_model_drops_the_model_pass(tmp_path, memory_api, lexical):
    clock = Clock()
    backend = ClockedBackend(lexical, clock, ms=130)       # 1.3 x a 100 ms budget
    retriever = RecordingRetriever(memory_api.semantic[0])
    hook = _hook(tmp_path, MemoryAPI(semantic=(retriever,)), model=ModelPass(backend=backend), clock=clock,
                 settings=_settings(pre_write_ms=100, ewma_alpha=1.0))
    first = hook.check_chain("s1", "The north gate is not locked.")
    assert first.model_used and len(backend.calls) == 1
    second = hook.check_chain("s2", "The north gate is not locked.")
    assert "model_dropped" in second.degraded and "k_halved" not in second.degraded
    assert len(backend.calls) == 1                          # the model was not asked
    assert retriever.ks == [8, 8]
    assert second.prop_tags[0].contradict > 0.85            # heuristics alone still see the denial


def test_slower_model_also_halves_k(tmp_path, memory_api, lexical):
    clock = Clock()
    backend = ClockedBackend(lexical, clock, ms=200)        # 2 x budget
    retriever = RecordingRetriever(memory_api.semantic[0])
    hook = _hook(tmp_path, MemoryAPI(semantic=(retriever,)), model=ModelPass(backend=backend), clock=clock,
                 settings=_settings(pre_write_ms=100, ewma_alpha=1.0))
    hook.check_chain("s1", "The north gate is not locked.")
    second = hook.check_chain("s2", "The project budget is 90 thousand dollars.")
    assert {"model_dropped", "k_halved", "parse_skipped"} <= set(second.degraded)
    assert retriever.ks == [8, 4]
    # quick chains bring the model back once the recent time falls below 0.8 x budget
    for i in range(3):
        hook.check_chain(f"q{i}", "Penguins live in Antarctica.")
    recovered = hook.check_chain("s3", "The north gate is not locked.")
    assert recovered.model_used and retriever.ks[-1] == 8
    assert hook.stats()["model_dropped"] >= 1 and hook.stats()["k_halved"] >= 1


def test_budget_hit_within_a_chain_skips_the_model(tmp_path, memory_api, lexical):
    clock = Clock()
    backend = ClockedBackend(lexical, clock, ms=0)
    slow_retrieval = RecordingRetriever(memory_api.semantic[0], clock, ms=130)
    hook = _hook(tmp_path, MemoryAPI(semantic=(slow_retrieval,)), model=ModelPass(backend=backend), clock=clock,
                 settings=_settings(pre_write_ms=100))
    result = hook.check_chain("b1", "The north gate is not locked.")
    assert "model_dropped" in result.degraded and backend.calls == []


class StuckBackend:
    """A model that does not answer until ``release()``: any budget runs out while it is called."""

    name = "stuck"

    def __init__(self, inner):
        self.inner, self.gate, self.calls = inner, threading.Event(), 0

    def predict(self, pairs):
        self.calls += 1
        self.gate.wait(120)
        return self.inner.predict(pairs)

    def release(self) -> None:
        self.gate.set()


def test_model_timeout_falls_back_to_heuristics(tmp_path, memory_api, lexical):
    backend = StuckBackend(lexical)
    hook = _hook(tmp_path, memory_api, model=ModelPass(backend=backend),
                 settings=_settings(pre_write_ms=50, drop_model_factor=1e6, halve_k_factor=1e6))
    try:
        result = hook.check_chain("t1", "The north gate is not locked.")
        assert "model_timeout" in result.degraded and result.error is None
        assert result.prop_tags[0].contradict > 0.85
        # while the timed-out call is still running (the model still has not answered) the next chain does not
        # queue behind it: it is judged, by the heuristics, before the model is released
        again: dict = {}
        second = threading.Thread(target=lambda: again.update(r=hook.check_chain("t2", "The north gate is not locked.")))
        second.start()
        second.join(60)
        assert not second.is_alive(), "the second chain waited for the stuck model call"
        assert "model_timeout" in again["r"].degraded and backend.calls == 1
    finally:
        backend.release()
        hook.close()


def test_unavailable_model_means_heuristics_only(tmp_path, memory_api):
    def broken():
        raise ModelUnavailableError("nli", "no weights here", "install them")

    model = ModelPass(factory=broken)
    hook = _hook(tmp_path, memory_api, model=model)
    result = hook.check_chain("u1", "The north gate is not locked.")
    assert "model_unavailable" in result.degraded and "no weights here" in model.unavailable
    assert result.prop_tags[0].contradict > 0.85


class FailingBackend:
    name = "failing"

    def predict(self, pairs):
        raise ConnectionError("judge server answered 500")


def test_failing_model_means_heuristics_for_that_chain(tmp_path, memory_api):
    hook = _hook(tmp_path, memory_api, model=ModelPass(backend=FailingBackend()))
    result = hook.check_chain("fail-1", "The north gate is not locked.")
    assert "model_error" in result.degraded and result.error is None and not result.model_used
    assert result.prop_tags[0].contradict > 0.85
    events = [r for r in read_log(tmp_path / "coherence.jsonl") if r.get("event") == "model_error"]
    assert "answered 500" in events[0]["error"]


def test_crash_is_neutral_and_logged(tmp_path, memory_api):
    def exploding(p, k):
        raise RuntimeError("index corrupted")

    hook = _hook(tmp_path, MemoryAPI(semantic=(FunctionRetriever(exploding),)))
    result = hook.check_chain("x1", "The north gate is not locked.", importance=0.1)
    assert result.error == "RuntimeError: index corrupted"
    assert not result.blocked and result.degraded == ("error",) and result.quarantine is None
    assert result.chain_metrics.coherence_chain == 0.0 and result.chain_metrics.reward_hint == 0.0
    events = [r for r in read_log(tmp_path / "coherence.jsonl") if r.get("event") == "error"]
    assert events and events[0]["chain_id"] == "x1" and "index corrupted" in events[0]["error"]
    ok = hook.check_chain("x2", "The north gate is not locked.", mem_api=memory_api)   # the hook lives on
    assert ok.error is None and ok.prop_tags[0].contradict > 0.85
    assert hook.stats()["errors"] == 1


@pytest.mark.parametrize("kwargs, message", [
    ({"chain": "", "text": "x"}, "chain.id"),
    ({"chain": "c"}, "give chain.text or chain.propositions"),
    ({"chain": "c", "text": "x", "importance": 2}, "importance"),
    ({"chain": "c", "text": "x", "goals_ctx": [3]}, r"goal_ctx\[0\]"),
    ({"chain": "c", "propositions": ["ok", ""]}, r"propositions\[1\]"),
])
def test_unusable_input_is_a_clear_error(tmp_path, memory_api, kwargs, message):
    hook = _hook(tmp_path, memory_api)
    with pytest.raises(ValueError, match=message):
        hook.check_chain(**kwargs)


# ----- blocking and quarantine (spec 10) -----------------------------------------

def test_block_quarantine_and_recheck_on_new_evidence(tmp_path, memory_api):
    hook = _hook(tmp_path, memory_api)
    important = hook.check_chain("q0", "The north gate is not locked.", importance=0.9)
    assert not important.blocked
    result = hook.check_chain("q1", "The north gate is not locked.", importance=0.3)
    assert result.blocked and result.chain_metrics.blocked
    assert result.quarantine.props == ("q1:0",)
    assert {stem("north"), stem("gate")} <= set(result.quarantine.subjects)
    stored = hook.quarantine.items()
    assert [i.chain_id for i in stored] == ["q1"] and stored[0].text == "The north gate is not locked."
    # evidence about something else does not re-open it
    assert hook.on_new_evidence("The coffee machine was repaired.", "n1") == []
    assert [i.chain_id for i in hook.quarantine.items()] == ["q1"]
    # supporting evidence about the same subject does: the chain is released
    released = hook.on_new_evidence("Guards confirmed the north gate is not locked tonight.", "n2")
    assert [i.chain_id for i in released] == ["q1"]
    assert hook.quarantine.items() == []
    stats = hook.stats()
    assert stats["blocked"] == 1 and stats["released"] == 1 and stats["false_block_rate"] == 1.0
    events = [r["event"] for r in read_log(tmp_path / "coherence.jsonl") if "event" in r]
    assert events.count("quarantine") == 1 and events.count("release") == 1


def test_periodic_recheck_every_q_ticks(tmp_path, memory_api):
    s = _settings()
    hook = _hook(tmp_path, memory_api, settings=replace(s, quarantine={**s.quarantine, "recheck_every_ticks": 3}))
    assert hook.check_chain("p1", "The north gate is not locked.", importance=0.2).blocked
    hook.check_chain("p2", "Penguins live in Antarctica.")
    assert hook.quarantine.items()[0].rechecks == 0
    hook.check_chain("p3", "Penguins live in Antarctica.")            # tick 3: re-check, still blocked
    hook.join_background(30)
    assert hook.quarantine.items()[0].rechecks == 1
    assert hook.tick == 3                                             # the re-check is not a chain of its own


# ----- log (spec 17) ------------------------------------------------------------

def test_jsonl_log_schema(tmp_path, memory_api):
    hook = _hook(tmp_path, memory_api)
    hook.check_chain("l1", "The north gate is not locked. Penguins live in Antarctica.", importance=0.2)
    records = [r for r in read_log(tmp_path / "coherence.jsonl") if "p_id" in r]
    assert [r["p_id"] for r in records] == ["l1:0", "l1:1"]
    types = {"tick": int, "chain_id": str, "p_id": str, "entail": float, "contradict": float,
             "uncertainty": float, "types": list, "drift_facets": list, "coherence_chain": float,
             "contradiction_density": float, "blocked": bool}
    for r in records:
        assert set(LOG_FIELDS) <= set(r)
        for key, kind in types.items():
            assert isinstance(r[key], kind), (key, r[key])
    assert records[0]["types"] == ["negation"] and records[0]["blocked"] is True
    assert records[0]["tick"] == 1 and records[0]["contradict"] == round(records[0]["contradict"], 4)


def test_log_rotates_and_defaults_to_the_state_folder(tmp_path, state_dir, memory_api):
    log = CoherenceLog(tmp_path / "small.jsonl", max_bytes=400)
    for i in range(10):
        log.write_event("note", i, f"c{i}", text="x" * 50)
    log.close()
    assert (tmp_path / "small.jsonl.1").is_file()
    hook = CoherenceHook(_settings(), mem_api=memory_api, model=False)
    hook.check_chain("d1", "Penguins live in Antarctica.")
    hook.close()
    assert [r["chain_id"] for r in read_log(state_dir / "coherence.jsonl")] == ["d1"]


def test_a_restarted_hook_goes_on_counting_ticks_from_its_log(tmp_path, memory_api):
    """Issue 44, item 8: after kill -9 the log's tick counter restarted at 1 and 15 turns were logged twice
    under the same ticks. A torn last line (the kill mid-write) is skipped."""
    first = _hook(tmp_path, memory_api)
    for i in range(3):
        first.check_chain(f"k{i}", "Penguins live in Antarctica.")
    with (tmp_path / "coherence.jsonl").open("a") as handle:
        handle.write('{"tick": 99, "chain_id": "torn')                 # killed mid-line: no tick 99
    again = _hook(tmp_path, memory_api)
    assert again.tick == 3
    again.check_chain("k3", "Penguins live in Antarctica.")
    ticks = [r["tick"] for r in read_log(tmp_path / "coherence.jsonl") if r.get("p_id")]
    assert ticks == [1, 2, 3, 4]



def test_a_restarted_hook_logs_a_chain_checked_again_once_and_a_new_text_under_its_id_again(tmp_path, memory_api):
    """Issue 71, item 8: a turn checked, then checked again after a restart (it was not stored before the stop) is
    one record in the log; the same id with another text is another verdict and is logged."""
    first = _hook(tmp_path, memory_api)
    first.check_chain("t1", "Penguins live in Antarctica.")
    first.check_chain("t2", "The north gate is not locked.")
    first.close()
    again = _hook(tmp_path, memory_api)
    assert again.check_chain("t2", "The north gate is not locked.").blocked     # the verdict is given all the same
    again.check_chain("t2", "The coffee machine works.")
    again.check_chain("t3", "Penguins live in Antarctica.")
    again.close()
    logged = [(r["chain_id"], r["text_sha"]) for r in read_log(tmp_path / "coherence.jsonl") if "p_id" in r]
    assert [chain for chain, _ in logged] == ["t1", "t2", "t2", "t3"]
    assert len(set(logged)) == 4 and logged[0][1] == logged[3][1]

# ----- feedback, calibration, adaptive tau_c ----------------------------------------

def test_feedback_adapts_tau_c_only_with_precision(tmp_path, memory_api):
    s = _settings()
    s = replace(s, adaptive={"enabled": True, "window": 4, "target_precision": 0.7, "step": 0.05, "floor": 0.6},
                calibration={**s.calibration, "min_samples": 1000})
    hook = _hook(tmp_path, memory_api, settings=s)
    for i in range(4):
        r = hook.check_chain(f"f{i}", "The north gate is not locked.", importance=0.9)
        hook.record_feedback(r.prop_tags[0].p_id, "contradiction")
    assert hook.tau_c == pytest.approx(0.65)
    for i in range(4):
        r = hook.check_chain(f"g{i}", "The north gate is not locked.", importance=0.9)
        hook.record_feedback(r.prop_tags[0].p_id, "neutral")
    assert hook.tau_c == pytest.approx(0.70)
    with pytest.raises(ValueError, match="was not checked recently"):
        hook.record_feedback("nope", "neutral")
    with pytest.raises(ValueError, match="label"):
        hook.record_feedback("g0:0", "maybe")


def test_broken_calibration_file_means_identity_and_an_event(tmp_path, memory_api):
    (tmp_path / "cal.json").write_text("{broken", encoding="utf-8")
    hook = _hook(tmp_path, memory_api)
    assert hook.calibrator.state.temperature == 1.0 and "not valid JSON" in hook.calibration_error
    assert any(r.get("event") == "calibration_error" for r in read_log(tmp_path / "coherence.jsonl"))


def test_fit_calibration_is_saved_and_reloaded(tmp_path, memory_api):
    hook = _hook(tmp_path, memory_api)
    pairs = [("The gate is locked", "The gate is not locked"), ("The gate is locked", "The gate is locked"),
             ("The gate is locked", "Penguins live in Antarctica"), ("A dog runs", "A dog is not running"),
             ("A dog runs", "A dog runs fast"), ("A dog runs", "The sky is blue")] * 5
    labels = ["contradiction", "entailment", "neutral"] * 10
    state = hook.fit_calibration(pairs, labels)
    assert (tmp_path / "cal.json").is_file() and state.n_samples == 30
    again = _hook(tmp_path, memory_api)
    assert again.calibrator.state.temperature == pytest.approx(state.temperature)


# ----- SNOs for the dashboard -------------------------------------------------------

def test_check_sno_on_an_example(tmp_path):
    (sno,) = load_snos(EXAMPLES / "contradicted_vitamin_c.yaml")
    hook = _hook(tmp_path, MemoryAPI(), model=None)
    report = hook.check_sno(sno)
    assert set(report.claims) == {c.id for c in sno.claims}
    pairs = {frozenset((p.a, p.b)): p for p in report.pairs}
    assert frozenset(("c1", "e2")) in pairs
    c1_e2 = pairs[frozenset(("c1", "e2"))]
    assert c1_e2.kind == "claim-evidence" and "negation" in c1_e2.types and "grounding" in c1_e2.types
    assert report.claims["c1"].status == "contradicted"
    verdict = report.claims["c1"].verdict            # the pair's score is the verdict's, weighed by e2's validity
    e2 = next(e for e in sno.evidence if e.id == "e2")
    assert verdict.p_contradicted > 0.5 and c1_e2.score == pytest.approx(verdict.p_contradicted * e2.validity)
    assert report.metrics.n_props == len(sno.claims)
    assert not (tmp_path / "coherence.jsonl").exists() or not any(
        "p_id" in r for r in read_log(tmp_path / "coherence.jsonl"))


def test_check_sno_reads_claims_against_evidence_through_the_grounding_verdict(tmp_path):
    from cns_core.critics.grounding import GroundingCritic

    (sno,) = load_snos(EXAMPLES / "contradicted_vitamin_c.yaml")
    hook = _hook(tmp_path, MemoryAPI(), model=None)
    report = hook.check_sno(sno)
    verdicts = GroundingCritic().evaluate(sno).evidence["claims"]
    evidence_pairs = [p for p in report.pairs if p.kind == "claim-evidence"]
    # every claim-evidence contradiction is a "contradicted" verdict, by the evidence the critic names
    assert evidence_pairs and all("grounding" in p.types for p in evidence_pairs)
    for p in evidence_pairs:
        assert verdicts[p.a]["verdict"] == "contradicted" and verdicts[p.a]["contradicted_by"] == p.b
        validity = next(e.validity for e in sno.evidence if e.id == p.b)
        assert p.score == pytest.approx(verdicts[p.a]["p_contradicted"] * validity)
    # each claim's status is its verdict; every "contradicted" verdict is one listed pair; claims that
    # contradict each other are the claims' conflicts, not their status
    listed = {p.a for p in evidence_pairs}
    for cid, v in verdicts.items():
        assert (cid in listed) == (v["verdict"] == "contradicted")
        assert report.claims[cid].status == v["verdict"]
        assert report.claims[cid].verdict.p_supported == pytest.approx(v["p_supported"])
        assert set(report.claims[cid].conflicts) == {q.b if q.a == cid else q.a for q in report.pairs
                                                    if q.kind == "claim-claim" and cid in (q.a, q.b)}


def test_check_sno_marks_declared_attacks(tmp_path):
    from cns_core.sno import SNO

    sno = SNO(id="s", title="t", hypothesis="h", claims=[
        {"id": "h", "text": "The bridge is safe for trucks."},
        {"id": "a", "text": "The bridge is not safe for trucks."},
        {"id": "b", "text": "The bridge was painted in 2019."}],
        relations=[{"source": "a", "target": "h", "kind": "attack"}, {"source": "b", "target": "h", "kind": "support"}])
    report = CoherenceHook(_settings(), mem_api=MemoryAPI(), model=False, log=False).check_sno(sno)
    (pair,) = report.pairs
    assert {pair.a, pair.b} == {"a", "h"} and pair.declared and pair.kind == "claim-claim"
    assert report.claims["b"].status == "neutral"


def test_thresholds_weights_and_calibration_per_call(tmp_path, memory_api):
    from cns_core.coherence.calibration import CalibrationState, Calibrator

    hook = _hook(tmp_path, memory_api)
    strict = hook.settings.with_thresholds(tau_block=0.999999999, tau_c=0.999999999)
    relaxed = hook.check_chain("o1", "The north gate is not locked.", importance=0.3)
    held = hook.check_chain("o2", "The north gate is not locked.", importance=0.3, settings=strict)
    assert relaxed.blocked and not held.blocked and held.prop_tags[0].contradiction_types == ()
    soft = Calibrator(CalibrationState(temperature=4.0))
    softened = hook.check_chain("o3", "The north gate is not locked.", importance=0.3, calibration=soft)
    assert softened.prop_tags[0].contradict < relaxed.prop_tags[0].contradict
    assert hook.calibrator.state.temperature == 1.0      # the hook's own calibration is untouched
