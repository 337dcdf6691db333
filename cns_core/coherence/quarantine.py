"""Where blocked chains wait (spec section 10), and when they are looked at again.

A blocked chain is never dropped: it is stored apart from the engrams -- in
the memory service's quarantine when the hook runs inside the MemoryAgent, or
in a JSON-lines file of the state folder when it runs on its own -- with the
stems of its propositions' subjects. It is re-checked

* when new evidence arrives whose content mentions one of those subjects
  (:func:`matches_subjects`), and
* every ``recheck_every_ticks`` chains (the spec's "every Q ticks").

A re-check that no longer blocks releases the chain; releases are what the
false block rate counts ("later accepted" / blocked).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Protocol

from cns_core.config import replace_atomically
from cns_core.models.textcues import content_stems, tokenize

__all__ = ["QuarantinedChain", "QuarantineStore", "FileQuarantine", "matches_subjects"]


@dataclass(frozen=True)
class QuarantinedChain:
    """A blocked chain as stored: enough to re-check it and, once released, to write it."""

    chain_id: str
    text: str
    subjects: tuple[str, ...]
    reason: str = ""
    importance: float | None = None
    blocked_at: float = field(default_factory=time.time)
    rechecks: int = 0
    payload: dict[str, Any] = field(default_factory=dict)   # e.g. query, answer, session_id, metadata

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "QuarantinedChain":
        return cls(chain_id=str(data["chain_id"]), text=str(data.get("text", "")),
                   subjects=tuple(data.get("subjects") or ()), reason=str(data.get("reason", "")),
                   importance=data.get("importance"), blocked_at=float(data.get("blocked_at", 0.0)),
                   rechecks=int(data.get("rechecks", 0)), payload=dict(data.get("payload") or {}))


class QuarantineStore(Protocol):
    """Keeps blocked chains apart; ``release`` removes and returns one."""

    def add(self, item: QuarantinedChain) -> None: ...

    def items(self) -> list[QuarantinedChain]: ...

    def release(self, chain_id: str) -> QuarantinedChain | None: ...

    def update(self, item: QuarantinedChain) -> None: ...


class FileQuarantine:
    """Quarantine in one JSON-lines file: blocking appends, a release or update rewrites it atomically."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._lock = threading.Lock()

    def _read(self) -> dict[str, QuarantinedChain]:
        out: dict[str, QuarantinedChain] = {}
        if not self.path.is_file():
            return out
        for line in self.path.read_text(encoding="utf-8", errors="replace").splitlines():   # bad bytes: that line only
            if not line.strip():
                continue
            try:
                item = QuarantinedChain.from_dict(json.loads(line))
            except (json.JSONDecodeError, KeyError, TypeError, ValueError):
                continue  # a torn line must not lose the others
            out[item.chain_id] = item
        return out

    def _write(self, items: dict[str, QuarantinedChain]) -> None:
        with replace_atomically(self.path) as tmp:
            tmp.write_text("".join(json.dumps(i.to_dict(), ensure_ascii=False) + "\n" for i in items.values()),
                           encoding="utf-8")

    def add(self, item: QuarantinedChain) -> None:
        """Append (a later line for the same chain wins), so blocking costs no rewrite."""
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            line = json.dumps(item.to_dict(), ensure_ascii=False) + "\n"
            with self.path.open("ab+") as handle:
                if handle.tell() > 0:   # after a torn last line, start a fresh one
                    handle.seek(-1, 2)
                    if handle.read(1) != b"\n":
                        line = "\n" + line
                handle.write(line.encode("utf-8"))

    def update(self, item: QuarantinedChain) -> None:
        with self._lock:
            items = self._read()
            if item.chain_id in items:
                items[item.chain_id] = item
                self._write(items)

    def items(self) -> list[QuarantinedChain]:
        with self._lock:
            return list(self._read().values())

    def release(self, chain_id: str) -> QuarantinedChain | None:
        with self._lock:
            items = self._read()
            item = items.pop(chain_id, None)
            if item is not None:
                self._write(items)
            return item


def matches_subjects(subjects: Iterable[str], text: str) -> bool:
    """Whether ``text`` mentions one of the (stemmed) subjects of a quarantined chain."""
    wanted = set(subjects)
    return bool(wanted and wanted & content_stems(tokenize(text)))
