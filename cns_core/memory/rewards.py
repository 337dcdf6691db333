"""The reward a turn earns: its quality (:func:`cns_core.memory.recall.judge_quality`) for the agent that
produced it.

One number in [0, 1] with its parts (a person's verdict, the answer verdict's p(right), the judge's grade,
the Trust Score; each in [0, 1], absent when not judged yet), so a trainer can weigh them itself. The
MemoryAgent publishes one on ``reward.signal`` each time a grade or a verdict lands; ``cns export rewards``
writes one row per stored turn.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from cns_core.engrams import Engram
from cns_core.memory.recall import RecallSettings, judge_quality

__all__ = ["Reward", "reward_of", "REWARD_COLUMNS"]

REWARD_COLUMNS = ("query_id", "session_id", "agent", "query", "reward", "person", "verdict", "grade", "trust",
                  "judged")


@dataclass(frozen=True)
class Reward:
    query_id: str
    session_id: str
    agent: str                       # the producing agent: the turn's model, else "generator"
    query: str
    reward: float
    parts: Mapping[str, float]

    def as_dict(self) -> dict[str, Any]:
        """The reward's row: every column of :data:`REWARD_COLUMNS` (None where a part is not judged)."""
        return {"query_id": self.query_id, "session_id": self.session_id, "agent": self.agent, "query": self.query,
                "reward": self.reward, **{k: self.parts.get(k) for k in ("person", "verdict", "grade", "trust")},
                "judged": bool(self.parts)}


def reward_of(e: Engram, settings: RecallSettings | None = None) -> Reward:
    quality = judge_quality(e, settings or RecallSettings())
    return Reward(e.id, e.session_id, str(e.metadata.get("model") or "generator"), e.query, quality.value,
                  {k: round(v, 6) for k, v in quality.parts.items()})
