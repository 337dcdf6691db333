"""Finding the project (cns_core.config.resolve_project): a folder named once wins, file by file, over the
package's own; every process a ``cns`` command starts uses the same project and state folder."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from cns_core.cli import main
from cns_core.config import (PROJECT_ENV, STATE_ENV, ConfigError, load_config, pinned_for_children, project_path,
                             resolve_project, state_dir)

CHECKOUT = Path(__file__).resolve().parents[1]


@pytest.fixture
def no_project_env(monkeypatch):
    for name in (PROJECT_ENV, STATE_ENV, "CNS_CONFIG_DIR"):
        monkeypatch.delenv(name, raising=False)


def test_a_checkout_is_its_own_project(no_project_env):
    project = resolve_project()
    assert project.named is None and project.root == CHECKOUT
    assert project.state == CHECKOUT / ".cns" and state_dir(create=False) == CHECKOUT / ".cns"
    assert project_path("models/nli-minilm-l6") == CHECKOUT / "models" / "nli-minilm-l6"


def test_a_named_project_wins_file_by_file(tmp_path, monkeypatch, no_project_env):
    named = tmp_path / "mine"
    (named / "config").mkdir(parents=True)
    profiles = load_config("profiles")
    profiles["profiles"]["default"] = {**profiles["profiles"]["default"], "bias": 0.9}
    (named / "config" / "profiles.yaml").write_text(yaml.safe_dump(profiles))
    monkeypatch.setenv(PROJECT_ENV, str(named))

    project = resolve_project()
    assert project.root == named and project.home == CHECKOUT
    assert load_config("profiles")["profiles"]["default"]["bias"] == 0.9            # the named project's file
    assert load_config("models") == yaml.safe_load((CHECKOUT / "config" / "models.yaml").read_text())   # the package's
    assert project_path("models/nli-minilm-l6") == CHECKOUT / "models" / "nli-minilm-l6"    # it has no models/
    assert state_dir() == named / ".cns" and (named / ".cns").is_dir()


def test_a_project_named_that_is_no_folder_is_a_clear_error(tmp_path, monkeypatch, capsys, no_project_env):
    monkeypatch.setenv(PROJECT_ENV, str(tmp_path / "absent"))
    with pytest.raises(ConfigError, match="CNS_PROJECT_DIR=.*absent.*not a folder"):
        resolve_project()
    monkeypatch.delenv(PROJECT_ENV)
    assert main(["--project", str(tmp_path / "absent"), "project"]) == 1
    assert "absent' is not a folder" in capsys.readouterr().err


def test_the_cli_option_names_the_project_for_its_command_only(tmp_path, capsys, no_project_env):
    assert main(["--project", str(tmp_path), "project", "state"]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / ".cns")
    assert PROJECT_ENV not in os.environ and STATE_ENV not in os.environ      # as it was before the command


def test_every_command_runs_with_its_project_and_state_folder_in_the_environment(tmp_path, monkeypatch,
                                                                                 no_project_env):
    """What a command starts inherits them (``cns run``'s children, Ray's workers)."""
    from cns_core.cli import project as project_command

    seen: dict[str, str | None] = {}
    monkeypatch.setattr(project_command, "run", lambda args: seen.update(
        {name: os.environ.get(name) for name in (PROJECT_ENV, STATE_ENV)}) or 0)
    assert main(["--project", str(tmp_path), "project"]) == 0
    assert seen == {PROJECT_ENV: str(tmp_path.resolve()), STATE_ENV: str(tmp_path.resolve() / ".cns")}


def _other_checkout(folder: Path) -> Path:
    """A second checkout of the package (its own cns_core, config/ and dashboard.py), as a virtualenv of another
    checkout meets this one: ``python -m`` in it imports its own cns_core."""
    shutil.copytree(CHECKOUT / "cns_core", folder / "cns_core", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(CHECKOUT / "config", folder / "config")
    shutil.copy(CHECKOUT / "dashboard.py", folder / "dashboard.py")
    return folder


def _child_state(cwd: Path) -> tuple[str, str]:
    """The state folder and package a child started in ``cwd`` uses (as ``cns run`` starts its children)."""
    out = subprocess.run([sys.executable, "-m", "cns_core.cli", "project", "state"], cwd=cwd, env=dict(os.environ),
                         capture_output=True, text=True, timeout=120, check=True).stdout.strip()
    package = subprocess.run([sys.executable, "-c", "import cns_core; print(cns_core.__file__)"], cwd=cwd,
                             capture_output=True, text=True, timeout=60, check=True).stdout.strip()
    return out, package


def test_children_use_the_parents_state_folder_whichever_package_they_import(tmp_path, no_project_env):
    other = _other_checkout(tmp_path / "other")
    state, package = _child_state(other)
    assert package == str(other / "cns_core" / "__init__.py")        # the child runs the other checkout's code
    assert state == str(other / ".cns")                               # and, left alone, its state folder

    with pinned_for_children() as parent:                             # as every `cns` command runs
        assert os.environ[STATE_ENV] == str(CHECKOUT / ".cns") and os.environ[PROJECT_ENV] == str(CHECKOUT)
        state, package = _child_state(other)
    assert package == str(other / "cns_core" / "__init__.py")
    assert state == str(parent.state) == str(CHECKOUT / ".cns")
    assert STATE_ENV not in os.environ


def test_a_relative_state_folder_reaches_children_whole(tmp_path, monkeypatch, no_project_env):
    """``cns run`` starts the dashboard in the project folder: a relative CNS_STATE_DIR must not move with it."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(STATE_ENV, "here")
    with pinned_for_children():
        assert os.environ[STATE_ENV] == str(tmp_path / "here")
    assert os.environ[STATE_ENV] == "here"
