"""CoalescingBackend: calls made at the same time from several threads share one model call."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from cns_core.engine.ray_actors import CoalescingBackend


class _Slow:
    """Rows that echo their item; each call takes a while, so callers arriving meanwhile queue."""

    def __init__(self, fail_on: int | None = None):
        self.fail_on, self.sizes = fail_on, []

    def predict(self, items):
        self.sizes.append(len(items))
        time.sleep(0.05)
        if self.fail_on in items:
            raise RuntimeError("model crashed")
        return np.array([[x, 0.0, 0.0] for x in items])


def _call_together(shared, requests):
    out = {}

    def call(i, items):
        try:
            out[i] = shared.predict(items)
        except Exception as exc:
            out[i] = exc

    threads = [threading.Thread(target=call, args=(i, items)) for i, items in enumerate(requests)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return out


def test_callers_get_their_own_rows_from_fewer_model_calls():
    inner = _Slow()
    shared = CoalescingBackend(inner, "predict")
    requests = [list(range(10 * i, 10 * i + 3)) for i in range(12)]
    out = _call_together(shared, requests)
    for i, items in enumerate(requests):
        assert out[i][:, 0].tolist() == items
    assert shared.calls == len(inner.sizes) < len(requests) and sum(inner.sizes) == 3 * len(requests)


def test_a_model_error_reaches_every_caller_of_that_call_and_no_other():
    inner = _Slow(fail_on=0)
    shared = CoalescingBackend(inner, "predict")
    out = _call_together(shared, [[0]] + [[i] for i in range(1, 8)])
    failed = [i for i, r in out.items() if isinstance(r, Exception)]
    assert 0 in failed and all(str(out[i]) == "model crashed" for i in failed)
    assert all(out[i][:, 0].tolist() == [i] for i in out if i not in failed)
    with pytest.raises(RuntimeError, match="model crashed"):     # and the wrapper still works after it
        shared.predict([0])
    assert shared.predict([5])[:, 0].tolist() == [5]
