"""The access gate of a shared dashboard (AppTest): with a token configured, nothing but the prompt shows until
the session gives it; a wrong token is refused; a direct page, and a page run as the app, are gated too."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from cns_core import access
from cns_core.views import ui_state

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "gate-test-token-0123456789"
TIMEOUT = 120


@pytest.fixture
def shared(state_dir, monkeypatch):
    monkeypatch.setenv(access.TOKEN_ENV, TOKEN)
    return state_dir


def _locked(at: AppTest) -> None:
    """Only the prompt: no page title, no navigation, no sidebar, and the sidebar's SNO library never loaded."""
    assert not at.exception
    assert [t.value for t in at.title] == ["CNS Studio"]
    assert [w.label for w in at.text_input] == ["Access token"]
    assert len(at.sidebar.selectbox) == 0 and len(at.metric) == 0
    assert ui_state.KEY_LIBRARY not in at.session_state


def _give(at: AppTest, token: str) -> AppTest:
    at.text_input[0].input(token)
    at.button[0].click()          # the form's submit button
    return at.run()


def test_the_router_asks_for_the_token_and_refuses_a_wrong_one(shared):
    at = AppTest.from_file(str(ROOT / "dashboard.py"), default_timeout=TIMEOUT)
    at.run()
    _locked(at)
    assert not at.error

    _give(at, TOKEN[:-1] + "X")
    _locked(at)
    assert [e.value for e in at.error] == ["That is not this dashboard's access token."]

    _give(at, TOKEN)
    assert not at.exception and not at.error
    assert at.title[0].value == "Overview"
    assert at.sidebar.selectbox(key="cns_sidebar_sno").value
    assert at.session_state[ui_state.KEY_CURRENT]

    at.switch_page("pages/judge.py")          # once per session: other pages open without asking again
    at.run()
    assert at.title[0].value == "Judge" and "Access token" not in [w.label for w in at.text_input]


def test_a_token_in_the_address_opens_the_asked_for_page_and_leaves_the_address(shared):
    at = AppTest.from_file(str(ROOT / "dashboard.py"), default_timeout=TIMEOUT)
    at.query_params["token"] = TOKEN
    at.switch_page("pages/engrams.py")
    at.run()
    assert not at.exception and at.title[0].value == "Engrams"
    assert "token" not in at.query_params

    wrong = AppTest.from_file(str(ROOT / "dashboard.py"), default_timeout=TIMEOUT)
    wrong.query_params["token"] = "not-the-token-at-all-0000"
    wrong.run()
    _locked(wrong)
    assert [e.value for e in wrong.error] == ["That is not this dashboard's access token."]


def test_a_page_run_as_the_app_is_gated_too(shared):
    at = AppTest.from_file(str(ROOT / "pages" / "corpus.py"), default_timeout=TIMEOUT)
    at.run()
    assert not at.exception and [t.value for t in at.title] == ["CNS Studio"]
    assert [w.label for w in at.text_input] == ["Access token"]
    _give(at, TOKEN)
    assert at.title[0].value == "Corpus"


def test_no_token_on_loopback_changes_nothing(state_dir, monkeypatch):
    monkeypatch.delenv(access.TOKEN_ENV, raising=False)
    at = AppTest.from_file(str(ROOT / "dashboard.py"), default_timeout=TIMEOUT)
    at.run()
    assert not at.exception and at.title[0].value == "Overview"


def test_a_token_too_short_or_an_open_address_without_one_keeps_it_locked(state_dir, monkeypatch):
    from streamlit import config

    monkeypatch.setenv(access.TOKEN_ENV, "short")
    at = AppTest.from_file(str(ROOT / "dashboard.py"), default_timeout=TIMEOUT)
    at.run()
    assert [t.value for t in at.title] == ["CNS Studio"] and not at.text_input
    assert at.error[0].value.startswith("The dashboard is locked: dashboard token from CNS_DASHBOARD_TOKEN: "
                                        "5 characters is too short")

    monkeypatch.delenv(access.TOKEN_ENV)
    before = config.get_option("server.address")
    config.set_option("server.address", "0.0.0.0")
    try:
        at = AppTest.from_file(str(ROOT / "dashboard.py"), default_timeout=TIMEOUT)
        at.run()
    finally:
        config.set_option("server.address", before)
    assert [t.value for t in at.title] == ["CNS Studio"] and not at.text_input
    assert at.error[0].value == ("The dashboard is locked: this dashboard listens on 0.0.0.0 and no access token "
                                 "is set. Start it with `cns run --address 0.0.0.0 --new-token`, or set "
                                 "CNS_DASHBOARD_TOKEN.")


def _first_effect(path: Path) -> ast.stmt | None:
    """The first top-level statement of a page file that does something (calls, loops, branches, with blocks).

    Imports, the docstring, definitions and assignments without a call only bind names."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef)):
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and not any(isinstance(n, ast.Call) for n in ast.walk(node)):
            continue
        return node
    return None


def test_every_page_calls_frame_page_before_anything_else(tmp_path):
    """frame.page is where a page that runs without the router hands over to it (and so to the gate):
    a page that computed or showed anything before it would do so ungated on a direct link."""
    sneaky = tmp_path / "sneaky.py"
    sneaky.write_text('"""Doc."""\nimport streamlit as st\nKEY = "k"\nROWS = load()\nframe.page("T", "h")\n')
    assert ast.unparse(_first_effect(sneaky)) == "ROWS = load()"      # what the check catches
    pages = sorted(p for p in (ROOT / "pages").glob("*.py") if not p.name.startswith("_"))
    assert len(pages) >= 9
    for path in pages:
        first = _first_effect(path)
        assert first is not None and ast.unparse(first).startswith("frame.page("), \
            f"{path.name}: first does {ast.unparse(first)[:80] if first else 'nothing'!r}, not frame.page(...)"
