"""Streamlit glue every page shares: cached resources, the current SNO, headers, errors.

Not a page itself (``dashboard.py`` lists the pages explicitly). Pages import it
as ``from pages import _frame as frame``, which needs only the project root on
``sys.path``: Streamlit puts the main script's folder there. Everything computed
here comes from ``cns_core``.

The way in also lives here. Until ``st.navigation`` has run once in the server
process, Streamlit treats ``pages/`` as a legacy multipage folder: a direct link
on a fresh server runs the page file alone, without the router, its sidebar or its
access check. :func:`page` (the first call of every page) notices a page that runs
outside the router and hands over: it switches the legacy mode off and runs
``dashboard.py`` in its place, which routes to the page the address names (widget
events of the run are kept, there is no extra round trip). :func:`gate` is the
access check: the token prompt of a shared dashboard.
"""

from __future__ import annotations

import runpy
import time
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Iterator

import streamlit as st

from cns_core.views import display, ui_state
from cns_core.critics.base import CriticResult
from cns_core.scoring import load_profiles
from cns_core.sno import SNO

__all__ = ["routed", "end_page", "leave_legacy_pages", "access_granted", "gate", "page", "guard", "pipeline", "meta_config",
           "memory", "demo_data_running", "answer_scorer", "coherence_hook", "judge_feed", "current", "results", "population", "profiles",
           "in_force", "weights", "gate_in_force", "badge", "band_and_gate", "cap_note", "abstention_note"]


# ----- cached resources (one per server process) ----------------------------------
@st.cache_resource(show_spinner=False)
def pipeline():
    """The critic pipeline (novelty measured against the examples); it caches by content hash. The same one the
    background warm-up ran the default example through (``cns_core.views.warm_up``)."""
    from cns_core.views.warm_up import shared_pipeline

    return shared_pipeline()


@st.cache_resource(show_spinner=False, ttl=60)
def meta_config():
    """The Meta-Critic's settings (config/meta.yaml): bands, gate, conflicts, plan. Cheap: the sidebar reads
    the gate from it before any critic or model is loaded."""
    from cns_core.meta import MetaConfig

    return MetaConfig.load()


def memory():
    """The configured engram memory (default ``state_dir()/chroma``, created empty when absent); one per place:
    the folder, or the Chroma server that serves it (``cns run``; :mod:`cns_core.memory.access` decides)."""
    from cns_core.memory import memory_settings
    from cns_core.memory.access import place_of

    cfg = memory_settings()
    return _memory_at(place_of(cfg.get("path"), cfg.get("url")))


@st.cache_resource(show_spinner=False)
def _memory_at(where: str):
    from cns_core.memory import MemoryService

    return MemoryService()


def demo_data_running() -> bool:
    """Whether ``make run`` is writing its demo data now (the router's line above the page says how far)."""
    from cns_core.cli.demo_progress import read_progress

    progress = read_progress()
    return progress is not None and progress.running


@st.cache_resource(show_spinner=False)
def answer_scorer():
    """The critics' Trust scoring of stored answers, configured as ``cns trust-backfill`` configures it."""
    from cns_core.judging.answer_trust import AnswerScorer, TrustSettings

    return AnswerScorer(TrustSettings.from_config())


@st.cache_resource(show_spinner=False)
def coherence_hook():
    """The coherence hook for SNO checks (configured NLI backend; it logs nothing from the dashboard)."""
    from cns_core.coherence import CoherenceHook

    return CoherenceHook(log=False).warm_up_in_background()   # loading never counts against a budget


@st.cache_resource(show_spinner=False)
def judge_feed(host: str, pub_port: int, sub_port: int):
    """The bus feed of the Judge page (one listener per bus address; see cns_core.views.judge_feed).

    A feed whose subscription could not be proven raises BusError, so it is never cached: the next
    run tries again and sees a judge loop started meanwhile."""
    from cns_core.agents.bus import BusError, bus_settings
    from cns_core.views.judge_feed import JudgeFeed

    feed = JudgeFeed(bus_settings(host=host, pub_port=pub_port, sub_port=sub_port))
    if feed.error:
        feed.close()
        raise BusError(feed.error)
    return feed


@st.cache_data(show_spinner=False, ttl=60)
def profiles() -> dict[str, dict[str, float]]:
    return load_profiles()


# ----- the way in: the router and the access gate ---------------------------------
ROUTER = Path(__file__).resolve().parent.parent / "dashboard.py"
KEY_ACCESS = "cns_access"      # token_id of the token this browser session gave
KEY_ACCESS_WRONG = "cns_access_wrong"   # the last token given was wrong
_ROUTED: ContextVar[bool] = ContextVar("cns_routed", default=False)
_WRONG_TOKEN_PAUSE_S = 1.0     # slows guessing down; a right token never waits


class _PageEnded(BaseException):
    """Raised by :func:`end_page`; a BaseException so that :func:`guard` lets it through to :func:`routed`."""


def end_page() -> None:
    """End the page here (nothing more to show), but let the router finish the sidebar.

    ``st.stop()`` would also stop the router's own work after the page (the sidebar's model caption):
    every element written after it raises Streamlit's stop again.
    """
    if not _ROUTED.get():
        st.stop()            # no router here to finish anything
    raise _PageEnded


@contextmanager
def routed() -> Iterator[None]:
    """The router runs the page inside this, so :func:`page` knows the frame and the gate came first;
    a page that ended early (:func:`end_page`) ends here."""
    mark = _ROUTED.set(True)
    try:
        yield
    except _PageEnded:
        pass
    finally:
        _ROUTED.reset(mark)


def leave_legacy_pages() -> None:
    """Tell Streamlit that this app routes with ``st.navigation``: no later run uses the legacy ``pages/`` mode.

    (``st.navigation`` says so too, but only once it is called; the router calls this first.)
    """
    from streamlit.runtime.pages_manager import PagesManager

    PagesManager.uses_pages_directory = False


def _main_script() -> Path | None:
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    return Path(ctx.pages_manager.main_script_path).resolve() if ctx else None


def _outside_the_router() -> None:
    """A page running without the router: hand over to it, or (a page run as the app itself) check access."""
    if _main_script() == ROUTER:     # the legacy pages/ mode ran this file alone, for a direct link
        leave_legacy_pages()
        runpy.run_path(str(ROUTER), run_name="__main__")   # the router, now: its gate, sidebar, then this page
        st.stop()                    # and nothing more of this unrouted run
    gate()


def _token_state() -> tuple[str | None, str | None]:
    """(the configured token, None) or (None, why the dashboard stays locked) or (None, None): no token needed."""
    from cns_core import access

    try:
        token = access.dashboard_token()
    except ValueError as exc:          # a token too short, an unreadable token file or access.yaml
        return None, str(exc)
    if token is None:
        address = str(st.get_option("server.address") or "")
        if address and not access.is_loopback(address):
            return None, (f"this dashboard listens on {address} and no access token is set. Start it with "
                          f"`cns run --address {address} --new-token`, or set {access.TOKEN_ENV}.")
    return token, None


def _accept(given: str, token: str) -> bool:
    """Compare a given token (constant time) and remember the outcome for this session; a wrong one waits."""
    from cns_core import access

    if access.token_matches(given, token):
        st.session_state[KEY_ACCESS] = access.token_id(token)
        st.session_state.pop(KEY_ACCESS_WRONG, None)
        return True
    st.session_state[KEY_ACCESS_WRONG] = True
    time.sleep(_WRONG_TOKEN_PAUSE_S)
    return False


def access_granted() -> bool:
    """True when no token is needed (loopback) or this browser session gave it; a ``?token=`` counts once."""
    from cns_core import access

    token, problem = _token_state()
    if problem:
        return False
    if token is None or st.session_state.get(KEY_ACCESS) == access.token_id(token):
        return True
    given = st.query_params.get("token")
    if given is None:
        return False
    del st.query_params["token"]       # not left in the address bar, the history or a copied link
    return _accept(given, token)


def gate() -> None:
    """Unless :func:`access_granted`: the token prompt (or why the dashboard is locked), then the run stops."""
    if access_granted():
        return
    token, problem = _token_state()
    st.title("CNS Studio")
    if problem:
        st.error(f"The dashboard is locked: {problem}")
        st.stop()
    st.caption("This dashboard is shared: give its access token (printed by `cns run`, or ask whoever runs it).")
    with st.form("cns_access_form", clear_on_submit=True):
        given = st.text_input("Access token", type="password")
        submitted = st.form_submit_button("Open the dashboard", type="primary")
    if submitted and token is not None and _accept(given, token):
        st.rerun()
    if st.session_state.get(KEY_ACCESS_WRONG):
        st.error("That is not this dashboard's access token.")
    st.stop()


# ----- page furniture ------------------------------------------------------------
def page(title: str, help_text: str) -> None:
    """Title and a one-line help text; the same on every page, and every page's first call (see the module doc)."""
    if not _ROUTED.get():
        _outside_the_router()
    st.title(title)
    st.caption(help_text)


@contextmanager
def guard(what: str) -> Iterator[None]:
    """Show a failure as ``st.error`` with its message instead of a traceback."""
    try:
        yield
    except Exception as exc:  # noqa: BLE001 - a page must never show a traceback
        st.error(f"{what}: {exc}")


def badge(text: str, colour: str, *, one_line: bool = False) -> str:
    """A coloured pill for ``st.markdown(..., unsafe_allow_html=True)``; ``text`` is escaped and may wrap
    between its words only ("0.00-0.29" never splits at its hyphen). ``one_line``: a short value badge (a band,
    the gate) kept on one line in a narrow column, a little smaller (the Weights page's badges wrapped)."""
    fit = "white-space:nowrap;font-size:0.85rem;" if one_line else ""
    return (f'<span class="cns-pill" style="display:inline-block;padding:2px 10px;border-radius:999px;'
            f'background:{colour};color:#fff;font-weight:600;{fit}">{display.unbroken_words(text)}</span>')


# ----- the current SNO and its evaluation ----------------------------------------
def current() -> tuple[str, SNO]:
    """The SNO every page works on; a page opened directly falls back to the default example."""
    return ui_state.current_sno(st.session_state, ui_state.load_examples())


def population():
    """What novelty is measured against on every page (the sidebar's choice; default the examples)."""
    return ui_state.current_population(st.session_state, ui_state.load_examples())


def results(sno: SNO) -> dict[str, CriticResult]:
    """All five critics' results, from the pipeline's cache after the first run.

    The progress line is written at once, not after ``st.spinner``'s half-second timer: on a fresh
    server the first run imports and loads the models, and a timer thread waiting on those imports
    showed nothing for seconds.
    """
    progress = st.empty()
    progress.markdown(display.progress_html("Running the five critics… (the first run loads the models)"),
                      unsafe_allow_html=True)
    try:
        return pipeline().run_critics(sno, population=population())
    finally:
        progress.empty()


def in_force() -> ui_state.WeightsInForce:
    """The weights in force: the one source the sidebar and every page read."""
    return ui_state.weights_in_force(st.session_state, profiles())


def weights() -> tuple[dict[str, float], str]:
    """The weights in force and their label (profile name, ``custom`` or ``custom (blend 0.35)``)."""
    force = in_force()
    return force.weights, force.label


def gate_in_force() -> ui_state.GateInForce:
    """The quality gate's threshold in force: tuned on the Meta-Critic page, kept for the session."""
    return ui_state.gate_in_force(st.session_state, meta_config())


def state() -> Any:
    return st.session_state


def assess(sno: SNO, results: dict[str, CriticResult], weights: dict[str, float], origin: str):
    """The Meta-Critic's aggregation of cached results under ``weights`` and the gate in force (no critic re-runs)."""
    from cns_core.meta import assess as meta_assess

    return meta_assess(results, weights, meta_config(), sno_id=sno.id, sno_hash=sno.content_hash(),
                       context=origin, threshold=gate_in_force().threshold)


_MD_SPECIAL = str.maketrans({c: "\\" + c for c in "\\`*_{}[]()<>#+-.!|~$"})


def md(text: object) -> str:
    """User text made inert for ``st.markdown``: markdown and HTML characters are escaped."""
    return str(text).translate(_MD_SPECIAL)


def incomplete_badge(failed) -> None:
    """Marks a Trust Score that misses failed critics (``incomplete: grounding, logic failed``); nothing if none."""
    from cns_core.scoring import incomplete_note

    note = incomplete_note(failed)
    if note:
        st.markdown(badge(note, display.AMBER),
                    unsafe_allow_html=True, help="A critic failed or timed out: its weight went to the others, "
                                                 "so this is not the full score. The quality gate never passes it.")


def cap_note(evaluation) -> None:
    """Says why the Trust Score is below the weighted sum: contradicted claims cap it (nothing otherwise)."""
    note = evaluation.weighted.cap_note()
    if note:
        st.markdown(badge("capped by contradictions", display.RED), unsafe_allow_html=True,
                    help="While grounding carries weight, the Trust Score is at most the share of claims the "
                         "SNO's own evidence does not contradict.")
        st.caption(md(f"Trust Score {note}."))


def abstention_note(evaluation) -> None:
    """Says which critics had nothing to judge and where their weight went (nothing when every critic judged)."""
    note = evaluation.abstention_note(display.critic_label)
    if note:
        st.caption(md(note[0].upper() + note[1:] + "."),
                   help="A critic with nothing to judge (no causal claim, no evidence to read, a single claim, no "
                        "other SNO to compare with) abstains: it shows no score, and the band and the gate use "
                        "what was judged. It is not a failure: the Trust Score stays complete.")


def band_and_gate(evaluation, band_column, gate_column, weights_label: str) -> None:
    """The quality band and the gate's verdict side by side, telling one story (the gate accepts whole bands)."""
    gate = evaluation.gate
    with band_column:
        stat("Quality band", badge(f"{display.band_label(gate.band)} {gate.band.span}", display.band_colour(gate.band),
                                   one_line=True),
             gate.action, "Appendix B bands of the Meta-Critic (config/meta.yaml). What to do depends on the gate: "
                          "it accepts whole bands.")
    with gate_column:
        stat("Quality gate", badge(gate.verdict, display.GREEN if gate.passed else display.RED, one_line=True),
             f"{gate.reason}; the gate {gate.rule} (weights: {md(weights_label)})",
             "The gate's threshold is where a band starts. Tune it on the Meta-Critic page: it stays in force "
             "for the session, on every page.")


def stat(label: str, badge_html: str, caption: str = "", help_text: str | None = None) -> None:
    """A metric-like block whose value is a coloured badge (band, gate); ``label`` is ours, not user text."""
    st.markdown(f'<div style="font-size:0.875rem;margin-bottom:0.35rem">{label}</div>', unsafe_allow_html=True,
                help=help_text)
    st.markdown(badge_html, unsafe_allow_html=True)
    if caption:
        st.caption(caption)


if __name__ == "__main__":     # Streamlit's legacy pages/ mode runs this helper as a page ("frame"): hand over
    _outside_the_router()
