"""A timer's rerun must not undo the page a reader just asked for (Streamlit glue, no logic of the product).

While something is under way a fragment of the dashboard ticks every second (``run_every``). The browser
sends each tick as an automatic rerun carrying the page it still shows. Streamlit 1.67 folds two pending
reruns into one that takes the *later* request's page (``ScriptRequests._request_rerun_locked``), so a tick
that reaches the server after a click in the sidebar, before the new page has started, turned the
navigation back into a rerun of the old page: the click was lost (seen under load in the browser tests).

:func:`keep_navigation_over_timer_reruns` wraps that fold: when an automatic rerun lands on a pending rerun
that a person asked for, the pending request's page, query string and kind are kept; the widget states are
still merged by Streamlit. A tick can also arrive once the new page's run has started, when nothing is
pending any more; it would start the old page again. So the fold remembers the page of the last rerun that
was not automatic (a click, a widget, ``st.rerun`` or ``st.switch_page``) and drops a tick that names
another page: the page it ticked for is gone, and the new page's own ticks follow. Nothing else changes. The
wrap checks the names it relies on and leaves Streamlit as it is where they are missing (another version), so
the worst case is the old race, never a broken app; ``tests/test_rerun_fold.py`` drives the real
``ScriptRequests`` and fails on a version that changes them.
"""

from __future__ import annotations

from dataclasses import fields, replace
from functools import wraps
from typing import Any, Callable

_MARK = "_cns_keeps_navigation"
_ASKED = "_cns_asked_page"           # on a ScriptRequests: the page of its last rerun that was not automatic
_KEPT = ("page_script_hash", "page_name", "query_string", "is_auto_rerun")


def keep_navigation_over_timer_reruns() -> bool:
    """Install the wrap once per process; True when it is in place."""
    try:
        from streamlit.runtime.scriptrunner_utils.script_requests import (RerunData, ScriptRequests,
                                                                          ScriptRequestType)
    except ImportError:
        return False
    fold = getattr(ScriptRequests, "_request_rerun_locked", None)
    if fold is None or not set(_KEPT) <= {f.name for f in fields(RerunData)}:
        return False
    if getattr(fold, _MARK, False):
        return True
    ScriptRequests._request_rerun_locked = _keeping_the_page(fold, ScriptRequestType.RERUN,
                                                                ScriptRequestType.STOP)
    return True


def _keeping_the_page(fold: Callable[[Any, Any], bool], rerun_state: Any,
                      stop_state: Any) -> Callable[[Any, Any], bool]:
    @wraps(fold)
    def fold_keeping_the_page(requests: Any, new_data: Any) -> bool:
        asked = getattr(requests, _ASKED, None)
        if new_data.is_auto_rerun and asked and new_data.page_script_hash not in ("", asked):
            return getattr(requests, "_state", None) != stop_state     # a tick for a page the reader has left
        pending = getattr(requests, "_rerun_data", None) if getattr(requests, "_state", None) == rerun_state \
            else None
        accepted = fold(requests, new_data)
        if accepted and not new_data.is_auto_rerun and new_data.page_script_hash:
            setattr(requests, _ASKED, new_data.page_script_hash)
        if accepted and pending is not None and new_data.is_auto_rerun and not pending.is_auto_rerun:
            requests._rerun_data = replace(requests._rerun_data, **{name: getattr(pending, name) for name in _KEPT})
        return accepted

    setattr(fold_keeping_the_page, _MARK, True)
    return fold_keeping_the_page
