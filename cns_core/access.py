"""Who may reach what: loopback addresses, the dashboard's access token, the paths a page may read.

On loopback the dashboard is as private as the machine. Once it listens on another
address, anyone who reaches the port could read files through the pages, spend the
machine's CPU and write into its memory; so a shared dashboard needs a token
(:func:`dashboard_token`, compared in constant time by :func:`token_matches`), and a
path typed into a page must lie under an allowed root (:func:`confine`) whatever the
address. The roots are the state folder, ``examples/``, the shared data folder and
the folders listed in ``config/access.yaml``.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from cns_core.config import ConfigError, config_number, data_dir, load_config, project_dir, project_path, state_dir

__all__ = ["AccessError", "TOKEN_ENV", "is_loopback", "token_file", "dashboard_token", "new_token",
           "token_matches", "token_id", "Root", "allowed_roots", "describe_roots", "confine"]

TOKEN_ENV = "CNS_DASHBOARD_TOKEN"
_TOKEN_FILE = "dashboard_token"


class AccessError(ValueError):
    """A token or a path that must not be used; the message says why and what is allowed."""


def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback IP (``127.0.0.0/8``, ``::1``); an empty host means every interface."""
    host = host.strip().strip("[]")
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# ----- the dashboard's access token ---------------------------------------------------
def token_file() -> Path:
    """Where ``cns run --new-token`` keeps the token (readable by its owner only)."""
    return state_dir() / _TOKEN_FILE


def _min_length() -> int:
    section = load_config("access").get("dashboard") or {}
    return config_number(section, "token_min_length", file="access.yaml", path="dashboard", default=16, low=8,
                         integer=True)


def dashboard_token() -> str | None:
    """The configured token (``CNS_DASHBOARD_TOKEN``, else the token file), or None when there is none.

    A token shorter than ``dashboard.token_min_length`` is refused: it could be guessed.
    """
    token, where = (os.environ.get(TOKEN_ENV) or "").strip(), TOKEN_ENV
    if not token:
        path = token_file()
        try:
            token, where = path.read_text(encoding="utf-8").strip(), str(path)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise AccessError(f"dashboard token file {path}: cannot be read ({exc})") from exc
        if not token:
            return None
    least = _min_length()
    if len(token) < least:
        raise AccessError(f"dashboard token from {where}: {len(token)} characters is too short to share a "
                          f"dashboard (at least {least}); `cns run --new-token` writes a strong one")
    return token


def new_token() -> str:
    """A fresh random token written to :func:`token_file` (mode 0600); the old one stops working."""
    token = secrets.token_urlsafe(32)
    path = token_file()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(token + "\n")
    os.chmod(path, 0o600)   # an existing file keeps its mode on O_CREAT
    return token


def token_matches(given: str, expected: str) -> bool:
    """Constant-time comparison, so the time taken tells nothing about how much of ``given`` was right."""
    return hmac.compare_digest(given.strip().encode("utf-8"), expected.encode("utf-8"))


def token_id(token: str) -> str:
    """What a session keeps to remember it gave ``token``: a digest, never the token itself."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()[:24]


# ----- paths typed into pages ------------------------------------------------------------
@dataclass(frozen=True)
class Root:
    """A folder whose files the pages may read; ``path`` is resolved."""

    name: str
    path: Path


def allowed_roots() -> list[Root]:
    """The state folder, ``examples/``, the shared data folder and ``paths.data_roots`` of ``access.yaml``."""
    extra = (load_config("access").get("paths") or {}).get("data_roots") or []
    if not isinstance(extra, list) or not all(isinstance(p, str) and p.strip() for p in extra):
        raise ConfigError("access.yaml: paths.data_roots: expected a list of folder paths")
    roots = [Root("state folder", state_dir()), Root("examples", project_path("examples")),
             Root("shared data", data_dir())]
    roots += [Root("data root", project_dir() / Path(p).expanduser()) for p in extra]
    return [Root(r.name, r.path.resolve()) for r in roots]


def describe_roots(roots: list[Root]) -> str:
    return ", ".join(f"{r.name} {r.path}" for r in roots)


def confine(text: str | Path, what: str, roots: list[Root] | None = None) -> Path:
    """``text`` resolved (relative to the project root; symlinks and ``..`` followed), if it lies under a root.

    Otherwise :class:`AccessError` naming ``what`` and the allowed roots.
    """
    roots = allowed_roots() if roots is None else roots
    raw = str(text).strip()
    if not raw:
        raise AccessError(f"{what}: is empty; give a path under one of: {describe_roots(roots)}")
    path = Path(raw).expanduser()
    resolved = (path if path.is_absolute() else project_dir() / path).resolve()
    if any(resolved.is_relative_to(root.path) for root in roots):
        return resolved
    shown = raw if str(resolved) == raw else f"{raw} (= {resolved})"
    raise AccessError(f"{what} {shown}: outside the folders the dashboard may read: {describe_roots(roots)}. "
                      "List another folder under paths.data_roots in config/access.yaml to allow it.")
