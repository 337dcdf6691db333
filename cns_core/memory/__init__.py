"""The episodic memory: engrams in ChromaDB and how each process reaches them.

* :mod:`~cns_core.memory.service`: :class:`MemoryService`, the engrams, their grades, pending critiques
  and the quarantine (what ``from cns_core.memory import ...`` gives);
* :mod:`~cns_core.memory.access`: how a process opens the memory, through the Chroma server ``cns run``
  keeps or embedded and alone;
* :mod:`~cns_core.memory.process_lock`: the lock that gives a thing (an embedded folder, a state folder's
  judge loop) to one process.
* :mod:`~cns_core.memory.server_token`: the token the memory's server asks of every client, readable by
  the store folder's owner alone.

The service (and Chroma with it) loads on first use of one of its names, so the light parts, the locks and
the server record, can be imported alone (``cns grade`` reads the judge loop's record without Chroma).
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["CNSEmbeddingFunction", "Engram", "EngramFilters", "MemoryService", "MemoryStoreError", "StoreBusyError",
           "UnknownEngramError", "ORDERS", "UNGRADED", "CRITIC_PREFIX", "OWNED_PREFIXES", "memory_owned",
           "memory_settings", "validate_score"]


def __getattr__(name: str) -> Any:
    if name.startswith("__") or name in ("service", "access", "process_lock", "server_token"):
        raise AttributeError(name)     # a submodule not imported yet: the import system loads it
    service = importlib.import_module("cns_core.memory.service")
    try:
        return getattr(service, name)
    except AttributeError:
        raise AttributeError(f"module 'cns_core.memory' has no attribute {name!r}") from None
