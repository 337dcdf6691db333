"""scripts/verifier_candidate.sh refuses what it cannot measure before it makes any worktree."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "verifier_candidate.sh"


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=60)


def test_it_names_what_is_missing_and_leaves_no_worktree(tmp_path):
    before = subprocess.run(["git", "-C", str(ROOT), "worktree", "list"], capture_output=True, text=True).stdout
    usage = _run()
    assert usage.returncode == 2 and "usage:" in usage.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    refused = _run(str(empty), str(tmp_path / "out"))
    assert refused.returncode == 2 and "no config.json (not a model cns train-verifier wrote)" in refused.stderr
    model = tmp_path / "model"
    model.mkdir()
    for name in ("config.json", "model.safetensors", "calibration.json"):
        (model / name).write_text("{}", encoding="utf-8")
    no_data = _run(str(model), str(tmp_path / "out"), env={"PATH": "/usr/bin:/bin"})
    assert no_data.returncode == 2 and "CNS_DATA_DIR: not set" in no_data.stderr
    after = subprocess.run(["git", "-C", str(ROOT), "worktree", "list"], capture_output=True, text=True).stdout
    assert after == before
