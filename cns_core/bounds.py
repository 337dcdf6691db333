"""Bounds on what comes in, and what to do with a state file that is damaged.

Every reader of outside input (a bus message, an SNO file, an upload, a results table's
paths) must know how big the input may get *before* it parses it: a parser given 200 KB of
``[[[[...`` recurses until Python gives up, a YAML file of 452 bytes can expand to gigabytes
through aliases, and ``/dev/zero`` reports a size of 0. The helpers here are the one place
those checks live:

* :func:`read_bounded` reads at most ``limit`` bytes while reading (never trusting ``stat``), and
  only from a regular file (:func:`regular_file_problem`): a named pipe with no writer would wait
  forever, a device never ends;
* :func:`loads_json_bounded` parses JSON whose nesting and integer lengths are bounded first
  (Python refuses integers past 4,300 digits with a message that names no file);
* :func:`jsonl_records` reads a JSON Lines file a bounded line at a time, each line parsed as
  above, a leading byte-order mark skipped (the one reader of ``cns replay`` and ``cns annotate``);
* :func:`looks_binary` tells a binary file (an image, an archive) from text before decoding it;
* :func:`json_depth_over` finds nesting deeper than a limit with a flat scan, before any
  recursive parser sees the text;
* :func:`expanded_size_over` measures a parsed tree as if every shared (aliased) node were
  written out, without expanding it;
* :func:`excerpt` quotes a bounded piece of any value for an error message, so an error about
  a 300 MB value is one line, not 300 MB.

What goes out is bounded too: a query id, a judge's feedback or an answer may hold control
characters (ESC starts a terminal's escape sequence, ``ESC [2J`` clears the screen; BEL rings; NUL
and the C1 codes confuse readers; a line feed inside a query id forges a second log line).
:func:`printable` writes each one as a visible escape (``\\x1b``) and is the one place this is done:
:func:`printable_json` keeps JSON valid, and :func:`logger` is ``logging.getLogger`` whose records
pass through it, so every log line of a module using it is safe whatever it quotes (tracebacks are
the handler's and keep their lines).

And for state the product wrote itself but found damaged (a checkpoint, a journal, a log):
:func:`keep_damaged` moves it aside as ``<name>.damaged-<time>`` so nothing is lost and a
rebuild can start from a clean file, and returns the copy's path for the message.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import re
import reprlib
import threading
import stat
import time
from pathlib import Path
from typing import IO, Any, Iterator

__all__ = ["InputTooLarge", "NotARegularFile", "MAX_INT_DIGITS", "LOOPING_LINK", "regular_file_problem",
           "unreadable_problem", "is_looping_link", "read_bounded", "bounded_int",
           "digits_problem", "printable", "printable_json", "logger",
           "json_depth_over", "loads_json_bounded", "jsonl_records", "looks_binary", "expanded_size_over", "excerpt", "keep_damaged",
           "RepeatedFailure"]

MAX_INT_DIGITS = 1000       # longest integer any input may hold (Python's own limit is 4,300, with an obscure message)


class InputTooLarge(ValueError):
    """The input holds more bytes than the limit allows (found while reading, not from ``stat``)."""


class NotARegularFile(OSError):
    """The path names a named pipe, a device, a socket or a folder: nothing a reader of files should open."""


_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a named pipe"), (stat.S_ISCHR, "a device"),
          (stat.S_ISBLK, "a device"), (stat.S_ISSOCK, "a socket"))


def _kind_problem(mode: int) -> str | None:
    if stat.S_ISREG(mode):
        return None
    kind = next((name for test, name in _KINDS if test(mode)), "not a file")
    return f"not a regular file ({kind})"


LOOPING_LINK = "a symbolic link that loops"


def unreadable_problem(exc: OSError) -> str:
    """Why opening or ``stat``-ing a path failed, in words: "no such file", "a symbolic link that loops" (a link
    to itself, or two to each other: the OS says "Too many levels of symbolic links"), "cannot be read: ..."."""
    if isinstance(exc, FileNotFoundError):
        return "no such file"
    if exc.errno == errno.ELOOP:
        return LOOPING_LINK
    return f"cannot be read: {exc.strerror or exc}"


def regular_file_problem(path: str | Path) -> str | None:
    """Why ``path`` cannot be read as a file ("no such file", "not a regular file (a named pipe)", "a symbolic
    link that loops"), or None.

    ``stat`` only: it never opens the path, so a pipe with no writer cannot make it wait.
    """
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        return unreadable_problem(exc)
    return _kind_problem(mode)


def is_looping_link(path: str | Path) -> bool:
    """Whether ``path`` is a symbolic link that never reaches a file (``Path.is_file`` says False for it, silently;
    a folder reader names it instead of passing it over)."""
    return os.path.islink(path) and regular_file_problem(path) == LOOPING_LINK


def read_bounded(path: str | Path, limit: int) -> bytes:
    """The bytes of ``path``, a regular file, reading at most ``limit + 1`` of them.

    Raises :class:`NotARegularFile` for a pipe, a device, a socket or a folder (opened without waiting
    for a writer, then checked, so a path swapped after a check cannot hang it either);
    :class:`InputTooLarge` when there are more than ``limit`` bytes, worded "N bytes exceed the limit
    of L bytes", or "more than L bytes ..." for a file that grows while it is read; ``OSError`` as
    ``open`` does.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    info = os.fstat(fd)
    problem = _kind_problem(info.st_mode)
    if problem:
        os.close(fd)
        raise NotARegularFile(problem)
    with os.fdopen(fd, "rb") as handle:
        size = info.st_size
        if size > limit:
            raise InputTooLarge(f"{size:,} bytes exceed the limit of {limit:,} bytes")
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise InputTooLarge(f"more than {limit:,} bytes (the limit) although its size reads {size:,}")
    return data


# A JSON token that changes the depth, or a string (skipped whole, brackets inside it do not count).
_JSON_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.S)


def json_depth_over(text: bytes | str, limit: int) -> bool:
    """True when ``text`` (JSON) nests arrays and objects deeper than ``limit``.

    A flat scan: cheap when there are few brackets (the common case returns after two
    ``count`` calls), and it stops at the first level beyond the limit. Malformed JSON is not
    this function's concern; the parser that runs next reports it.
    """
    data = text.encode("utf-8", "replace") if isinstance(text, str) else bytes(text)
    if data.count(b"[") + data.count(b"{") <= limit:
        return False
    depth = 0
    for match in _JSON_TOKENS.finditer(data):
        token = match.group()
        if token in (b"[", b"{"):
            depth += 1
            if depth > limit:
                return True
        elif token in (b"]", b"}"):
            depth -= 1
    return False


def bounded_int(digits: str, limit: int = MAX_INT_DIGITS) -> int:
    """``int(digits)`` for an integer written in outside input, refused (ValueError) past ``limit`` digits:
    Python's own refusal, at 4,300, suggests ``sys.set_int_max_str_digits`` and names nothing."""
    problem = digits_problem(digits, limit)
    if problem:
        raise ValueError(problem)
    return int(digits)


def digits_problem(number: str, limit: int = MAX_INT_DIGITS) -> str | None:
    """"a number of 5,000 digits (at most 1,000)" when the written integer ``number`` is too long, else None."""
    count = len(str(number).strip().lstrip("+-").replace("_", ""))
    return f"a number of {count:,} digits (at most {limit:,})" if count > limit else None


def loads_json_bounded(text: bytes | str, max_depth: int, max_digits: int = MAX_INT_DIGITS) -> Any:
    """``json.loads`` for outside input: nesting over ``max_depth`` is refused before parsing, an integer
    of more than ``max_digits`` digits while parsing. Raises ValueError saying which ("nested more than
    32 levels deep", "a number of 5,000 digits (at most 1,000)", "not JSON (Expecting value)")."""
    if json_depth_over(text, max_depth):
        raise ValueError(f"nested more than {max_depth} levels deep")
    try:
        return json.loads(text, parse_int=lambda digits: bounded_int(digits, max_digits))
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg})") from None
    except RecursionError:          # brackets inside a malformed string can fool the flat scan
        raise ValueError(f"nested more than {max_depth} levels deep") from None


def jsonl_records(handle: IO[bytes], max_depth: int, max_line_bytes: int,
                  limit_name: str = "") -> Iterator[tuple[int, Any, str]]:
    """``(line number, value, "")`` or ``(line number, None, problem)`` for each non-blank line of a JSON
    Lines file, read at most ``max_line_bytes`` a line: a longer line is named as a problem
    (``limit_name`` naming the limit) and skipped to its end unread, and the lines after it are read
    as usual; a byte-order mark before the first line (a spreadsheet's, Notepad's) is skipped.
    Problems: "not UTF-8 text (byte N)" and those of :func:`loads_json_bounded`."""
    for number, data in enumerate(iter(lambda: handle.readline(max_line_bytes + 1), b""), 1):
        if len(data) > max_line_bytes:
            named = f" ({limit_name})" if limit_name else ""
            yield number, None, f"longer than {max_line_bytes:,} bytes{named}; skipped"
            while not data.endswith(b"\n"):            # the rest of this line, a bounded piece at a time
                data = handle.readline(max_line_bytes + 1)
                if not data:
                    return
            continue
        if number == 1:
            data = data.removeprefix(b"\xef\xbb\xbf")
        try:
            line = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            yield number, None, f"not UTF-8 text (byte {exc.start})"
            continue
        if not line.strip():
            continue
        try:
            yield number, loads_json_bounded(line, max_depth), ""
        except ValueError as exc:
            yield number, None, str(exc)


def looks_binary(data: bytes) -> bool:
    """True when ``data`` holds a NUL byte in its first 8 KB: text never does, images and archives do
    (the test git uses)."""
    return b"\x00" in data[:8192]


def expanded_size_over(value: Any, limit: int, max_depth: int = 100) -> str | None:
    """Why ``value`` is too big as if written out in full, or None when it is within ``limit``.

    The size counts one per container item plus the length of every string and key, the way a
    file holding the value without aliases would grow. Shared sub-trees (YAML aliases) are
    measured once and counted at every place they occur, so a billion-laughs document is found
    in time proportional to its *parsed* size, never expanded. ``max_depth`` bounds nesting.
    """
    sizes: dict[int, int] = {}
    keep: list[Any] = []            # measured containers stay alive, so their ids stay unique
    stack: list[tuple[Any, int, bool]] = [(value, 1, False)]
    while stack:
        node, depth, done = stack.pop()
        if not isinstance(node, (dict, list, tuple)) or (not done and id(node) in sizes):
            continue
        if depth > max_depth:
            return f"nested more than {max_depth} levels deep"
        if not done:
            stack.append((node, depth, True))
            stack.extend((child, depth + 1, False) for child in _children(node))
            continue
        total = 1
        for child in _children(node):
            total += sizes.get(id(child), 1) if isinstance(child, (dict, list, tuple)) else _leaf(child)
            if total > limit:
                return f"expands to more than {limit:,} characters"
        sizes[id(node)] = total
        keep.append(node)
    top = sizes.get(id(value), 0) if isinstance(value, (dict, list, tuple)) else _leaf(value)
    return f"expands to more than {limit:,} characters" if top > limit else None


def _children(node: Any) -> list[Any]:
    return [*node.keys(), *node.values()] if isinstance(node, dict) else list(node)


def _leaf(node: Any) -> int:
    return len(node) + 1 if isinstance(node, (str, bytes)) else 1


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")       # C0, DEL, C1


def printable(value: Any, keep: str = "") -> str:
    """``str(value)`` with each control character (C0, DEL, C1) written as a visible escape (``\\x1b``),
    except those in ``keep`` (an export keeps ``"\\t\\n"``; a log line or a terminal line keeps none)."""
    text = value if isinstance(value, str) else str(value)
    return _CONTROL.sub(lambda m: m.group() if m.group() in keep else f"\\x{ord(m.group()):02x}", text)


_JSON_RAW = re.compile("[\x7f-\x9f]")       # what json.dumps(ensure_ascii=False) leaves raw: DEL, C1


def printable_json(value: Any, **dumps: Any) -> str:
    """``json.dumps(value, ensure_ascii=False)`` with DEL and the C1 codes written as ``\\u00XX`` too
    (JSON escapes C0 itself), so the text is still JSON and still safe on a terminal."""
    text = json.dumps(value, ensure_ascii=False, **dumps)
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


class _PrintableRecords(logging.Filter):
    """Escapes control characters in a record's message once it is formatted with its arguments."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a bad format is logging's own error to report
            return True
        safe = printable(message)
        if safe != message:
            record.msg, record.args = safe, ()
        return True


_FILTER = _PrintableRecords()


def logger(name: str) -> logging.Logger:
    """``logging.getLogger(name)`` whose every record is :func:`printable`."""
    log = logging.getLogger(name)
    if _FILTER not in log.filters:
        log.addFilter(_FILTER)
    return log


class RepeatedFailure:
    """A failure that repeats (a full disk under a log written per request, a store refusing every call) said
    once, then counted: a line every ``every_s`` with how many more there were, and one when it works again.
    A full disk once wrote "No space left on device" 54 times a second, 3,771 log lines a minute."""

    def __init__(self, log: logging.Logger, what: str, every_s: float = 60.0, level: int = logging.WARNING):
        self.log, self.what, self.every_s, self.level = log, what, every_s, level
        self.failing = False
        self.total = 0              # failures since it started failing
        self._unsaid = 0            # ... not yet counted in a line
        self._said_at = 0.0
        self._lock = threading.Lock()

    def failed(self, problem: object) -> None:
        import time

        with self._lock:
            now = time.monotonic()
            self.total += 1
            if not self.failing:
                self.failing, self._said_at, self._unsaid = True, now, 0
                self.log.log(self.level, "%s: %s (repeats are counted, said every %.0f s)", self.what, problem,
                             self.every_s)
                return
            self._unsaid += 1
            if now - self._said_at >= self.every_s:
                self.log.log(self.level, "%s: %s: %d more time(s) in the last %.0f s", self.what, problem,
                             self._unsaid, now - self._said_at)
                self._said_at, self._unsaid = now, 0

    def succeeded(self) -> None:
        if not self.failing:
            return
        with self._lock:
            self.log.warning("%s: works again, after %d failure(s)", self.what, self.total)
            self.failing, self.total, self._unsaid = False, 0, 0


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother = 2, 60, 60
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = 4


def excerpt(value: Any, limit: int = 80) -> str:
    """A ``repr`` of ``value`` that is never longer than ``limit`` characters, whatever ``value`` holds.

    Built by :mod:`reprlib` (bounded nesting and item counts), so quoting a shared, exploding
    structure costs a few dozen steps.
    """
    text = _REPR.repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def keep_damaged(path: str | Path, *, suffixes: tuple[str, ...] = ()) -> Path:
    """Move a damaged state file aside as ``<name>.damaged-<YYYYmmdd-HHMMSS>`` and return the new path.

    ``suffixes`` are companion files moved along with it under the same stamp (SQLite's
    ``-wal`` and ``-shm``). The original name is then free for a rebuilt file.
    """
    path = Path(path)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = path.with_name(f"{path.name}.damaged-{stamp}")
    n = 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}.damaged-{stamp}-{n}")
    os.replace(path, target)
    for suffix in suffixes:
        extra = path.with_name(path.name + suffix)
        if extra.exists():
            os.replace(extra, target.with_name(target.name + suffix))
    return target
