"""A full disk under the bus journal (issue 53, item 3): no turn lost without a word.

State folder on a 1 MB filesystem, 600 turns: the journal logged "database or disk is full; going on" 155
times, the publisher was told nothing, and 300 turns kept only in memory were lost at SIGTERM. Now the
sender is told (``confirm_kept``, used by ``cns replay`` and ``cns grade``), the log says it loudly,
held turns are written once the disk has room, and a stop writes the turns still held to a file that
``cns replay`` sends again.

The real case runs on a small tmpfs the test mounts (root only; skipped with the reason elsewhere); the
simulated one, a journal whose writes raise SQLite's own error, runs everywhere.
"""

from __future__ import annotations

import errno
import logging
import os
import sqlite3
import subprocess
import tempfile
import threading
from pathlib import Path

import pytest

import cns_core.agents.journal as journal_module
from cns_core.agents.bus import RESPONSE, BusProxy, Publisher, bus_settings
from cns_core.agents.journal import Journal, JournalRefused, confirm_kept, replay
from cns_core.agents.loop_record import clear_record, write_record
from cns_core.cli import main
from cns_core.cli.agents import read_turns
from local_servers import free_port
from loop_harness import turn_payload


def bus_on(journal_path: Path):
    return bus_settings(pub_port=free_port(), sub_port=free_port(), journal_port=free_port(), ready_timeout_s=5.0,
                        journal_path=str(journal_path))


@pytest.fixture
def spill_here(tmp_path, monkeypatch) -> Path:
    """The temporary folder a stopping journal writes held turns to, private to the test."""
    folder = tmp_path / "spill"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def journaled_ids(bus) -> list[str]:
    return [e.message_id for _, e in replay(bus, after_seq=0, subjects=[RESPONSE])]


def spilled_query_ids(journal: Journal) -> list[str]:
    return [p["query_id"] for path in journal.spilled for _, p, _ in read_turns(path)]


# ----- on a real, small, full filesystem -------------------------------------------------------------------
@pytest.fixture
def small_disk(tmp_path):
    """A 512 KB tmpfs mounted for the test (needs root and permission to mount)."""
    folder = tmp_path / "small"
    folder.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root; the simulated full disk below covers the same code")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(folder)], capture_output=True,
                          text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here ({done.stderr.strip() or done.returncode}); the simulated "
                    "full disk below covers the same code")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def fill(folder: Path) -> Path:
    """Write a file until the filesystem has no byte left; returns it (remove it to make room)."""
    filler = folder / "filler"
    with open(filler, "wb", buffering=0) as handle:
        try:
            while True:
                handle.write(b"\0" * 4096)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    return filler


def test_on_a_full_filesystem_the_sender_is_told_and_no_turn_is_lost(small_disk, spill_here, caplog):
    bus = bus_on(small_disk / "bus_journal.sqlite")
    with caplog.at_level(logging.WARNING, logger="cns_core.agents.journal"):
        with BusProxy(bus) as proxy, Publisher(bus) as pub:
            filler = fill(small_disk)
            sent = [pub.publish(RESPONSE, turn_payload(i, "full") | {"answer": "a" * 2000}).message_id
                    for i in range(20)]
            with pytest.raises(JournalRefused, match=r"database or disk is full\): 20 of 20 turn\(s\) are held in "
                                                     "memory only"):
                confirm_kept(bus, sent)
            assert proxy.running
            filler.unlink()                       # room again: the held turns are written, none twice
            confirm_kept(bus, sent)
            assert journaled_ids(bus) == sent
            filler = fill(small_disk)
            late = [pub.publish(RESPONSE, turn_payload(100 + i, "late") | {"answer": "b" * 2000}) for i in range(3)]
            with pytest.raises(JournalRefused):
                confirm_kept(bus, [e.message_id for e in late])
        # stopped while the disk is full: the held turns are in a file for `cns replay`
        assert spilled_query_ids(proxy.journal) == [e.payload["query_id"] for e in late]
    messages = [r.getMessage() for r in caplog.records]
    assert sum("CANNOT WRITE" in m for m in messages) == 2          # once each time it starts, not each retry
    assert any("writing again" in m for m in messages)
    assert any(str(proxy.journal.spilled[0]) in m for m in messages)


# ----- simulated: a journal whose writes raise SQLite's "database or disk is full" -------------------------
class _FullWhen:
    """A SQLite connection whose inserts fail while ``full`` is set, as on a full disk."""

    def __init__(self, db: sqlite3.Connection, full: threading.Event):
        self._db, self._full = db, full

    def __enter__(self):
        return self._db.__enter__()

    def __exit__(self, *exc):
        return self._db.__exit__(*exc)

    def executemany(self, sql: str, rows):
        if self._full.is_set() and sql.lstrip().upper().startswith("INSERT"):
            raise sqlite3.OperationalError("database or disk is full")
        return self._db.executemany(sql, rows)

    def __getattr__(self, name: str):
        return getattr(self._db, name)


@pytest.fixture
def full_disk(monkeypatch) -> threading.Event:
    """Set it and every journal started afterwards cannot write; clear it and they can."""
    full = threading.Event()

    class FullDiskJournal(Journal):
        def _open(self, path):
            return _FullWhen(super()._open(path), full)

    monkeypatch.setattr(journal_module, "Journal", FullDiskJournal)
    return full


@pytest.fixture
def loop(bus_config, state_dir, full_disk):
    """A bus proxy whose journal writes fail on demand, recorded as this state folder's judge loop."""
    with BusProxy(bus_config) as running:
        write_record(bus_config)
        yield running
        clear_record()


@pytest.fixture
def bus_config(state_dir):
    return bus_on(state_dir / "bus_journal.sqlite")


def test_cns_replay_says_its_turns_are_not_kept_and_exits_1(tmp_path, loop, full_disk, bus_config, spill_here,
                                                           capsys):
    path = tmp_path / "turns.jsonl"
    path.write_text("".join(f'{{"query": "Q{i}?", "answer": "A{i}", "query_id": "r{i}"}}\n' for i in range(3)))
    full_disk.set()
    assert main(["replay", str(path)]) == 1
    err = capsys.readouterr().err
    assert ("cns replay: error: the bus journal cannot write (OperationalError: database or disk is full): 3 of 3 "
            "turn(s) are held in memory only, not on disk") in err
    full_disk.clear()
    assert main(["replay", str(path)]) == 0          # room again: the first three were written, then these
    assert len(journaled_ids(bus_config)) == 6 and loop.journal.spilled == []


def test_a_stop_while_writes_fail_writes_the_held_turns_for_cns_replay(loop, full_disk, bus_config, spill_here,
                                                                      caplog):
    full_disk.set()
    with Publisher(bus_config) as pub:
        sent = [pub.publish(RESPONSE, turn_payload(i, "held")) for i in range(4)]
        with pytest.raises(JournalRefused):
            confirm_kept(bus_config, [e.message_id for e in sent])
    loop.stop()
    assert spilled_query_ids(loop.journal) == [e.payload["query_id"] for e in sent]
    (path,) = loop.journal.spilled
    assert path.parent == spill_here
    assert any(f"`cns replay {path}`" in r.getMessage() for r in caplog.records)


def test_cns_agents_says_when_the_journal_stops_and_starts_writing(capsys):
    from types import SimpleNamespace

    from cns_core.cli.agents import _JournalWatch

    journal = SimpleNamespace(write_error=None)
    watch = _JournalWatch(journal)
    for error in (None, "OperationalError: database or disk is full", "OperationalError: database or disk is full",
                  None, None):
        journal.write_error = error
        watch.check()
    err = capsys.readouterr().err.splitlines()
    assert err == ["error: the bus journal cannot write (OperationalError: database or disk is full): turns are "
                   "held in memory only until the disk has room; senders that ask (cns replay, cns grade) are told",
                   "bus journal: writing again; the turns held in memory are on disk"]


_STUCK_STOP = '''
import sqlite3, sys, threading, time
import cns_core.agents.journal as journal_module
from cns_core.agents.critic import CriticAgent

class Full:
    """A journal connection whose inserts fail, as on a full disk."""
    def __init__(self, db): self._db = db
    def __enter__(self): return self._db.__enter__()
    def __exit__(self, *exc): return self._db.__exit__(*exc)
    def executemany(self, sql, rows):
        if sql.lstrip().upper().startswith("INSERT"):
            raise sqlite3.OperationalError("database or disk is full")
        return self._db.executemany(sql, rows)
    def __getattr__(self, name): return getattr(self._db, name)

opened = journal_module.Journal._open
journal_module.Journal._open = lambda self, path: Full(opened(self, path))
CriticAgent.stop = lambda self, timeout=None: threading.Event().wait()   # a stop that never ends
from cns_core.cli import main
sys.exit(main(["agents", "--no-memory", "--no-generator", "--grace", "1"]))
'''


def test_a_stop_that_outlasts_its_grace_writes_the_held_turns_first(tmp_path, state_dir, bus_config):
    """Issue 71 item 2: stopped while the disk was full, `cns agents` said "not stopped within 8 s; exiting
    anyway" and wrote no cns-unjournaled file: every held turn was lost without a word."""
    import signal
    import sys

    from local_servers import ROOT, wait_for

    spill = tmp_path / "spill"
    spill.mkdir()
    env = {**os.environ, "CNS_STATE_DIR": str(state_dir), "TMPDIR": str(spill), "CNS_OLLAMA_URL": "http://127.0.0.1:9",
           "CNS_BUS_PUB_PORT": str(bus_config.pub_port), "CNS_BUS_SUB_PORT": str(bus_config.sub_port),
           "CNS_BUS_JOURNAL_PORT": str(bus_config.journal_port)}
    log = tmp_path / "agents.log"
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-c", _STUCK_STOP], cwd=ROOT, env=env, stdout=out,
                                stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: "press Ctrl-C" in log.read_text(), 60, what="cns agents started", proc=proc, log=log)
        with Publisher(bus_config) as pub:
            sent = [pub.publish(RESPONSE, turn_payload(i, "stuck")) for i in range(5)]
            with pytest.raises(JournalRefused, match="5 of 5 turn"):
                confirm_kept(bus_config, [e.message_id for e in sent])
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 1                      # the grace ran out: the watchdog ended it
    finally:
        if proc.poll() is None:
            proc.kill()
    text = log.read_text()
    assert "not stopped within 1 s; exiting anyway" in text
    (path,) = spill.glob("cns-unjournaled-*.jsonl")
    assert [p["query_id"] for _, p, _ in read_turns(path)] == [e.payload["query_id"] for e in sent]
    assert f"wrote the 5 turn(s) it held in memory to {path}; send them again with `cns replay {path}`" in text


def test_a_log_that_cannot_write_is_said_once_and_counted(tmp_path, caplog):
    """Issue 71 item 3: with the disk full, "coherence log: [Errno 28] No space left on device" came about 54
    times a second (3,771 log lines a minute)."""
    from cns_core.bounds import RepeatedFailure

    log = logging.getLogger("cns_core.test_repeated")
    failures = RepeatedFailure(log, "coherence log", every_s=3600)
    with caplog.at_level(logging.WARNING, logger="cns_core.test_repeated"):
        for _ in range(500):
            failures.failed(OSError(errno.ENOSPC, "No space left on device"))
        failures.succeeded()
        failures.succeeded()
    lines = [r.getMessage() for r in caplog.records]
    assert lines == ["coherence log: [Errno 28] No space left on device (repeats are counted, said every 3600 s)",
                     "coherence log: works again, after 500 failure(s)"]


def test_the_coherence_hook_says_a_full_disk_once(tmp_path, caplog, monkeypatch):
    from cns_core.coherence.hook import CoherenceHook
    from cns_core.coherence.log import CoherenceLog

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(CoherenceLog, "write_event", full)
    hook = CoherenceHook(log=tmp_path / "coherence.jsonl", quarantine=False)
    with caplog.at_level(logging.WARNING, logger="cns_core.coherence.hook"):
        for i in range(200):
            hook._event("probe", f"chain-{i}")
    assert sum("No space left on device" in r.getMessage() for r in caplog.records) == 1


def test_the_memory_servers_repeated_error_lines_are_said_once_and_counted():
    """Issue 71 item 3: one Chroma error line per request while the disk was full."""
    from cns_core.cli.memory_server import _Repeats

    repeats = _Repeats(every_s=3600)
    said = [repeats.say(f"2026-12-06T10:00:{i % 60:02d} ERROR request {i}: database or disk is full")
            for i in range(300)]
    assert [s for s in said if s] == ["2026-12-06T10:00:00 ERROR request 0: database or disk is full (repeats are "
                                      "counted, said every minute)"]
    assert repeats.say("WARN another problem") == "WARN another problem (repeats are counted, said every minute)"


def test_the_state_folder_is_its_owners_alone(tmp_path, monkeypatch):
    """Issue 71 item 7: the state folder was mode 755 and chroma.sqlite3 and cns-server.json world-readable: another
    local user (nobody) read them. Checked as that user where the test can switch to one."""
    import shutil
    import stat

    from cns_core.config import make_private, state_dir

    shared = Path(tempfile.mkdtemp(prefix="cns-71-", dir="/tmp"))   # a place other users can reach
    try:
        shared.chmod(0o755)
        fresh = shared / "fresh"
        monkeypatch.setenv("CNS_STATE_DIR", str(fresh))
        assert stat.S_IMODE(state_dir().stat().st_mode) == 0o700
        old = shared / "old"
        (old / "chroma").mkdir(parents=True)
        for name in ("chroma/chroma.sqlite3", "chroma/cns-server.json"):
            (old / name).write_text("engrams")
            (old / name).chmod(0o644)
        old.chmod(0o755)
        (old / "chroma").chmod(0o755)
        assert make_private(old) == []
        modes = {p.relative_to(old).as_posix(): stat.S_IMODE(p.stat().st_mode) for p in [old, *old.rglob("*")]}
        assert modes == {".": 0o700, "chroma": 0o700, "chroma/chroma.sqlite3": 0o600,
                         "chroma/cns-server.json": 0o600}
        runuser = shutil.which("runuser") or shutil.which("setpriv")
        if os.geteuid() != 0 or runuser is None:
            pytest.skip("reading as another local user needs root and runuser; the modes above are checked")
        as_nobody = ([runuser, "-u", "nobody", "--"] if runuser.endswith("runuser")
                     else [runuser, "--reuid=nobody", "--regid=nogroup", "--clear-groups"])
        control = shared / "control"
        control.write_text("anyone")
        control.chmod(0o644)
        readable = subprocess.run(as_nobody + ["cat", str(control)], capture_output=True, text=True)
        if readable.returncode != 0:
            pytest.skip(f"cannot run a command as nobody here ({readable.stderr.strip()})")
        for name in ("chroma/chroma.sqlite3", "chroma/cns-server.json"):
            done = subprocess.run(as_nobody + ["cat", str(old / name)], capture_output=True, text=True)
            assert done.returncode != 0 and "Permission denied" in done.stderr, (name, done.stderr)
    finally:
        shutil.rmtree(shared, ignore_errors=True)
