"""The documentation is built and checked with the code.

* the site (mkdocs.yml, docs/) builds with ``mkdocs build --strict``: a broken link or anchor, a page
  missing from the navigation or a model card snippet that is not there fails;
* every ``cns`` subcommand has its section in the generated CLI reference;
* every key of every ``config/*.yaml`` file, and every ``CNS_*`` environment variable the code reads,
  appears in the configuration reference;
* the README keeps its shape: ``make run`` and ``make test`` first, short, its links and image present.
"""

from __future__ import annotations

import html
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import docs_hooks  # noqa: E402


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    try:
        import material  # noqa: F401
        import mkdocs  # noqa: F401
    except ImportError as exc:     # part of the `test` extra: a missing one is a broken install, not a skip
        pytest.fail(f"{exc.name} is missing: pip install -e '.[test]' (make test does)")
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=240,
                          env={**__import__("os").environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout}\n{done.stderr}"
    return out


def test_the_site_builds_strictly_with_every_page(site):
    for page in ("index.html", "getting-started/index.html", "reference/cli/index.html",
                 "reference/configuration/index.html", "reference/models/index.html", "benchmarks/index.html",
                 "architecture/index.html", "development/index.html", "guides/judging-text/index.html"):
        assert (site / page).is_file(), page
    for stem, _title in _dashboard_pages():
        page = (site / "dashboard" / stem / "index.html")
        assert page.is_file(), f"no documentation page for the dashboard page {stem}"
        assert f"img/pages/{stem}.png" in page.read_text(encoding="utf-8"), f"{stem}: no screenshot"
        assert (ROOT / "docs" / "img" / "pages" / f"{stem}.png").is_file()


def test_every_cns_subcommand_is_in_the_cli_reference(site):
    text = (site / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    names = list(docs_hooks.subcommands())
    assert {"run", "evaluate", "extract", "agents", "grade"} <= set(names)
    for name in names:
        assert f'id="cns-{name}"' in text, f"`cns {name}` has no section in the CLI reference"
        usage = docs_hooks.subcommands()[name].format_usage().split()[1:3]
        assert html.escape(" ".join(usage), quote=False) in text, f"`cns {name}`: its usage is not shown"


def test_every_config_key_is_in_the_configuration_reference(site):
    text = (site / "reference" / "configuration" / "index.html").read_text(encoding="utf-8")
    files = sorted((ROOT / "config").glob("*.yaml"))
    assert len(files) >= 15
    missing = []
    for path in files:
        assert f"config/{path.name}" in text, path.name
        for key, _value in docs_hooks.yaml_keys(yaml.safe_load(path.read_text(encoding="utf-8")) or {}):
            if f"<code>{html.escape(key, quote=False)}</code>" not in text:
                missing.append(f"{path.name}: {key}")
    assert missing == []


def test_every_environment_variable_the_code_reads_is_documented():
    documented = (ROOT / "docs" / "reference" / "configuration.md").read_text(encoding="utf-8")
    read = set()
    for path in (ROOT / "cns_core").rglob("*.py"):
        read |= set(re.findall(r"\bCNS_[A-Z0-9_]*[A-Z0-9]\b", path.read_text(encoding="utf-8")))
    assert read, "no CNS_* variable found: the pattern is broken"
    assert sorted(v for v in read if v not in documented) == []


def test_comments_are_read_beside_above_and_below_a_key():
    header, notes = docs_hooks.yaml_comments(
        "# The file.\n# Second line.\n\nouter:\n  # above\n  inner: 1   # beside\n"
        "                # continued\n  other: 2\nlist:\n  - {a: 1}\n  - b: 2\n    c: 3\nlast: x # end\n")
    assert header == "The file. Second line."
    assert notes["outer.inner"] == "above beside continued"
    assert notes["outer.other"] == "" and notes["last"] == "end"
    assert "list.b" not in notes and "list.c" not in notes          # keys inside list items are not config keys
    md = docs_hooks.config_markdown(ROOT / "config")
    assert "| `trust.disagree.judge_high` | `4` |" in md


def test_the_readme_starts_with_make_run_and_make_test():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines; the details belong in docs/"
    first_block = text.split("```")[1].splitlines()[1:]
    commands = [line.split("#")[0].strip() for line in first_block if line.strip()]
    assert commands == ["make run", "make test"]
    before = text.split("```")[0]
    assert "##" not in before and before.count(". ") <= 3, "at most a short pitch before the two commands"
    for target in re.findall(r"\]\(([^)#]+)\)", text):
        if not target.startswith(("http://", "https://")):
            assert (ROOT / target).exists(), f"README.md links to {target}, which is not there"
    assert "![" in text.split("## ")[1] or "![" in text.split("## ")[0], "a screenshot near the top"
    for word in ("make docs", "Ollama", "OpenAI-compatible", "ungraded", "CC BY-SA", "CC BY-NC-SA"):
        assert word in text, word


def test_the_makefile_has_the_docs_targets():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^docs:.*\n\t.*mkdocs serve", makefile, re.M)
    assert re.search(r"^docs-build:.*\n\t.*mkdocs build --strict", makefile, re.M)
    assert re.search(r"^docs-screens:.*\n\t.*scripts/docs_screens.py", makefile, re.M)


def _dashboard_pages() -> list[tuple[str, str]]:
    sys.path.insert(0, str(ROOT / "tests"))
    from test_browser import dashboard_pages

    return dashboard_pages()
