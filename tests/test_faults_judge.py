"""A judge whose reply breaks HTTP (issue 53, items 1, 2 and 7): cut short, nested past any parser, dripped.

The fake judge is a real HTTP server on 127.0.0.1 (tests/fake_ollama.py, ``BROKEN_REPLIES``). What a user
would see is asserted: the broken grade ends with its reason on the turn (score null: the pending grader
asks again), the CriticAgent is back in IDLE and grades the next turn, a dripping judge is cut off at the
judge timeout for the whole reply, and no control character of a query id or a judge's feedback reaches a
terminal or a log raw.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from concurrent.futures import ThreadPoolExecutor

import pytest

from cns_core.agents.bus import CRITIQUE, RESPONSE, Envelope, Publisher, Subscriber
from cns_core.agents.chat import ChatBadResponse, ChatTimeout
from cns_core.agents.backends import make_chat_client
from cns_core.agents.critic import CriticAgent
from cns_core.agents.prometheus import critic_settings
from cns_core.agents.state_machine import CriticState
from fake_ollama import JUDGE_MODEL, fake_grade
from judge_loop_helpers import bus_config, fake_ollama, ollama, proxy, wait_for  # noqa: F401  (fixtures)

BACKENDS = ["ollama", "openai"]


def settings_for(backend: str, server, **changes):
    url = server.url if backend == "ollama" else f"{server.url}/v1"
    return dataclasses.replace(critic_settings(), backend=backend, url=url, model=JUDGE_MODEL, timeout=1.0,
                               **changes)


def critiques(sub: Subscriber, wanted: set[str]) -> dict[str, dict]:
    """The critiques of ``wanted`` query ids, each waited for on the bus (60 s at most for the next one)."""
    got: dict[str, dict] = {}
    while not wanted <= set(got):
        envelope = sub.recv(60)
        assert envelope is not None, f"only {sorted(got)} of {sorted(wanted)} arrived"
        got[envelope.payload["query_id"]] = envelope.payload
    return got


@pytest.mark.parametrize("fault, reason", [("truncate", "bad_response"), ("nest", "bad_response"),
                                           ("drip", "timeout")])
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_broken_reply_ends_that_grade_and_the_critic_grades_the_next_turn(bus_config, proxy, ollama, backend,
                                                                             fault, reason):
    """Item 1: a reply announcing 1,000,000 bytes and closing after 10 left the CriticAgent in GRADING
    (IncompleteRead), and 200,000 brackets did the same (RecursionError): every later turn failed with
    InvalidTransition. Now that grade ends with its reason and the next turn is graded."""
    settings = settings_for(backend, ollama)
    with CriticAgent(bus_config, settings=settings) as critic, Publisher(bus_config) as pub, \
            Subscriber([CRITIQUE], bus_config) as sub:
        sub.wait_ready(pub)
        pub.publish(RESPONSE, {"query": "Q1?", "answer": f"broken [fake-ollama:{fault}]", "query_id": "broken"})
        pub.publish(RESPONSE, {"query": "Q2?", "answer": "fine", "query_id": "next"})
        got = critiques(sub, {"broken", "next"})
        wait_for(lambda: critic.machine.state is CriticState.IDLE, 60, what="the critic back in IDLE")
        assert critic.running and critic.failures == 0
    assert got["broken"]["score"] is None and got["broken"]["error"].startswith(f"{reason}:"), got["broken"]
    assert got["next"]["score"] == fake_grade("fine") and got["next"]["error"] is None


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_dripping_judge_is_cut_off_at_the_timeout_for_the_whole_reply(ollama, backend, stream):
    """Item 2: headers, then a 5 KB body a byte at a time (every 0.05 s, under the 1 s timeout of each
    read) was read to its end, 250 s later. The deadline now covers the whole reply."""
    ollama.drip_s = 0.05
    settings = settings_for(backend, ollama, stream=stream)
    client = make_chat_client(settings.backend, settings.url, settings.timeout)
    messages = [{"role": "user", "content": "###Task Description: drip [fake-ollama:drip]"}]
    pool = ThreadPoolExecutor(1)
    try:
        call = pool.submit(client.chat, JUDGE_MODEL, messages, timeout=settings.timeout, stream=stream)
        with pytest.raises(ChatTimeout, match="within 1 s"):
            call.result(timeout=15)          # the reply would take 250 s: a call still running then has failed
    finally:
        pool.shutdown(wait=False)


@pytest.mark.parametrize("fault, words", [("truncate", "broke off after 10 bytes, 999,990 more announced"),
                                          ("nest", "nested more than 64 levels deep")])
def test_a_broken_reply_is_a_typed_error_naming_what_broke(ollama, fault, words):
    client = make_chat_client("ollama", ollama.url, 1.0)
    with pytest.raises(ChatBadResponse, match=words):
        client.chat(JUDGE_MODEL, [{"role": "user", "content": f"[fake-ollama:{fault}]"}])


def test_a_failing_grade_of_a_hostile_query_id_logs_it_escaped(ollama, caplog):
    """Item 7: the query id ``esc ESC[2J bel BEL id`` was printed raw in the agents' log."""
    critic = CriticAgent(settings=settings_for("ollama", ollama))     # not started: its publish fails, logged too
    hostile = "esc\x1b[2Jbel\x07id\x00\x9b\x7f"
    with caplog.at_level(logging.WARNING):
        critic.handle(Envelope(subject=RESPONSE, payload={"query": "Q?", "answer": "x [fake-ollama:error]",
                                                          "query_id": hostile}))
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("cns_core.agents.critic")]
    assert any("no score for esc\\x1b[2Jbel\\x07id\\x00\\x9b\\x7f" in line for line in lines), lines
    assert not any(c in line for line in lines for c in "\x1b\x07\x00\x9b\x7f")
    assert critic.machine.state is CriticState.IDLE


def test_cns_grade_prints_the_judges_feedback_with_control_characters_escaped(capsys):
    """Item 7: ``cns grade`` printed the judge's feedback with raw ESC and BEL."""
    from cns_core.cli.agents import _print_critique

    assert _print_critique({"query_id": "q", "score": 4, "judge_model": "m\x1b]0;x\x07",
                            "feedback": "Good.\x1b[2J\x07 Line\nnext\x00\x85"}, as_json=False) == 0
    assert _print_critique({"query_id": "q", "score": None, "error": "http_error: \x1b[31mred"}, as_json=False) == 1
    out = capsys.readouterr().out
    assert "feedback: Good.\\x1b[2J\\x07 Line\\x0anext\\x00\\x85" in out and "judge: m\\x1b]0;x\\x07" in out
    assert "score: none (http_error: \\x1b[31mred)" in out
    assert not any(c in out.replace("\n", "") for c in "\x1b\x07\x00\x85")
    critique = {"query_id": "q", "score": 4, "feedback": "ok\x1b[2J\x85\x7f"}
    _print_critique(critique, as_json=True)
    out = capsys.readouterr().out
    assert json.loads(out) == critique and not any(c in out for c in "\x1b\x85\x7f")
