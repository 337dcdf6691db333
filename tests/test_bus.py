"""The ZeroMQ bus: envelopes, proxy, readiness, malformed messages, the journal, configuration."""

from __future__ import annotations

import json
import time

import pytest
import zmq

from cns_core.agents.bus import (
    CRITIQUE,
    RESPONSE,
    BusError,
    BusProxy,
    Envelope,
    MalformedMessage,
    Publisher,
    Subscriber,
    bus_settings,
)
from cns_core.agents.journal import JournalUnavailable, journal_tail, replay
from cns_core.config import ConfigError
from judge_loop_helpers import bus_config, free_port, proxy, wait_for  # noqa: F401  (fixtures)


def test_an_envelope_round_trips_through_its_frames():
    env = Envelope(subject=RESPONSE, payload={"query": "Q", "n": 3, "nested": {"a": [1, 2]}}, source="t")
    frames = env.encode()
    assert frames[0] == RESPONSE.encode() and json.loads(frames[1])["message_id"] == env.message_id
    assert Envelope.decode(frames) == env


@pytest.mark.parametrize("frames, problem", [
    ([b"response.generation"], "expected 2 frames"),
    ([b"response.generation", b"{not json"], "Invalid JSON"),
    ([b"critique.result", b'{"subject": "critique.result", "payload": 5}'], "payload"),
    ([b"critique.result", b'{"subject": "critique.result", "payload": {}, "surprise": 1}'], "surprise"),
    ([b"critique.result", b'{"subject": "Bad Subject!", "payload": {}}'], "subject"),
    ([b"critique.result", b'{"subject": "response.generation", "payload": {}}'], "differs"),
    ([b"critique.result", b'{"subject": "critique.result", "payload": {}, "timestamp": "noon"}'], "timestamp"),
])
def test_malformed_frames_are_named(frames, problem):
    with pytest.raises(MalformedMessage, match=problem):
        Envelope.decode(frames)


def test_a_payload_that_is_not_json_is_refused_before_sending():
    with pytest.raises(ValueError, match="payload of 'critique.result'"):
        Envelope(subject=CRITIQUE, payload={"when": object()}).encode()


def test_publish_and_subscribe_through_the_proxy(bus_config, proxy):
    with Publisher(bus_config) as pub, Subscriber([CRITIQUE], bus_config) as sub:
        assert pub.wait_ready(2.0)
        sub.wait_ready(pub)
        sent = [pub.publish(CRITIQUE, {"i": i}) for i in range(50)]
        pub.publish(RESPONSE, {"not": "for this subscriber"})
        pub.publish("critique.resultant", {"shares": "a prefix"})
        got = sub.recv_batch(100, timeout=5)
        while len(got) < 50:
            more = sub.recv_batch(100, timeout=5)
            assert more, f"only {len(got)} of 50 arrived"
            got += more
        assert [e.message_id for e in got] == [e.message_id for e in sent]
        assert sub.recv(timeout=0.2) is None


def test_malformed_messages_are_dropped_and_the_subscriber_goes_on(bus_config, proxy, caplog):
    raw = zmq.Context.instance().socket(zmq.XPUB)
    raw.connect(bus_config.pub_address)
    raw.poll(2000, zmq.POLLIN) and raw.recv()          # the proxy's subscription: it listens now
    with Publisher(bus_config) as pub, Subscriber([CRITIQUE], bus_config) as sub:
        sub.wait_ready(pub)
        raw.send_multipart([b"critique.result", b"\xff\xfe garbage"])
        raw.send_multipart([b"critique.result"])
        raw.send_multipart([b"critique.result", b'{"subject": "critique.result", "payload": []}'])
        good = Envelope(subject=CRITIQUE, payload={"ok": True})
        raw.send_multipart(good.encode())                  # same socket as the bad ones: same order
        received = sub.recv(timeout=5)
        assert received is not None and received.message_id == good.message_id
        assert sub.dropped == 3
    raw.close(linger=0)
    assert caplog.text.count("dropped a malformed message") == 3


def test_a_publisher_without_a_proxy_says_so(state_dir):
    config = bus_settings(pub_port=free_port(), sub_port=free_port(), journal_port=free_port(), ready_timeout_s=0.3)
    with Publisher(config) as pub:
        assert pub.wait_ready(0.2) is False
        with pytest.raises(BusError, match="no bus proxy"):
            pub.publish(CRITIQUE, {})
    with Subscriber([CRITIQUE], config) as sub, Publisher(config) as pub:
        with pytest.raises(BusError, match="no bus proxy"):
            sub.wait_ready(pub, timeout=0.3)


def test_a_taken_port_is_a_clear_error(bus_config, proxy):
    with pytest.raises(BusError, match=str(bus_config.pub_port)):
        BusProxy(bus_config).start()


def test_the_proxy_stops_and_its_ports_can_be_reused(bus_config, state_dir):
    proxy = BusProxy(bus_config, journal=False).start()
    assert proxy.running
    proxy.stop()
    assert not proxy.running
    with BusProxy(bus_config, journal=False), Publisher(bus_config) as pub:
        assert pub.wait_ready(2.0)


def test_the_journal_replays_what_was_published(bus_config, proxy):
    with Publisher(bus_config) as pub:
        first = [pub.publish(RESPONSE, {"i": i}) for i in range(5)]
        crit = [pub.publish(CRITIQUE, {"i": i}) for i in range(3)]
    wait_for(lambda: journal_tail(bus_config) >= 8, timeout=60, what="8 journaled messages")
    everything = [env for _, env in replay(bus_config, after_seq=0)]
    assert [e.message_id for e in everything] == [e.message_id for e in first + crit]
    after = [env.message_id for _, env in replay(bus_config, after_message_id=first[2].message_id,
                                                  subjects=[RESPONSE])]
    assert after == [e.message_id for e in first[3:]]
    unknown = [env.message_id for _, env in replay(bus_config, after_message_id="pruned-long-ago",
                                                    subjects=[CRITIQUE])]
    assert unknown == [e.message_id for e in crit]


def test_replay_pages_through_long_journals(state_dir):
    config = bus_settings(pub_port=free_port(), sub_port=free_port(), journal_port=free_port(), replay_batch=7)
    with BusProxy(config), Publisher(config) as pub:
        sent = [pub.publish(RESPONSE, {"i": i}).message_id for i in range(30)]
        wait_for(lambda: journal_tail(config) >= 30, timeout=60, what="30 journaled messages")
        assert [env.message_id for _, env in replay(config, after_seq=0)] == sent
    assert (state_dir / "bus_journal.sqlite").is_file()


def test_no_journal_is_a_typed_error(state_dir):
    config = bus_settings(pub_port=free_port(), sub_port=free_port(), journal_port=free_port())
    start = time.monotonic()
    with pytest.raises(JournalUnavailable, match=str(config.journal_port)):
        journal_tail(config, timeout=0.3)
    assert time.monotonic() - start < 2


def test_settings_come_from_yaml_and_env(monkeypatch):
    monkeypatch.setenv("CNS_BUS_PUB_PORT", "6001")
    config = bus_settings()
    assert config.pub_port == 6001 and config.host == "127.0.0.1" and config.pub_address == "tcp://127.0.0.1:6001"
    monkeypatch.setenv("CNS_BUS_HOST", "0.0.0.0")
    with pytest.raises(ConfigError, match="loopback"):
        bus_settings()
    monkeypatch.setenv("CNS_BUS_HOST", "127.0.0.1")
    monkeypatch.setenv("CNS_BUS_SUB_PORT", "seventy")
    with pytest.raises(ConfigError, match="CNS_BUS_SUB_PORT"):
        bus_settings()
    monkeypatch.delenv("CNS_BUS_SUB_PORT")
    with pytest.raises(ConfigError, match="journal_port"):
        bus_settings(journal_port=70000)
