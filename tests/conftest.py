"""Shared fixtures. Every test runs offline and writes only under tmp_path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

PROJECT_ROOT = Path(__file__).resolve().parent.parent
EXAMPLES_DIR = PROJECT_ROOT / "examples"

# The files that take longest, longest first (`make test`'s --durations summary, 2026-11-26): they are
# collected first so that `pytest -n 2 --dist loadfile --no-loadscope-reorder` (the Makefile) starts them
# at once on the two workers and the many short files fill in behind them. xdist's default order, most
# tests first, left a two-test browser file of four minutes for the end, one worker running it alone.
# A file not named here keeps its place; add one when the summary shows a new long file.
LONGEST_FIRST = (
    "test_browser_demo.py", "test_batch_ray.py", "test_browser.py", "test_browser_demo35.py", "test_faults.py",
    "test_browser_entry.py", "test_coherence_cli.py", "test_run_supervisor.py", "test_demo_data.py",
    "test_agents_load.py", "test_wheel.py",
    "test_judge_loop_ownership.py", "test_batch_small_corpus.py", "test_argument_miner.py",
)


def pytest_collection_modifyitems(config, items) -> None:
    """The files of :data:`LONGEST_FIRST` ahead of the others, in that order (a stable sort: the tests of a
    file keep their order, and so do the other files)."""
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


def shared_data_dir() -> Path:
    from cns_core.config import data_dir

    return data_dir()


@pytest.fixture
def shared_data() -> Path:
    """``../shared/data`` (or ``CNS_DATA_DIR``); skips the test with a reason when absent."""
    path = shared_data_dir()
    if not path.is_dir():
        pytest.skip(f"shared data folder {path} is absent (set CNS_DATA_DIR)")
    return path


@pytest.fixture(scope="session")
def vitamin_c_cap():
    """The cap the shipped Grounding critic's verdicts put on ``examples/contradicted_vitamin_c.yaml``:
    read from the model, not written down, so the tests follow the verifier that ships."""
    from cns_core.pipeline import CriticPipeline
    from cns_core.scoring import contradiction_cap
    from cns_core.sno import load_snos

    (sno,) = load_snos(EXAMPLES_DIR / "contradicted_vitamin_c.yaml")
    # A generous time limit: the default one (30 s for this SNO) also covers loading the models, and a cold worker
    # on a busy machine spent it loading them (make test-stress, 2026-11-27): Grounding "timed out", no cap.
    results = CriticPipeline(timeout_s=600).run_critics(sno)
    cap = contradiction_cap(results)
    assert cap is not None and cap.contradicted > cap.claims / 2, {n: r.error for n, r in results.items() if not r.ok}
    return cap


@pytest.fixture
def state_dir(tmp_path, monkeypatch) -> Path:
    """A private CNS_STATE_DIR so tests never touch the developer's memory or logs."""
    path = tmp_path / "state"
    path.mkdir()
    monkeypatch.setenv("CNS_STATE_DIR", str(path))
    return path


@pytest.fixture
def corpus(tmp_path) -> Path:
    """A folder of three SNO files imported from the format fixtures (microtexts, AIF, brat)."""
    from cns_core.formats import import_file
    from cns_core.sno import dump_snos

    fixtures = Path(__file__).parent / "fixtures" / "formats"
    folder = tmp_path / "corpus"
    folder.mkdir()
    for fmt, name in [("microtexts", "micro_t001.xml"), ("aif", "debate.json"), ("brat", "essay01.ann")]:
        sno = import_file(fmt, fixtures / name).sno
        dump_snos(sno, folder / f"{sno.id}.json")
    return folder


@pytest.fixture(scope="session")
def local_ray():
    """One local Ray with 2 CPUs for the test session (its start-up paid once); batch runs use it."""
    ray = pytest.importorskip("ray")
    from cns_core.engine.ray_actors import start_local

    if not ray.is_initialized():
        start_local(2)
    yield ray
    ray.shutdown()
