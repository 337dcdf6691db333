"""Payloads of the judge loop's subjects, validated on receipt.

An envelope whose payload does not fit its subject's model is logged and dropped
by the receiving agent (the error names the field); it never stops the agent.
"""

from __future__ import annotations

import uuid
from typing import Any, Union

from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError, field_validator

__all__ = ["TurnMessage", "CritiqueMessage", "QueryMessage", "describe_errors"]

FlatValue = Union[str, bool, int, float]


def describe_errors(exc: ValidationError, limit: int = 3) -> str:
    """``field: problem; ...`` for the first few validation errors."""
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'payload'}: {e['msg']}" for e in exc.errors()[:limit])


class QueryMessage(BaseModel):
    """``query.request``: a question for GeneratorAgent."""

    model_config = ConfigDict(extra="ignore")

    query: str = Field(min_length=1)
    session_id: str = ""
    query_id: str = Field(default_factory=lambda: uuid.uuid4().hex, min_length=1)
    reference: str | None = None
    rubric: str | dict[str, str] | None = None


class TurnMessage(BaseModel):
    """``response.generation``: a question and its answer, to be stored and graded.

    ``reference`` (a score-5 answer) and ``rubric`` are optional and only steer the judge;
    ``reference`` and ``sources`` (the passages the answer was written from) are the evidence
    the critics' Trust Score grounds the answer on.
    """

    model_config = ConfigDict(extra="ignore")

    query: str = Field(min_length=1)
    answer: str
    session_id: str = ""
    query_id: str = Field(min_length=1, max_length=200)
    reference: str | None = None
    rubric: str | dict[str, str] | None = None
    model: str | None = None
    metadata: dict[str, FlatValue] = Field(default_factory=dict)
    sources: list[str] = Field(default_factory=list, max_length=100)

    @field_validator("query")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value


class CritiqueMessage(BaseModel):
    """``critique.result``: the judge's verdict on one turn; ``score`` is None when grading failed
    (``error`` says why)."""

    model_config = ConfigDict(extra="ignore")

    query_id: str = Field(min_length=1, max_length=200)
    session_id: str = ""
    score: StrictInt | None = Field(default=None, ge=1, le=5)
    feedback: str = ""
    query: str = ""
    answer: str = ""
    judge_model: str = ""
    latency_s: float | None = None
    error: str | None = None

    def memory_fields(self) -> dict[str, Any]:
        """What MemoryService stores with the score (as ``critic_*`` keys)."""
        out: dict[str, Any] = {"query_id": self.query_id, "score": self.score, "feedback": self.feedback,
                               "judge_model": self.judge_model}
        if self.latency_s is not None:
            out["latency_s"] = round(float(self.latency_s), 4)
        return out
