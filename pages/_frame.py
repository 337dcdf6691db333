"""Streamlit glue every page shares: cached resources, the current SNO, headers, errors.

Not a page itself (``dashboard.py`` lists the pages explicitly). Pages import it
as ``from pages import _frame as frame``, which needs only the project root on
``sys.path``: Streamlit puts the main script's folder there, also when a direct
link on a fresh server runs a page file alone. Everything computed here comes
from ``cns_core``.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

import streamlit as st

from cns_core.views import display, ui_state
from cns_core.critics.base import CriticResult
from cns_core.scoring import load_profiles
from cns_core.sno import SNO

__all__ = ["page", "guard", "pipeline", "meta_critic", "memory", "coherence_hook", "judge_feed", "current",
           "results", "profiles", "weights", "badge"]


# ----- cached resources (one per server process) ----------------------------------
@st.cache_resource(show_spinner=False)
def pipeline():
    """The critic pipeline (novelty measured against the examples); it caches by content hash."""
    from cns_core.pipeline import CriticPipeline

    return ui_state.PopulationPipeline(CriticPipeline(), ui_state.load_examples())


@st.cache_resource(show_spinner=False)
def meta_critic():
    from cns_core.meta import MetaCritic

    return MetaCritic(pipeline=pipeline())


def memory():
    """The configured engram memory (default ``state_dir()/chroma``, created empty when absent); one per place."""
    from cns_core.config import state_dir
    from cns_core.memory import memory_settings

    cfg = memory_settings()
    return _memory_at(str(cfg.get("url") or cfg.get("path") or state_dir() / "chroma"))


@st.cache_resource(show_spinner=False)
def _memory_at(where: str):
    from cns_core.memory import MemoryService

    return MemoryService()


@st.cache_resource(show_spinner=False)
def coherence_hook():
    """The coherence hook for SNO checks (configured NLI backend; it logs nothing from the dashboard)."""
    from cns_core.coherence import CoherenceHook

    return CoherenceHook(log=False).warm_up_in_background()   # loading never counts against a budget


@st.cache_resource(show_spinner=False)
def judge_feed(pub_address: str, sub_address: str):
    """The bus feed of the Judge page (one listener per bus address; see cns_core.views.judge_feed)."""
    from cns_core.agents.bus import bus_settings
    from cns_core.views.judge_feed import JudgeFeed

    bus = bus_settings()
    if (bus.pub_address, bus.sub_address) != (pub_address, sub_address):
        raise RuntimeError("the bus settings changed while the feed was being opened; reload the page")
    return JudgeFeed(bus)


@st.cache_data(show_spinner=False, ttl=60)
def profiles() -> dict[str, dict[str, float]]:
    return load_profiles()


# ----- page furniture ------------------------------------------------------------
def page(title: str, help_text: str) -> None:
    """Title and a one-line help text; the same on every page."""
    st.title(title)
    st.caption(help_text)


@contextmanager
def guard(what: str) -> Iterator[None]:
    """Show a failure as ``st.error`` with its message instead of a traceback."""
    try:
        yield
    except Exception as exc:  # noqa: BLE001 - a page must never show a traceback
        st.error(f"{what}: {exc}")


def badge(text: str, colour: str) -> str:
    """A coloured pill for ``st.markdown(..., unsafe_allow_html=True)``; ``text`` is escaped."""
    return (f'<span style="display:inline-block;padding:2px 10px;border-radius:999px;background:{colour};'
            f'color:#fff;font-weight:600">{display.escape(text)}</span>')


# ----- the current SNO and its evaluation ----------------------------------------
def current() -> tuple[str, SNO]:
    """The SNO every page works on; a page opened directly falls back to the default example."""
    return ui_state.current_sno(st.session_state, ui_state.load_examples())


def results(sno: SNO) -> dict[str, CriticResult]:
    """All five critics' results, from the pipeline's cache after the first run."""
    with st.spinner("Running the five critics…"):
        return pipeline().run_critics(sno)


def weights() -> tuple[dict[str, float], str]:
    """The weights in force and their origin (profile name or ``custom``)."""
    return ui_state.current_weights(st.session_state, profiles())


def state() -> Any:
    return st.session_state


def assess(sno: SNO, results: dict[str, CriticResult], weights: dict[str, float], origin: str):
    """The Meta-Critic's aggregation of cached results under ``weights`` (no critic re-runs)."""
    from cns_core.meta import assess as meta_assess

    return meta_assess(results, weights, meta_critic().config, sno_id=sno.id, sno_hash=sno.content_hash(),
                       context=origin)


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


def stat(label: str, badge_html: str, caption: str = "", help_text: str | None = None) -> None:
    """A metric-like block whose value is a coloured badge (band, gate); ``label`` is ours, not user text."""
    st.markdown(f'<div style="font-size:0.875rem;margin-bottom:0.35rem">{label}</div>', unsafe_allow_html=True,
                help=help_text)
    st.markdown(badge_html, unsafe_allow_html=True)
    if caption:
        st.caption(caption)
