"""Outside text made safe to show: on a terminal, in a log, in an exported file.

A query id, a judge's feedback or an answer may hold control characters: ESC starts a terminal's
escape sequence (``ESC [2J`` clears the screen), BEL rings, NUL and the C1 codes confuse readers, a
line feed inside a query id forges a second log line. :func:`printable` writes each one as a visible
escape (``\\x1b``); it is the one place this is done. :func:`logger` is ``logging.getLogger`` whose
records pass through it, so every log line of a module that uses it is safe whatever it quotes
(tracebacks are the handler's and keep their lines).
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

__all__ = ["printable", "printable_json", "logger"]

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
