"""The bus journal: every envelope the proxy forwards, kept in SQLite, replayable by sequence.

Publish/subscribe forgets: a subscriber that is down misses what is sent. The
MemoryAgent must not (a missed critique is a lost score), so the proxy copies
each message to this journal and a restarted agent asks for everything after the
last message it processed (``replay``). The journal answers on a loopback
REQ/REP port; its thread owns the SQLite connection.

Requests and replies are JSON objects:
``{"op": "tail"}`` -> ``{"ok": true, "seq": N}`` (the newest sequence number);
``{"op": "replay", "after_seq": N | "after_message_id": ID, "subjects": [...], "limit": K}``
-> ``{"ok": true, "found": bool, "messages": [[seq, subject, json], ...], "more": bool}``;
``{"op": "reject", "message_id": ID, "reason": TEXT}`` -> ``{"ok": true, "moved": bool}`` (a receiver
found the message unusable: it leaves the replayable messages and is kept with its reason);
``{"op": "rejected", "limit": K}`` -> ``{"ok": true, "rejected": [[time, message_id, subject, reason], ...]}``;
``{"op": "kept", "message_ids": [...]}`` -> ``{"ok": true, "kept": [...], "held": [...], "rejected": [...],
"write_error": TEXT | null}`` (which of a sender's messages are on disk, which wait in memory for a
write that fails, which were refused: :func:`confirm_kept`).

Nothing a publisher sends can stop the journal: a body over ``max_message_bytes`` or nested
deeper than ``max_json_depth`` is refused before parsing and recorded in the ``rejected``
table with its reason and a short excerpt, never replayed; any other error in the thread is
logged and the thread goes on. A journal file that SQLite cannot read is moved aside as
``bus_journal.sqlite.damaged-<time>`` (said once, naming both files) and a new one started.

A journal that cannot write (``database or disk is full``) loses nothing silently: the messages are
held in memory and written as soon as the disk has room, the log says so loudly (once when it
starts, every minute while it lasts, once when it is over), a sender that asks (:func:`confirm_kept`:
``cns replay``, ``cns grade``) is told its turns are not on disk, and a stop that finds messages
still held writes their turns to ``cns-unjournaled-<time>.jsonl`` in the temporary folder (another
disk, as a rule), named in the log, for ``cns replay`` to send again.
"""

from __future__ import annotations

import json
import sqlite3
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Iterator, Sequence

import zmq

from cns_core.agents.wire import (
    BusConfig, BusError, Envelope, MalformedMessage, bind_socket, check_body, signal_and_join,
)
from cns_core.bounds import excerpt, keep_damaged, logger

__all__ = ["Journal", "JournalUnavailable", "JournalRefused", "journal_tail", "replay", "reject", "rejected",
           "confirm_kept"]

log = logger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS messages (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    message_id TEXT NOT NULL UNIQUE,
    subject TEXT NOT NULL,
    body TEXT NOT NULL,
    received REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS messages_subject ON messages(subject, seq);
CREATE TABLE IF NOT EXISTS rejected (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    message_id TEXT,
    subject TEXT NOT NULL,
    reason TEXT NOT NULL,
    excerpt TEXT NOT NULL,
    received REAL NOT NULL
);
"""
_REJECTED_KEEP = 10_000     # newest rejections kept
_REASON = 500               # characters of a reason kept
_LOUD_EVERY_S = 60.0        # while writes fail, the log repeats how many messages are held this often
_KEPT_IDS = 500             # message ids one "kept" request may ask about


class JournalUnavailable(BusError):
    """No journal answered (not started, or disabled in config/bus.yaml). From :func:`confirm_kept`,
    ``not_recorded`` holds the message ids the journal was not seen to record."""

    def __init__(self, message: str, not_recorded: Sequence[str] = ()):
        super().__init__(message)
        self.not_recorded = list(not_recorded)


class JournalRefused(BusError):
    """The journal could not keep a sender's messages on disk (a full disk); they are held in memory."""


class Journal:
    """Records captured frames and serves replay requests, in one background thread."""

    def __init__(self, config: BusConfig, *, capture_endpoint: str | None = None,
                 context: zmq.Context | None = None):
        self.config = config
        self.capture_endpoint = capture_endpoint or f"inproc://cns-capture-{uuid.uuid4().hex[:8]}"
        self._ctx = context or zmq.Context.instance()
        self._thread: threading.Thread | None = None
        self._stop_endpoint = f"inproc://cns-journal-stop-{uuid.uuid4().hex[:8]}"
        self._stopper: zmq.Socket | None = None
        self._unsaved: list[tuple[Any, ...]] = []     # rows a failed write keeps for the next round
        self.write_error: str | None = None            # why writes fail now (None: they work)
        self._failing_since = 0.0
        self._said_at = 0.0
        self.spilled: list[Path] = []                  # files holding turns no disk write could keep
        self._spilled_ids: set[str] = set()            # held messages already written to a spill file
        self._spill_lock = threading.Lock()
        self.recorded = 0
        self.rejected = 0
        self.errors = 0
        self.damaged: str | None = None     # what was wrong with the file found at start, and where it went
        self.start_seq: int | None = None   # the newest sequence number before anything could be recorded

    def start(self) -> "Journal":
        path = self.config.journal_file()
        path.parent.mkdir(parents=True, exist_ok=True)
        db = self._open(path)
        self.start_seq = _tail(db)          # a first MemoryAgent replays from here (turns sent while it starts)
        pull = self._ctx.socket(zmq.PULL)
        pull.setsockopt(zmq.RCVHWM, 0)
        pull.bind(self.capture_endpoint)
        rep = self._ctx.socket(zmq.REP)
        try:
            bind_socket(rep, self.config.journal_address, "bus journal")
        except BusError:
            pull.close(linger=0)
            db.close()
            raise
        stop = self._ctx.socket(zmq.PAIR)
        stop.bind(self._stop_endpoint)
        self._stopper = self._ctx.socket(zmq.PAIR)
        self._stopper.connect(self._stop_endpoint)
        self._thread = threading.Thread(target=self._run, args=(pull, rep, stop, db), name="cns-bus-journal",
                                        daemon=True)
        self._thread.start()
        return self

    def _open(self, path: Any) -> sqlite3.Connection:
        """The journal database; a file SQLite cannot read is kept aside and a new one started."""
        try:
            return _connect(path)
        except sqlite3.DatabaseError as exc:
            kept = keep_damaged(path, suffixes=("-wal", "-shm"))
            self.damaged = (f"bus journal {path}: damaged ({exc}); kept it as {kept} and started a new journal. "
                            "Messages recorded before cannot be replayed; what the memory stored is kept")
            log.error("%s", self.damaged)
            return _connect(path)

    def stop(self) -> None:
        if self._thread is None:
            return
        assert self._stopper is not None
        signal_and_join(self._stopper, b"stop", self._thread)
        self._thread = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    # ------------------------------------------------------------------ the thread

    def _run(self, pull: zmq.Socket, rep: zmq.Socket, stop: zmq.Socket, db: sqlite3.Connection) -> None:
        poller = zmq.Poller()
        for sock in (pull, rep, stop):
            poller.register(sock, zmq.POLLIN)
        try:
            while True:
                events = dict(poller.poll(500))
                if pull in events or rep in events or self._unsaved:
                    self._guarded(self._record, pull, db)     # what was captured comes before any answer
                if rep in events:
                    request = rep.recv()
                    rep.send(json.dumps(self._answer(request, db)).encode())   # REP must always answer
                if stop in events:
                    self._guarded(self._record, pull, db)
                    self._guarded(self._spill_held)
                    return
        except zmq.ContextTerminated:
            return
        finally:
            for sock in (pull, rep, stop):
                sock.close(linger=0)
            db.close()

    def _guarded(self, step: Any, *args: Any) -> None:
        """Run one step; an error is logged and counted, never the end of the thread (the bus depends on it)."""
        try:
            step(*args)
        except Exception as exc:  # noqa: BLE001 - a stopped journal would stall the proxy: survive anything
            self.errors += 1
            log.error("bus journal: %s: %s; going on", type(exc).__name__, exc)
            time.sleep(0.05)        # a failing disk must not turn this loop into a spin

    def _record(self, pull: zmq.Socket, db: sqlite3.Connection) -> None:
        rows, refused = list(self._unsaved), []      # held rows stay held (for spill_now) until written
        now = time.time()
        while pull.poll(0, zmq.POLLIN) and len(rows) < 50_000:
            frames = pull.recv_multipart()
            if len(frames) != 2 or frames[0][:1] in (b"\x00", b"\x01") or frames[0].startswith(b"bus.ping."):
                continue                        # subscriptions and readiness pings are not messages
            row, problem = self._row(frames, now)
            if row is not None:
                rows.append(row)
            else:
                refused.append(problem)
        try:
            with db:
                if rows:
                    db.executemany("INSERT OR IGNORE INTO messages(message_id, subject, body, received) "
                                   "VALUES (?,?,?,?)", rows)
                if refused:
                    db.executemany("INSERT INTO rejected(message_id, subject, reason, excerpt, received) "
                                   "VALUES (?,?,?,?,?)", refused)
        except sqlite3.Error as exc:
            self._hold(rows, exc)
            return
        self._unsaved = []
        if self.write_error is not None:
            log.warning("bus journal: writing again; the %d message(s) held in memory are on disk now "
                        "(after %.0f s)", len(rows), time.monotonic() - self._failing_since)
            self.write_error = None
        for problem in refused:
            log.warning("bus journal: refused a message on %s: %s", problem[1], problem[2])
        self.rejected += len(refused)
        before = self.recorded // 5000
        self.recorded += len(rows)
        if self.recorded // 5000 != before:
            with db:
                db.execute("DELETE FROM messages WHERE seq <= (SELECT MAX(seq) FROM messages) - ?",
                           (self.config.journal_keep,))
                db.execute("DELETE FROM rejected WHERE id <= (SELECT MAX(id) FROM rejected) - ?", (_REJECTED_KEEP,))

    def _hold(self, rows: list[tuple[Any, ...]], exc: sqlite3.Error) -> None:
        """A write failed: keep the rows for the next round (beyond ``journal_keep``, the oldest go to a
        spill file) and say so loudly, once now and then every minute while it lasts."""
        keep = self.config.journal_keep
        if len(rows) > keep:
            self._spill(rows[:-keep], "more messages than the journal holds in memory (journal.keep)")
        self._unsaved = rows[-keep:]
        self.errors += 1
        now = time.monotonic()
        first = self.write_error is None
        self.write_error = f"{type(exc).__name__}: {exc}"
        if first:
            self._failing_since = now
        if first or now - self._said_at >= _LOUD_EVERY_S:
            self._said_at = now
            log.error("bus journal: CANNOT WRITE to %s (%s): %d message(s) held in memory only and retried; "
                      "senders that ask are told. Free space there, or they are lost if the loop stops first "
                      "(a stop writes their turns to a file in %s)", self.config.journal_file(), self.write_error,
                      len(self._unsaved), spill_folder())
        time.sleep(0.05)        # a failing disk must not turn this loop into a spin

    def _spill_held(self) -> None:
        """At a stop: what is still held in memory goes to a file, not to nowhere."""
        held, self._unsaved = self._unsaved, []
        self._spill(held, "the loop stopped while the journal could not write")

    def spill_now(self) -> tuple[int, Path | None]:
        """Write the turns held in memory (the journal cannot write) to a spill file now, from any thread:
        called as soon as a stop is asked, before any grace period can end the process. Returns how many
        turns were written and where (0, None when none is held). Turns written to disk later as well are
        harmless in the file: ``cns replay`` of a turn already stored stores nothing twice."""
        held = list(self._unsaved)
        return self._spill(held, "a stop was asked while the journal could not write")

    def _spill(self, rows: list[tuple[Any, ...]], why: str) -> tuple[int, Path | None]:
        """Write the turns among ``rows`` (message id, subject, body, time) as JSON lines ``cns replay`` sends
        again, to a file outside the journal's folder (each turn once, whoever asks); say where, or that they
        are lost. Returns how many were written and where."""
        with self._spill_lock:
            rows = [r for r in rows if r[0] not in self._spilled_ids and r[1] == "response.generation"]
            self._spilled_ids.update(r[0] for r in rows)
        turns = [json.loads(body).get("payload") for _, subject, body, _ in rows]
        turns = [t for t in turns if isinstance(t, dict)]
        if not turns:
            return 0, None
        path = spill_folder() / f"cns-unjournaled-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}.jsonl"
        try:
            with open(path, "x", encoding="utf-8") as handle:
                handle.writelines(json.dumps(t, ensure_ascii=False) + "\n" for t in turns)
        except OSError as exc:
            log.error("bus journal: %s; %d turn(s) could not be written anywhere and are LOST (%s)", why,
                      len(turns), exc)
            return 0, None
        self.spilled.append(path)
        log.error("bus journal: %s; wrote the %d turn(s) it could not journal to %s: send them again with "
                  "`cns replay %s` once the disk has room", why, len(turns), path, path)
        return len(turns), path

    def _kept(self, request: dict[str, Any], db: sqlite3.Connection) -> dict[str, Any]:
        """Which of a sender's messages are on disk, held in memory, or refused."""
        ids = request.get("message_ids")
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids) or len(ids) > _KEPT_IDS:
            raise ValueError(f"kept: expected message_ids, a list of at most {_KEPT_IDS} strings")
        marks = ",".join("?" * len(ids))
        kept = [r[0] for r in db.execute(f"SELECT message_id FROM messages WHERE message_id IN ({marks})", ids)] \
            if ids else []
        refused = [r[0] for r in db.execute(f"SELECT message_id FROM rejected WHERE message_id IN ({marks})", ids)] \
            if ids else []
        wanted = set(ids)
        held = [row[0] for row in self._unsaved if row[0] in wanted]
        return {"ok": True, "kept": kept, "held": held, "rejected": refused, "write_error": self.write_error}

    def _row(self, frames: list[bytes], now: float) -> tuple[tuple[Any, ...] | None, tuple[Any, ...]]:
        """(the row to keep, None) or (None, the rejection row): bounds first, then a light parse.

        Subscribers validate fully; the journal keeps what names itself and fits the bus limits.
        """
        subject = frames[0].decode("utf-8", "replace")[:200]
        body = frames[1]
        try:
            check_body(body, self.config.max_message_bytes, self.config.max_json_depth)
            parsed = json.loads(body)
            message_id, named = parsed["message_id"], parsed["subject"]
            if not isinstance(message_id, str) or not message_id or len(message_id) > 200:
                raise ValueError("message_id: missing or not a short string")
            if named != subject:
                raise ValueError(f"subject {excerpt(named, 60)} differs from the subject frame")
        except MalformedMessage as exc:
            return None, (None, subject, str(exc)[:_REASON], excerpt(bytes(body[:200]), 160), now)
        except (ValueError, KeyError, TypeError, RecursionError) as exc:
            reason = f"not an envelope ({type(exc).__name__}: {excerpt(str(exc), 200)})"
            return None, (None, subject, reason, excerpt(bytes(body[:200]), 160), now)
        return (message_id, subject, body.decode("utf-8", "replace"), now), ()

    def _answer(self, raw: bytes, db: sqlite3.Connection) -> dict[str, Any]:
        try:
            check_body(raw, 64_000, 8)
            request = json.loads(raw)
            if not isinstance(request, dict):
                raise ValueError("expected a JSON object")
            op = request.get("op")
            if op == "tail":
                return {"ok": True, "seq": _tail(db)}
            if op == "reject":
                return self._reject(request, db)
            if op == "kept":
                return self._kept(request, db)
            if op == "rejected":
                limit = max(1, min(int(request.get("limit", 100)), 1000))
                rows = db.execute("SELECT received, message_id, subject, reason FROM rejected ORDER BY id DESC "
                                  "LIMIT ?", (limit,)).fetchall()
                return {"ok": True, "rejected": [list(r) for r in rows]}
            if op != "replay":
                raise ValueError(f"op: expected 'tail', 'replay', 'reject', 'rejected' or 'kept', got "
                                 f"{excerpt(op, 40)}")
            return self._replay(request, db)
        except (ValueError, TypeError, MalformedMessage) as exc:
            return {"ok": False, "error": str(exc)}
        except Exception as exc:  # noqa: BLE001 - a REP socket must answer, and the thread must live
            self.errors += 1
            log.error("bus journal: cannot answer a request: %s: %s", type(exc).__name__, exc)
            return {"ok": False, "error": f"the journal failed: {type(exc).__name__}: {exc}"}

    def _replay(self, request: dict[str, Any], db: sqlite3.Connection) -> dict[str, Any]:
        found = True
        if request.get("after_message_id") is not None:
            row = db.execute("SELECT seq FROM messages WHERE message_id = ?",
                             (str(request["after_message_id"]),)).fetchone()
            found = row is not None
            after = row[0] if row else 0
        else:
            after = int(request.get("after_seq", 0))
            if after > _tail(db):        # a position in an older journal (this one was rebuilt): start over
                found, after = False, 0
        limit = max(1, min(int(request.get("limit", self.config.replay_batch)), self.config.replay_batch))
        subjects = request.get("subjects") or []
        if not isinstance(subjects, list) or not all(isinstance(s, str) for s in subjects):
            raise ValueError("subjects: expected a list of strings")
        sql = "SELECT seq, subject, body FROM messages WHERE seq > ?"
        args: list[Any] = [after]
        if subjects:
            sql += f" AND subject IN ({','.join('?' * len(subjects))})"
            args += subjects
        rows = db.execute(sql + " ORDER BY seq LIMIT ?", [*args, limit + 1]).fetchall()
        return {"ok": True, "found": found, "messages": [list(r) for r in rows[:limit]], "more": len(rows) > limit}

    def _reject(self, request: dict[str, Any], db: sqlite3.Connection) -> dict[str, Any]:
        """A receiver found this message unusable: keep it with the reason, out of every later replay."""
        message_id, reason = request.get("message_id"), request.get("reason")
        if not isinstance(message_id, str) or not isinstance(reason, str):
            raise ValueError("reject: expected message_id and reason as text")
        with db:
            row = db.execute("SELECT subject, body FROM messages WHERE message_id = ?", (message_id,)).fetchone()
            if row is None:
                return {"ok": True, "moved": False}
            db.execute("INSERT INTO rejected(message_id, subject, reason, excerpt, received) VALUES (?,?,?,?,?)",
                       (message_id, row[0], reason[:_REASON], excerpt(row[1][:200], 160), time.time()))
            db.execute("DELETE FROM messages WHERE message_id = ?", (message_id,))
        return {"ok": True, "moved": True}


def spill_folder() -> Path:
    """Where turns the journal could not keep are written at a stop: the temporary folder."""
    return Path(tempfile.gettempdir())


def _connect(path: Any) -> sqlite3.Connection:
    """Open the journal and prove SQLite can read all of it (a quick check, then the schema)."""
    db = sqlite3.connect(str(path), check_same_thread=False)
    try:
        status = db.execute("PRAGMA quick_check").fetchone()
        if status is None or status[0] != "ok":
            raise sqlite3.DatabaseError(f"quick_check: {excerpt(status and status[0], 200)}")
        db.executescript(_SCHEMA)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        _tail(db)
    except sqlite3.DatabaseError:
        db.close()
        raise
    return db


def _tail(db: sqlite3.Connection) -> int:
    return int(db.execute("SELECT COALESCE(MAX(seq), 0) FROM messages").fetchone()[0])


def _request(config: BusConfig, request: dict[str, Any], timeout: float,
             context: zmq.Context | None = None) -> dict[str, Any]:
    ctx = context or zmq.Context.instance()
    sock = ctx.socket(zmq.REQ)
    sock.setsockopt(zmq.LINGER, 0)
    try:
        sock.connect(config.journal_address)
        sock.send(json.dumps(request).encode())
        if not sock.poll(int(timeout * 1000), zmq.POLLIN):
            raise JournalUnavailable(f"no bus journal answered on {config.journal_address} within {timeout:g} s")
        reply = json.loads(sock.recv())
    finally:
        sock.close(linger=0)
    if not reply.get("ok"):
        raise BusError(f"bus journal refused the request: {reply.get('error')}")
    return reply


def journal_tail(config: BusConfig, timeout: float = 2.0) -> int:
    """The journal's newest sequence number (raises :class:`JournalUnavailable`)."""
    return int(_request(config, {"op": "tail"}, timeout)["seq"])


def replay(config: BusConfig, *, after_seq: int | None = None, after_message_id: str | None = None,
           subjects: Sequence[str] = (), timeout: float = 5.0) -> Iterator[tuple[int, Envelope]]:
    """``(seq, envelope)`` for every journaled message after a position, oldest first.

    When ``after_message_id`` is no longer in the journal (pruned), replay starts at
    the oldest message kept and logs a warning: duplicates are harmless, gaps are not.
    """
    request: dict[str, Any] = {"op": "replay", "subjects": list(subjects), "limit": config.replay_batch}
    if after_message_id is not None:
        request["after_message_id"] = after_message_id
    else:
        request["after_seq"] = int(after_seq or 0)
    while True:
        reply = _request(config, request, timeout)
        if not reply.get("found", True):
            log.warning("bus journal: message %s is no longer kept; replaying everything kept", after_message_id)
        for seq, subject, body in reply["messages"]:
            try:
                yield seq, Envelope.decode([subject.encode(), body.encode()], max_bytes=config.max_message_bytes,
                                           max_depth=config.max_json_depth)
            except MalformedMessage as exc:  # the journal checks only ids and subjects
                log.warning("bus journal: skipped message %s: %s", seq, exc)
        if not reply["more"] or not reply["messages"]:
            return
        request = {"op": "replay", "subjects": list(subjects), "limit": config.replay_batch,
                   "after_seq": reply["messages"][-1][0]}


def reject(config: BusConfig, message_id: str, reason: str, timeout: float = 2.0) -> bool:
    """Tell the journal a message is unusable (kept with ``reason``, never replayed again); True when it
    was there to move. Raises :class:`JournalUnavailable` when no journal answers."""
    return bool(_request(config, {"op": "reject", "message_id": message_id, "reason": reason[:_REASON]},
                         timeout)["moved"])


def rejected(config: BusConfig, limit: int = 100, timeout: float = 2.0) -> list[dict[str, Any]]:
    """The newest rejected messages, newest first: time, message_id (None when it had none), subject, reason."""
    rows = _request(config, {"op": "rejected", "limit": limit}, timeout)["rejected"]
    return [{"time": r[0], "message_id": r[1], "subject": r[2], "reason": r[3]} for r in rows]


def confirm_kept(config: BusConfig, message_ids: Sequence[str], timeout: float = 5.0) -> None:
    """Return once the journal holds every one of ``message_ids`` on disk (a sender's proof that its turns
    survive a stop). Raises :class:`JournalRefused` when some are held in memory because the journal cannot
    write, or were refused, saying how many and why; :class:`JournalUnavailable` when no journal answers or
    it has not seen them within ``timeout``."""
    waiting = list(dict.fromkeys(message_ids))
    total = len(waiting)
    deadline = time.monotonic() + timeout
    while waiting:
        held: list[str] = []
        refused: list[str] = []
        error = None
        asking = list(waiting)
        for start in range(0, len(asking), _KEPT_IDS):
            try:
                reply = _request(config, {"op": "kept", "message_ids": asking[start:start + _KEPT_IDS]},
                                 max(0.1, deadline - time.monotonic()))
            except JournalUnavailable as exc:      # the loop died, or is not there: these are not known kept
                raise JournalUnavailable(f"{exc}: {len(waiting)} of {total} message(s) not confirmed recorded",
                                         waiting) from None
            done = set(reply["kept"])
            held += reply["held"]
            refused += reply["rejected"]
            error = reply.get("write_error") or error
            waiting = [i for i in waiting if i not in done]
        if refused:
            raise JournalRefused(f"the bus journal refused {len(refused)} of {total} message(s) (too large or "
                                 "not an envelope); see `rejected` in the journal")
        if held and error:
            raise JournalRefused(f"the bus journal cannot write ({error}): {len(held)} of {total} turn(s) are held "
                                 "in memory only, not on disk; they are written when the disk has room, and lost "
                                 "if the loop stops first (it then writes them to a file it names in its log)")
        if waiting and time.monotonic() > deadline:
            raise JournalUnavailable(f"the bus journal has not recorded {len(waiting)} of {total} message(s) "
                                     f"within {timeout:g} s", waiting)
        if waiting:
            time.sleep(0.05)
