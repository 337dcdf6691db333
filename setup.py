"""Packaging hooks (the project itself is described in pyproject.toml).

A wheel carries the project's own files (config/, the shipped models, examples/, the dashboard and its pages)
inside the package, in ``cns_core/_project/``, so the package works wherever it is installed, with no checkout
beside it; ``cns_core.config.resolve_project`` finds them there. MANIFEST.in names the files; the sdist carries
them, so a wheel built from it (``python -m build``) holds them too. An editable install reads the checkout itself.
"""

from __future__ import annotations

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
IN_PACKAGE = Path("cns_core") / "_project"       # cns_core.config.PACKAGED_PROJECT
# The parts of the project a wheel carries inside the package; which of their files, MANIFEST.in says.
PROJECT_PARTS = ("config/", "models/", "examples/", "pages/", "assets/", ".streamlit/", "dashboard.py")


class BuildWithProject(build_py):
    """``build_py`` that also copies the project's files (those of MANIFEST.in under :data:`PROJECT_PARTS`) into
    the package's ``_project/`` folder."""

    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return
        self.run_command("egg_info")        # reads MANIFEST.in into the file list
        files = sorted(name for name in self.get_finalized_command("egg_info").filelist.files
                       if name.replace("\\", "/").startswith(PROJECT_PARTS))
        for name in files:
            target = Path(self.build_lib) / IN_PACKAGE / name
            self.mkpath(str(target.parent))
            self.copy_file(str(HERE / name), str(target))


setup(cmdclass={"build_py": BuildWithProject})
