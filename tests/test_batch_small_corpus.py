"""A corpus too small to pay for Ray's start runs in process even with --workers 2, and says so (issue 31, item 10)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd

from cns_core.engine.batch import ray_min_snos

ROOT = Path(__file__).resolve().parent.parent

_CLI = """
import sys
from cns_core.cli import main
status = main(sys.argv[1:])
ray = sys.modules.get("ray")
print("RAY STARTED:", bool(ray is not None and ray.is_initialized()))
sys.exit(status)
"""


def test_a_small_corpus_with_two_workers_runs_in_process_and_says_why(corpus, tmp_path):
    out = tmp_path / "r.parquet"
    env = {**os.environ, "CNS_STATE_DIR": str(tmp_path / "state"), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    env.pop("RAY_ADDRESS", None)
    done = subprocess.run([sys.executable, "-c", _CLI, "evaluate", str(corpus), "--workers", "2", "--out", str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "RAY STARTED: False" in done.stdout
    notes = [line for line in done.stderr.splitlines() if "ray_min_snos" in line]
    assert notes == [f"--workers 2: 3 SNO(s) to evaluate is below corpus.ray_min_snos ({ray_min_snos()}, "
                     "config/pipeline.yaml), "
                     "too few to pay for starting Ray and loading the models in each worker; evaluating in this "
                     "process (--engine ray to use Ray anyway)"]
    assert len(pd.read_parquet(out)) == 3 and "evaluated 3 SNO(s)" in done.stdout


def test_the_rule_leaves_clusters_gpus_and_a_running_ray_alone(monkeypatch):
    from cns_core.engine import batch

    monkeypatch.delitem(sys.modules, "ray", raising=False)
    assert batch.too_small_for_ray(112, 2, None, 0.0)
    assert not batch.too_small_for_ray(112, 1, None, 0.0)            # one worker never starts Ray anyway
    assert not batch.too_small_for_ray(112, 2, "10.0.0.5:6379", 0.0)
    assert not batch.too_small_for_ray(112, 2, None, 1.0)
    assert not batch.too_small_for_ray(batch.ray_min_snos(), 2, None, 0.0)

    class RunningRay:
        @staticmethod
        def is_initialized() -> bool:
            return True

    monkeypatch.setitem(sys.modules, "ray", RunningRay)
    assert not batch.too_small_for_ray(112, 2, None, 0.0)
