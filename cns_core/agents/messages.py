"""Payloads of the judge loop's subjects, validated on receipt.

An envelope whose payload does not fit its subject's model is logged and dropped
by the receiving agent (the error names the field); it never stops the agent.

Every field is bounded. A turn is embedded, checked by the coherence hook, scored by the
critics and sent to the judge, each costing time and memory in proportion to its text: a
10 MB answer once held the MemoryAgent for minutes at gigabytes and, replayed after a
restart, again. The limits below are far above any real question or answer (an answer of
100,000 characters is some 25,000 tokens, beyond a judge's context) and far below what
would hurt.
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any, Union

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StringConstraints, ValidationError, field_validator

from cns_core.bounds import excerpt
from cns_core.engrams import answer_digest

__all__ = ["TurnMessage", "CritiqueMessage", "QueryMessage", "RecallRequest", "RecallReply", "describe_errors",
           "LIMITS"]

# The most characters (or items) each field may hold.
LIMITS = {"query": 20_000, "answer": 100_000, "reference": 100_000, "rubric": 20_000, "id": 200,
          "metadata_items": 64, "metadata_key": 100, "metadata_text": 2_000, "sources": 100, "source": 20_000,
          "feedback": 20_000, "error": 2_000}

Id = Annotated[str, StringConstraints(max_length=LIMITS["id"])]
Query = Annotated[str, StringConstraints(max_length=LIMITS["query"])]
Answer = Annotated[str, StringConstraints(max_length=LIMITS["answer"])]
Reference = Annotated[str, StringConstraints(max_length=LIMITS["reference"])]
RubricText = Annotated[str, StringConstraints(max_length=LIMITS["rubric"])]
Rubric = Union[RubricText, Annotated[dict[Annotated[str, StringConstraints(max_length=LIMITS["metadata_key"])],
                                          RubricText], Field(max_length=16)]]
FlatValue = Union[Annotated[str, StringConstraints(max_length=LIMITS["metadata_text"])], bool, int, float]
Metadata = Annotated[dict[Annotated[str, StringConstraints(max_length=LIMITS["metadata_key"])], FlatValue],
                     Field(max_length=LIMITS["metadata_items"])]
Source = Annotated[str, StringConstraints(max_length=LIMITS["source"])]


def describe_errors(exc: ValidationError, limit: int = 3) -> str:
    """``field: problem; ...`` for the first few validation errors (field names quoted in bounded excerpts)."""
    def where(loc: tuple[Any, ...]) -> str:
        return ".".join(p if isinstance(p, str) and len(p) <= 60 else excerpt(p, 60) for p in map(str, loc))

    return "; ".join(f"{where(e['loc']) or 'payload'}: {e['msg']}" for e in exc.errors()[:limit])


class QueryMessage(BaseModel):
    """``query.request``: a question for GeneratorAgent."""

    model_config = ConfigDict(extra="ignore")

    query: Query = Field(min_length=1)
    session_id: Id = ""
    query_id: Id = Field(default_factory=lambda: uuid.uuid4().hex, min_length=1)
    reference: Reference | None = None
    rubric: Rubric | None = None


class TurnMessage(BaseModel):
    """``response.generation``: a question and its answer, to be stored and graded.

    ``reference`` (a score-5 answer) and ``rubric`` are optional and only steer the judge;
    ``reference`` and ``sources`` (the passages the answer was written from) are the evidence
    the critics' Trust Score grounds the answer on.
    """

    model_config = ConfigDict(extra="ignore")

    query: Query = Field(min_length=1)
    answer: Answer
    session_id: Id = ""
    query_id: Id = Field(min_length=1)
    reference: Reference | None = None
    rubric: Rubric | None = None
    model: Id | None = None
    metadata: Metadata = Field(default_factory=dict)
    sources: list[Source] = Field(default_factory=list, max_length=LIMITS["sources"])

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

    query_id: Id = Field(min_length=1)
    session_id: Id = ""
    score: StrictInt | None = Field(default=None, ge=1, le=5)
    feedback: str = ""
    query: Query = ""
    answer: Answer = ""
    judge_model: Id = ""
    latency_s: float | None = None
    error: str | None = None

    @field_validator("feedback", "error", mode="before")
    @classmethod
    def _clipped(cls, value: Any, info: Any) -> Any:
        """A judge's long feedback or a server's long error page is cut, not refused: the grade still counts."""
        limit = LIMITS[info.field_name]
        if isinstance(value, str) and len(value) > limit:
            return value[:limit - 1] + "…"
        return value

    def memory_fields(self) -> dict[str, Any]:
        """What MemoryService stores with the score (as ``critic_*`` keys)."""
        out: dict[str, Any] = {"query_id": self.query_id, "score": self.score, "feedback": self.feedback,
                               "judge_model": self.judge_model}
        if self.query:        # the text judged: the memory applies the grade only to an engram holding it
            out["answer_digest"] = answer_digest(self.query, self.answer)
        if self.latency_s is not None:
            out["latency_s"] = round(float(self.latency_s), 4)
        return out


class RecallRequest(BaseModel):
    """``recall.request``: a question whose best-judged stored answers an agent wants (memory as a tool).
    ``k`` is bounded again by the memory (``recall.max_k``); the reply names the request."""

    model_config = ConfigDict(extra="ignore")

    request_id: Id = Field(min_length=1)
    query: Query = Field(min_length=1)
    k: StrictInt = Field(default=5, ge=1, le=1000)
    include_wrong: bool = False


class RecallReply(BaseModel):
    """``recall.reply``: the answer to one :class:`RecallRequest`: its results (as
    :meth:`cns_core.memory.recall.Recalled.as_dict`), or ``error`` saying why there are none."""

    model_config = ConfigDict(extra="ignore")

    request_id: Id = Field(min_length=1)
    results: list[dict[str, Any]] = Field(default_factory=list, max_length=1000)
    error: str | None = None
