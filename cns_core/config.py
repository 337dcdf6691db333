"""Loading the YAML defaults under ``config/`` with environment overrides.

Every tunable number lives in one YAML file per concern (``models.yaml``,
``profiles.yaml``, ``meta.yaml``, ...). Code reads it once through
:func:`load_config` and passes the values in, so tests can hand in their own.
"""

from __future__ import annotations

import math
import os
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator, Mapping

import yaml

PROJECT_ROOT = Path(__file__).resolve().parent.parent

__all__ = ["ConfigError", "UniqueKeyLoader", "load_yaml_text", "config_dir", "load_config", "load_yaml_file", "yaml_problem", "data_dir", "state_dir", "env_override",
           "config_number", "config_mapping", "replace_atomically"]


class ConfigError(ValueError):
    """A configuration file or value is missing or malformed; the message names it."""


class UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's SafeLoader that refuses a key written twice in one mapping, naming both lines.

    PyYAML keeps the last of two equal keys without a word: a second ``hypothesis: c7`` in an SNO
    file silently made an opponent's claim the hypothesis. Keys a merge (``<<: *base``) brings in
    may still be overridden, as YAML intends.
    """

    def construct_mapping(self, node: yaml.Node, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, yaml.MappingNode):
            first: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    line = first.setdefault(key, key_node.start_mark.line + 1)
                except TypeError:           # an unhashable key: PyYAML's own error follows
                    continue
                if line != key_node.start_mark.line + 1:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"the key {str(key)[:60]!r} is written twice (first at line {line}); "
                                    "keep one", key_node.start_mark)
        return super().construct_mapping(node, deep=deep)


def load_yaml_text(text: str) -> Any:
    """``yaml.safe_load`` that refuses duplicate keys (:class:`UniqueKeyLoader`)."""
    return yaml.load(text, Loader=UniqueKeyLoader)     # noqa: S506 - a SafeLoader


def config_dir() -> Path:
    """The folder of YAML defaults (``CNS_CONFIG_DIR`` overrides it)."""
    return Path(os.environ.get("CNS_CONFIG_DIR", PROJECT_ROOT / "config"))


def data_dir() -> Path:
    """The shared evaluation data (``CNS_DATA_DIR``, default ``../shared/data``)."""
    return Path(os.environ.get("CNS_DATA_DIR", PROJECT_ROOT.parent / "shared" / "data"))


def state_dir(create: bool = True) -> Path:
    """Where the product keeps what it writes: memory, logs, caches (``CNS_STATE_DIR``); created unless
    ``create`` is False (a command that only reads must not leave an empty state folder behind)."""
    path = Path(os.environ.get("CNS_STATE_DIR", PROJECT_ROOT / ".cns"))
    if create and not path.is_dir():
        path.mkdir(parents=True, exist_ok=True, mode=0o700)     # the owner's alone: memory, grades, journal
    return path


def make_private(folder: str | Path) -> list[str]:
    """Make a state folder its owner's alone: the folder mode 700 and nothing in it readable by group or others
    (the memory's SQLite store and the server record were once world-readable); what is created in it later is
    behind the folder's mode. Only what this user owns is changed; returns what could not be (a folder of
    another user's, a read-only mount)."""
    folder = Path(folder)
    problems: list[str] = []
    me = os.geteuid()
    for root, dirs, files in os.walk(folder):
        for name in [".", *dirs, *files]:
            path = Path(root) / name if name != "." else Path(root)
            try:
                info = path.lstat()
                if info.st_uid != me or not (info.st_mode & 0o077) or path.is_symlink():
                    continue
                path.chmod(info.st_mode & 0o700)
            except OSError as exc:
                problems.append(f"{path}: {exc.strerror or exc}")
    return problems


@contextmanager
def replace_atomically(path: str | Path, make_parents: bool = True) -> Iterator[Path]:
    """A temporary file beside ``path`` to write; it replaces ``path`` only when the block ends without error,
    so a crash never leaves a half-written state file (checkpoints, results, calibration, quarantine).
    ``make_parents``: create missing folders (state files); a file a person names does not get them."""
    path = Path(path)
    if make_parents:
        path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    yield tmp
    os.replace(tmp, path)


@lru_cache(maxsize=None)
def _read_yaml(path: Path, mtime_ns: int) -> dict[str, Any]:
    try:
        data = load_yaml_text(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path.name}: cannot be read ({exc})") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path.name}: not valid YAML: {yaml_problem(exc)}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path.name}: expected a mapping at the top level, got {type(data).__name__}")
    return data


def yaml_problem(exc: yaml.YAMLError) -> str:
    """A YAML syntax error in one line that points at its cause.

    PyYAML notices an unclosed quote or bracket only where the file ends (``problem_mark``);
    the quote itself is at ``context_mark``, so that is the line named first.
    """
    problem = str(getattr(exc, "problem", None) or exc).strip()
    at = _mark(getattr(exc, "problem_mark", None))
    context, start = getattr(exc, "context", None), _mark(getattr(exc, "context_mark", None))
    if not (context and start):
        return f"{problem}{' at ' + at if at else ''}"
    thing = context.removeprefix("while scanning ").removeprefix("while parsing ")
    if "end of stream" in problem or "<stream end>" in problem:
        return f"{thing} that starts at {start} is never closed (the file ends first)"
    return f"{problem}{' at ' + at if at else ''}, in {thing} that starts at {start}"


def _mark(mark: Any) -> str:
    return f"line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""


def load_config(name: str) -> dict[str, Any]:
    """Return ``config/<name>.yaml`` as a fresh dict (callers may mutate it)."""
    path = config_dir() / f"{name}.yaml"
    if not path.is_file():
        raise ConfigError(f"{path}: configuration file not found")
    return load_yaml_file(path)


def load_yaml_file(path: str | Path) -> dict[str, Any]:
    """A YAML file whose top level is a mapping, as a fresh dict; errors name the file."""
    import copy

    path = Path(path)
    try:
        mtime_ns = path.stat().st_mtime_ns
    except OSError as exc:
        raise ConfigError(f"{path.name}: cannot be read ({exc})") from exc
    return copy.deepcopy(_read_yaml(path, mtime_ns))


def env_override(value: Any, env_name: str, cast: type = str) -> Any:
    """Return ``cast(os.environ[env_name])`` when set, else ``value``; name the variable on error."""
    raw = os.environ.get(env_name)
    if raw is None or raw == "":
        return value
    try:
        return cast(raw)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{env_name}={raw!r}: expected {cast.__name__}") from exc


def config_number(section: Mapping[str, Any], key: str, *, file: str, path: str = "", default: Any = None,
                  low: float | None = None, high: float | None = None, integer: bool = False) -> Any:
    """``section[key]`` checked to be a number in ``[low, high]``; errors read ``file: path.key: problem``."""
    where = f"{file}: {path}.{key}" if path else f"{file}: {key}"
    value = section.get(key, default)
    if value is None:
        raise ConfigError(f"{where}: is required")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise ConfigError(f"{where}: expected a number, got {value!r}")
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = (f"between {low:g} and {high:g}" if low is not None and high is not None
                  else f">= {low:g}" if low is not None else f"<= {high:g}")
        raise ConfigError(f"{where}: must be {bounds} (got {value!r})")
    if integer:
        if int(value) != value:
            raise ConfigError(f"{where}: expected a whole number, got {value!r}")
        return int(value)
    return float(value)


def settings_error(file: str, exc: Any) -> ConfigError:
    """A pydantic ``ValidationError`` of settings read from ``file`` as one ConfigError naming each field."""
    problems = "; ".join(f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors())
    return ConfigError(f"{file}: {problems}")


def config_mapping(section: Mapping[str, Any], key: str, *, file: str) -> Mapping[str, Any]:
    """``section[key]`` as a mapping (absent means empty); errors name the file and key."""
    value = section.get(key) or {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{file}: {key}: expected a mapping")
    return value
