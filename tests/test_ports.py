"""Ports chosen for a child to bind later come from where the OS hands out none by itself."""
from __future__ import annotations

import random
import socket

from cns_core.cli import ports


def test_spare_ports_are_distinct_free_and_below_the_ephemeral_range():
    low, _ = ports.ephemeral_range()
    chosen = ports.spare_ports("127.0.0.1", 3)
    assert len(set(chosen)) == 3
    for port in chosen:
        assert 20000 <= port < low
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))          # free: it binds


def test_a_taken_port_is_never_chosen(monkeypatch):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        monkeypatch.setattr(ports, "ephemeral_range", lambda: (busy + 1, 60999))
        monkeypatch.setattr(ports, "_LOWEST", busy - 99)
        picks = {ports.spare_ports("127.0.0.1", 1, rng=random.Random(seed))[0] for seed in range(40)}
    assert busy not in picks
    assert all(busy - 99 <= port <= busy for port in picks)


def test_an_ephemeral_range_that_starts_low_falls_back_to_the_os(monkeypatch):
    monkeypatch.setattr(ports, "ephemeral_range", lambda: (1024, 65535))
    chosen = ports.spare_ports("127.0.0.1", 2)
    assert len(set(chosen)) == 2 and all(port > 0 for port in chosen)


def test_the_bus_ports_cns_run_picks_are_spare(tmp_path, monkeypatch):
    monkeypatch.setenv("CNS_STATE_DIR", str(tmp_path))
    from cns_core.agents.bus import bus_settings
    from cns_core.cli.run import free_bus_ports

    bus = free_bus_ports(bus_settings())
    low, _ = ports.ephemeral_range()
    picked = (bus.pub_port, bus.sub_port, bus.journal_port)
    assert len(set(picked)) == 3 and all(20000 <= p < low for p in picked)


def test_one_process_is_never_handed_one_port_twice():
    """Two servers started one after the other, neither bound yet: the same draw must not give them one port."""
    first = ports.spare_ports("127.0.0.1", 1, rng=random.Random(7))[0]
    second = ports.spare_ports("127.0.0.1", 1, rng=random.Random(7))[0]
    assert first != second
