"""How a process reaches the memory: through the Chroma server that serves its folder, or embedded, alone.

Chroma's embedded client (``PersistentClient``) belongs to one process: a second process opening the same
folder sees a stale vector index ("Error finding id" on a search by meaning after another process wrote) and
two writers may lose data (chroma-core/chroma#3792; Chroma's usage guide). So one place decides, every time a
:class:`~cns_core.memory.MemoryService` opens the memory (:func:`open_store`):

1. a server named in the configuration (``memory.url``, ``CNS_CHROMA_URL``): an ``HttpClient`` to it;
2. else, when ``cns run`` serves the folder (a record in the folder, :data:`SERVER_RECORD_NAME`, naming the
   server's port and the ``cns run`` that keeps it running, checked live): an ``HttpClient`` to that server,
   waiting a little while it starts or is restarted;
3. else the embedded client, under an exclusive lock on the folder (:data:`STORE_LOCK_NAME`, held while the
   process has the memory open, normally its whole life). A second process is refused with a message that
   names the process holding the folder and what to do: stop it, or run both under ``cns run``, which serves
   the memory to every process.

The Chroma server ``cns run`` starts (:mod:`cns_core.cli.memory_server`) takes the same lock, so nobody opens
the folder embedded while it serves it, and asks every client for the folder's token
(:mod:`cns_core.memory.server_token`), which only the folder's owner can read. Either way the collections use our own embedding function: the
client embeds, the server only stores. An embedded folder is served as it is: nothing to migrate.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from cns_core.config import ConfigError, replace_atomically, state_dir
from cns_core.memory.process_lock import ExclusiveLock, LockHeld, process_started, remove_own_record
from cns_core.memory.server_token import TokenError, auth_header, read_token

__all__ = ["STORE_LOCK_NAME", "SERVER_RECORD_NAME", "MemoryStoreError", "StoreBusyError", "ServerRecord",
           "OpenedStore", "store_folder", "store_lock", "write_server_record", "clear_server_record", "served_record",
           "open_store", "place_of", "server_answers", "server_read_problem", "REQUEST_TIMEOUT_S"]

STORE_LOCK_NAME = "cns-memory.lock"
SERVER_RECORD_NAME = "cns-server.json"
SERVE_WAIT_S = 30.0          # how long an opener waits for a served folder's server to answer (start, restart)
_MAX_RECORD_BYTES = 4096
REQUEST_TIMEOUT_S = 60.0     # every request to a Chroma server, a write included, has this deadline (memory.yaml)


class MemoryStoreError(RuntimeError):
    """The Chroma store cannot be opened or reached; the message says which and how to fix it."""


class StoreBusyError(MemoryStoreError):
    """Another process holds the embedded store; the message names it and what to do."""


@dataclass(frozen=True)
class ServerRecord:
    """``cns run`` serving a store folder: where its Chroma server listens and who keeps it running."""

    path: str                   # the store folder served (resolved)
    host: str
    port: int
    server_pid: int             # the Chroma server (a new one after a restart)
    supervisor_pid: int         # the ``cns run`` that starts and restarts it
    supervisor_started: float   # ... and its start time (a reused pid is not it)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def describe(self) -> str:
        return f"the Chroma server at {self.url} (pid {self.server_pid}, kept by `cns run` pid {self.supervisor_pid})"


@dataclass
class OpenedStore:
    """A Chroma client and how it was reached."""

    client: Any
    where: str                          # the server's URL or the embedded folder
    served: ServerRecord | None = None  # the ``cns run`` server used, if any
    lock: ExclusiveLock | None = None   # the embedded folder's lock, held by this process

    @property
    def embedded(self) -> bool:
        return self.lock is not None


def store_folder(path: str | Path | None = None, create: bool = True) -> Path:
    """The embedded store folder: ``path``, else ``<state dir>/chroma``."""
    return Path(path) if path else state_dir(create) / "chroma"


def store_lock(folder: str | Path, role: str = "") -> ExclusiveLock:
    """The lock that gives one process the embedded folder."""
    return ExclusiveLock(Path(folder) / STORE_LOCK_NAME, f"the memory at {folder}", role)


def _record_path(folder: str | Path) -> Path:
    return Path(folder) / SERVER_RECORD_NAME


def write_server_record(folder: str | Path, host: str, port: int, server_pid: int) -> ServerRecord:
    """Say that this process (``cns run``) serves ``folder`` through the server ``server_pid`` on ``port``."""
    me = os.getpid()
    record = ServerRecord(str(Path(folder).resolve()), host, int(port), int(server_pid), me,
                          process_started(me) or time.time())
    with replace_atomically(_record_path(folder)) as tmp:
        tmp.write_text(json.dumps(asdict(record)), encoding="utf-8")
    return record


def clear_server_record(folder: str | Path) -> None:
    """Remove the record if this process wrote it (another ``cns run``'s record is left alone)."""
    remove_own_record(_record_path(folder), "supervisor_pid")


def served_record(folder: str | Path) -> ServerRecord | None:
    """The record of the ``cns run`` serving ``folder`` when that ``cns run`` is alive, else None."""
    try:
        with open(_record_path(folder), "rb") as handle:     # a small file of ours: a damaged one is not read whole
            raw = json.loads(handle.read(_MAX_RECORD_BYTES).decode("utf-8"))
        record = ServerRecord(**{k: raw[k] for k in ServerRecord.__dataclass_fields__})
        record = replace(record, port=int(record.port), server_pid=int(record.server_pid),
                         supervisor_pid=int(record.supervisor_pid), supervisor_started=float(record.supervisor_started))
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None
    started = process_started(int(record.supervisor_pid))
    if started is None or abs(started - float(record.supervisor_started)) > 1.0:
        return None
    return record


def server_answers(host: str, port: int, timeout: float = 1.0) -> bool:
    """Whether a Chroma server answers its heartbeat at ``host:port``."""
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://{host}:{port}/api/v2/heartbeat", timeout=timeout) as reply:
            return reply.status == 200
    except (OSError, ValueError):
        return False


def server_read_problem(host: str, port: int, timeout: float = 10.0, token: str | None = None) -> str | None:
    """None when a Chroma server answers a real read (listing its collections, which needs its SQLite store)
    within ``timeout``, else what went wrong. Its heartbeat answers without the store: a server wedged on a
    lock (once, after a full disk was freed) answered it for 14 minutes while every read hung. ``token``: the
    served folder's (:mod:`cns_core.memory.server_token`); a server that refuses it says so."""
    import urllib.error
    import urllib.request

    url = f"http://{host}:{port}/api/v2/tenants/default_tenant/databases/default_database/collections?limit=1"
    started = time.monotonic()
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=auth_header(token)),
                                    timeout=timeout) as reply:
            reply.read(65536)
            return None if reply.status == 200 else f"a read answered HTTP {reply.status}"
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403):
            return (f"refused a read (HTTP {exc.code}): it requires a token, and "
                    f"{'this one is not it' if token else 'none was sent'}")
        return f"a read answered HTTP {exc.code}"
    except (OSError, ValueError) as exc:
        if time.monotonic() - started >= timeout * 0.9:
            return f"does not answer a read within {timeout:g} s"
        return f"a read failed ({type(exc).__name__}: {exc})"


def _with_deadline(client: Any, seconds: float) -> Any:
    """Give every request of a Chroma ``HttpClient`` a deadline: Chroma's client waits forever (httpx with
    ``timeout=None``), so a write to a wedged server would hold its caller for good. The session is Chroma's
    own (``client._server._session``); where a Chroma version keeps it elsewhere nothing is changed."""
    import httpx

    session = getattr(getattr(client, "_server", None), "_session", None)
    if isinstance(session, httpx.Client):
        session.timeout = httpx.Timeout(seconds, connect=min(seconds, 10.0))
    return client


def _wait_for_server(record: ServerRecord, folder: Path, wait_s: float) -> ServerRecord:
    """The live record once its server answers (it may be starting or restarting: a restarted server has a new
    pid, so the record is read again); MemoryStoreError when it does not within ``wait_s``."""
    deadline = time.monotonic() + wait_s
    while True:
        if server_answers(record.host, record.port):
            return record
        if time.monotonic() >= deadline:
            raise MemoryStoreError(f"the memory at {folder} is served by {record.describe()}, which does not answer "
                                   f"after {wait_s:g} s; see `cns run`'s output (its [chroma] lines), or stop that "
                                   "`cns run`")
        time.sleep(0.1)
        fresh = served_record(folder)
        if fresh is None:
            raise MemoryStoreError(f"the `cns run` serving the memory at {folder} stopped while this process waited "
                                   "for its Chroma server; open the memory again")
        record = fresh


def _settings(token: str | None = None) -> Any:
    """Chroma's client settings; with ``token``, Chroma's token authentication (sent as a bearer token)."""
    from chromadb.config import Settings

    if token is None:
        return Settings(anonymized_telemetry=False)
    return Settings(anonymized_telemetry=False,
                    chroma_client_auth_provider="chromadb.auth.token_authn.TokenAuthClientProvider",
                    chroma_client_auth_credentials=token)


def _http_client(url: str, allow_non_loopback: bool, timeout_s: float = REQUEST_TIMEOUT_S,
                 token: str | None = None) -> Any:
    import chromadb

    from cns_core.access import is_loopback

    parsed = urlparse(url if "://" in url else f"http://{url}")
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ConfigError(f"memory url {url!r}: expected http(s)://host:port")
    if not is_loopback(parsed.hostname) and not allow_non_loopback:
        raise ConfigError(f"memory url {url!r}: the Chroma server must be on loopback (127.0.0.1, ::1, "
                          "localhost): the memory's turns and grades would cross the network to a server "
                          "that, by default, has no authentication. To use it on purpose set "
                          "allow_non_loopback: true in config/memory.yaml")
    port = parsed.port or (443 if parsed.scheme == "https" else 8000)
    if parsed.scheme == "http":       # Chroma's client asks the server before any deadline can be set on it
        problem = server_read_problem(parsed.hostname, port, timeout_s, token)
        if problem is not None and "answer a read" in problem:
            raise MemoryStoreError(f"the Chroma server at {url} {problem} (Timeout; memory.request_timeout_s); "
                                   "`cns run` restarts a server of its own that stops answering")
        if problem is not None and problem.startswith("refused"):
            raise MemoryStoreError(f"the Chroma server at {url} {problem}. The server `cns run` keeps takes the "
                                   "token in its store folder, which only the folder's owner can read: run this as "
                                   "that user")
    try:
        return _with_deadline(chromadb.HttpClient(host=parsed.hostname, port=port, ssl=parsed.scheme == "https",
                                                  settings=_settings(token)), timeout_s)
    except Exception as exc:  # connection refused, wrong server, version mismatch, a refused token
        raise MemoryStoreError(f"cannot reach the Chroma server at {url} ({type(exc).__name__}: {exc}). "
                               "Start it (chroma run) or unset CNS_CHROMA_URL / memory.url.") from exc


def _embedded_client(folder: Path) -> OpenedStore:
    import chromadb

    lock = store_lock(folder, "the embedded memory")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        lock.acquire()
    except LockHeld as exc:
        who = exc.holder.describe() if exc.holder else "another process"
        raise StoreBusyError(
            f"the memory at {folder} is open in {who}; an embedded Chroma folder belongs to one process (two "
            "would corrupt its index). Stop that process, or run everything under `cns run` (`make run`), which "
            "serves the memory to every process through a Chroma server") from None
    except OSError as exc:
        raise MemoryStoreError(f"cannot open the Chroma store at {folder} ({type(exc).__name__}: {exc})") from exc
    try:
        client = chromadb.PersistentClient(path=str(folder), settings=_settings())
    except Exception as exc:
        lock.release()
        raise MemoryStoreError(f"cannot open the Chroma store at {folder} ({type(exc).__name__}: {exc})") from exc
    return OpenedStore(client, str(folder), lock=lock)


def open_store(path: str | Path | None = None, url: str | None = None, *, allow_non_loopback: bool = False,
               wait_s: float = SERVE_WAIT_S, timeout_s: float = REQUEST_TIMEOUT_S) -> OpenedStore:
    """Open the memory the one way this process may (see the module doc); every request to a server has
    the deadline ``timeout_s``."""
    if url:
        return OpenedStore(_http_client(url, allow_non_loopback, timeout_s), url)
    folder = store_folder(path)
    record = served_record(folder)
    if record is not None:
        record = _wait_for_server(record, folder, wait_s)
        try:
            token = read_token(folder)      # read now: a server started since may have made it
        except TokenError as exc:
            raise MemoryStoreError(str(exc)) from None
        return OpenedStore(_http_client(record.url, False, timeout_s, token), record.url, served=record)
    return _embedded_client(folder)


def place_of(path: str | Path | None = None, url: str | None = None) -> str:
    """Where :func:`open_store` would go now, as a key (a URL or a folder); opens nothing."""
    if url:
        return url
    folder = store_folder(path, create=False)
    record = served_record(folder)
    return record.url if record is not None else str(folder.resolve())
