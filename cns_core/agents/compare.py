"""Two answers compared: Prometheus' relative grading of answer A against answer B, and keeping the result.

The judge is asked directly (Ollama's API or an OpenAI-compatible one, ``config/critic.yaml``), not over
the bus: a comparison is asked for by a person (``cns grade --pair``, the Judge page) who waits for it.
Prometheus tends to prefer the answer shown first, so with ``pairwise.both_orders`` (the default) the judge
sees A-B and then B-A, and only a winner named both times counts; a judge that picks by position gives
no winner. Every judge failure (unreachable, timeout, a reply without ``[RESULT] A``/``B``, a single
score where a choice was asked for) is a :class:`Comparison` without a winner and with the reason, as the
CriticAgent's null score is: nothing raises and nothing is stored. Bad input raises ValueError naming
the field, before the judge is called.

A comparison with a winner is kept on the two answers' engrams (:meth:`MemoryService.record_pair_win`),
storing an answer first when the memory does not hold it yet, so preference pairs choose the winner.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Mapping

from cns_core.agents.chat import ChatClient, ChatError
from cns_core.agents.judge_parse import parse_pair_verdict
from cns_core.agents.messages import LIMITS
from cns_core.agents.prometheus import JudgeSettings, build_pair_messages, chat_client, validate_rubric
from cns_core.bounds import excerpt

__all__ = ["Comparison", "KeptComparison", "check_pair", "compare_answers", "keep_comparison"]

_OTHER = {"A": "B", "B": "A"}


@dataclass(frozen=True)
class Comparison:
    """The judge's comparison: ``winner`` "A" or "B", or None with ``error`` (``reason: message``)."""

    winner: str | None
    feedback: str                   # why, in the judge's words (both orders' feedback when asked twice)
    error: str | None = None
    orders: tuple[str | None, ...] = ()   # the winner read from each call, in A/B terms (A-B first)
    latency_s: float = 0.0
    judge_model: str = ""

    @property
    def ok(self) -> bool:
        return self.winner is not None

    def as_dict(self) -> dict[str, Any]:
        return {"winner": self.winner, "feedback": self.feedback, "error": self.error, "orders": list(self.orders),
                "latency_s": round(self.latency_s, 3), "judge_model": self.judge_model}


def _bounded(value: Any, field_name: str, limit: int, *, required: bool = True) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise ValueError(f"{field_name}: expected text, got {type(value).__name__}")
    if len(value) > limit:
        raise ValueError(f"{field_name}: {len(value):,} characters, at most {limit:,}")
    if required and not value.strip():
        raise ValueError(f"{field_name}: must not be empty")
    return value


def check_pair(question: Any, answer_a: Any, answer_b: Any, reference: Any = None, rubric: Any = None) -> None:
    """ValueError naming the field when the comparison cannot be asked for (bounded as a turn is:
    :data:`cns_core.agents.messages.LIMITS`)."""
    _bounded(question, "question", LIMITS["query"])
    a = _bounded(answer_a, "answer A", LIMITS["answer"])
    b = _bounded(answer_b, "answer B", LIMITS["answer"])
    if a.strip() == b.strip():
        raise ValueError("answer B: the same text as answer A; there is nothing to compare")
    _bounded(reference, "reference", LIMITS["reference"], required=False)
    if rubric is not None:
        if isinstance(rubric, str):
            _bounded(rubric, "rubric", LIMITS["rubric"])
        validate_rubric(rubric, "rubric")


def _ask(client: ChatClient, settings: JudgeSettings, messages: list[dict[str, str]]) -> tuple[str | None, str, str | None]:
    """(winner as the judge named it, feedback, error) of one relative-grading call; never raises."""
    try:
        result = client.chat(settings.model, messages, temperature=settings.temperature, num_ctx=settings.num_ctx,
                             timeout=settings.timeout, stream=settings.stream)
    except ChatError as exc:
        return None, "", f"{exc.reason}: {exc}"
    except Exception as exc:  # noqa: BLE001 - whatever a broken reply raises ends this comparison, not the caller
        return None, "", f"judge_failed: {type(exc).__name__}: {excerpt(str(exc), 300)}"
    verdict = parse_pair_verdict(result.content)      # the judge's own output only, never the prompt
    if not verdict.ok:
        reason = "single_score" if "single score" in (verdict.error or "") else "unparseable"
        return None, verdict.feedback, f"{reason}: {verdict.error}"
    return verdict.winner, verdict.feedback, None


def compare_answers(question: str, answer_a: str, answer_b: str, settings: JudgeSettings,
                    client: ChatClient | None = None, *, reference: str | None = None,
                    rubric: Mapping[str, str] | str | None = None) -> Comparison:
    """Which of two answers the judge prefers, and why (see the module doc). Bad input raises ValueError;
    a judge that fails gives a Comparison without a winner."""
    check_pair(question, answer_a, answer_b, reference, rubric)
    client = client or chat_client(settings)
    orders = [(answer_a, answer_b, False)] + ([(answer_b, answer_a, True)] if settings.both_orders else [])
    start = time.monotonic()
    winners: list[str | None] = []
    feedbacks: list[str] = []
    for first, second, swapped in orders:
        messages = build_pair_messages(question, first, second, settings, rubric=rubric, reference=reference)
        named, feedback, error = _ask(client, settings, messages)
        took = time.monotonic() - start
        if error is not None:
            where = " (answers shown B first)" if swapped else ""
            return Comparison(None, feedback, f"{error}{where}", tuple(winners), took, settings.model)
        winner = _OTHER[named] if swapped else named
        winners.append(winner)
        feedbacks.append(feedback if not swapped else f"(answers shown B first, so its A is answer B) {feedback}")
    took = time.monotonic() - start
    why = "\n\n".join(feedbacks)
    if len(set(winners)) > 1:
        return Comparison(None, why, "inconsistent: the judge preferred whichever answer was shown first "
                          f"({winners[0]} shown first, then {winners[1]} shown first): no winner", tuple(winners),
                          took, settings.model)
    return Comparison(winners[0], why, None, tuple(winners), took, settings.model)


@dataclass(frozen=True)
class KeptComparison:
    """Where a comparison was kept: the engram ids of answer A and B, and which of them were stored now."""

    a_id: str
    b_id: str
    stored_now: tuple[str, ...]


def _engram_of(memory: Any, question: str, answer: str, session_id: str, stored: list[str]) -> str:
    ids = memory.turn_ids(question, answer)
    if ids:
        return ids[0]
    new_id = memory.write_episodic(question, answer, session_id)
    stored.append(new_id)
    return new_id


def keep_comparison(memory: Any, question: str, answer_a: str, answer_b: str, comparison: Comparison, *,
                    a_id: str | None = None, b_id: str | None = None,
                    session_id: str = "compare") -> KeptComparison:
    """Keep a comparison with a winner on the two answers' engrams (given by id, else found by their text,
    else stored now, ungraded: the judge loop grades them as any pending turn). ValueError when it has no
    winner or the engrams answer different questions; nothing is written then."""
    if not comparison.ok:
        raise ValueError(f"comparison: no winner to keep ({comparison.error})")
    stored: list[str] = []
    a = a_id or _engram_of(memory, question, answer_a, session_id, stored)
    b = b_id or _engram_of(memory, question, answer_b, session_id, stored)
    winner, loser = (a, b) if comparison.winner == "A" else (b, a)
    memory.record_pair_win(winner, loser)
    return KeptComparison(a, b, tuple(stored))
