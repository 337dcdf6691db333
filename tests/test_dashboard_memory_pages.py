"""AppTests of the Engrams, Judge and Coherence pages, each opened on its own.

The memory is a real Chroma store of 30 engrams written through MemoryService
(scores 1-5 and ungraded); the judge test runs a real bus proxy on free ports and
publishes ``critique.result`` itself, then reruns the page as the fragment tick would.
"""

from __future__ import annotations

import json
import re
import os
import socket
import time

import pytest
from streamlit.testing.v1 import AppTest

from cns_core.views import display
from cns_core.agents.bus import CRITIQUE, Publisher
from fake_ollama import fake_grade
from judge_loop_helpers import (  # noqa: F401  (fixtures)
    bus_config, fake_ollama, free_port, judge_settings, lean_torch, ollama, proxy, wait_for,
)

pytestmark = pytest.mark.usefixtures("lean_torch")

N_ENGRAMS = 30
SCORES = [1, 2, 3, 4, 5, None]      # engram i gets SCORES[i % 6]
BADGE_COLOUR = re.compile(r'data-grade="([^"]+)"[^>]*background:(#[0-9a-f]{6})')


def _page(name: str) -> AppTest:
    return AppTest.from_file(f"../pages/{name}", default_timeout=60)


@pytest.fixture(scope="module")
def filled_state(tmp_path_factory):
    """A state folder with 30 engrams (5 per grade, 5 ungraded) and a small coherence log."""
    from cns_core.memory import MemoryService

    folder = tmp_path_factory.mktemp("dashboard-state")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CNS_STATE_DIR", str(folder))
        memory = MemoryService()
        now = time.time()
        ids = memory.write_episodic_many([
            {"query": f"Question {i} about <b>tides</b>?", "answer": f"Answer {i}: the moon pulls the sea.",
             "session_id": f"s{i % 3}", "query_id": f"q{i:02d}", "timestamp": now - 3600 * i}
            for i in range(N_ENGRAMS)])
        for i, qid in enumerate(ids):
            if SCORES[i % 6] is not None:
                memory.update_engram_score(qid, SCORES[i % 6], f"Feedback {i} with \"quotes\" & <tags>")
    lines = []
    for tick in range(1, 5):
        for p in ("p1", "p2"):
            lines.append({"tick": tick, "chain_id": f"chain-{tick}", "p_id": f"{p}", "entail": 0.5,
                          "contradict": 0.6 if tick == 3 else 0.1, "uncertainty": 0.3,
                          "types": ["negation"] if tick == 3 else [], "drift_facets": [],
                          "coherence_chain": 0.2 if tick == 3 else 0.8,
                          "contradiction_density": 0.5 if tick == 3 else 0.0, "blocked": tick == 3})
    (folder / "coherence.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines) + '{"torn', "utf-8")
    return folder


@pytest.fixture
def memory_env(filled_state, monkeypatch):
    monkeypatch.setenv("CNS_STATE_DIR", str(filled_state))
    return filled_state


def _badges(at: AppTest) -> list[tuple[str, str]]:
    html = "".join(m.value for m in at.markdown)
    return BADGE_COLOUR.findall(html)


def test_engrams_lists_every_grade_with_the_spec_colours(memory_env):
    at = _page("engrams.py").run()
    assert not at.exception
    assert any("30** of **30** engrams" in m.value for m in at.markdown)
    badges = _badges(at)
    assert len(badges) == 25                          # one page
    expected = {"5": "#22c55e", "4": "#22c55e", "3": "#f59e0b", "2": "#ef4444", "1": "#ef4444", "none": "#9ca3af"}
    assert {g for g, _ in badges} == set(expected)
    for grade, colour in badges:
        if grade == "none":
            assert colour == display.GREY
        else:
            assert colour == expected[grade]
    html = "".join(m.value for m in at.markdown)
    assert "&lt;b&gt;tides&lt;/b&gt;" in html and "<b>tides</b>" not in html          # user text escaped
    assert 'title="Feedback 0 with &quot;quotes&quot; &amp; &lt;tags&gt;"' in html   # feedback on hover
    assert at.expander and any(e.label == "Judge feedback" for e in at.expander)


def test_engrams_filters_change_the_list(memory_env):
    at = _page("engrams.py").run()
    at.checkbox(key="cns_engrams_ungraded").check().run()
    assert not at.exception
    assert {g for g, _ in _badges(at)} == {"none"} and len(_badges(at)) == 5
    at.checkbox(key="cns_engrams_ungraded").uncheck().run()
    at.slider(key="cns_engrams_scores").set_value((4, 5)).run()
    badges = _badges(at)
    assert len(badges) == 10 and {g for g, _ in badges} == {"4", "5"}
    assert {c for _, c in badges} == {"#22c55e"}
    at.text_input(key="cns_engrams_contains").input("question 7 ").run()   # q07 has grade 2: outside 4-5
    assert any("0** of **30**" in m.value for m in at.markdown)
    assert any("No engram matches" in i.value for i in at.info)


def test_engrams_page_two_and_histogram(memory_env):
    at = _page("engrams.py").run()
    at.number_input(key="cns_engrams_page").set_value(2).run()
    assert not at.exception
    assert len(_badges(at)) == N_ENGRAMS - 25
    chart = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert chart["data"][0]["y"] == [5, 5, 5, 5, 5, 5]


def test_engrams_agreement_table_is_uncut_and_the_ungraded_count_is_the_judge_pages(memory_env):
    from table_fit import cut_cells

    at = _page("engrams.py").run()
    assert not at.exception
    assert cut_cells(next(d for d in at.dataframe if "wrong, person wrong" in d.value.columns)) == []
    counts = "Memory: 30 engrams · 5 ungraded (pending grades) · 0 quarantined"     # 5 of the 30 have no grade
    assert any(c.value == counts for c in at.caption)
    judge = _page("judge.py").run()
    assert any(c.value == counts for c in judge.caption)                    # the same line, one computation
    pending = next((c.value for c in judge.caption if c.value.startswith("Pending grades")), "")
    assert pending.startswith("Pending grades: 5 turn(s) wait")


def test_memory_counts_are_read_again_on_every_rerun_the_same_on_every_page(tmp_path, monkeypatch):
    """Issue 50 item 5: 40 s after a send the Judge page still said 47 pending while Engrams said 48. The counts
    are read from the memory on each rerun (the Judge page's every 2 s), never kept from an earlier one."""
    from cns_core.memory import MemoryService

    monkeypatch.setenv("CNS_STATE_DIR", str(tmp_path))
    memory = MemoryService()

    def store(*ids: str) -> None:
        memory.write_episodic_many([{"query": f"Question {i}?", "answer": f"Answer {i}.", "session_id": "s",
                                     "query_id": i} for i in ids])

    store("c1", "c2", "c3")
    memory.update_engram_score("c1", 4, "fine")
    memory.write_quarantined("Held?", "Held back.", "s", query_id="h1", reason="contradiction")
    pages = [_page("engrams.py").run(), _page("judge.py").run()]

    def lines() -> list[str]:
        return [next(c.value for c in at.caption if c.value.startswith("Memory:")) for at in pages]

    assert lines() == ["Memory: 3 engrams · 2 ungraded (pending grades) · 1 quarantined"] * 2
    store("c4", "c5")                                   # the judge loop stores two turns meanwhile
    memory.update_engram_score("c2", 3, "ok")
    for at in pages:
        at.run()
        assert not at.exception
    assert lines() == ["Memory: 5 engrams · 3 ungraded (pending grades) · 1 quarantined"] * 2


def test_engrams_empty_memory_shows_the_empty_state(state_dir):
    at = _page("engrams.py").run()
    assert not at.exception
    assert any("memory is empty" in i.value for i in at.info)


def test_judge_without_a_proxy_says_how_to_start_it(state_dir, monkeypatch):
    monkeypatch.setenv("CNS_BUS_PUB_PORT", str(free_port()))
    monkeypatch.setenv("CNS_BUS_SUB_PORT", str(free_port()))
    monkeypatch.setenv("CNS_OLLAMA_URL", f"http://127.0.0.1:{free_port()}")
    url = os.environ["CNS_OLLAMA_URL"]
    at = _page("judge.py").run()
    assert not at.exception
    assert any("not running" in w.value for w in at.warning)
    assert any("tried the **ollama** backend at" in w.value and url in w.value for w in at.warning)
    host = url.removeprefix("http://")
    assert [c.value for c in at.code] == ["cns agents",
                                          f"OLLAMA_HOST={host} ollama serve   # then, once: ollama pull prometheus:7b"]
    at.text_area(key="cns_judge_query").input("What is the capital of Australia?")
    at.text_area(key="cns_judge_answer").input("Canberra.")
    at.button[0].click().run(timeout=240)      # the first write loads the embedder
    assert not at.exception
    assert any("Stored ungraded" in c.value for c in at.caption)
    turn = at.session_state["cns_judge_turns"][0]
    from cns_core.agents.pending import pending_turns
    from cns_core.memory import MemoryService

    kept = [t for t in pending_turns(MemoryService()) if t.query_id == turn["query_id"]]
    assert [(t.query, t.answer) for t in kept] == [("What is the capital of Australia?", "Canberra.")]


def test_judge_with_the_loop_up_on_an_openai_compatible_judge(bus_config, proxy, ollama, monkeypatch):
    """Paste a turn: the real CriticAgent grades it through the test server's OpenAI API; the badge arrives."""
    from cns_core.agents.critic import CriticAgent
    from cns_core.agents.prometheus import critic_settings

    for name, value in (("CNS_BUS_PUB_PORT", bus_config.pub_port), ("CNS_BUS_SUB_PORT", bus_config.sub_port),
                        ("CNS_JUDGE_BACKEND", "openai"), ("CNS_OPENAI_BASE_URL", f"{ollama.url}/v1"),
                        ("CNS_CRITIC_MODEL", "prometheus:7b")):
        monkeypatch.setenv(name, str(value))
    with CriticAgent(bus_config, settings=critic_settings()):
        at = _page("judge.py").run()
        assert not at.exception and not at.warning
        assert any("openai backend" in c.value for c in at.caption)
        at.text_area(key="cns_judge_query").input("What is the capital of Australia?")
        at.text_area(key="cns_judge_answer").input("Canberra is the capital.")
        at.button[0].click().run()
        wait_for(lambda: _badges(at.run()), 60, 0.1, "the judge's badge on the page")
    assert not at.exception
    assert [g for g, _ in _badges(at)] == [str(fake_grade("Canberra is the capital."))]
    assert ollama.requests and ollama.requests[-1]["model"] == "prometheus:7b"


def test_judge_shows_the_answer_then_the_badge(bus_config, proxy, monkeypatch):
    monkeypatch.setenv("CNS_BUS_PUB_PORT", str(bus_config.pub_port))
    monkeypatch.setenv("CNS_BUS_SUB_PORT", str(bus_config.sub_port))
    monkeypatch.setenv("CNS_OLLAMA_URL", f"http://127.0.0.1:{free_port()}")
    at = _page("judge.py").run()
    assert not at.exception
    assert any("**Judge loop**" in m.value and ">running<" in m.value for m in at.markdown)
    assert not any("not running" in w.value for w in at.warning)
    at.text_area(key="cns_judge_query").input("What pulls the <tides>?")
    at.text_area(key="cns_judge_answer").input("The moon & the sun.")
    at.button[0].click().run()
    assert not at.exception
    html = "".join(m.value for m in at.markdown)
    assert "The moon &amp; the sun." in html and "What pulls the &lt;tides&gt;?" in html
    assert not _badges(at)
    assert any("Waiting for the judge" in c.value for c in at.caption)
    turn = at.session_state["cns_judge_turns"][0]
    with Publisher(bus_config, source="test") as pub:
        assert pub.wait_ready(5)
        pub.publish(CRITIQUE, {"query_id": turn["query_id"], "score": 3, "feedback": "Partly <right>.",
                               "session_id": "dashboard"})
        # at.run() is what the fragment's tick does in a browser
        wait_for(lambda: _badges(at.run()), 60, 0.1, "the judge's badge on the page")
    assert not at.exception
    assert _badges(at) == [("3", "#f59e0b")]
    assert 'title="Partly &lt;right&gt;."' in "".join(m.value for m in at.markdown)


def test_judge_asks_generator_agent_and_shows_the_graded_answer(bus_config, proxy, judge_settings, ollama,
                                                                monkeypatch):
    """The ask flow over the real agents and a fake Ollama: query.request -> answer -> grade on the page."""
    import dataclasses

    from cns_core.agents.critic import CriticAgent
    from cns_core.agents.generator import GeneratorAgent
    from cns_core.agents.prometheus import generator_settings

    for name, value in (("CNS_BUS_PUB_PORT", bus_config.pub_port), ("CNS_BUS_SUB_PORT", bus_config.sub_port),
                        ("CNS_OLLAMA_URL", ollama.url)):
        monkeypatch.setenv(name, str(value))
    gen = dataclasses.replace(generator_settings(), url=ollama.url, timeout=2.0)
    with GeneratorAgent(bus_config, settings=gen), CriticAgent(bus_config, settings=judge_settings):
        at = _page("judge.py").run()
        assert not at.exception and not at.warning          # proxy, Ollama and the judge model are all there
        at.radio(key="cns_judge_mode").set_value("Ask a question (GeneratorAgent answers)")
        at.text_area(key="cns_judge_query").input("Name a prime number.")
        at.button[0].click().run()
        # The turn is on the page at once; how far it got by this run depends on how fast the agents answer.
        assert "Name a prime number." in "".join(m.value for m in at.markdown)
        assert (any(c.value.startswith(("Waiting for GeneratorAgent", "Waiting for the judge")) for c in at.caption)
                or _badges(at))
        wait_for(lambda: _badges(at.run()), 60, 0.1, "the judge's badge on the page")
    assert not at.exception
    answer = "Answer: Name a prime number."
    assert answer in "".join(m.value for m in at.markdown)
    grade = str(fake_grade(answer))
    assert [g for g, _ in _badges(at)] == [grade]


def test_coherence_tags_the_default_example_and_reads_the_log(memory_env):
    from cns_core.views import ui_state

    at = _page("coherence.py").run()
    assert not at.exception
    sno = next(iter(ui_state.load_examples().values()))
    html = "".join(m.value for m in at.markdown)
    for claim in sno.claims:
        assert display.escape(claim.id) in html
    assert re.search(r">(contradicted|supported|neutral)</span>", html)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Chains checked"] == "4" and metrics["Blocked"] == "1"
    at.selectbox(key="cns_coherence_blocked").set_value("blocked").run()
    assert any(c.value.startswith("2 of 8 lines") for c in at.caption)
    at.text_input(key="cns_coherence_chain").input("CHAIN-9").run()
    assert any(c.value.startswith("0 of 8 lines") for c in at.caption)


def test_coherence_splits_sno_and_stream_and_leaves_uncompared_chains_out(state_dir):
    """Issue 31 item 8: tabs apart; chains with nothing to compare are n/a (not 0); a share says its count."""
    lines = []
    for i in range(24):
        compared = i >= 2                                   # the first two turns met an empty memory
        lines.append({"tick": i + 1, "chain_id": f"t{i}", "p_id": "p0", "entail": 0.8 if compared else 0.0,
                      "contradict": 0.0, "uncertainty": 0.2, "types": [],
                      "drift_facets": ["self_trait"] if i in (12, 13) else [],
                      "coherence_chain": (0.1 if i == 14 else 0.8) if compared else 0.0,
                      "contradiction_density": 0.0, "blocked": False, "latency_ms": 5.0,
                      "evidence_pairs": 2 if compared else 0, "model_pairs": 2 if compared else 0})
    (state_dir / "coherence.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines), "utf-8")
    at = _page("coherence.py").run()
    assert not at.exception
    assert [t.label for t in at.tabs] == ["Current SNO: claim check", "Engram stream: the hook's log"]
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Chains checked"] == "24"
    assert metrics["Mean coherence"] == f"{(21 * 0.8 + 0.1) / 22:.2f}"
    assert metrics["Drift chains followed by a spike"] == "100%"
    captions = [c.value for c in at.caption]
    assert "2 of 2 drift chains; too few to read" in captions
    assert any(c.startswith("2 chain(s) had nothing to compare") for c in captions)
    chart = next(json.loads(c.proto.spec) for c in at.get("plotly_chart")
                 if "Chain metrics" in json.loads(c.proto.spec)["layout"]["title"]["text"])
    coherence = next(d for d in chart["data"] if d["name"] == "coherence")
    assert len(coherence["y"]) == 22 and 0.0 not in coherence["y"]
    log_columns = json.loads(at.dataframe[-1].proto.columns)                # issue 31 item 9: labels
    assert log_columns["chain_id"]["label"] == "Chain" and log_columns["coherence_chain"]["label"] == "Chain coherence"


def test_coherence_without_a_log_says_so(state_dir):
    at = _page("coherence.py").run()
    assert not at.exception
    assert any("No coherence log yet" in i.value for i in at.info)


def test_build_filters_maps_the_widgets():
    from datetime import date

    from cns_core.views.engram_view import FilterChoice, build_filters, page_count

    f = build_filters(FilterChoice())
    assert f.buckets is None and f.since is None
    f = build_filters(FilterChoice(score_range=(2, 3), since=date(2026, 1, 2), until=date(2026, 1, 2),
                                   contains="  "))
    assert f.buckets == (3, 2) and f.contains is None
    assert f.until - f.since == pytest.approx(86400, abs=0.01)
    assert build_filters(FilterChoice(score_range=(4, 5), ungraded_only=True)).buckets == (-1,)
    with pytest.raises(ValueError, match="since"):
        build_filters(FilterChoice(since=date(2026, 2, 1), until=date(2026, 1, 1)))
    assert (page_count(0, 25), page_count(25, 25), page_count(26, 25)) == (1, 1, 2)


def test_log_view_filters_and_series(filled_state):
    from cns_core.coherence.log_view import chain_series, filter_log, load_log, summarise

    rows = load_log(filled_state / "coherence.jsonl")
    assert len(rows) == 8                                  # the torn last line is skipped
    series = chain_series(rows)
    assert [p["tick"] for p in series] == [1, 2, 3, 4]
    assert [p["coherence_chain"] for p in series] == [0.8, 0.8, 0.2, 0.8]
    assert len(filter_log(rows, types=["negation"])) == 2
    assert len(filter_log(rows, chain_id="CHAIN-1", blocked=False)) == 2
    assert filter_log(rows, chain_id="chain-3", blocked=False) == []
    s = summarise(rows)
    assert (s.chains, s.blocked_chains, s.types) == (4, 1, ("negation",))
    assert s.mean_density == pytest.approx(0.125)


def _fresh_coherence_hook() -> None:
    """The page's hook is an ``st.cache_resource`` shared by every AppTest of this process."""
    from pages import _frame

    _frame.coherence_hook.clear()


def test_coherence_says_who_judged_and_checks_again_without_a_time_limit(memory_env, tmp_path, monkeypatch):
    import shutil

    import yaml

    from cns_core.coherence import CoherenceSettings
    from cns_core.config import config_dir

    _fresh_coherence_hook()
    at = _page("coherence.py").run()
    assert not at.exception and not at.warning
    captions = [c.value for c in at.caption]
    budget = CoherenceSettings.from_config().latency.budget("sno_check") / 1000      # seconds, from the config
    assert any(re.match(r"The NLI model judged (\d+) of \1 claims; 0 fell back to heuristics\. Took .+ of a "
                        + re.escape(f"{budget:.1f} s budget."), c) for c in captions), captions
    # the log of the fixture was written before the log recorded who judged: said, not counted
    assert any("4 older chain(s) in the log predate this record" in c for c in captions), captions
    assert not [b for b in at.button if b.key == "cns_coherence_unlimited"]

    # a budget too small for any model batch: every claim falls back, and a check without a limit is offered
    folder = tmp_path / "config"
    shutil.copytree(config_dir(), folder)
    cfg = yaml.safe_load((folder / "coherence.yaml").read_text())
    cfg["budgets"]["sno_check_ms"] = 0.001
    (folder / "coherence.yaml").write_text(yaml.safe_dump(cfg))
    monkeypatch.setenv("CNS_CONFIG_DIR", str(folder))
    _fresh_coherence_hook()
    try:
        at = _page("coherence.py").run()
        assert not at.exception
        assert any("Degraded: model_budget" in w.value for w in at.warning)
        assert any(re.match(r"The NLI model judged 0 of (\d+) claims; \1 fell back to heuristics\.", c.value)
                   for c in at.caption)
        at.button(key="cns_coherence_unlimited").click().run()
        assert not at.exception and not at.warning
        assert any(re.match(r"The NLI model judged (\d+) of \1 claims; 0 fell back to heuristics\. Took .+ with "
                            r"no time limit\.", c.value) for c in at.caption), [c.value for c in at.caption]
        assert not [b for b in at.button if b.key == "cns_coherence_unlimited"]
    finally:
        _fresh_coherence_hook()


# ----- issue 31: one check for the judge loop; no promise of a button that is not there -------------
def test_judge_page_never_uses_a_stranger_on_the_bus_ports_and_says_so_once(state_dir, monkeypatch):
    """Something that is not this folder's judge loop holds the bus ports (here: bare listening sockets that
    accept connections and answer nothing). The page shows one status for it, stores a turn ungraded, and
    does not call the ports "reachable" while a listener below says nothing answers."""
    holders = [socket.create_server(("127.0.0.1", 0)) for _ in range(2)]
    try:
        pub, sub = (h.getsockname()[1] for h in holders)
        monkeypatch.setenv("CNS_BUS_PUB_PORT", str(pub))
        monkeypatch.setenv("CNS_BUS_SUB_PORT", str(sub))
        monkeypatch.setenv("CNS_OLLAMA_URL", f"http://127.0.0.1:{free_port()}")
        at = _page("judge.py").run()
        assert not at.exception and not at.error
        loop = [m.value for m in at.markdown if "**Judge loop**" in m.value]
        assert len(loop) == 1 and ">not this folder" in loop[0], loop
        assert not any("Bus proxy" in m.value for m in at.markdown)
        warnings = [w.value for w in at.warning]
        assert any(f"Something else holds the bus ports {pub}/{sub}" in w and
                   f"not a judge loop of this state folder (`{state_dir.resolve()}`)" in w and
                   "Turns are never sent to it" in w for w in warnings), warnings
        assert "cns run" in [c.value for c in at.code]
        at.text_area(key="cns_judge_query").input("What is the capital of Australia?")
        at.text_area(key="cns_judge_answer").input("Canberra.")
        at.button[0].click().run(timeout=240)
        assert not at.exception and not at.error
        assert any("Stored ungraded (no judge loop of this state folder answered)" in c.value for c in at.caption)
    finally:
        for h in holders:
            h.close()


def test_judge_page_promises_the_pending_button_only_where_it_is(state_dir, monkeypatch):
    monkeypatch.setenv("CNS_BUS_PUB_PORT", str(free_port()))
    monkeypatch.setenv("CNS_BUS_SUB_PORT", str(free_port()))
    monkeypatch.setenv("CNS_OLLAMA_URL", f"http://127.0.0.1:{free_port()}")
    at = _page("judge.py").run()
    assert not at.exception
    buttons = [b.label for b in at.button]
    assert "Grade pending turns" not in buttons
    assert not any("button below" in w.value or "Grade pending turns" in w.value for w in at.warning), \
        [w.value for w in at.warning]
    # Ollama cannot be reached, so whether it has the judge model is unknown, never "missing"
    model = [m.value for m in at.markdown if "**Judge model**" in m.value]
    assert len(model) == 1 and ">unknown: server unreachable<" in model[0] and "missing" not in model[0]


def test_judge_page_with_the_loop_up_and_no_judge_points_at_the_button_it_shows(bus_config, proxy, monkeypatch):
    monkeypatch.setenv("CNS_BUS_PUB_PORT", str(bus_config.pub_port))
    monkeypatch.setenv("CNS_BUS_SUB_PORT", str(bus_config.sub_port))
    monkeypatch.setenv("CNS_OLLAMA_URL", f"http://127.0.0.1:{free_port()}")
    at = _page("judge.py").run()
    assert not at.exception
    assert "Grade pending turns" in [b.label for b in at.button]
    assert any("**Grade pending turns** below" in w.value for w in at.warning)


# ----- issue 31 item 7: search by meaning, scoring a turn, outlined disagreements ---------------------------
TOPICS = [("au1", "What is the capital of Australia?", "Canberra is the capital of Australia."),
          ("au2", "Quick question: what is the capital of Australia?", "The capital is Canberra."),
          ("co1", "How many continents are there?", "There are seven continents."),
          ("bp1", "What is the boiling point of water at sea level?", "Water boils at 100 degrees Celsius."),
          ("bp2", "I was wondering, what is the boiling point of water?", "It is 100 C at sea level.")]


@pytest.fixture
def topic_state(state_dir):
    """Five turns on three topics, the newest last (so "newest first" would put boiling points on top);
    bp1 graded 5 with a Trust Score of 0.1 (a disagreement), the rest without a Trust Score."""
    from cns_core.memory import MemoryService

    memory = MemoryService()
    now = time.time()
    memory.write_episodic_many([{"query": q, "answer": a, "session_id": "s", "query_id": qid,
                                 "timestamp": now - 60 * (len(TOPICS) - i)} for i, (qid, q, a) in enumerate(TOPICS)])
    memory.update_engram_score("bp1", 5, "Correct.")
    memory.record_trust({"bp1": {"trust_score": 0.1, "trust_profile": "verification", "trust_settings": "t",
                                 "trust_complete": True, "trust_claims": 1, "trust_evidence": 0}})
    return state_dir


def _cards(at: AppTest) -> list[str]:
    """The engram ids of the cards, top to bottom."""
    return re.findall(r"id ([a-z]{2}\d)</div>", "".join(m.value for m in at.markdown))


def test_engrams_similar_in_meaning_ranks_by_similarity_with_a_cut_off(topic_state):
    at = _page("engrams.py").run()
    assert _cards(at) == ["bp2", "bp1", "co1", "au2", "au1"]                # newest first without a search
    at.text_input(key="cns_engrams_similar").input("capital city of a country").run()
    assert not at.exception
    assert at.selectbox(key="cns_engrams_order_similar").value == "Most similar first"
    assert sorted(_cards(at)) == ["au1", "au2"]                            # continents and boiling points cut
    html = "".join(m.value for m in at.markdown)
    sims = [float(x) for x in re.findall(r"similarity (\d\.\d\d)", html)]
    assert len(sims) == 2 and sims == sorted(sims, reverse=True) and min(sims) >= 0.3
    assert any("2** of **5** engrams match (similarity ≥ 0.30)" in m.value for m in at.markdown)
    at.slider(key="cns_engrams_min_similarity").set_value(0.0).run()      # everything, still most similar first
    assert sorted(_cards(at)[:2]) == ["au1", "au2"] and len(_cards(at)) == 5


def test_engrams_score_trust_button_scores_that_turn(topic_state):
    from cns_core.memory import MemoryService

    at = _page("engrams.py").run()
    keys = [b.key for b in at.button]
    assert "cns_engrams_trust_au1" in keys and "cns_engrams_trust_bp1" not in keys   # bp1 has its score
    at.button(key="cns_engrams_trust_au1").click().run(timeout=300)
    assert not at.exception
    [engram] = MemoryService().get(["au1"])
    # scored now, with the profile in force; a one-line answer with no reference or sources leaves every weighted
    # critic nothing to judge, so it gets no Trust Score and the page says why (never a number for what no critic saw)
    assert engram.metadata["trust_profile"] == "verification" and engram.trust_score is None
    assert "nothing to judge" in engram.metadata["trust_error"]
    assert any(s.value.startswith("No Trust Score for au1: nothing to judge") and "no reference or sources" in s.value
               for s in at.success)


def test_engrams_disagreement_outlines_the_whole_card(topic_state):
    from cns_core.views.engram_view import DISAGREE_CARD

    at = _page("engrams.py").run()
    html = "".join(m.value for m in at.markdown)
    assert f'div[class*="st-key-{DISAGREE_CARD}"]' in html and f"border:2px solid {display.RED}" in html
    keys = _block_keys(at.main)
    assert f"{DISAGREE_CARD}bp1" in keys
    assert {k for k in keys if k.startswith(DISAGREE_CARD)} == {f"{DISAGREE_CARD}bp1"}


def _block_keys(node) -> list[str]:
    """The user keys of every keyed block and element below ``node`` (AppTest keeps them in ``proto.id``
    as ``$$ID-<hash>-<key>``)."""
    out = []
    for child in getattr(node, "children", {}).values():
        proto = getattr(child, "proto", None)
        ident = getattr(proto, "id", "") if proto is not None else ""
        if ident.startswith("$$ID-"):
            out.append(ident.split("-", 2)[2])
        out += _block_keys(child)
    return out
