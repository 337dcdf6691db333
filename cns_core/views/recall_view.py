"""The Engrams page's "what a generator would recall" panel: recall's results as table rows, and the
preference pairs as a download. The ranking itself is :meth:`cns_core.memory.MemoryService.recall`."""

from __future__ import annotations

from typing import Any

__all__ = ["recall_rows", "preference_bytes"]


def recall_rows(memory: Any, question: str, k: int, include_wrong: bool) -> list[dict[str, Any]]:
    """One row per recalled answer, best first (ValueError naming the field for a bad question or k)."""
    return [{"rank": r.rank, "answer": r.engram.answer, "question": r.engram.query,
             "quality": round(r.quality.value, 3), "score": round(r.score, 3),
             "why": "; ".join(r.reasons), "left out unless asked": r.excluded or ""}
            for r in memory.recall(question, k, include_wrong=include_wrong)]


def preference_bytes(memory: Any) -> bytes:
    """The memory's preference pairs as DPO JSON lines (what ``cns export preferences`` writes)."""
    from cns_core.people.export import preference_rows, render_export

    return "".join(render_export(preference_rows(memory), "jsonl")).encode("utf-8")
