"""Which judge loop serves this state folder: a small record file, and the one check that reads it.

A judge loop (``cns agents``) writes ``<state dir>/judge_loop.json`` once its bus
proxy listens: its pid (and the process's start time, so a reused pid is not
mistaken for it), the state folder it serves and its bus ports. It removes the
record when it stops. Anything else on the bus ports, a loop of another state
folder, a crashed loop's survivor or an unrelated program, has no live record
here, so ``cns run``, the Judge page and ``cns grade`` never send this folder's
turns to it: :func:`find_loop` tells the three cases apart with one probe.

The record comes only once the proxy listens; what keeps two loops off one folder is
``<state dir>/judge_loop.lock`` (:func:`loop_lock`), which ``cns agents`` takes before it
opens anything and holds for its whole life: a second loop started at the same instant is
refused, naming the first.
"""

from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cns_core.agents.wire import BusConfig
from cns_core.config import replace_atomically, state_dir
from cns_core.memory.process_lock import command_line, process_started, remove_own_record

if TYPE_CHECKING:
    from cns_core.memory.process_lock import ExclusiveLock

__all__ = ["RECORD_NAME", "LOCK_NAME", "loop_lock", "LoopRecord", "LoopFinding", "record_path", "write_record", "clear_record", "read_record",
           "find_loop", "port_holder", "process_started"]

RECORD_NAME = "judge_loop.json"
LOCK_NAME = "judge_loop.lock"


@dataclass(frozen=True)
class LoopRecord:
    """What a running judge loop says about itself."""

    pid: int
    started: float            # the process's start time (psutil create_time): tells a reused pid apart
    state_dir: str
    host: str
    pub_port: int
    sub_port: int
    journal_port: int

    def bus(self, base: BusConfig) -> BusConfig:
        """``base`` with this loop's host and ports."""
        return base.model_copy(update={"host": self.host, "pub_port": self.pub_port, "sub_port": self.sub_port,
                                       "journal_port": self.journal_port})

    @property
    def ports(self) -> str:
        return f"{self.pub_port}/{self.sub_port}/{self.journal_port}"


def record_path(folder: str | Path | None = None) -> Path:
    """The record file of ``folder`` (default: the state dir)."""
    return _folder(folder) / RECORD_NAME


def _folder(folder: str | Path | None) -> Path:
    return Path(folder) if folder is not None else state_dir()


def loop_lock(folder: str | Path | None = None) -> "ExclusiveLock":
    """The lock a judge loop holds for its whole life: one loop per state folder (``cns agents`` takes it first)."""
    from cns_core.memory.process_lock import ExclusiveLock

    where = _folder(folder)
    return ExclusiveLock(where / LOCK_NAME, f"the judge loop of {where}", "the judge loop (cns agents)")



def write_record(bus: BusConfig, folder: str | Path | None = None) -> LoopRecord:
    """Say that this process serves ``folder`` (default: the state dir) on ``bus``'s ports."""
    where = _folder(folder)
    record = LoopRecord(os.getpid(), process_started(os.getpid()) or time.time(), str(where.resolve()), bus.host,
                        bus.pub_port, bus.sub_port, bus.journal_port)
    with replace_atomically(record_path(where)) as tmp:
        tmp.write_text(json.dumps(asdict(record), indent=1), encoding="utf-8")
    return record


def clear_record(folder: str | Path | None = None) -> None:
    """Remove the record if it is this process's (a newer loop's record is left alone)."""
    remove_own_record(record_path(folder), "pid")


def read_record(folder: str | Path | None = None) -> LoopRecord | None:
    """The record of a judge loop that is alive now, or None (no record, unreadable, or its process is gone)."""
    try:
        raw = json.loads(record_path(folder).read_text(encoding="utf-8"))
        record = LoopRecord(**{k: raw[k] for k in LoopRecord.__dataclass_fields__})
    except (OSError, ValueError, TypeError, KeyError):
        return None
    started = process_started(int(record.pid))
    if started is None or abs(started - float(record.started)) > 1.0:
        return None
    return record


def _answers(host: str, port: int, timeout: float) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def port_holder(port: int) -> str:
    """Who listens on ``port`` on this machine, in words ("pid 123 (python -m cns_core.cli agents)"), or ""."""
    import psutil

    try:
        for conn in psutil.net_connections(kind="tcp"):
            if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port and conn.pid:
                cmd = command_line(conn.pid)
                return f"pid {conn.pid}" + (f" ({cmd})" if cmd else "")
    except (psutil.AccessDenied, OSError):
        pass
    return ""


@dataclass(frozen=True)
class LoopFinding:
    """The one answer to "is there a judge loop for this state folder, and where?".

    ``state``: ``ours`` (a live loop of this folder answers on ``bus``), ``stale`` (this folder's
    loop is alive but its ports do not answer), ``stranger`` (the configured ports answer, but not
    a loop of this folder: never send this folder's turns there) or ``none``.
    """

    state: str
    bus: BusConfig            # where this folder's loop listens (or would listen: the configured ports)
    folder: str
    record: LoopRecord | None = None
    holder: str = ""          # for a stranger: who holds the ports, when it can be told

    @property
    def ours(self) -> bool:
        return self.state == "ours"

    def describe(self) -> str:
        if self.state == "ours":
            assert self.record is not None
            return (f"judge loop pid {self.record.pid} serves this state folder ({self.folder}) on "
                    f"{self.bus.pub_address}")
        if self.state == "stale":
            assert self.record is not None
            return (f"this state folder's judge loop (pid {self.record.pid}) does not answer on "
                    f"{self.bus.pub_address}")
        if self.state == "stranger":
            return (f"something else holds the bus ports {self.bus.pub_port}/{self.bus.sub_port}"
                    + (f" ({self.holder})" if self.holder else "")
                    + f": not a judge loop of this state folder ({self.folder})")
        return f"no judge loop runs for this state folder ({self.folder})"


def find_loop(base: BusConfig | None = None, timeout: float = 0.3, folder: str | Path | None = None) -> LoopFinding:
    """Read this folder's record and probe the ports once (see :class:`LoopFinding`)."""
    from cns_core.agents.bus import bus_settings

    base = base or bus_settings()
    where = str(_folder(folder).resolve())
    record = read_record(folder)
    if record is not None:
        bus = record.bus(base)
        up = all(_answers(bus.host, p, timeout) for p in (bus.pub_port, bus.sub_port))
        return LoopFinding("ours" if up else "stale", bus, where, record)
    if any(_answers(base.host, p, timeout) for p in (base.pub_port, base.sub_port)):
        return LoopFinding("stranger", base, where, None, port_holder(base.pub_port) or port_holder(base.sub_port))
    return LoopFinding("none", base, where)

