"""CriticAgent: grades every ``response.generation`` (and every pending ``critique.request``) 1-5
with a Prometheus judge and publishes ``critique.result``.

Per turn: RECEIVE (validate, build the prompt) -> START_GRADE (the judge call: Ollama or OpenAI-compatible) ->
PUBLISH -> RESET. Any failure (bad turn, timeout, model missing, HTTP error,
output without a valid final score, and any exception at all from the client) goes
FAIL -> ERROR, where a critique with ``score: null`` and the reason is published (the
turn stays ungraded, so the pending grader asks again later), then RESET. Whatever
happens while one envelope is handled, the machine is back in IDLE before the next:
one bad reply can never leave the agent refusing every later turn.
"""

from __future__ import annotations

import time
from collections import OrderedDict

from pydantic import ValidationError

from cns_core.agents.base import Agent
from cns_core.agents.bus import CRITIQUE, GRADE, RESPONSE, BusConfig, Envelope
from cns_core.agents.judge_parse import parse_verdict
from cns_core.agents.messages import LIMITS, CritiqueMessage, TurnMessage, describe_errors
from cns_core.agents.chat import ChatClient, ChatError
from cns_core.agents.prometheus import JudgeSettings, build_messages, chat_client, critic_settings
from cns_core.agents.state_machine import CRITIC_MACHINE, CriticAction, CriticState, StateMachine
from cns_core.bounds import excerpt, logger
from cns_core.engrams import answer_digest

__all__ = ["CriticAgent"]

log = logger(__name__)


class CriticAgent(Agent):
    """Subscribes to ``response.generation``; publishes one ``critique.result`` per valid turn."""

    name = "critic"
    subjects = (RESPONSE, GRADE)
    remember_scored = 100_000     # (query id, answer) pairs whose grade was published: a request for one is skipped

    def __init__(self, bus: BusConfig | None = None, *, settings: JudgeSettings | None = None,
                 client: ChatClient | None = None):
        super().__init__(bus)
        self.settings = settings or critic_settings()
        self.client = client or chat_client(self.settings)
        self.machine = StateMachine(CRITIC_MACHINE)
        self.graded = 0
        self.failed = 0
        self.skipped = 0
        self._scored: OrderedDict[tuple[str, str], None] = OrderedDict()

    def grade(self, turn: TurnMessage) -> CritiqueMessage:
        """Judge one turn; never raises. Leaves the machine in PUBLISHING (score) or ERROR (null score)."""
        machine = self.machine
        base = dict(query_id=turn.query_id, session_id=turn.session_id, query=turn.query, answer=turn.answer,
                    judge_model=self.settings.model)
        start = time.monotonic()
        try:
            messages = build_messages(turn.query, turn.answer, self.settings, rubric=turn.rubric,
                                      reference=turn.reference)
        except ValueError as exc:
            machine.fire(CriticAction.FAIL)
            return CritiqueMessage(**base, error=f"bad_turn: {exc}")
        machine.fire(CriticAction.START_GRADE)
        try:
            result = self.client.chat(self.settings.model, messages, temperature=self.settings.temperature,
                                      num_ctx=self.settings.num_ctx, timeout=self.settings.timeout,
                                      stream=self.settings.stream)
        except ChatError as exc:
            machine.fire(CriticAction.FAIL)
            return CritiqueMessage(**base, latency_s=time.monotonic() - start, error=f"{exc.reason}: {exc}")
        except Exception as exc:  # noqa: BLE001 - whatever a broken reply raises ends this grade, not the agent
            machine.fire(CriticAction.FAIL)
            return CritiqueMessage(**base, latency_s=time.monotonic() - start,
                                   error=f"judge_failed: {type(exc).__name__}: {excerpt(str(exc), 300)}")
        # Only the judge's own output is parsed: the prompt's template and the answer never are.
        verdict = parse_verdict(result.content)
        if not verdict.ok:
            machine.fire(CriticAction.FAIL)
            return CritiqueMessage(**base, feedback=verdict.feedback, latency_s=result.latency_s,
                                   error=f"unparseable: {verdict.error}")
        machine.fire(CriticAction.PUBLISH)
        return CritiqueMessage(**base, score=verdict.score, feedback=verdict.feedback, latency_s=result.latency_s)

    def handle(self, envelope: Envelope) -> None:
        try:
            self._handle(envelope)
        finally:
            self._back_to_idle()

    def _back_to_idle(self) -> None:
        """From wherever an unexpected error left the machine, through ERROR, to IDLE."""
        machine = self.machine
        if machine.state in (CriticState.RECEIVING, CriticState.GRADING, CriticState.PUBLISHING):
            machine.fire(CriticAction.FAIL)
        if machine.state is CriticState.ERROR:
            machine.fire(CriticAction.RESET)

    def _handle(self, envelope: Envelope) -> None:
        machine = self.machine
        if envelope.subject == GRADE and self._scored_key(envelope.payload) in self._scored:
            self.skipped += 1      # a pending request for an answer graded since: never grade twice
            return
        machine.fire(CriticAction.RECEIVE)
        try:
            turn = TurnMessage.model_validate(envelope.payload)
        except ValidationError as exc:
            machine.fire(CriticAction.FAIL)
            log.warning("critic: dropped %s %s: %s", envelope.subject, envelope.message_id, describe_errors(exc))
            qid = envelope.payload.get("query_id")
            if isinstance(qid, str) and 0 < len(qid) <= LIMITS["id"]:     # a reply needs an id that fits
                self._publish(CritiqueMessage(query_id=qid, error=f"bad_turn: {describe_errors(exc)}"))
            machine.fire(CriticAction.RESET)
            return
        critique = self.grade(turn)
        if critique.score is None:
            self.failed += 1
            log.warning("critic: no score for %s (%s)", turn.query_id, critique.error)
        elif not self._publish(critique):
            machine.fire(CriticAction.FAIL)
        else:
            self.graded += 1
            self._scored[(turn.query_id, answer_digest(turn.query, turn.answer))] = None
            while len(self._scored) > self.remember_scored:
                self._scored.popitem(last=False)
        if critique.score is None:
            self._publish(critique)
        machine.fire(CriticAction.RESET)

    @staticmethod
    def _scored_key(payload: dict) -> tuple[str, str] | None:
        """A grade is of one answer: another answer under the same query id is graded on its own."""
        qid, query, answer = payload.get("query_id"), payload.get("query"), payload.get("answer")
        if not all(isinstance(v, str) for v in (qid, query, answer)):
            return None
        return qid, answer_digest(query, answer)

    def _publish(self, critique: CritiqueMessage) -> bool:
        try:
            assert self.publisher is not None
            self.publisher.publish(CRITIQUE, critique.model_dump())
            return True
        except Exception as exc:
            log.error("critic: could not publish the critique of %s: %s", critique.query_id, exc)
            return False
