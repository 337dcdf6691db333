"""The bus journal: every envelope the proxy forwards, kept in SQLite, replayable by sequence.

Publish/subscribe forgets: a subscriber that is down misses what is sent. The
MemoryAgent must not (a missed critique is a lost score), so the proxy copies
each message to this journal and a restarted agent asks for everything after the
last message it processed (``replay``). The journal answers on a loopback
REQ/REP port; its thread owns the SQLite connection.

Requests and replies are JSON objects:
``{"op": "tail"}`` -> ``{"ok": true, "seq": N}`` (the newest sequence number);
``{"op": "replay", "after_seq": N | "after_message_id": ID, "subjects": [...], "limit": K}``
-> ``{"ok": true, "found": bool, "messages": [[seq, subject, json], ...], "more": bool}``.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
import uuid
from typing import Any, Iterator, Sequence

import zmq

from cns_core.agents.wire import BusConfig, BusError, Envelope, MalformedMessage, bind_socket, signal_and_join

__all__ = ["Journal", "JournalUnavailable", "journal_tail", "replay"]

log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS messages (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    message_id TEXT NOT NULL UNIQUE,
    subject TEXT NOT NULL,
    body TEXT NOT NULL,
    received REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS messages_subject ON messages(subject, seq);
"""


class JournalUnavailable(BusError):
    """No journal answered (not started, or disabled in config/bus.yaml)."""


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
        self.recorded = 0

    def start(self) -> "Journal":
        path = self.config.journal_file()
        path.parent.mkdir(parents=True, exist_ok=True)
        pull = self._ctx.socket(zmq.PULL)
        pull.setsockopt(zmq.RCVHWM, 0)
        pull.bind(self.capture_endpoint)
        rep = self._ctx.socket(zmq.REP)
        try:
            bind_socket(rep, self.config.journal_address, "bus journal")
        except BusError:
            pull.close(linger=0)
            raise
        stop = self._ctx.socket(zmq.PAIR)
        stop.bind(self._stop_endpoint)
        self._stopper = self._ctx.socket(zmq.PAIR)
        self._stopper.connect(self._stop_endpoint)
        db = sqlite3.connect(str(path), check_same_thread=False)
        db.executescript(_SCHEMA)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        self._thread = threading.Thread(target=self._run, args=(pull, rep, stop, db), name="cns-bus-journal",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is None:
            return
        assert self._stopper is not None
        signal_and_join(self._stopper, b"stop", self._thread)
        self._thread = None

    # ------------------------------------------------------------------ the thread

    def _run(self, pull: zmq.Socket, rep: zmq.Socket, stop: zmq.Socket, db: sqlite3.Connection) -> None:
        poller = zmq.Poller()
        for sock in (pull, rep, stop):
            poller.register(sock, zmq.POLLIN)
        try:
            while True:
                events = dict(poller.poll(500))
                if pull in events or rep in events:
                    self._record(pull, db)          # what was captured comes before any answer
                if rep in events:
                    request = rep.recv()
                    rep.send(json.dumps(self._answer(request, db)).encode())
                if stop in events:
                    self._record(pull, db)
                    return
        except zmq.ContextTerminated:
            return
        finally:
            for sock in (pull, rep, stop):
                sock.close(linger=0)
            db.close()

    def _record(self, pull: zmq.Socket, db: sqlite3.Connection) -> None:
        rows = []
        now = time.time()
        while pull.poll(0, zmq.POLLIN):
            frames = pull.recv_multipart()
            if len(frames) != 2 or frames[0][:1] in (b"\x00", b"\x01") or frames[0].startswith(b"bus.ping."):
                continue                        # subscriptions and readiness pings are not messages
            try:      # a light check: subscribers validate fully; the journal keeps what names itself
                body = json.loads(frames[1])
                message_id, subject = body["message_id"], body["subject"]
            except (ValueError, KeyError, TypeError):
                continue
            if not isinstance(message_id, str) or subject != frames[0].decode("utf-8", "replace"):
                continue
            rows.append((message_id, subject, frames[1].decode("utf-8", "replace"), now))
        if not rows:
            return
        with db:
            db.executemany("INSERT OR IGNORE INTO messages(message_id, subject, body, received) VALUES (?,?,?,?)",
                           rows)
        before = self.recorded // 5000
        self.recorded += len(rows)
        if self.recorded // 5000 != before:
            with db:
                db.execute("DELETE FROM messages WHERE seq <= (SELECT MAX(seq) FROM messages) - ?",
                           (self.config.journal_keep,))

    def _answer(self, raw: bytes, db: sqlite3.Connection) -> dict[str, Any]:
        try:
            request = json.loads(raw)
            if not isinstance(request, dict):
                raise ValueError("expected a JSON object")
            op = request.get("op")
            if op == "tail":
                return {"ok": True, "seq": db.execute("SELECT COALESCE(MAX(seq), 0) FROM messages").fetchone()[0]}
            if op != "replay":
                raise ValueError(f"op: expected 'tail' or 'replay', got {op!r}")
            found = True
            if request.get("after_message_id") is not None:
                row = db.execute("SELECT seq FROM messages WHERE message_id = ?",
                                 (str(request["after_message_id"]),)).fetchone()
                found = row is not None
                after = row[0] if row else 0
            else:
                after = int(request.get("after_seq", 0))
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
            return {"ok": True, "found": found, "messages": [list(r) for r in rows[:limit]],
                    "more": len(rows) > limit}
        except (ValueError, TypeError) as exc:
            return {"ok": False, "error": str(exc)}


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
                yield seq, Envelope.decode([subject.encode(), body.encode()])
            except MalformedMessage as exc:  # the journal checks only ids and subjects
                log.warning("bus journal: skipped message %s: %s", seq, exc)
        if not reply["more"] or not reply["messages"]:
            return
        request = {"op": "replay", "subjects": list(subjects), "limit": config.replay_batch,
                   "after_seq": reply["messages"][-1][0]}
