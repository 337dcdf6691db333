"""What the Judge page needs from the bus and the judge, without Streamlit.

:func:`judge_status` tells whether this state folder's judge loop answers (one check,
:func:`cns_core.agents.loop_record.find_loop`, then the feed's own subscription proof,
summed up by :func:`loop_view`), whether the judge server (Ollama or OpenAI-compatible)
answers and whether the judge model is there, so the page can say what is missing and
the command that would start it, instead of failing.
:class:`JudgeFeed` holds one publisher and one subscriber thread per server
process: it publishes turns (or questions for GeneratorAgent) and keeps every
``response.generation`` and ``critique.result`` it hears by ``query_id``, so a
page rerun (a fragment tick) only reads a dict. Turns are plain dicts kept in
the page's session state; :func:`apply_updates` fills in answers and grades.
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Mapping, MutableMapping, Sequence
from urllib.parse import urlsplit

from cns_core.agents.bus import CRITIQUE, QUERY, RESPONSE, BusConfig, BusError, Publisher, Subscriber
from cns_core.agents.loop_record import LoopFinding, find_loop
from cns_core.agents.messages import QueryMessage, TurnMessage

__all__ = ["AGENTS_COMMAND", "RUN_COMMAND", "stored_turns", "JudgeStatus", "judge_status", "judge_start_command", "LoopView",
           "loop_view", "ask_problem", "JudgeFeed", "new_turn", "apply_updates", "store_ungraded",
           "retry_schedule_text"]

AGENTS_COMMAND = "cns agents"
RUN_COMMAND = "cns run"


@dataclass(frozen=True)
class JudgeStatus:
    """What answers right now: the bus proxy, the judge server (its model list) and the judge and generator models."""

    loop: LoopFinding         # this state folder's judge loop: ours, stale, stranger or none
    backend: str              # "ollama" or "openai"
    judge_url: str
    judge_server: bool        # the server answered its model list
    judge_model: str
    judge_model_present: bool
    generator_model: str
    generator_model_present: bool
    start_command: str        # what would start a judge there
    models: tuple[str, ...] = ()
    problems: tuple[str, ...] = field(default=())

    @property
    def proxy(self) -> bool:
        """This state folder's judge loop holds its bus ports (the feed then proves it answers)."""
        return self.loop.ours

    @property
    def bus_address(self) -> str:
        return self.loop.bus.pub_address

    @property
    def server_label(self) -> str:
        return "Ollama" if self.backend == "ollama" else "OpenAI-compatible server"

    @property
    def can_grade(self) -> bool:
        return self.proxy and self.judge_server and self.judge_model_present

    @property
    def can_ask(self) -> bool:
        return self.proxy and self.judge_server and self.generator_model_present


def judge_start_command(settings: Any) -> str:
    """The command that would serve the configured judge model at the configured URL."""
    if settings.backend == "ollama":
        host = urlsplit(settings.url).netloc or "127.0.0.1:11434"
        prefix = "" if host in ("127.0.0.1:11434", "localhost:11434") else f"OLLAMA_HOST={host} "
        return f"{prefix}ollama serve   # then, once: ollama pull {settings.model}"
    from cns_core.config import load_config

    hint = str((load_config("critic").get("openai") or {}).get("start_hint") or "vllm serve {model} --port {port}")
    port = urlsplit(settings.url).port or 8000
    return hint.format(model=settings.model, port=port, url=settings.url)


def judge_status(bus: BusConfig | None = None, timeout: float = 0.5) -> JudgeStatus:
    """Probe this folder's judge loop and the judge server once (a refused connection returns at once;
    ``timeout`` caps a hang)."""
    from cns_core.agents.bus import bus_settings
    from cns_core.agents.chat import ChatError
    from cns_core.agents.prometheus import chat_client, critic_settings, generator_settings

    problems: list[str] = []
    loop = find_loop(bus or bus_settings(), timeout)
    if not loop.ours:
        problems.append(loop.describe())
    judge, gen = critic_settings(), generator_settings()
    label = "Ollama" if judge.backend == "ollama" else "the OpenAI-compatible server"
    models: list[str] = []
    up = False
    try:
        models = chat_client(judge, timeout).list_models(timeout=timeout)
        up = True
    except (ChatError, ValueError) as exc:
        problems.append(f"{label} at {judge.url} does not answer ({exc})")
    present = lambda m: m in models or f"{m}:latest" in models  # noqa: E731
    if up and not present(judge.model):
        problems.append(f"judge model {judge.model!r} is not served by {label} at {judge.url}")
    return JudgeStatus(loop, judge.backend, judge.url, up, judge.model, up and present(judge.model),
                       gen.model, up and present(gen.model), judge_start_command(judge), tuple(models),
                       tuple(problems))


@dataclass(frozen=True)
class LoopView:
    """How the page shows the judge loop: one badge and at most one message, from one check."""

    answering: bool
    badge: str
    colour: str
    caption: str
    message: str = ""
    command: str = ""


def loop_view(loop: LoopFinding, feed_error: str | None = None) -> LoopView:
    """The judge loop's badge and message from :func:`find_loop`'s finding and the feed's subscription proof
    (``feed_error``: why the feed could not prove its subscription, None when it did or was not tried)."""
    from cns_core.views.display import AMBER, GREEN, RED

    stored = "A turn you send is stored ungraded in this folder's memory and graded when its loop and a judge run."
    if loop.ours and feed_error is None:
        assert loop.record is not None
        return LoopView(True, "running", GREEN, f"pid {loop.record.pid} · {loop.bus.pub_address}")
    if loop.state in ("ours", "stale"):
        assert loop.record is not None
        why = f": {feed_error}" if feed_error else ""
        return LoopView(False, "not answering", RED, f"pid {loop.record.pid} · {loop.bus.pub_address}",
                        f"This state folder's judge loop (pid {loop.record.pid}) holds {loop.bus.pub_address} but "
                        f"does not answer{why}. {stored} Stop pid {loop.record.pid} and start the loop again:",
                        RUN_COMMAND)
    if loop.state == "stranger":
        holder = f" (`{loop.holder}`)" if loop.holder else ""
        return LoopView(False, "not this folder's", AMBER, loop.bus.pub_address,
                        f"Something else holds the bus ports {loop.bus.pub_port}/{loop.bus.sub_port}{holder}: not a "
                        f"judge loop of this state folder (`{loop.folder}`). Turns are never sent to it. {stored} "
                        "`cns run` starts a judge loop for this folder on free ports (or stop that process):",
                        RUN_COMMAND)
    return LoopView(False, "not running", RED, loop.bus.pub_address,
                    f"The judge loop is not running for this state folder (`{loop.folder}`). {stored} Start the loop "
                    "(`make run` starts it with the dashboard):", AGENTS_COMMAND)


def ask_problem(status: JudgeStatus | None, feed_ready: bool) -> str | None:
    """Why "Ask a question" cannot work right now (None when it can), said before anyone types a question.

    Asking needs this folder's judge loop on the bus (``feed_ready``: the page's feed proved it answers),
    the server answering, and GeneratorAgent's model served there.
    """
    if status is None:
        return "the bus and judge settings could not be read (see the error above)."
    if not status.proxy or not feed_ready:
        return f"asking needs this state folder's judge loop (GeneratorAgent), which is not answering: start it " \
               f"with `{AGENTS_COMMAND}` (or `{RUN_COMMAND}`)."
    if not status.judge_server:
        return f"{status.server_label} at {status.judge_url} does not answer, so GeneratorAgent cannot either."
    if not status.generator_model_present:
        model = status.generator_model or "none configured"
        return (f"GeneratorAgent's model ({model}, config/critic.yaml) is not served by {status.server_label} at "
                f"{status.judge_url}.")
    return None


def new_turn(query: str, answer: str | None, session_id: str, mode: str) -> dict[str, Any]:
    """A turn as the page keeps it; ``answer`` None while GeneratorAgent is still answering."""
    return {"query_id": uuid.uuid4().hex, "query": query, "answer": answer, "session_id": session_id,
            "mode": mode, "score": None, "feedback": "", "graded": False, "sent_at": time.time(), "error": ""}


def store_ungraded(memory: Any, turn: MutableMapping[str, Any]) -> None:
    """Keep a turn sent while no judge loop runs: written to the memory without a grade (so pending)."""
    msg = TurnMessage(query=turn["query"], answer=turn["answer"] or "", session_id=turn["session_id"],
                      query_id=turn["query_id"])
    memory.write_episodic(msg.query, msg.answer, msg.session_id, msg.query_id)


def stored_turns(memory: Any, turns: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The engrams the memory holds for the page's turns, by query id: the MemoryAgent stores a turn with its
    Trust Score and answer verdict whether or not the judge could grade it, and the Judge page shows those
    badges from this record, as the Engrams page does (one computation per fact)."""
    ids = [str(t["query_id"]) for t in turns if t.get("answer") is not None]
    return {e.id: e for e in memory.get(ids)} if ids else {}


class JudgeFeed:
    """One publisher and a listening thread on the bus for the dashboard (see the module doc)."""

    def __init__(self, bus: BusConfig, *, ready_timeout: float = 3.0, keep: int = 5000):
        self.bus = bus
        self.keep = keep
        self.answers: dict[str, dict[str, Any]] = {}
        self.critiques: dict[str, dict[str, Any]] = {}
        self.error: str | None = None
        self.received = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ready = threading.Event()
        self.publisher = Publisher(bus, source="dashboard")
        self._thread = threading.Thread(target=self._listen, args=(ready_timeout,), name="cns-judge-feed",
                                        daemon=True)
        self._thread.start()
        self._ready.wait(ready_timeout + 1.0)

    def _listen(self, ready_timeout: float) -> None:
        sub = Subscriber([RESPONSE, CRITIQUE], self.bus)
        try:
            try:
                sub.wait_ready(self.publisher, timeout=ready_timeout)
            except BusError as exc:
                self.error = str(exc)
            finally:
                self._ready.set()
            while not self._stop.is_set():
                for env in sub.recv_batch(256, 0.2):
                    qid = env.payload.get("query_id")
                    if not isinstance(qid, str):
                        continue
                    with self._lock:
                        target = self.critiques if env.subject == CRITIQUE else self.answers
                        target[qid] = dict(env.payload)
                        self.received += 1
                        if len(target) > self.keep:
                            target.pop(next(iter(target)))
        finally:
            sub.close()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive() and self.error is None

    def send_turn(self, turn: MutableMapping[str, Any]) -> None:
        """Publish a pasted query and answer as ``response.generation`` (validated first)."""
        msg = TurnMessage(query=turn["query"], answer=turn["answer"] or "", session_id=turn["session_id"],
                          query_id=turn["query_id"])
        self.publisher.publish(RESPONSE, msg.model_dump(exclude_none=True))

    def ask(self, turn: MutableMapping[str, Any]) -> None:
        """Publish a question as ``query.request`` for GeneratorAgent."""
        msg = QueryMessage(query=turn["query"], session_id=turn["session_id"], query_id=turn["query_id"])
        self.publisher.publish(QUERY, msg.model_dump(exclude_none=True))

    def lookup(self, query_id: str) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        with self._lock:
            return self.answers.get(query_id), self.critiques.get(query_id)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2.0)
        self.publisher.close()


def apply_updates(turns: Sequence[MutableMapping[str, Any]], feed: JudgeFeed | None) -> int:
    """Fill in answers (asked questions) and grades that arrived; returns how many turns changed."""
    if feed is None:
        return 0
    changed = 0
    for turn in turns:
        if turn.get("graded") and turn.get("answer") is not None:
            continue
        answer, critique = feed.lookup(turn["query_id"])
        if turn.get("answer") is None and answer is not None:
            turn["answer"] = str(answer.get("answer", ""))
            changed += 1
        if not turn.get("graded") and critique is not None:
            turn["score"] = critique.get("score")
            turn["feedback"] = str(critique.get("feedback") or critique.get("error") or "")
            turn["graded"] = True
            changed += 1
    return changed


def retry_schedule_text(schedule: Mapping[str, Any] | None, now: float | None = None,
                        waiting: int | None = None) -> str | None:
    """The Judge page's line on the pending grades' retries, from the schedule the judge loop writes
    (:func:`cns_core.agents.pending.read_schedule`); None when no turn waits.

    ``waiting``: the turns without a grade in the memory (:func:`cns_core.agents.pending.pending_count`, the
    count the Engrams page shows too); it replaces the schedule's own count, which only covers the turns the
    loop has swept while a judge answered. While the judge does not answer nothing is retried, so the line
    says "paused" and gives no next retry."""
    if waiting is None:
        waiting = int((schedule or {}).get("waiting", 0))
    if not waiting:
        return None
    if not schedule:
        return (f"Pending grades: {waiting} turn(s) wait for a grade; no judge loop of this state folder has swept "
                "them yet. They are graded once it runs and a judge answers.")
    now = time.time() if now is None else now
    turns = [t for t in schedule.get("turns") or [] if isinstance(t, Mapping)]
    flying = int(schedule.get("in_flight", 0))
    parts = [f"{waiting} turn(s) wait for a grade" + (f", {flying} asked just now" if flying else "")]
    reasons = schedule.get("reasons") or {}
    if reasons:
        parts.append("last failures: " + ", ".join(f"{name} ×{count}" for name, count in
                                                   sorted(reasons.items(), key=lambda kv: -kv[1])))
    later = [float(t["next_at"]) for t in turns if not t.get("in_flight") and isinstance(t.get("next_at"), (int, float))]
    if not schedule.get("judge_up", True):
        parts.append("paused: the judge server does not answer; retries resume when it does")
    elif later:
        wait = max(0.0, min(later) - now)
        parts.append("next retry " + ("now" if wait < 1 else f"in {wait:.0f} s"))
    updated = schedule.get("updated")
    if isinstance(updated, (int, float)) and now - updated > 3 * float(schedule.get("every_s", 15)) + 5:
        parts.append(f"as of {time.strftime('%H:%M:%S', time.localtime(updated))} (the judge loop is not sweeping)")
    return "Pending grades: " + "; ".join(parts) + ". Each turn backs off on failure; the first good grade " \
        "retries them all."
