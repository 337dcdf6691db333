"""GeneratorAgent: answers ``query.request`` through the configured chat server and publishes ``response.generation``.

Small on purpose: the dashboard's ask flow publishes a query, this agent answers
it, and the CriticAgent and MemoryAgent take it from there. A failed generation
is logged and published nowhere (there is no answer to grade or remember).
"""

from __future__ import annotations


from pydantic import ValidationError

from cns_core.agents.base import Agent
from cns_core.agents.bus import QUERY, RESPONSE, BusConfig, Envelope
from cns_core.agents.messages import QueryMessage, TurnMessage, describe_errors
from cns_core.agents.chat import ChatClient, ChatError
from cns_core.agents.prometheus import GeneratorSettings, chat_client, generator_settings
from cns_core.bounds import logger

__all__ = ["GeneratorAgent"]

log = logger(__name__)


class GeneratorAgent(Agent):
    name = "generator"
    subjects = (QUERY,)

    def __init__(self, bus: BusConfig | None = None, *, settings: GeneratorSettings | None = None,
                 client: ChatClient | None = None):
        super().__init__(bus)
        self.settings = settings or generator_settings()
        self.client = client or chat_client(self.settings)
        self.answered = 0

    def answer(self, query: QueryMessage) -> TurnMessage:
        """The model's answer as a turn (raises :class:`OllamaError` on failure)."""
        messages = ([{"role": "system", "content": self.settings.system}] if self.settings.system else [])
        messages.append({"role": "user", "content": query.query})
        result = self.client.chat(self.settings.model, messages, temperature=self.settings.temperature,
                                  num_ctx=self.settings.num_ctx, timeout=self.settings.timeout,
                                      stream=self.settings.stream)
        return TurnMessage(query=query.query, answer=result.content.strip(), session_id=query.session_id,
                           query_id=query.query_id, reference=query.reference, rubric=query.rubric,
                           model=result.model)

    def handle(self, envelope: Envelope) -> None:
        try:
            query = QueryMessage.model_validate(envelope.payload)
        except ValidationError as exc:
            log.warning("generator: dropped %s %s: %s", envelope.subject, envelope.message_id, describe_errors(exc))
            return
        try:
            turn = self.answer(query)
        except ChatError as exc:
            log.error("generator: no answer for %s (%s: %s)", query.query_id, exc.reason, exc)
            return
        assert self.publisher is not None
        self.publisher.publish(RESPONSE, turn.model_dump(exclude_none=True))
        self.answered += 1
