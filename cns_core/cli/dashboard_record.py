"""Which dashboard ``cns run`` started for this state folder, so a later ``cns run`` can replace an orphan.

``cns run`` writes ``<state dir>/dashboard.json`` when it starts the dashboard: the
dashboard's pid and start time, its port, and the pid and start time of the ``cns run``
that supervises it. A dashboard whose supervisor is gone (killed with SIGKILL before
the parent-death signal existed, or on a system without one) still holds the port; the
next ``cns run`` of the same folder finds that record, sees the supervisor gone and the
dashboard alive, stops it and starts its own, instead of saying "port in use, nothing
to start". A port held by anything else (a live ``cns run``, another program) is left alone.
"""

from __future__ import annotations

import json
import os
import signal
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from cns_core.agents.loop_record import process_started
from cns_core.config import replace_atomically, state_dir

__all__ = ["DASHBOARD_RECORD", "DashboardRecord", "write_dashboard_record", "read_dashboard_record",
           "orphaned_dashboard", "stop_dashboard"]

DASHBOARD_RECORD = "dashboard.json"


@dataclass(frozen=True)
class DashboardRecord:
    pid: int
    started: float
    port: int
    supervisor: int
    supervisor_started: float
    state_dir: str


def _path(folder: str | Path | None) -> Path:
    return (Path(folder) if folder is not None else state_dir()) / DASHBOARD_RECORD


def write_dashboard_record(pid: int, port: int, folder: str | Path | None = None) -> DashboardRecord:
    """Say that this process supervises dashboard ``pid`` on ``port`` for ``folder`` (default: the state dir)."""
    where = _path(folder)
    me = os.getpid()
    record = DashboardRecord(pid, process_started(pid) or time.time(), port, me, process_started(me) or time.time(),
                             str(where.parent.resolve()))
    with replace_atomically(where) as tmp:
        tmp.write_text(json.dumps(asdict(record)), encoding="utf-8")
    return record


def read_dashboard_record(folder: str | Path | None = None) -> DashboardRecord | None:
    """The record, or None when there is none or it cannot be read (it is only a hint)."""
    try:
        raw = json.loads(_path(folder).read_text(encoding="utf-8"))
        return DashboardRecord(**{k: raw[k] for k in DashboardRecord.__dataclass_fields__})
    except (OSError, ValueError, TypeError, KeyError):
        return None


def _same(pid: int, started: float) -> bool:
    now = process_started(int(pid))
    return now is not None and abs(now - float(started)) <= 1.0


def orphaned_dashboard(port: int, folder: str | Path | None = None) -> DashboardRecord | None:
    """This folder's recorded dashboard on ``port`` when it is alive and the ``cns run`` that started it is not."""
    record = read_dashboard_record(folder)
    if record is None or record.port != port or not _same(record.pid, record.started):
        return None
    return None if _same(record.supervisor, record.supervisor_started) else record


def stop_dashboard(record: DashboardRecord, grace_s: float = 5.0) -> bool:
    """Stop a recorded dashboard (its process group: SIGTERM, then SIGKILL after ``grace_s``); True once gone."""
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(record.pid, sig)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if not _same(record.pid, record.started):
                return True
            time.sleep(0.1)
    return not _same(record.pid, record.started)
