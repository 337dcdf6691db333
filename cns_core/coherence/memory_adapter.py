"""The memory service's quarantine behind the hook's :class:`QuarantineStore` interface.

When the hook runs inside the MemoryAgent, blocked chains are written by the
agent to ``MemoryService.write_quarantined`` (kept apart from the episodic
engrams); this adapter lets the hook list, re-check and release them there.
"""

from __future__ import annotations

from typing import Any, Mapping

from cns_core.coherence.quarantine import QuarantinedChain

__all__ = ["MemoryQuarantine"]

# metadata keys the memory service sets itself (it refuses them from callers)
_SET_BY_MEMORY = frozenset({"type", "query", "session_id", "timestamp", "answer_start", "critic_rank",
                            "quarantine_reason", "quarantined_at"})


def _field(record: Any, name: str, default: Any = None) -> Any:
    if isinstance(record, Mapping):
        return record.get(name, default)
    return getattr(record, name, default)


class MemoryQuarantine:
    """List / release / add through a MemoryService's quarantine methods."""

    def __init__(self, memory: Any):
        self.memory = memory

    @staticmethod
    def supports(memory: Any) -> bool:
        return memory is not None and all(callable(getattr(memory, name, None)) for name in
                                          ("write_quarantined", "list_quarantined", "release_quarantined"))

    @staticmethod
    def _item(record: Any) -> QuarantinedChain:
        meta = dict(_field(record, "metadata") or {})
        text = meta.get("answer") or _field(record, "answer") or _field(record, "document") or ""
        subjects = meta.get("quarantine_subjects") or ""
        if isinstance(subjects, str):
            subjects = [s for s in subjects.split(",") if s]
        importance = meta.get("importance")
        return QuarantinedChain(chain_id=str(_field(record, "id") or meta.get("query_id")), text=str(text),
                                subjects=tuple(subjects), reason=str(meta.get("quarantine_reason", "")),
                                importance=importance if isinstance(importance, (int, float)) else None,
                                payload={"metadata": meta})

    def items(self) -> list[QuarantinedChain]:
        return [self._item(r) for r in self.memory.list_quarantined()]

    def add(self, item: QuarantinedChain) -> None:
        meta = {k: v for k, v in item.payload.get("metadata", {}).items()
                if isinstance(v, (str, int, float, bool)) and k not in _SET_BY_MEMORY
                and not k.startswith("critic_")}
        meta["quarantine_subjects"] = ",".join(item.subjects)
        query = item.payload.get("query") or item.payload.get("metadata", {}).get("query") or item.chain_id
        self.memory.write_quarantined(str(query), item.text, str(item.payload.get("session_id", "coherence")),
                                      item.chain_id, reason=item.reason[:500], **meta)

    def update(self, item: QuarantinedChain) -> None:
        """Re-check counts are not kept in the memory's quarantine (its records stay as written)."""

    def release(self, chain_id: str) -> QuarantinedChain | None:
        matches = [i for i in self.items() if i.chain_id == chain_id]
        if not matches:
            return None
        self.memory.release_quarantined(chain_id)
        return matches[0]
