"""Budgets by purpose: the pre-write pair limit and pair cache, the SNO check's budget, its cache by
SNO hash and settings, who judged (model or heuristics) and the check without a time limit.

Real parts: the bundled MiniLM embedder and the offline lexical NLI backend; time is a clock the
test moves (:class:`Clock`), charged per model call, so no assertion depends on the machine's speed.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from cns_core.coherence import CoherenceHook, MemoryAPI
from cns_core.coherence.log_view import load_log, stream_coverage
from cns_core.coherence.nli import ModelPass, select_top_m
from cns_core.models import get_nli_backend
from cns_core.sno import SNO
from cns_core.views.coherence_view import offers_unlimited
from test_coherence_hook import Clock, ClockedBackend, _hook, _settings, embedder, memory_api  # noqa: F401


@pytest.fixture(scope="module")
def lexical():
    return get_nli_backend("lexical")


def _sno(n: int, suffix: str = "") -> SNO:
    """``n`` claims about ``n`` different gates, each with its own evidence (so each claim has pairs)."""
    return SNO(id=f"gates{n}", title="gates", hypothesis="c0",
               claims=[{"id": f"c{i}", "text": f"Gate {i} of the north wall is locked{suffix}."} for i in range(n)],
               evidence=[{"id": f"e{i}", "text": f"Gate {i} of the north wall is not locked.", "validity": 1.0}
                         for i in range(n)])


def _budgeted(ms: float, **latency):
    s = _settings(**latency)
    return replace(s, latency=replace(s.latency, sno_check_ms=ms))


def test_pre_write_sends_the_most_relevant_pairs_up_to_the_limit():
    # three propositions with 4 candidates each; candidate 1 of group 2 is flagged by a cue
    groups = [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
    sims = np.array([0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.95, 0.1, 0.05, 0.01])
    flagged = np.zeros(12, dtype=bool)
    flagged[9] = True
    assert sorted(select_top_m(groups, sims, flagged, 4)) == list(range(12))          # no limit: m each
    # the flagged pair first, then every proposition's best, then the next best by similarity
    assert sorted(select_top_m(groups, sims, flagged, 4, max_pairs=5)) == [0, 1, 4, 8, 9]
    assert sorted(select_top_m(groups, sims, flagged, 2, max_pairs=100)) == [0, 1, 4, 5, 8, 9]


def test_a_chain_sends_at_most_max_model_pairs(tmp_path, lexical, memory_api):
    clock = Clock()
    backend = ClockedBackend(lexical, clock, ms=0)
    chain = ["The north gate is not locked.", "The budget is 90 thousand dollars.",
             "The audit happened after the merger.", "Alice works in the Oslo office."]
    capped = _hook(tmp_path, memory_api, model=ModelPass(backend=backend), clock=clock,
                   settings=_settings(max_model_pairs=3))
    result = capped.check_chain("p1", propositions=chain)
    assert backend.calls == [3] and result.model_pairs == 3 and len(result.pairs) > 3
    assert result.model_used and not result.degraded


def test_repeated_pairs_are_not_scored_again(lexical):
    clock = Clock()
    backend = ClockedBackend(lexical, clock, ms=0)
    model = ModelPass(backend=backend, cache_size=3)
    pairs = [("The gate is locked.", "The gate is not locked."), ("It rains.", "It is dry.")]
    first = model.predict(pairs, None)
    again = model.predict(pairs + [("A cat sat.", "A cat sat."), ("It rains.", "It is dry.")], 1.0)
    assert backend.calls == [2, 1]                    # only the new pair went to the backend
    np.testing.assert_allclose(again[:2], first)
    np.testing.assert_allclose(again[3], first[1])
    assert model.cache_hits == 3
    model.predict([("x y", "y x"), ("p", "q")], None)   # the cache holds 3: the oldest pair is dropped
    model.predict(pairs[:1], None)
    assert backend.calls == [2, 1, 2, 1]
    uncached = ModelPass(backend=backend, cache_size=0)
    uncached.predict(pairs, None)
    uncached.predict(pairs, None)
    assert backend.calls[-2:] == [2, 2]


def test_sno_check_stops_at_its_budget_and_counts_who_judged(tmp_path, lexical):
    clock = Clock()
    backend = ClockedBackend(lexical, clock, ms=150)      # each model batch costs 150 ms
    hook = _hook(tmp_path, MemoryAPI(), model=ModelPass(backend=backend), clock=clock,
                 settings=_budgeted(100))
    hook.warm_up()                                         # loading and the first call: before the clock starts
    backend.calls.clear()
    report = hook.check_sno(_sno(12))
    # batches of 32 pairs, whole claims: the first batch runs, the second would start after the budget
    cov = report.coverage
    assert len(backend.calls) == 1 and backend.calls[0] >= 32
    assert cov.model + cov.heuristics == 12 and 0 < cov.model < 12 and cov.no_evidence == 0
    assert cov.budget_ms == 100 and "model_budget" in report.degraded and offers_unlimited(report)
    judged = [cid for cid, c in report.claims.items() if c.tag.support_evidence or c.tag.contradiction_evidence]
    assert len(judged) == 12                               # the rest were still judged, by the heuristics
    assert "fell back to heuristics" in cov.sentence("claims") and "of a 100 ms budget" in cov.sentence("claims")

    # the same SNO and settings: the kept result, no model call
    assert hook.check_sno(_sno(12)) is report and len(backend.calls) == 1
    # "check again without a time limit": every claim by the model, and it replaces the kept result
    full = hook.check_sno(_sno(12), unlimited=True)
    assert (full.coverage.model, full.coverage.heuristics, full.coverage.budget_ms) == (12, 0, None)
    assert not full.degraded and not offers_unlimited(full) and "with no time limit" in full.coverage.sentence("claims")
    assert hook.check_sno(_sno(12)) is full


def test_sno_results_are_kept_by_hash_and_settings(tmp_path, lexical):
    clock = Clock()
    backend = ClockedBackend(lexical, clock, ms=0)
    hook = _hook(tmp_path, MemoryAPI(), model=ModelPass(backend=backend, cache_size=0), clock=clock).warm_up()
    backend.calls.clear()
    first = hook.check_sno(_sno(3))
    per_check = len(backend.calls)          # the hook's own pass and the grounding verdicts' pass
    assert per_check == 2
    assert hook.check_sno(_sno(3)) is first and len(backend.calls) == per_check
    assert (first.coverage.model, first.coverage.heuristics) == (3, 0) and not offers_unlimited(first)
    edited = hook.check_sno(_sno(3, suffix=" at night"))          # another content hash
    assert edited is not first and len(backend.calls) == 2 * per_check
    key = hook.settings_key()
    hook.tau_c = 0.5                                              # adapted tau_c: other settings
    assert hook.settings_key() != key
    third = hook.check_sno(_sno(3))
    assert third is not first and len(backend.calls) == 3 * per_check
    hook.calibrator.state.temperature = 2.0                       # another calibration
    assert hook.check_sno(_sno(3)) is not first and len(backend.calls) == 4 * per_check


def test_an_sno_without_a_model_falls_back_but_offers_no_unlimited_check(tmp_path):
    report = _hook(tmp_path, MemoryAPI(), model=False).check_sno(_sno(4))
    assert (report.coverage.model, report.coverage.heuristics) == (0, 4) and not offers_unlimited(report)


def test_the_stream_counts_chains_by_who_judged_them(tmp_path, lexical, memory_api):
    clock = Clock()
    with_model = _hook(tmp_path, memory_api, model=ModelPass(backend=ClockedBackend(lexical, clock, ms=40)),
                       clock=clock, settings=_settings(pre_write_ms=250, ewma_alpha=1.0))
    with_model.check_chain("chain-a", "The north gate is not locked.")            # judged by the model
    with_model.check_chain("chain-b", "Penguins swim fast.")                      # nothing similar in memory
    with_model.close()
    without = _hook(tmp_path, memory_api, model=False, clock=clock)
    without.check_chain("chain-c", "The project budget is 90 thousand dollars.")  # heuristics only
    without.close()
    rows = load_log(tmp_path / "coherence.jsonl")
    chain_row = next(r for r in rows if r["p_id"])
    cov, unrecorded = stream_coverage(rows + [{**chain_row, "tick": 99, "chain_id": "old", "evidence_pairs": None,
                                               "model_pairs": None}], 250)
    assert (cov.model, cov.heuristics, cov.no_evidence, unrecorded) == (1, 1, 1, 1)
    assert 0 < cov.elapsed_ms <= 40 and cov.budget_ms == 250          # the model's 40 ms is the slowest chain
    assert "95% took at most" in cov.sentence("chains", p95=True)
    assert "of a 250 ms budget" in cov.sentence("chains", p95=True)
