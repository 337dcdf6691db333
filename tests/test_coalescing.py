"""CoalescingBackend: calls made at the same time from several threads share one model call."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from local_servers import wait_for

from cns_core.engine.ray_actors import CoalescingBackend


class _Gated:
    """Rows that echo their item; a call waits at a gate until it opens, so callers arriving meanwhile queue."""

    def __init__(self, fail_on: int | None = None):
        self.fail_on, self.sizes, self.gate = fail_on, [], threading.Event()

    def predict(self, items):
        self.sizes.append(len(items))
        assert self.gate.wait(120)
        if self.fail_on in items:
            raise RuntimeError("model crashed")
        return np.array([[x, 0.0, 0.0] for x in items])


def _call_together(shared, inner: _Gated, requests):
    """The first request's model call starts, every other request queues behind it, then the gate opens."""
    out = {}

    def call(i, items):
        try:
            out[i] = shared.predict(items)
        except Exception as exc:
            out[i] = exc

    threads = [threading.Thread(target=call, args=(i, items)) for i, items in enumerate(requests)]
    threads[0].start()
    wait_for(lambda: inner.sizes, what="the first model call")
    for t in threads[1:]:
        t.start()
    wait_for(lambda: len(shared._pending) == len(requests) - 1, what="the other callers queued")
    inner.gate.set()
    for t in threads:
        t.join(120)
    return out


def test_callers_get_their_own_rows_from_fewer_model_calls():
    inner = _Gated()
    shared = CoalescingBackend(inner, "predict")
    requests = [list(range(10 * i, 10 * i + 3)) for i in range(12)]
    out = _call_together(shared, inner, requests)
    for i, items in enumerate(requests):
        assert out[i][:, 0].tolist() == items
    assert shared.calls == len(inner.sizes) == 2 and inner.sizes == [3, 3 * (len(requests) - 1)]


def test_a_model_error_reaches_every_caller_of_that_call_and_no_other():
    inner = _Gated(fail_on=3)                      # in the second call, which the seven queued callers share
    shared = CoalescingBackend(inner, "predict")
    out = _call_together(shared, inner, [[i] for i in range(8)])
    failed = sorted(i for i, r in out.items() if isinstance(r, Exception))
    assert failed == list(range(1, 8)) and all(str(out[i]) == "model crashed" for i in failed)
    assert out[0][:, 0].tolist() == [0]            # the first call's caller got its rows
    with pytest.raises(RuntimeError, match="model crashed"):     # and the wrapper still works after it
        shared.predict([3])
    assert shared.predict([5])[:, 0].tolist() == [5]
