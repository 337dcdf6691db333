"""Messages an agent could not handle yet: kept, retried on a back-off, and told apart from poison.

When the store refuses a write (a Chroma hiccup, a full disk), the messages are not lost:
the MemoryAgent holds them here and retries them while it is otherwise idle, first after
``first_s`` seconds, then doubling up to ``max_s``, until the cause is gone. Its
checkpoint stays before the oldest held message meanwhile, so a restart replays them too.

A message that keeps failing on its own while the store accepts other writes is not
waiting for a cause to go away: it *is* the cause (a poison message). After
``poison_after`` failed tries with successful writes in between, :meth:`HeldWork.due`
hands it back as poison, and the agent rejects it once, with its reason.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

from cns_core.agents.wire import Envelope

__all__ = ["HeldWork"]


@dataclass
class _Held:
    envelope: Envelope
    attempts: int
    first_failed: float
    next_at: float
    reason: str


class HeldWork:
    """The held messages of one agent, by message id, oldest first."""

    def __init__(self, *, first_s: float = 1.0, max_s: float = 60.0, poison_after: int = 4, cap: int = 10_000,
                 clock: Callable[[], float] = time.monotonic):
        self.first_s = first_s
        self.max_s = max_s
        self.poison_after = poison_after
        self.cap = cap                   # beyond it nothing more is held in memory (the checkpoint still is)
        self.clock = clock
        self._items: dict[str, _Held] = {}
        self.last_success = float("-inf")  # when the store last accepted a write
        self.overflowed = False          # something could not be held: only a restart's replay recovers it

    def __len__(self) -> int:
        return len(self._items)

    def __bool__(self) -> bool:
        """True while anything waits for a retry, so the checkpoint must stay where it is."""
        return bool(self._items) or self.overflowed

    def succeeded(self) -> None:
        """The store accepted a write: held messages that keep failing after this are poison."""
        self.last_success = self.clock()

    def hold(self, envelope: Envelope, reason: str) -> None:
        """Keep ``envelope`` for a retry (again, when it was held already: one more failed try)."""
        now = self.clock()
        item = self._items.get(envelope.message_id)
        if item is None:
            if len(self._items) >= self.cap:
                self.overflowed = True
                return
            item = self._items[envelope.message_id] = _Held(envelope, 0, now, now, reason)
        item.attempts += 1
        item.reason = reason
        item.next_at = now + min(self.max_s, self.first_s * 2 ** (item.attempts - 1))

    def release(self, message_id: str) -> None:
        self._items.pop(message_id, None)

    def due(self) -> tuple[list[Envelope], list[tuple[Envelope, str]]]:
        """(envelopes to retry now, (envelope, reason) of poison messages). A retried envelope stays held
        until :meth:`release` (it worked) or :meth:`hold` (one more failure); poison is removed."""
        now = self.clock()
        retry, poison = [], []
        for message_id, item in list(self._items.items()):
            if item.next_at > now:
                continue
            if item.attempts >= self.poison_after and self.last_success > item.first_failed:
                del self._items[message_id]
                poison.append((item.envelope, item.reason))
            else:
                retry.append(item.envelope)
        return retry, poison

    def attempts(self, message_id: str) -> int:
        item = self._items.get(message_id)
        return item.attempts if item else 0
