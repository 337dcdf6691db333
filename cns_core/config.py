"""Loading the YAML defaults under ``config/`` with environment overrides, and finding the project.

Every tunable number lives in one YAML file per concern (``models.yaml``,
``profiles.yaml``, ``meta.yaml``, ...). Code reads it once through
:func:`load_config` and passes the values in, so tests can hand in their own.

The project's files (``config/``, ``models/``, ``examples/``, the dashboard) are found by one resolver,
:func:`resolve_project`: a project folder named once (``CNS_PROJECT_DIR``, or ``cns --project DIR``) wins
file by file over the package's own folder, which is the checkout it runs from or, for an installed wheel,
the copy of those files the wheel carries (``cns_core/_project``). ``cns`` hands the resolved project and
state folder to every process it starts (:func:`pinned_for_children`), so all of them agree.
"""

from __future__ import annotations

import math
import os
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator, Mapping

import yaml

PACKAGE_DIR = Path(__file__).resolve().parent
# Where a wheel carries the project's files (setup.py copies them there); absent in a checkout.
PACKAGED_PROJECT = PACKAGE_DIR / "_project"
# The variables that carry a resolved project to child processes.
PROJECT_ENV = "CNS_PROJECT_DIR"
STATE_ENV = "CNS_STATE_DIR"

__all__ = ["ConfigError", "UniqueKeyLoader", "load_yaml_text", "load_data_yaml", "Project", "resolve_project",
           "project_dir", "project_path", "pinned_for_children", "config_dir", "config_file", "load_config",
           "load_yaml_file", "yaml_problem", "data_dir", "state_dir", "env_override", "config_number", "config_mapping",
           "replace_atomically", "PACKAGE_DIR", "PACKAGED_PROJECT", "PROJECT_ENV", "STATE_ENV"]


def __getattr__(name: str) -> Any:
    """``PROJECT_ROOT``, kept for code written before the resolver: the project folder now (:func:`project_dir`)."""
    if name == "PROJECT_ROOT":
        return project_dir()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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


def load_data_yaml(path: str | Path, max_bytes: int) -> Any:
    """A data file's YAML (a probe, a table), its size bounded before it is parsed; a ValueError names the file."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    if path.stat().st_size > max_bytes:
        raise ValueError(f"{path}: over {max_bytes} bytes")
    try:
        return load_yaml_text(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: not readable YAML ({exc.__class__.__name__})") from None


def _holds_a_project(folder: Path) -> bool:
    return (folder / "config" / "models.yaml").is_file()


@lru_cache(maxsize=None)
def _package_home() -> tuple[Path, str]:
    """The package's own project folder and what it is: the checkout the package runs from (a source checkout or an
    editable install), else the copy an installed wheel carries."""
    checkout = PACKAGE_DIR.parent
    if _holds_a_project(checkout) and (checkout / "dashboard.py").is_file():
        return checkout, "the checkout the package runs from"
    if _holds_a_project(PACKAGED_PROJECT):
        return PACKAGED_PROJECT, "the copy installed with the package"
    raise ConfigError(f"the package at {PACKAGE_DIR} has no project files (no config/ beside it and no "
                      f"{PACKAGED_PROJECT.name}/ in it); name a project folder with {PROJECT_ENV} or "
                      "`cns --project DIR`, or reinstall the package from a wheel or a checkout")


@dataclass(frozen=True)
class Project:
    """Where this process reads the project's files and writes its state, and why.

    ``named`` is the project folder named once (``CNS_PROJECT_DIR``), ``home`` the package's own; a file is
    taken from ``named`` when it is there, else from ``home`` (:meth:`path`), so a named folder may hold only
    the files it changes.
    """

    named: Path | None
    home: Path
    home_origin: str
    state: Path
    state_origin: str

    @property
    def root(self) -> Path:
        """The project folder: the named one, else the package's own."""
        return self.named or self.home

    @property
    def root_origin(self) -> str:
        return f"named by {PROJECT_ENV}" if self.named else self.home_origin

    def path(self, relative: str | Path) -> Path:
        """``relative`` (``models/nli-minilm-l6``, ``examples``) in the named project when it has it, else in the
        package's own folder; an absolute path is returned as it is."""
        relative = Path(relative)
        if relative.is_absolute():
            return relative
        if self.named is not None and (self.named / relative).exists():
            return self.named / relative
        return self.home / relative


def user_state_dir() -> Path:
    """The state folder of an installed package with no project named: ``$XDG_STATE_HOME/cns-studio`` (by default
    ``~/.local/state/cns-studio``), never inside the installed package."""
    base = os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state"
    return Path(base) / "cns-studio"


def resolve_project() -> Project:
    """The project of this process: ``CNS_PROJECT_DIR`` (a folder, or a ConfigError naming it) over the package's
    own folder; the state folder is ``CNS_STATE_DIR``, else the project folder's ``.cns/``, else (an installed
    package with no project named) :func:`user_state_dir`."""
    home, home_origin = _package_home()
    named = None
    raw = os.environ.get(PROJECT_ENV, "")
    if raw:
        named = Path(raw).expanduser().resolve()
        if not named.is_dir():
            raise ConfigError(f"{PROJECT_ENV}={raw!r}: not a folder")
        if named == home:               # as `cns` hands it to its children: the package's own folder
            named = None
    root = named or home
    if root == PACKAGED_PROJECT:
        state = user_state_dir()
        state_origin = "the user's state folder: the installed package's own folder is never written"
    else:
        state, state_origin = root / ".cns", "the project folder's .cns/"
    raw_state = os.environ.get(STATE_ENV, "")
    if raw_state and Path(raw_state).expanduser().resolve() != state.resolve():
        state, state_origin = Path(raw_state).expanduser(), f"named by {STATE_ENV}"
    return Project(named, home, home_origin, state, state_origin)


def project_dir() -> Path:
    """The project folder (:attr:`Project.root`)."""
    return resolve_project().root


def project_path(relative: str | Path) -> Path:
    """A project file or folder (:meth:`Project.path`): the named project's when it has it, else the package's."""
    return resolve_project().path(relative)


@contextmanager
def pinned_for_children(named: str | Path | None = None) -> Iterator[Project]:
    """Put this process's resolved project and state folder into the environment while the block runs, so every
    child started meanwhile (the dashboard, the memory's server, the demo data, Ray's workers) uses the same ones,
    whichever copy of the package its interpreter imports. ``named``: a project folder (``cns --project``) that
    wins over ``CNS_PROJECT_DIR``. The environment is as it was once the block ends."""
    saved = {name: os.environ.get(name) for name in (PROJECT_ENV, STATE_ENV)}
    try:
        if named:
            if not Path(named).expanduser().is_dir():
                raise ConfigError(f"the project folder {str(named)!r} is not a folder")
            os.environ[PROJECT_ENV] = str(named)
        project = resolve_project()
        os.environ[PROJECT_ENV] = str(project.root)
        os.environ[STATE_ENV] = str(project.state.resolve())
        yield project
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def config_dir() -> Path:
    """The folder of YAML defaults: ``CNS_CONFIG_DIR``, else the project's ``config/``."""
    raw = os.environ.get("CNS_CONFIG_DIR")
    return Path(raw) if raw else project_path("config")


def config_file(name: str) -> Path:
    """``config/<name>`` (``profiles.yaml``): in :func:`config_dir`, else the package's own when a named project's
    ``config/`` does not hold it (it may hold only the files it changes)."""
    path = config_dir() / name
    if path.exists() or os.environ.get("CNS_CONFIG_DIR"):
        return path
    return resolve_project().home / "config" / name


def data_dir() -> Path:
    """The shared evaluation data (``CNS_DATA_DIR``, default ``shared/data`` beside the project folder)."""
    return Path(os.environ.get("CNS_DATA_DIR", project_dir().parent / "shared" / "data"))


def state_dir(create: bool = True) -> Path:
    """Where the product keeps what it writes: memory, logs, caches (:func:`resolve_project`: ``CNS_STATE_DIR``,
    else the project's ``.cns/``); created, the owner's alone, unless ``create`` is False (a command that only
    reads must not leave an empty state folder behind)."""
    path = resolve_project().state
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
    path = config_file(f"{name}.yaml")
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
