"""GeneratorAgent: answers ``query.request`` through the configured chat server and publishes ``response.generation``.

Small on purpose: the dashboard's ask flow publishes a query, this agent answers
it, and the CriticAgent and MemoryAgent take it from there. A failed generation
is logged and published nowhere (there is no answer to grade or remember).

Memory as a tool: with ``recall_k`` (critic.yaml ``generator``), the agent first asks the MemoryAgent for
the answers to similar questions that were judged right (``recall.request``, a request answered on
``recall.reply``) and gives them to the model as context. A memory that does not answer within
``recall_timeout_s`` costs only that context: the question is answered without it.
"""

from __future__ import annotations


from pydantic import ValidationError

from cns_core.agents.base import Agent
import time
import uuid

from cns_core.agents.bus import QUERY, RECALL, RECALLED, RESPONSE, BusConfig, Envelope, Subscriber
from cns_core.agents.messages import QueryMessage, RecallReply, TurnMessage, describe_errors
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
        self.recalled = 0
        self._replies: Subscriber | None = None       # made in the agent's thread, on first use

    def recall(self, question: str) -> list[dict]:
        """The memory's best-judged answers to questions like this one (``recall_k`` of them); [] when the
        memory does not answer in time or answers with an error (logged)."""
        if not self.settings.recall_k or self.publisher is None:
            return []
        if self._replies is None:
            self._replies = Subscriber([RECALLED], self.bus)
            self._replies.wait_ready(self.publisher)
        request_id = uuid.uuid4().hex
        self.publisher.publish(RECALL, {"request_id": request_id, "query": question, "k": self.settings.recall_k})
        deadline = time.monotonic() + self.settings.recall_timeout_s
        while (left := deadline - time.monotonic()) > 0:
            envelope = self._replies.recv(left)
            if envelope is None or envelope.payload.get("request_id") != request_id:
                continue
            try:
                reply = RecallReply.model_validate(envelope.payload)
            except ValidationError as exc:
                log.warning("generator: malformed recall reply: %s", describe_errors(exc))
                return []
            if reply.error:
                log.warning("generator: the memory could not recall (%s)", reply.error)
            self.recalled += bool(reply.results)
            return reply.results
        log.info("generator: no recall from the memory within %.1f s; answering without it",
                 self.settings.recall_timeout_s)
        return []

    def on_stop(self) -> None:
        if self._replies is not None:
            self._replies.close()
            self._replies = None

    def answer(self, query: QueryMessage) -> TurnMessage:
        """The model's answer as a turn (raises :class:`OllamaError` on failure)."""
        system = self.settings.system
        recalled = self.recall(query.query)
        if recalled:
            lines = "\n".join(f"- Q: {r['query']}\n  A: {r['answer']}" for r in recalled)
            system = f"{system}\n\nAnswers judged right to similar questions before:\n{lines}".strip()
        messages = ([{"role": "system", "content": system}] if system else [])
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
