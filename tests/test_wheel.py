"""A wheel built from the checkout, as ``python -m build`` builds it (an sdist, then a wheel from that), installed
into a fresh virtualenv outside the checkout, evaluates the bundled examples with its own configuration and
models: nothing is read from the checkout. The venv reaches the project venv's installed dependencies through a
``.pth`` line, so nothing is downloaded; the package itself is the wheel's (``pip install --no-deps``)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from cns_core.cli import main

pytestmark = pytest.mark.slow

CHECKOUT = Path(__file__).resolve().parents[1]


@dataclass
class Installed:
    wheel: Path
    venv: Path
    cwd: Path
    env: dict[str, str]

    def cns(self, *args: str, timeout: float = 240) -> subprocess.CompletedProcess:
        return subprocess.run([str(self.venv / "bin" / "cns"), *args], cwd=self.cwd, env=self.env,
                              capture_output=True, text=True, timeout=timeout)


def _run(argv: list[str], cwd: Path, timeout: float = 240) -> str:
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def _fresh_clone(target: Path) -> Path:
    """The checkout's files as a fresh clone has them (git's tracked files and new ones it does not ignore), so that
    no build output of the checkout (a stale ``*.egg-info/SOURCES.txt``) reaches the sdist, and nothing is written
    into the checkout."""
    names = _run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=CHECKOUT).split("\0")
    for name in filter(None, names):
        if (CHECKOUT / name).is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(CHECKOUT / name, target / name)
    return target


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Installed:
    work = tmp_path_factory.mktemp("wheel")
    clone = _fresh_clone(work / "clone")
    sdist = work / _run([sys.executable, "-c", "import sys; from setuptools import build_meta; "
                                               "print(build_meta.build_sdist(sys.argv[1]))", str(work)],
                        cwd=clone).strip().splitlines()[-1]
    with tarfile.open(sdist) as archive:
        archive.extractall(work, filter="data")
    source = work / sdist.name.removesuffix(".tar.gz")
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(work / "dist"),
          str(source)], cwd=work)
    (wheel,) = (work / "dist").glob("*.whl")

    venv = work / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=work)
    purelib = _run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                   cwd=work).strip()
    # A plain path line: the project venv's packages, without its .pth files (its editable cns_core stays out).
    (Path(purelib) / "project_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "--no-deps", "-q",
          str(wheel)], cwd=work)
    cwd = work / "elsewhere"
    cwd.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CNS_") and k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["XDG_STATE_HOME"] = str(work / "xdg")
    return Installed(wheel, venv, cwd, env)


def _grafted_models() -> set[str]:
    """The model folders MANIFEST.in ships."""
    text = (CHECKOUT / "MANIFEST.in").read_text()
    return set(re.findall(r"^graft models/(\S+)$", text, flags=re.M))


def test_the_wheel_carries_the_project_files_and_only_the_shipped_models(installed):
    with zipfile.ZipFile(installed.wheel) as wheel:
        names = wheel.namelist()
    inside = {n.removeprefix("cns_core/_project/") for n in names if n.startswith("cns_core/_project/")}
    assert {p.split("/")[1] for p in inside if p.startswith("models/")} == _grafted_models()
    for part in ("config/models.yaml", "config/profiles.yaml", "dashboard.py", "pages/overview.py",
                 ".streamlit/config.toml", "assets/icon.png", "examples/grounded_exercise_bp.yaml",
                 "models/nli-minilm-l6/model.safetensors"):
        assert part in inside, part
    assert {Path(p).name for p in (CHECKOUT / "config").glob("*.yaml")} == \
        {Path(p).name for p in inside if p.startswith("config/")}


def test_the_installed_package_uses_its_own_files_and_a_user_state_folder(installed):
    done = installed.cns("project", "--json")
    assert done.returncode == 0, done.stderr
    assert str(CHECKOUT) not in done.stdout
    where = json.loads(done.stdout)
    assert where["root_origin"] == "the copy installed with the package"
    for part in ("config", "models", "examples", "dashboard"):
        path = Path(where[part])
        assert path.is_relative_to(installed.venv) and path.parent.name == "_project" and path.exists(), (part, path)
    assert where["state"] == installed.env["XDG_STATE_HOME"] + "/cns-studio"


def test_the_installed_wheel_evaluates_the_bundled_examples_as_the_checkout_does(installed, capsys):
    examples = Path(json.loads(installed.cns("project", "--json").stdout)["examples"])
    files = sorted(str(p) for p in examples.glob("*.yaml"))
    assert len(files) == len(list((CHECKOUT / "examples").glob("*.yaml")))
    # novelty against the bundled examples (the dashboard's population), so any two files can be compared
    in_wheel = subprocess.Popen([str(installed.venv / "bin" / "cns"), "evaluate", *files, "--population", "examples",
                                 "--json"], cwd=installed.cwd, env=installed.env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
    try:        # two of them evaluated by the checkout meanwhile, for comparison
        compared = [str(CHECKOUT / "examples" / Path(files[i]).name) for i in (0, -1)]
        assert main(["evaluate", *compared, "--population", "examples", "--json"]) == 0
        checkout = json.loads(capsys.readouterr().out)
        out, err = in_wheel.communicate(timeout=240)
    finally:
        in_wheel.kill()
    assert in_wheel.returncode == 0, err[-3000:]
    wheel = json.loads(out)

    assert wheel["errors"] == [] and len(wheel["results"]) == len(files)
    assert all(r["complete"] and r["file"].startswith(str(examples)) for r in wheel["results"])
    assert {r["nli"] for r in wheel["results"]} == {r["nli"] for r in checkout["results"]}
    in_checkout = {r["sno_id"]: r["trust_score"] for r in checkout["results"]}
    assert {r["sno_id"]: r["trust_score"] for r in wheel["results"] if r["sno_id"] in in_checkout} == \
        pytest.approx(in_checkout, abs=1e-6) and len(in_checkout) == 2
    assert not (examples.parent / ".cns").exists()          # the installed package's folder is never written
