"""``python -m cns_core.cli.memory_server --path FOLDER --port N``: the Chroma server ``cns run`` keeps.

It takes the store folder's lock first (:func:`cns_core.memory.access.store_lock`), so no process opens the
folder embedded while it is served, then serves the folder on loopback through Chroma's Python server (its
FastAPI app, run by uvicorn in this process) with Chroma's token authentication: every request but the
heartbeat must carry the folder's token (:mod:`cns_core.memory.server_token`), which only the folder's owner
can read, so another local user is refused (HTTP 403). Chroma's Rust server (``chroma run``) has no
authentication (chroma-core/chroma#4965); the Python server stores through the same Rust engine, so a folder
served either way is the same folder. The lock is released by the kernel when the process ends, however it ends.

Only warnings and errors reach ``cns run``'s output (no line per request); a line that repeats is said once and
counted. SIGTERM or SIGINT ends the server at once: Chroma answers a write only once SQLite holds it, so
nothing it acknowledged is lost.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
import threading
import time
from pathlib import Path
from typing import IO, Sequence

from cns_core.cli.process_exit import leave

__all__ = ["main", "NOTEWORTHY"]

NOTEWORTHY = re.compile(r"\b(?:WARN|WARNING|ERROR|CRITICAL)\b|panicked|[Aa]ddress already in use|[Ff]ailed")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def _say(out: IO[str], text: str) -> None:
    try:
        out.write(text + "\n")
        out.flush()
    except (OSError, ValueError):
        pass


class _Repeats:
    """Chroma logs an error per request: a line that repeats (numbers and times aside) is said once, then every
    ``every_s`` with how many times it came meanwhile (a full disk once made one line per request)."""

    def __init__(self, every_s: float = 60.0):
        self.every_s = every_s
        self._seen: dict[str, list[float]] = {}     # shape -> [last said (monotonic), times since]

    def say(self, line: str) -> str | None:
        shape = re.sub(r"\d+", "#", line)[:300]
        now = time.monotonic()
        seen = self._seen.get(shape)
        if seen is None or now - seen[0] >= self.every_s:
            if len(self._seen) > 1000:
                self._seen.clear()
            repeated = f" (and {int(seen[1])} more like it in the last {now - seen[0]:.0f} s)" if seen and seen[1] \
                else (" (repeats are counted, said every minute)" if seen is None else "")
            self._seen[shape] = [now, 0]
            return line + repeated
        seen[1] += 1
        return None


def _filter_stdout(out: IO[str]) -> None:
    """Send this process's fd 1 (where the Chroma server writes) through a pipe; pass only noteworthy lines."""
    read_end, write_end = os.pipe()
    os.dup2(write_end, 1)
    os.close(write_end)

    repeats = _Repeats()

    def pump() -> None:
        with os.fdopen(read_end, "r", encoding="utf-8", errors="replace") as lines:
            for line in lines:
                plain = _ANSI.sub("", line).rstrip()
                if plain.strip() and NOTEWORTHY.search(plain):
                    said = repeats.say(plain.strip())
                    if said:
                        _say(out, said)

    threading.Thread(target=pump, name="cns-chroma-log", daemon=True).start()


def _log_to(out: IO[str]) -> None:
    """Python's log (uvicorn's, Chroma's) at WARNING and above, one line each, to ``out`` (the filtered fd 1)."""
    import logging
    import warnings

    handler = logging.StreamHandler(out)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.WARNING, handlers=[handler], force=True)
    # Chroma's server still answers through FastAPI's ORJSONResponse, which FastAPI now calls deprecated
    warnings.filterwarnings("ignore", message="ORJSONResponse is deprecated")


def _app(folder: Path, token: str) -> object:
    """Chroma's FastAPI app over ``folder``, asking every request for ``token`` (given in-process: never on a
    command line)."""
    from chromadb.config import Settings
    from chromadb.server.fastapi import FastAPI

    # Chroma's Python server rebuilds each collection's embedding function from its stored configuration, by
    # name, though it never embeds (the clients do): ours must be registered here, as in every client.
    import cns_core.memory.service  # noqa: F401  (registers CNSEmbeddingFunction; loads no model)

    settings = Settings(is_persistent=True, persist_directory=str(folder), anonymized_telemetry=False,
                        allow_reset=False,
                        chroma_server_authn_provider="chromadb.auth.token_authn.TokenAuthenticationServerProvider",
                        chroma_server_authn_credentials=token)
    return FastAPI(settings).app()


def _serve(folder: Path, token: str, host: str, port: int, failure: list[str]) -> None:
    try:
        import uvicorn

        config = uvicorn.Config(_app(folder, token), host=host, port=port, log_config=None, log_level="warning",
                                access_log=False, server_header=False)
        uvicorn.Server(config).run()       # off the main thread it installs no signal handlers: ours stop it
        failure.append("the Chroma server returned")
    except BaseException as exc:  # noqa: BLE001 - reported by the main thread, which exits non-zero
        failure.append(f"{type(exc).__name__}: {exc}" if str(exc) else f"{type(exc).__name__} (see the lines above)")


def main(argv: Sequence[str] | None = None) -> int:
    from cns_core.cli.quiet import offline_and_quiet
    from cns_core.memory.access import server_answers, store_lock
    from cns_core.memory.process_lock import LockHeld
    from cns_core.memory.server_token import ensure_token, token_path

    offline_and_quiet()
    parser = argparse.ArgumentParser(prog="python -m cns_core.cli.memory_server",
                                     description="Serve a memory folder through Chroma's server (cns run starts it).")
    parser.add_argument("--path", required=True, help="the Chroma store folder")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args(argv)
    folder = Path(args.path)
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    from cns_core.config import make_private

    os.umask(0o077)                             # what the server creates is the owner's alone
    for problem in make_private(folder):        # ... and what is there already
        _say(sys.stderr, f"memory server: warning: cannot make private: {problem}")
    try:
        store_lock(folder, f"the Chroma server of `cns run` on port {args.port}").acquire()
    except LockHeld as exc:
        _say(sys.stderr, f"memory server: cannot serve: {exc}. Stop that process first: an embedded Chroma "
                         "folder belongs to one process.")
        return 3
    try:
        token = ensure_token(folder)
    except OSError as exc:
        _say(sys.stderr, f"memory server: cannot serve: cannot make its token {token_path(folder)} ({exc})")
        return 3
    os.environ.setdefault("RUST_LOG", "warn")         # no line per request
    os.environ["ANONYMIZED_TELEMETRY"] = "False"
    _filter_stdout(out)
    _log_to(sys.stdout)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    failure: list[str] = []
    server = threading.Thread(target=_serve, args=(folder, token, args.host, args.port, failure), name="cns-chroma",
                              daemon=True)
    server.start()
    announced = False
    while not stop.wait(0.2):
        if not server.is_alive():
            _say(out, f"memory server: stopped: {failure[0] if failure else 'unknown reason'}")
            leave(1)
        if not announced and server_answers(args.host, args.port, timeout=0.5):
            _say(out, f"serving the memory {folder.resolve()} on http://{args.host}:{args.port} to holders of "
                      f"its token ({token_path(folder.resolve())})")
            announced = True
    _say(out, "memory server: stopped")
    time.sleep(0.05)          # let the log pump pass a last line
    leave(0)                  # the server thread holds no state to save: Chroma wrote each write as it answered


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
