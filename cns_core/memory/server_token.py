"""The token the memory's Chroma server asks of every client: only the store folder's owner can read it.

The server ``cns run`` keeps (:mod:`cns_core.cli.memory_server`) listens on loopback, and loopback is open to
every local user: without a token another user listed, read, created and deleted the memory's collections
(issue 71). So the server runs Chroma's token authentication, and the token lives in the store folder beside the
server record (:data:`TOKEN_NAME`, mode 600, in a folder of mode 700): a process that can find the server through
the record can read the token; another user can do neither. The token is made once per store folder and kept,
so a restarted server takes the same one and the clients already open keep working.

The token never travels on a command line (``/proc/*/cmdline`` is readable by everyone): the server and each
client read the file.
"""

from __future__ import annotations

import os
import secrets
import string
from pathlib import Path

__all__ = ["TOKEN_NAME", "TokenError", "token_path", "read_token", "ensure_token", "auth_header"]

TOKEN_NAME = "cns-memory-token"
_MAX_TOKEN_BYTES = 256
_TOKEN_CHARS = frozenset(string.ascii_letters + string.digits + "-_")   # what secrets.token_urlsafe writes


class TokenError(RuntimeError):
    """The token file cannot be read or is damaged; the message names the file and what to do."""


def token_path(folder: str | Path) -> Path:
    return Path(folder) / TOKEN_NAME


def read_token(folder: str | Path) -> str | None:
    """The store folder's token; None when there is none (the folder is not served with one). TokenError when
    the file is there but cannot be read (another user's folder) or is damaged."""
    path = token_path(folder)
    try:
        with open(path, "rb") as handle:           # a small file of ours: a damaged one is not read whole
            raw = handle.read(_MAX_TOKEN_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise TokenError(f"cannot read the memory server's token {path} ({exc.strerror or exc}): only the owner "
                         "of the state folder may reach its memory") from None
    token = raw.decode("ascii", errors="replace").strip()
    if not token or len(raw) > _MAX_TOKEN_BYTES or not set(token) <= _TOKEN_CHARS:
        raise TokenError(f"the memory server's token {path} is damaged; stop `cns run` and remove it (a new one is "
                         "made when the memory is served again)")
    return token


def ensure_token(folder: str | Path) -> str:
    """The store folder's token, made now (mode 600) when there is none or it is damaged. Two processes making
    it at once agree: the file appears whole, once (a link of a finished file), and the loser reads the winner's."""
    folder = Path(folder)
    try:
        token = read_token(folder)
    except TokenError:
        if not token_path(folder).is_file():
            raise
        token_path(folder).unlink()          # damaged: replaced below (the clients read it at each open)
        token = None
    if token is not None:
        os.chmod(token_path(folder), 0o600)  # ours, and ours alone, whatever it was left as
        return token
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    fresh = secrets.token_urlsafe(32)
    draft = folder / f".{TOKEN_NAME}.{os.getpid()}.{secrets.token_hex(4)}"
    fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(fresh + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(draft, token_path(folder))
        except FileExistsError:
            return ensure_token(folder)     # another process made it first: theirs is the one
        return fresh
    finally:
        draft.unlink(missing_ok=True)


def auth_header(token: str | None) -> dict[str, str]:
    """The HTTP header that carries ``token`` to the server (Chroma's default: a bearer token)."""
    return {"Authorization": f"Bearer {token}"} if token else {}
