"""Corpus evaluation on Ray actors: same rows as in-process, resuming, a dying worker, a missing cluster.

One local Ray with 2 CPUs is started for the whole test session (its start-up counted once).
"""

from __future__ import annotations

import json
import math
import os
import sys

import pytest

from cns_core.engine.batch import evaluate_corpus, read_results
from cns_core.engine.ray_actors import RayUnavailableError
from cns_core.critics.logic import LogicCritic

CRASH_ON = "debate"
# Each actor is a new process that imports torch and loads the models: on a busy machine a Ray test takes minutes
# (make test-stress at load 13: 147 s, 241 s, and past pytest's 300 s for the one that starts an actor after two
# in-process runs). A bound, not a duration: the tests end as soon as their rows are back.
pytestmark = pytest.mark.timeout(900)


@pytest.fixture(autouse=True)
def crashing_critic_travels(local_ray):
    local_ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])   # CrashingLogic below


@pytest.fixture
def lexical(monkeypatch):
    monkeypatch.setenv("CNS_NLI_BACKEND", "lexical")   # actors start after this, so they read it too


def assert_same_rows(a, b, tol: float = 1e-5) -> None:
    """Equal rows; scores to ``tol``: the float32 embedder's sums change in the last bits with
    the batch an SNO's texts share and the worker's thread count (differences seen: ~2e-9), and the
    learned Logic critic's network carries those bits through its layers (seen: ~1.1e-6)."""
    assert list(a["sno_id"]) == list(b["sno_id"]) and list(a["content_hash"]) == list(b["content_hash"])
    for column in [c for c in a.columns if c.startswith(("score_", "trust_"))]:
        for x, y in zip(a[column], b[column]):       # a critic that abstained is empty (NaN) on both sides
            assert (math.isnan(x) and math.isnan(y)) or math.isclose(x, y, abs_tol=tol), (column, x, y)
    for x, y in zip(a["conflicts"], b["conflicts"]):       # gaps are kept unrounded: the same bits apply
        _assert_close(json.loads(x), json.loads(y), tol)
    assert list(a["issues"]) == list(b["issues"])
    assert list(a["config_fingerprint"]) == list(b["config_fingerprint"])


def _assert_close(x, y, tol: float) -> None:
    """Equal JSON values, numbers to ``tol``."""
    if isinstance(x, float) or isinstance(y, float):
        assert math.isclose(x, y, abs_tol=tol), (x, y)
    elif isinstance(x, dict) and isinstance(y, dict):
        assert sorted(x) == sorted(y), (x, y)
        for key in x:
            _assert_close(x[key], y[key], tol)
    elif isinstance(x, list) and isinstance(y, list):
        assert len(x) == len(y), (x, y)
        for u, v in zip(x, y):
            _assert_close(u, v, tol)
    else:
        assert x == y


def test_ray_rows_equal_the_in_process_rows_and_a_resume_skips_them(local_ray, lexical, corpus, tmp_path):
    """Also the resume on Ray: a second run over the same output evaluates nothing (one Ray run less than
    a test of its own, which paid a two-actor start for the rows this test already writes). The table is a
    CSV file so that the resumed Trust Scores also prove its floats come back exactly."""
    local = evaluate_corpus(corpus, progress=False).frame
    two = evaluate_corpus(corpus, tmp_path / "r.csv", workers=2, batch_size=2, progress=False)
    one = evaluate_corpus(corpus, engine="ray", workers=1, progress=False).frame
    assert two.evaluated == 3 and (two.frame["error"] == "").all() and (two.frame["failures"] == "{}").all()
    assert_same_rows(local, two.frame)
    assert_same_rows(local, one)
    assert_same_rows(local, read_results(tmp_path / "r.csv"))
    again = evaluate_corpus(corpus, tmp_path / "r.csv", workers=2, progress=False)
    assert (again.evaluated, again.skipped) == (0, 3)
    assert list(again.frame["trust_default"]) == list(two.frame["trust_default"])


def test_ray_with_the_default_nli_matches_in_process(local_ray, corpus):
    (corpus / "essay01.json").unlink()
    local = evaluate_corpus(corpus, progress=False).frame
    remote = evaluate_corpus(corpus, engine="ray", workers=2, batch_size=1, progress=False).frame
    assert (remote["failures"] == "{}").all()
    assert_same_rows(local, remote)


class CrashingLogic(LogicCritic):
    """Logic, except that it kills its worker process on one SNO (a worker killed, out of memory)."""

    def evaluate(self, sno, context):
        if sno.id == CRASH_ON:
            os._exit(1)
        return super().evaluate(sno, context)


def crashing_critics():
    from cns_core.critics import default_critics

    return [CrashingLogic() if c.name == "logic" else c for c in default_critics()]


def test_a_dying_worker_loses_only_its_sno(local_ray, lexical, corpus, tmp_path):
    out = tmp_path / "r.parquet"
    report = evaluate_corpus(corpus, out, workers=2, batch_size=2, critics=crashing_critics, progress=False)
    frame = report.frame.set_index("sno_id")
    assert "worker died twice" in frame.loc[CRASH_ON, "error"]
    others = frame.drop(index=CRASH_ON)
    assert len(others) == 2 and (others["error"] == "").all() and (others["failures"] == "{}").all()
    assert others["score_logic"].between(0, 1).all()
    assert len(read_results(out)) == 3
    # the error row is tried again on the next run (here with the ordinary critics: it now succeeds); which
    # rows a run takes up is decided before any worker starts, so this one runs in this process (two actors
    # less to start)
    again = evaluate_corpus(corpus, out, progress=False)
    assert again.evaluated >= 1 and (again.frame["error"] == "").all()


def test_unreachable_address_is_named_and_nothing_is_written(lexical, corpus, tmp_path):
    out = tmp_path / "r.parquet"
    with pytest.raises(RayUnavailableError, match=r"Ray not reachable at 127\.0\.0\.1:9"):
        evaluate_corpus(corpus, out, address="127.0.0.1:9", progress=False)
    assert not out.exists()
    with pytest.raises(RayUnavailableError, match="expected host:port"):
        evaluate_corpus(corpus, out, address="nowhere", progress=False)
    assert not out.exists()
