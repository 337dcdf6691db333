"""A critic past the pipeline's deadline stops its model work instead of computing on in the background."""

from __future__ import annotations

import threading

import pytest
from critic_doubles import build_sno
from local_servers import wait_for

from cns_core.critics.grounding import GroundingCritic
from cns_core.models.cancel import Cancelled, cancellable, raise_if_cancelled
from cns_core.pipeline import CriticPipeline


@pytest.fixture(scope="module")
def tiny_nli(tmp_path_factory):
    """A random tiny BERT through the real TransformersNLI, one pair a batch, with its forward passes counted."""
    from cns_core.models.nli import TransformersNLI
    from cns_core.models.tiny import build_tiny_nli_model

    nli = TransformersNLI(str(build_tiny_nli_model(tmp_path_factory.mktemp("nli") / "tiny")), batch_size=1,
                          device="cpu")
    passes = []
    _, model, _, _ = nli._load()
    model.register_forward_hook(lambda *_: passes.append(1))
    return nli, passes


def test_outside_a_cancellable_scope_nothing_is_cancelled():
    raise_if_cancelled()
    event = threading.Event()
    event.set()
    with cancellable(event):
        with pytest.raises(Cancelled):
            raise_if_cancelled()
    raise_if_cancelled()            # the scope is left: this thread's later work runs


def test_abandoned_nli_work_stops_after_the_batch_in_flight(tiny_nli):
    nli, passes = tiny_nli
    pairs = [(f"Evidence {i}.", f"Claim {i}.") for i in range(20)]
    assert nli.predict(pairs).shape == (20, 3)
    abandoned = threading.Event()
    abandoned.set()
    passes.clear()
    with cancellable(abandoned), pytest.raises(Cancelled):
        nli.predict(pairs)
    assert len(passes) == 1
    assert nli._lock.acquire(blocking=False)       # the model is free for the next caller
    nli._lock.release()


def test_a_timed_out_critic_stops_its_model_calls(tiny_nli):
    nli, passes = tiny_nli
    claims = {"h": "Hypothesis."} | {f"c{i}": f"Claim number {i} about topic {i % 7}." for i in range(60)}
    evidence = [(f"e{i}", f"Evidence {i} reports a finding on topic {i % 7}.") for i in range(60)]
    sno = build_sno(claims, [(f"c{i}", "h", "support") for i in range(60)], evidence)
    total = len(claims) * len(evidence)            # top_k 0: every pair, one forward pass each
    passes.clear()
    pipeline = CriticPipeline([GroundingCritic({"top_k": 0})], nli=nli, timeout_s=0.3, cache_size=0)
    evaluation = pipeline.evaluate(sno, {"grounding": 1.0})
    assert evaluation.failed == ("grounding",) and "timed out after 0.3 s" in evaluation.results["grounding"].error
    for thread in threading.enumerate():
        if thread.name == "critic-grounding":
            thread.join(timeout=120)
            assert not thread.is_alive()
    assert len(passes) < total / 4, f"{len(passes)} of {total} forward passes ran after the deadline"


class _Gated:
    """Delegates ``predict``; the first call waits at a gate, so that later callers queue up behind it."""

    def __init__(self, inner):
        self.inner, self.gate, self.first = inner, threading.Event(), True

    def predict(self, pairs):
        if self.first:
            self.first = False
            assert self.gate.wait(60)
        return self.inner.predict(pairs)


def test_a_shared_model_call_is_given_up_only_when_every_caller_gave_up(tiny_nli):
    from cns_core.engine.ray_actors import CoalescingBackend

    nli, passes = tiny_nli
    gated = _Gated(nli)
    shared = CoalescingBackend(gated, "predict")
    pairs = [(f"Evidence {i}.", f"Claim {i}.") for i in range(10)]
    gone, results = threading.Event(), {}
    gone.set()

    def call(name, flag=None):
        try:
            if flag is None:
                results[name] = shared.predict(pairs)
            else:
                with cancellable(flag):
                    results[name] = shared.predict(pairs)
        except Exception as exc:
            results[name] = exc

    first = threading.Thread(target=call, args=("first",))
    first.start()
    wait_for(lambda: not gated.first, what="the first call at the gate")
    callers = [threading.Thread(target=call, args=("abandoned", gone)), threading.Thread(target=call, args=("kept",))]
    for t in callers:
        t.start()
    wait_for(lambda: len(shared._pending) == 2, what="both callers queued behind the first call")
    gated.gate.set()
    for t in [first, *callers]:
        t.join(60)
    assert shared.calls == 2                        # the two queued callers shared one model call ...
    assert results["kept"].shape == (10, 3)         # ... which ran whole for the caller still waiting
    assert results["first"].shape == (10, 3)

    passes.clear()
    with cancellable(gone), pytest.raises(Cancelled):   # alone and abandoned: the call stops
        shared.predict(pairs)
    assert len(passes) == 1


def test_work_in_flight_at_exit_is_stopped_before_the_process_tears_down(tmp_path):
    """A daemon thread killed inside a torch kernel aborts the process; at exit, work in a scope is
    abandoned and waited for, so it leaves through its own ``Cancelled``."""
    import subprocess
    import sys
    import textwrap

    marker = tmp_path / "stopped"
    script = textwrap.dedent(f"""
        import threading, time
        from cns_core.models.cancel import Cancelled, cancellable, raise_if_cancelled

        inside = threading.Event()

        def work():
            with cancellable(threading.Event()):           # nobody ever abandons it: only the exit does
                inside.set()
                try:
                    while True:
                        raise_if_cancelled()
                        time.sleep(0.02)                   # a step of work
                except Cancelled:
                    open({str(marker)!r}, "w").write("stopped")

        threading.Thread(target=work, daemon=True).start()
        assert inside.wait(120)                            # the work is in its scope: now exit
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert marker.read_text() == "stopped"


def test_the_coherence_hooks_timed_out_model_pass_stops_its_work(tiny_nli):
    from cns_core.coherence.nli import ModelPass, ModelTimeout

    nli, passes = tiny_nli
    model = ModelPass(backend=nli)
    pairs = [(f"Evidence {i} about topic {i % 5}.", f"Claim {i}.") for i in range(2000)]
    passes.clear()
    with pytest.raises(ModelTimeout):
        model.predict(pairs, timeout_s=0.05)
    assert isinstance(model._pending.exception(timeout=120), Cancelled)    # it stopped by itself ...
    assert not model.busy                                                  # ... and the model is free
    assert len(passes) < len(pairs) / 4, f"{len(passes)} of {len(pairs)} forward passes ran after the timeout"
    model.close()
