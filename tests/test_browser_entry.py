"""Every way into the dashboard goes through the router, in a real browser (Debian's chromium).

Streamlit runs a ``pages/`` file alone for a direct link until ``st.navigation`` has
run once in the server process; so a page's own address (the root, and one page of
each section: ``entry_cases``) is opened FIRST on a server of its own that nothing
has visited, in a new browser context. The visitor
must land on that page with the sectioned navigation (no ``frame`` or ``dashboard``
entry), the sidebar controls and the wide layout; a reload stays on the page.
The access gate of a shared dashboard holds on a direct link too. Screenshots go
to ``test-artifacts/entry-*.png``.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from local_servers import serve_dashboard
from test_browser import (  # noqa: F401  (browser is a fixture)
    ARTIFACTS, FIRST_RENDER_MS, browser, dashboard_pages, dashboard_sections, settle,
)

pytestmark = pytest.mark.browser

TOKEN = "entry-test-token-0123456789"
LEXICAL = {"CNS_NLI_BACKEND": "lexical"}      # the page's own models are not what is tested here


def _new_page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(FIRST_RENDER_MS)
    return context, page


def _path(page) -> str:
    return urlsplit(page.url).path.strip("/")


def _nav_labels(page) -> list[str]:
    return [s.get_attribute("label") for s in page.locator('[data-testid="stSidebarNavLink"] span[label]').all()]


def assert_in_the_app(page, stem: str, title: str) -> None:
    """The router's page: its title, the sections, every page and nothing else, the sidebar, the wide layout."""
    page.locator("h1", has_text=title).first.wait_for()
    page.locator('[data-testid="stSidebarNavLink"]').first.wait_for()
    settle(page)
    assert _path(page) == ("" if stem == "overview" else stem)
    sections = dashboard_sections()
    headers = [h.inner_text().strip() for h in page.locator('[data-testid="stNavSectionHeader"]').all()]
    assert headers == list(sections)
    labels = _nav_labels(page)
    assert labels == [t for pages in sections.values() for _, t in pages]
    assert not {"frame", "dashboard", "_frame"} & {label.lower() for label in labels}
    hrefs = {urlsplit(a.get_attribute("href")).path.strip("/")
             for a in page.locator('a[data-testid="stSidebarNavLink"]').all()}
    assert hrefs == {"" if s == "overview" else s for s, _ in dashboard_pages()}
    sidebar = page.locator('[data-testid="stSidebar"]')
    on_an_sno = stem not in {s for s, _ in sections.get("Memory and judge", [])}   # memory pages have no SNO controls
    if on_an_sno:        # a fresh server's first page may run twice: wait for the run that draws them
        sidebar.locator('[data-testid="stSelectbox"] label').nth(2).wait_for()
    sidebar.get_by_text("NLI:", exact=False).first.wait_for()
    assert [x.inner_text() for x in sidebar.locator('[data-testid="stSelectbox"] label').all()] == (
        ["Current SNO", "Weights", "Novelty population"] if on_an_sno else [])
    assert sidebar.get_by_text("NLI:", exact=False).count() == 1
    width = page.locator('[data-testid="stMainBlockContainer"]').bounding_box()["width"]
    assert width > 900, f"main column {width:.0f} px wide: not the wide layout"
    assert page.locator('[data-testid="stException"]').count() == 0


def entry_cases() -> list[tuple[str, str]]:
    """The root page, and the first other page of every section: the ways in that differ. Every page hands
    over to the router through the same first call, ``frame.page`` (test_dashboard_access.py checks that of
    every page), so a page beside these in its section would only repeat its section's case; what differs is
    the root address, and a section's sidebar (the memory pages have no SNO controls). A fresh server costs
    seconds to start and its first page loads models: one case per difference keeps the file within the
    suite's budget (docs/development.md, Test budget)."""
    root = dashboard_pages()[0]
    return [root] + [next(p for p in pages if p != root) for pages in dashboard_sections().values()
                     if any(p != root for p in pages)]


@pytest.mark.parametrize("stem,title", entry_cases())
def test_a_page_address_opened_first_on_a_fresh_server_lands_on_that_page(browser, tmp_path, stem, title):
    with serve_dashboard(tmp_path / "state", LEXICAL) as base:
        context, page = _new_page(browser)
        try:
            page.goto(f"{base}/" if stem == "overview" else f"{base}/{stem}")
            assert_in_the_app(page, stem, title)
            page.screenshot(path=str(ARTIFACTS / f"entry-{stem}.png"))
            page.reload()
            assert_in_the_app(page, stem, title)
        finally:
            context.close()


def test_the_helper_module_address_is_no_page(browser, tmp_path):
    """``/frame`` (the helper ``pages/_frame.py``) first on a fresh server: the app, never the helper."""
    with serve_dashboard(tmp_path / "state", LEXICAL) as base:
        context, page = _new_page(browser)
        try:
            page.goto(f"{base}/frame")
            page.locator("h1", has_text="Overview").first.wait_for()
            settle(page)
            assert "frame" not in {label.lower() for label in _nav_labels(page)}
            # current SNO, weights, novelty population
            assert page.locator('[data-testid="stSidebar"] [data-testid="stSelectbox"]').count() == 3
        finally:
            context.close()


def _locked(page) -> None:
    page.get_by_label("Access token").wait_for()
    settle(page)
    assert [h.inner_text() for h in page.locator("h1").all()] == ["CNS Studio"]
    assert page.locator('[data-testid="stSidebarNavLink"]').count() == 0
    assert page.locator('[data-testid="stSidebar"] [data-testid="stSelectbox"]').count() == 0


def _give(page, token: str) -> None:
    page.get_by_label("Access token").fill(token)
    page.get_by_role("button", name="Open the dashboard").click()


def test_the_token_gate_holds_on_a_direct_link_and_lets_the_right_token_in(browser, tmp_path):
    with serve_dashboard(tmp_path / "state", {**LEXICAL, "CNS_DASHBOARD_TOKEN": TOKEN}) as base:
        context, page = _new_page(browser)
        try:
            page.goto(f"{base}/judge")            # the first visit of this server, straight to a page
            _locked(page)
            page.screenshot(path=str(ARTIFACTS / "entry-gate-prompt.png"))

            _give(page, "entry-test-token-WRONG-000")
            page.get_by_text("That is not this dashboard's access token.").wait_for()
            _locked(page)
            page.screenshot(path=str(ARTIFACTS / "entry-gate-wrong.png"))

            _give(page, TOKEN)
            assert_in_the_app(page, "judge", "Judge")
            page.screenshot(path=str(ARTIFACTS / "entry-gate-open.png"))
            page.get_by_role("link", name="Engrams").click()     # asked once per browser session
            assert_in_the_app(page, "engrams", "Engrams")
        finally:
            context.close()

        context, page = _new_page(browser)        # a link that carries the token, as `cns run` prints it
        try:
            page.goto(f"{base}/corpus?token={TOKEN}")
            assert_in_the_app(page, "corpus", "Corpus")
            assert "token" not in urlsplit(page.url).query    # not left in the address bar
            page.reload()                                     # a reload is a new session: asked again, same page
            _locked(page)
            _give(page, TOKEN)
            assert_in_the_app(page, "corpus", "Corpus")
        finally:
            context.close()
