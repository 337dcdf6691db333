"""A progress tick's automatic rerun must not undo a navigation that is still pending (pages/_rerun_fold.py),
driven through Streamlit's own ScriptRequests, so a Streamlit that changes the fold fails here."""

from __future__ import annotations

import pytest
from streamlit.runtime.scriptrunner_utils.script_requests import RerunData, ScriptRequests, ScriptRequestType

from pages import _rerun_fold


@pytest.fixture
def requests() -> ScriptRequests:
    assert _rerun_fold.keep_navigation_over_timer_reruns()
    assert _rerun_fold.keep_navigation_over_timer_reruns()    # installing twice wraps once
    return ScriptRequests()                  # CONTINUE: a run is under way


def _click(page: str) -> RerunData:
    return RerunData(query_string="", page_script_hash=page, page_name=page)


def _tick(page: str) -> RerunData:
    return RerunData(query_string="", page_script_hash=page, page_name=page, fragment_id="progress",
                     is_auto_rerun=True)


def test_a_tick_after_a_click_keeps_the_clicked_page(requests):
    assert requests.request_rerun(_click("graph"))
    assert requests.request_rerun(_tick("overview"))      # the browser still showed the overview
    pending = requests.on_scriptrunner_ready()
    assert pending.type == ScriptRequestType.RERUN
    assert pending.rerun_data.page_script_hash == "graph" and pending.rerun_data.page_name == "graph"
    assert not pending.rerun_data.is_auto_rerun and pending.rerun_data.fragment_id_queue == []


def test_a_click_after_a_tick_and_two_clicks_still_take_the_later_page(requests):
    assert requests.request_rerun(_tick("overview"))
    assert requests.request_rerun(_click("graph"))
    assert requests.on_scriptrunner_ready().rerun_data.page_script_hash == "graph"
    again = ScriptRequests()
    again.request_rerun(_click("graph"))
    again.request_rerun(_click("weights"))              # the reader changed their mind: the later click wins
    assert again.on_scriptrunner_ready().rerun_data.page_script_hash == "weights"


def test_a_tick_alone_reruns_its_fragment_on_its_page(requests):
    assert requests.request_rerun(_tick("overview"))
    pending = requests.on_scriptrunner_ready().rerun_data
    assert pending.page_script_hash == "overview" and pending.fragment_id_queue == ["progress"]
    assert pending.is_auto_rerun


def test_a_tick_from_the_page_left_is_dropped_once_the_new_page_runs(requests):
    assert requests.request_rerun(_click("graph"))
    assert requests.on_scriptrunner_ready().rerun_data.page_script_hash == "graph"     # the graph's run starts
    assert requests.request_rerun(_tick("overview"))      # sent before the browser knew of the click
    assert requests.on_scriptrunner_yield() is None         # the graph's run goes on
    assert requests.on_scriptrunner_ready().type == ScriptRequestType.STOP          # and nothing runs after it


def test_a_tick_from_the_page_a_server_switch_opened_still_runs(requests):
    assert requests.request_rerun(_click("corpus"))
    requests.on_scriptrunner_ready()
    assert requests.request_rerun(_click("sno"))           # st.switch_page from the corpus page: not automatic
    requests.on_scriptrunner_ready()
    assert requests.request_rerun(_tick("corpus"))         # the corpus page's last tick: dropped
    assert requests.on_scriptrunner_yield() is None
    assert requests.request_rerun(_tick("sno"))            # the page shown now ticks as before
    pending = requests.on_scriptrunner_ready()
    assert pending.type == ScriptRequestType.RERUN and pending.rerun_data.fragment_id_queue == ["progress"]


def test_a_stopped_runner_still_refuses_a_tick(requests):
    assert requests.request_rerun(_click("graph"))
    requests.request_stop()
    assert not requests.request_rerun(_tick("overview"))
    assert not requests.request_rerun(_tick("graph"))
