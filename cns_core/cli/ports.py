"""Free ports for servers that bind *later*, in another process.

A port the OS picks (``bind(..., 0)``) comes from its ephemeral range, the same range every outgoing connection
and every other "any free port" server draws from. Between choosing it and the child binding it, anything else
on the machine may take it: a Ray raylet starting beside the judge loop did exactly that. So a port chosen now
for a child to bind later is drawn from below the ephemeral range, where the OS hands out nothing by itself,
and above the ports Ray's workers use (10002-19999 by default), then checked free by binding it. A process is
never handed the same port twice (until the range runs out), so two servers it starts one after the other,
neither bound yet, do not get one port.
"""
from __future__ import annotations

import random
import socket
from pathlib import Path

__all__ = ["spare_port", "spare_ports", "ephemeral_range"]

_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_LOWEST = 20000          # above Ray's worker ports and the well-known low ports
_TRIES = 200
_handed: set[int] = set()     # ports this process has handed out already


def ephemeral_range() -> tuple[int, int]:
    """The OS's ephemeral port range (Linux's default where it cannot be read)."""
    try:
        low, high = (int(part) for part in _RANGE_FILE.read_text().split())
        return low, high
    except (OSError, ValueError):
        return 32768, 60999


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def _bindable(host: str, port: int) -> bool:
    with socket.socket(_family(host)) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
        return True


def spare_ports(host: str = "127.0.0.1", count: int = 1, *, rng: random.Random | None = None) -> list[int]:
    """``count`` distinct ports free on ``host`` now, outside the OS's ephemeral range where it leaves room;
    the OS's own choice (ephemeral) when that range has none free."""
    host = host.strip("[]") or "0.0.0.0"
    rng = rng or random.SystemRandom()
    low, _ = ephemeral_range()
    chosen: list[int] = []
    if low - _LOWEST >= 100:
        for _ in range(_TRIES):
            if len(chosen) == count:
                break
            port = rng.randrange(_LOWEST, low)
            if port not in chosen and port not in _handed and _bindable(host, port):
                chosen.append(port)
        if len(_handed) > (low - _LOWEST) // 2:
            _handed.clear()                          # a long-lived process: start the record again
    while len(chosen) < count:                       # a machine whose ephemeral range starts low
        with socket.socket(_family(host)) as sock:
            sock.bind((host, 0))
            port = int(sock.getsockname()[1])
        if port not in chosen:
            chosen.append(port)
    _handed.update(chosen)
    return chosen


def spare_port(host: str = "127.0.0.1") -> int:
    """One port free on ``host`` now that no "any free port" server will be handed meanwhile."""
    return spare_ports(host, 1)[0]
