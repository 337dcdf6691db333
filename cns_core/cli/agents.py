"""The judge loop from the command line.

* ``cns agents`` starts the bus proxy (with its journal) and the Memory, Critic and
  Generator agents, and runs until Ctrl-C or SIGTERM, then stops them cleanly.
* ``cns grade --query Q --answer A [--reference R]`` publishes one turn and prints
  the critique when it arrives (exit 1 when it does not, or carries no score).
* ``cns replay FILE.jsonl [--wait]`` publishes many turns with a progress bar. A line
  is a JSON object with query and answer (or Prometheus' instruction and response)
  and optional reference (reference_answer), rubric, query_id and session_id. Bad
  lines are reported with their line numbers and the rest are still sent (exit 1).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Iterator

from pydantic import ValidationError

__all__ = ["register", "run_agents", "run_grade", "run_replay", "read_turns"]

_ALIASES = {"instruction": "query", "response": "answer", "reference_answer": "reference"}


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("agents", help="run the bus proxy and the judge-loop agents until Ctrl-C")
    p.add_argument("--no-generator", action="store_true", help="do not start the GeneratorAgent")
    p.add_argument("--no-critic", action="store_true", help="do not start the CriticAgent")
    p.add_argument("--no-memory", action="store_true", help="do not start the MemoryAgent")
    p.add_argument("--no-coherence", action="store_true",
                   help="write engrams without the coherence hook (no tags, nothing quarantined)")
    p.add_argument("--no-trust", action="store_true",
                   help="store answers without the critics' Trust Score (cns trust-backfill adds it later)")
    p.add_argument("--no-proxy", action="store_true", help="join a proxy started elsewhere")
    p.set_defaults(func=run_agents)

    p = subparsers.add_parser("grade", help="publish one turn and print its critique")
    p.add_argument("--query", required=True, help="the question (instruction) that was answered")
    p.add_argument("--answer", required=True, help="the answer to grade")
    p.add_argument("--reference", help="a score-5 reference answer for the judge")
    p.add_argument("--session", default="cli", help="session id stored with the engram (default: cli)")
    p.add_argument("--timeout", type=float, default=None,
                   help="seconds to wait for the critique (default: the judge timeout + 15)")
    p.add_argument("--json", action="store_true", help="print the critique as JSON")
    p.set_defaults(func=run_grade)

    p = subparsers.add_parser("replay", help="publish the turns of a JSONL file")
    p.add_argument("file", help="JSONL: one turn per line (query, answer, optional reference, rubric, query_id)")
    p.add_argument("--session", default="replay", help="session id for lines that have none (default: replay)")
    p.add_argument("--wait", action="store_true", help="wait for every critique and print a summary")
    p.add_argument("--timeout", type=float, default=600.0, help="with --wait: give up after this many seconds")
    p.set_defaults(func=run_replay)


# ---------------------------------------------------------------- cns agents

def run_agents(args: argparse.Namespace) -> int:
    from cns_core.agents.bus import BusProxy, bus_settings
    from cns_core.agents.critic import CriticAgent
    from cns_core.agents.generator import GeneratorAgent
    from cns_core.agents.chat import ChatError
    from cns_core.agents.prometheus import chat_client, critic_settings

    bus = bus_settings()
    judge = critic_settings()
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    proxy = None if args.no_proxy else BusProxy(bus)
    started: list[Any] = []
    grader = None
    try:
        if proxy is not None:
            proxy.start()
            print(f"bus: publishers -> {bus.pub_address}, subscribers -> {bus.sub_address}"
                  + (f", journal -> {bus.journal_address}" if bus.journal_enabled else ""))
        if not args.no_critic:
            try:
                if not chat_client(judge, timeout=3).has_model(judge.model, timeout=3):
                    print(f"warning: judge model {judge.model!r} is not served by {judge.backend} at {judge.url}; "
                          "critiques will carry score null", file=sys.stderr)
            except ChatError as exc:
                print(f"warning: {exc}; critiques will carry score null until the judge answers", file=sys.stderr)
        for skip, make in ((args.no_memory, lambda: _memory_agent(bus, coherence=not args.no_coherence,
                                                                trust=not args.no_trust)),
                           (args.no_critic, lambda: CriticAgent(bus, settings=judge)),
                           (args.no_generator, lambda: GeneratorAgent(bus))):
            if not skip:
                agent = make()
                agent.start()
                started.append(agent)
                print(f"{agent.name}: running")
        if not args.no_critic:
            grader = _pending_grader(bus, judge, started)
            print(f"pending grades: requested whenever the judge at {judge.url} answers")
        print("press Ctrl-C to stop")
        while not stop.wait(0.5):
            dead = [a.name for a in started if not a.running]
            if dead or (proxy is not None and not proxy.running):
                print(f"error: stopped unexpectedly: {', '.join(dead) or 'bus proxy'}", file=sys.stderr)
                return 1
        return 0
    finally:
        if grader is not None:
            grader.stop()
        for agent in reversed(started):
            agent.stop()
        if proxy is not None:
            proxy.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        print("stopped", file=sys.stderr)


def _pending_grader(bus: Any, judge: Any, agents: list[Any]) -> Any:
    """Asks for the grades of stored, ungraded turns at start-up and whenever the judge comes back."""
    from cns_core.agents.chat import ChatError
    from cns_core.agents.pending import PendingGrader
    from cns_core.agents.prometheus import chat_client
    from cns_core.config import load_config

    def judge_up() -> bool:
        try:
            return chat_client(judge, timeout=3).has_model(judge.model, timeout=3)
        except (ChatError, ValueError):
            return False

    opened: list[Any] = []

    def memory() -> Any:
        for agent in agents:
            if getattr(agent, "name", "") == "memory":
                return agent.memory
        if not opened:
            from cns_core.memory import MemoryService

            opened.append(MemoryService())
        return opened[0]

    pending = load_config("critic").get("pending") or {}
    return PendingGrader(bus, memory, judge_up, every_s=float(pending.get("check_every_s", 15)),
                         limit=int(pending.get("limit", 1000))).start()


def _memory_agent(bus: Any, coherence: bool, trust: bool = True) -> Any:
    """The MemoryAgent, with the coherence hook before every engram write and the critics' Trust
    Score of every answer (``trust.enabled`` in memory.yaml), unless switched off."""
    from cns_core.agents.answer_trust import AnswerScorer
    from cns_core.agents.memory_agent import MemoryAgent
    from cns_core.memory import MemoryService

    scorer = AnswerScorer.configured() if trust else None
    memory = MemoryService()
    hook = None
    if coherence:
        from cns_core.coherence import CoherenceHook

        # warmed here: model loading never counts against the 250 ms pre-write budget
        hook = CoherenceHook(memory=memory).warm_up().as_pre_write_hook()
    return MemoryAgent(bus, memory=memory, pre_write_hook=hook, trust=scorer)


# ---------------------------------------------------------------- cns grade

def run_grade(args: argparse.Namespace) -> int:
    from cns_core.agents.bus import CRITIQUE, RESPONSE, Publisher, Subscriber, bus_settings
    from cns_core.agents.messages import TurnMessage, describe_errors
    from cns_core.agents.prometheus import critic_settings

    bus = bus_settings()
    timeout = args.timeout if args.timeout is not None else critic_settings().timeout + 15
    try:
        turn = TurnMessage(query=args.query, answer=args.answer, reference=args.reference, session_id=args.session,
                           query_id=f"cli-{uuid.uuid4().hex[:12]}")
    except ValidationError as exc:
        raise ValueError(describe_errors(exc)) from None
    with Publisher(bus, source="cns grade") as pub, Subscriber([CRITIQUE], bus) as sub:
        sub.wait_ready(pub)
        pub.publish(RESPONSE, turn.model_dump(exclude_none=True))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            envelope = sub.recv(timeout=max(0.0, deadline - time.monotonic()))
            if envelope is not None and envelope.payload.get("query_id") == turn.query_id:
                return _print_critique(envelope.payload, args.json)
    print(f"cns grade: error: no critique for {turn.query_id} within {timeout:g} s; is `cns agents` running "
          "with a CriticAgent?", file=sys.stderr)
    return 1


def _print_critique(critique: dict[str, Any], as_json: bool) -> int:
    if as_json:
        print(json.dumps(critique, indent=2, ensure_ascii=False))
    elif critique.get("score") is None:
        print(f"score: none ({critique.get('error')})")
    else:
        latency = critique.get("latency_s")
        print(f"score: {critique['score']}/5   judge: {critique.get('judge_model')}"
              + (f"   {latency:.1f} s" if isinstance(latency, (int, float)) else ""))
        print(f"feedback: {critique.get('feedback', '')}")
    return 0 if critique.get("score") is not None else 1


# ---------------------------------------------------------------- cns replay

def read_turns(path: str | Path, session: str = "replay") -> Iterator[tuple[int, dict[str, Any] | None, str]]:
    """``(line number, turn payload or None, problem)`` for each non-blank line of a JSONL file."""
    from cns_core.agents.messages import TurnMessage, describe_errors

    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                raw = json.loads(line)
            except ValueError as exc:
                yield number, None, f"not JSON ({exc.msg})"
                continue
            if not isinstance(raw, dict):
                yield number, None, f"expected a JSON object, got {type(raw).__name__}"
                continue
            fields = {_ALIASES.get(k, k): v for k, v in raw.items() if k not in _ALIASES or _ALIASES[k] not in raw}
            fields.setdefault("query_id", f"replay-{uuid.uuid4().hex[:12]}")
            fields.setdefault("session_id", session)
            try:
                yield number, TurnMessage.model_validate(fields).model_dump(exclude_none=True), ""
            except ValidationError as exc:
                yield number, None, describe_errors(exc)


def run_replay(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from cns_core.agents.bus import CRITIQUE, RESPONSE, Publisher, Subscriber, bus_settings

    path = Path(args.file)
    if not path.is_file():
        raise OSError(f"{path}: no such file")
    bus = bus_settings()
    bad: list[str] = []
    sent: set[str] = set()
    with Publisher(bus, source="cns replay") as pub, Subscriber([CRITIQUE], bus) as sub:
        if args.wait:
            sub.wait_ready(pub)
        with tqdm(desc="publishing", unit="turn", file=sys.stderr) as bar:
            for number, payload, problem in read_turns(path, args.session):
                if payload is None:
                    bad.append(f"{path}:{number}: {problem}")
                    continue
                pub.publish(RESPONSE, payload)
                sent.add(payload["query_id"])
                bar.update(1)
        for line in bad:
            print(line, file=sys.stderr)
        print(f"sent {len(sent)} turn(s)" + (f", skipped {len(bad)} bad line(s)" if bad else ""))
        if args.wait and sent:
            _wait_for_critiques(sub, sent, args.timeout)
    return 1 if bad else 0


def _wait_for_critiques(sub: Any, pending: set[str], timeout: float) -> None:
    from tqdm import tqdm

    scores: list[int] = []
    failed = 0
    deadline = time.monotonic() + timeout
    with tqdm(total=len(pending), desc="critiques", unit="turn", file=sys.stderr) as bar:
        while pending and time.monotonic() < deadline:
            envelope = sub.recv(timeout=min(1.0, max(0.0, deadline - time.monotonic())))
            if envelope is None or envelope.payload.get("query_id") not in pending:
                continue
            pending.discard(envelope.payload["query_id"])
            score = envelope.payload.get("score")
            if isinstance(score, int):
                scores.append(score)
            else:
                failed += 1
            bar.update(1)
    mean = f", mean score {sum(scores) / len(scores):.2f}" if scores else ""
    print(f"graded {len(scores)}, no score {failed}, no critique {len(pending)}{mean}")
