"""The judge loop from the command line.

* ``cns agents`` starts the bus proxy (with its journal) and the Memory, Critic and
  Generator agents, and runs until Ctrl-C or SIGTERM, then stops them cleanly, within
  ``stop_grace_s`` (config/bus.yaml) whatever they are doing. While it runs,
  ``<state dir>/judge_loop.json`` says which state folder it serves and on which ports
  (:mod:`cns_core.agents.loop_record`); it refuses to start beside a loop on its ports.
* ``cns grade --query Q --answer A [--reference R]`` publishes one turn and prints
  the critique when it arrives (exit 1 when it does not, or carries no score).
  ``cns grade --pair`` compares two answers instead (:mod:`cns_core.cli.grade_pair`).
* ``cns replay FILE.jsonl [--wait]`` publishes many turns with a progress bar. A line
  is a JSON object with query and answer (or Prometheus' instruction and response)
  and optional reference (reference_answer), rubric, query_id and session_id. Bad
  lines are reported with their line numbers and the rest are still sent (exit 1). With ``--wait``
  it exits 1 unless every turn it sent came back with a score.

Both senders then ask the bus journal whether their turns are on disk: when it cannot write
(a full disk) or is gone (the loop died under them) they say so and exit 1
(:func:`~cns_core.agents.journal.confirm_kept`); ``cns replay`` writes the turns the journal was not
seen to record to ``<file>.not-kept-<time>.jsonl``, which it sends again.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Iterator

from pydantic import ValidationError

from cns_core.bounds import printable
from cns_core.cli.grade_pair import add_pair_arguments, run_grade_pair

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
    p.add_argument("--grace", type=float, default=None,
                   help="seconds to stop in after SIGTERM/SIGINT before exiting anyway (default: "
                        "stop_grace_s in config/bus.yaml)")
    p.add_argument("--exit-with-parent", action="store_true",
                   help="stop when the process that started it is gone (cns run asks for this)")
    p.set_defaults(func=run_agents)

    p = subparsers.add_parser("grade", help="publish one turn and print its critique (--pair: compare two "
                                            "answers and print the winner and why)")
    p.add_argument("--query", "--question", dest="query", help="the question (instruction) that was answered")
    p.add_argument("--answer", help="the answer to grade")
    p.add_argument("--reference", help="a score-5 reference answer for the judge")
    add_pair_arguments(p)
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
    """One judge loop per state folder: the folder's loop lock is taken before anything is opened (the record
    below is written only once the proxy listens, too late to keep a second loop started at the same instant
    from sharing the store, the journal and the checkpoint)."""
    from cns_core.agents.loop_record import loop_lock
    from cns_core.memory.process_lock import LockHeld

    lock = loop_lock()
    try:
        lock.acquire()
    except LockHeld as exc:
        _say(f"cns agents: not starting a second judge loop for the state folder {_state_folder()}: {exc}. One "
             "loop serves a state folder: use it (`cns run` does), or stop it first.", err=True)
        return 2
    try:
        return _run_judge_loop(args)
    finally:
        lock.release()


def _run_judge_loop(args: argparse.Namespace) -> int:
    from cns_core.agents.bus import BusProxy, bus_settings
    from cns_core.agents.critic import CriticAgent
    from cns_core.agents.generator import GeneratorAgent
    from cns_core.agents.chat import ChatError
    from cns_core.agents.loop_record import clear_record, find_loop, write_record
    from cns_core.agents.prometheus import chat_client, critic_settings

    bus = bus_settings()
    grace = args.grace if args.grace is not None else bus.stop_grace_s
    judge = critic_settings()
    stop = _Stopper(grace)
    previous = {sig: signal.signal(sig, stop.on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    parent = os.getppid()
    proxy = None
    if not args.no_proxy:
        found = find_loop(bus)
        if found.state in ("ours", "stranger"):
            _say(f"cns agents: {found.describe()}; not starting a second one. "
                 + ("Use it, or stop it first." if found.ours else
                    "Stop that process, or give this loop free ports (CNS_BUS_PUB_PORT, CNS_BUS_SUB_PORT, "
                    "CNS_BUS_JOURNAL_PORT), or use `cns run`, which picks free ports itself."), err=True)
            return 2
        proxy = BusProxy(bus)
    started: list[Any] = []
    grader = None
    record = None
    try:
        if proxy is not None:
            proxy.start()
            record = write_record(bus)     # says which state folder this loop serves (loop_record)
            if proxy.journal is not None and proxy.journal.damaged:
                _say(f"warning: {proxy.journal.damaged}", err=True)
            _say(f"bus: publishers -> {bus.pub_address}, subscribers -> {bus.sub_address}"
                 + (f", journal -> {bus.journal_address}" if bus.journal_enabled else "")
                 + f"; serving the state folder {_state_folder()}")
        if not args.no_critic and not stop.requested:
            try:
                if not chat_client(judge, timeout=3).has_model(judge.model, timeout=3):
                    _say(f"warning: judge model {judge.model!r} is not served by {judge.backend} at {judge.url}; "
                         "critiques will carry score null", err=True)
            except ChatError as exc:
                _say(f"warning: {exc}; critiques will carry score null until the judge answers", err=True)
        start_seq = proxy.journal.start_seq if proxy is not None and proxy.journal is not None else None
        for skip, make in ((args.no_memory, lambda: _memory_agent(bus, coherence=not args.no_coherence,
                                                                trust=not args.no_trust, start_seq=start_seq,
                                                                drain_s=0.6 * grace)),
                           (args.no_critic, lambda: CriticAgent(bus, settings=judge)),
                           (args.no_generator, lambda: GeneratorAgent(bus))):
            if not skip and not stop.requested:
                agent = make()
                agent.start()
                started.append(agent)
                _say(f"{agent.name}: running")
        if not args.no_critic and not stop.requested:
            grader = _pending_grader(bus, judge, started)
            _say(f"pending grades: swept every {grader.every_s:g} s while the judge at {judge.url} answers, "
                 "each turn on its own back-off")
        if not stop.requested:
            _say("press Ctrl-C to stop")
        journal = _JournalWatch(proxy.journal if proxy is not None else None)
        while not stop.event.wait(0.5):
            journal.check()
            if args.exit_with_parent and os.getppid() != parent:
                _say("cns agents: the process that started it is gone; stopping", err=True)
                stop.request()
                break
            dead = [a.name for a in started if not a.running]
            if proxy is not None and not proxy.running:
                dead.append("bus proxy" if proxy.journal is None or proxy.journal.running else "bus journal")
            if grader is not None and not grader.running:
                dead.append("pending grader")
            if dead:
                _say(f"error: stopped unexpectedly: {', '.join(dead)}; see the log above. Exiting so that the "
                     "loop is restarted whole (cns run does so)", err=True)
                return 1
        return 0
    finally:
        stop.request()          # from here on the watchdog ends the process at the grace period's end
        _spill_held_turns(proxy)    # first: whatever the grace period leaves undone, held turns are in a file
        for agent in started:   # all at once: each finishes the batch in hand meanwhile
            agent.request_stop()
        if grader is not None:
            grader.stop(timeout=stop.left())
        for agent in reversed(started):
            agent.stop(timeout=stop.left())
        if proxy is not None:
            proxy.stop()
        if record is not None:
            clear_record()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        _say("stopped", err=True)


def _spill_held_turns(proxy: Any) -> None:
    """At a stop, while the journal cannot write: its held turns to a spill file at once, said on stderr with
    how many and where (the journal's own stop writes any held after this one)."""
    journal = getattr(proxy, "journal", None)
    if journal is None or not journal.write_error:
        return
    count, path = journal.spill_now()
    if path is not None:
        _say(f"cns agents: stopping while the bus journal cannot write: wrote the {count} turn(s) it held in "
             f"memory to {path}; send them again with `cns replay {path}` once the disk has room", err=True)


class _JournalWatch:
    """Says on stderr when the bus journal starts and stops failing to write (its log says more)."""

    def __init__(self, journal: Any):
        self.journal = journal
        self.failing = False

    def check(self) -> None:
        error = getattr(self.journal, "write_error", None)
        if error and not self.failing:
            _say(f"error: the bus journal cannot write ({error}): turns are held in memory only until the disk "
                 "has room; senders that ask (cns replay, cns grade) are told", err=True)
        elif self.failing and not error:
            _say("bus journal: writing again; the turns held in memory are on disk", err=True)
        self.failing = bool(error)


def _state_folder() -> str:
    from cns_core.config import state_dir

    return str(state_dir().resolve())


def _say(text: str, err: bool = False) -> None:
    """Print, and keep going when the reader is gone (a parent killed hard leaves a broken pipe)."""
    stream = sys.stderr if err else sys.stdout
    try:
        print(text, file=stream, flush=True)
    except (BrokenPipeError, OSError, ValueError):
        devnull = open(os.devnull, "w")
        if err:
            sys.stderr = devnull
        else:
            sys.stdout = devnull


class _Stopper:
    """SIGTERM/SIGINT: stop cleanly, but never take longer than ``grace_s`` (a second signal: at once).

    A watchdog thread starts with the first request and ends the process when the grace period
    is over, whatever the main thread is doing (loading a model, waiting for a judge call), so the
    loop stops in time even when no parent is left to kill it.
    """

    def __init__(self, grace_s: float):
        self.grace_s = grace_s
        self.event = threading.Event()
        self.deadline: float | None = None
        self._lock = threading.Lock()

    @property
    def requested(self) -> bool:
        return self.event.is_set()

    def on_signal(self, signum: int, _frame: object) -> None:
        if self.event.is_set():
            _say(f"cns agents: {signal.Signals(signum).name} again; exiting now", err=True)
            os._exit(1)
        self.request()

    def request(self) -> None:
        with self._lock:
            if self.deadline is not None:
                return
            self.deadline = time.monotonic() + self.grace_s
            self.event.set()
        threading.Thread(target=self._watchdog, name="cns-stop-watchdog", daemon=True).start()

    def left(self) -> float:
        return max(0.1, (self.deadline or time.monotonic()) - time.monotonic())

    def _watchdog(self) -> None:
        time.sleep(self.grace_s)
        _say(f"cns agents: not stopped within {self.grace_s:g} s; exiting anyway", err=True)
        os._exit(1)


def _pending_grader(bus: Any, judge: Any, agents: list[Any]) -> Any:
    """Asks for the grades of stored, ungraded turns at start-up and whenever the judge comes back."""
    from cns_core.agents.chat import ChatError
    from cns_core.agents.pending import PendingGrader
    from cns_core.agents.prometheus import chat_client
    from cns_core.agents.retry_schedule import RetrySchedule
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

    def ready() -> bool:     # the MemoryAgent has replayed the journal: what it shows graded is stored graded
        return all(agent.caught_up.is_set() for agent in agents if getattr(agent, "name", "") == "memory")

    cfg = pending_settings(load_config("critic").get("pending") or {})
    schedule = RetrySchedule(first_s=cfg["retry_first_s"], max_s=cfg["retry_max_s"], in_flight=cfg["in_flight"],
                             answer_timeout_s=max(60.0, 4 * judge.timeout))
    return PendingGrader(bus, memory, judge_up, every_s=cfg["check_every_s"], limit=int(cfg["limit"]), ready=ready,
                         schedule=schedule).start()


def pending_settings(section: Any) -> dict[str, float]:
    """critic.yaml's ``pending`` section, each number checked (``CNS_PENDING_<KEY>`` overrides it)."""
    from cns_core.config import config_number, env_override

    defaults = {"check_every_s": 15.0, "limit": 1000, "retry_first_s": 10.0, "retry_max_s": 120.0, "in_flight": 16}
    out = {}
    for key, default in defaults.items():
        value = env_override(section.get(key, default), f"CNS_PENDING_{key.upper()}", float)
        out[key] = config_number({key: value}, key, file="critic.yaml", path="pending", low=0.01)
    if out["retry_first_s"] > out["retry_max_s"]:
        from cns_core.config import ConfigError

        raise ConfigError("critic.yaml: pending.retry_first_s: must not exceed pending.retry_max_s")
    return out


def _memory_agent(bus: Any, coherence: bool, trust: bool = True, start_seq: int | None = None,
                  drain_s: float = 5.0) -> Any:
    """The MemoryAgent, with the coherence hook before every engram write and the critics' Trust
    Score of every answer (``trust.enabled`` in memory.yaml), unless switched off. ``start_seq``: where
    the journal stood when this loop's proxy opened it (a first start replays from there); ``drain_s``:
    how long a clean stop may spend storing what the journal holds."""
    from cns_core.judging.answer_trust import AnswerScorer
    from cns_core.agents.memory_agent import MemoryAgent
    from cns_core.memory import MemoryService

    scorer = AnswerScorer.configured() if trust else None
    memory = MemoryService()
    hook = None
    if coherence:
        from cns_core.coherence import CoherenceHook

        # warmed here: model loading never counts against the 250 ms pre-write budget
        hook = CoherenceHook(memory=memory).warm_up().as_pre_write_hook()
    else:       # the embedder loads here, not under the first turn (and not while a stop waits for it)
        from cns_core.models import get_embedder

        get_embedder().encode(["warm up"])
    return MemoryAgent(bus, memory=memory, pre_write_hook=hook, trust=scorer, start_seq=start_seq, drain_s=drain_s)


# ---------------------------------------------------------------- cns grade

def loop_bus() -> Any:
    """The bus of this state folder's judge loop (its recorded ports), or the configured one when none runs;
    never another folder's loop (ValueError: its turns would land in that folder's memory)."""
    from cns_core.agents.bus import bus_settings
    from cns_core.agents.loop_record import find_loop

    found = find_loop(bus_settings())
    if found.state == "stranger":
        raise ValueError(f"{found.describe()}; this folder's turns are not sent there. Start this folder's judge "
                         "loop (`cns run` picks free ports when these are taken)")
    return found.bus


def run_grade(args: argparse.Namespace) -> int:
    from cns_core.agents.bus import CRITIQUE, RESPONSE, Publisher, Subscriber
    from cns_core.agents.messages import TurnMessage, describe_errors
    from cns_core.agents.prometheus import critic_settings

    if getattr(args, "pair", False):
        return run_grade_pair(args)
    for flag, value in (("--query", args.query), ("--answer", args.answer)):
        if value is None:
            raise ValueError(f"{flag}: required (or --pair with --a and --b to compare two answers)")
    bus = loop_bus()
    timeout = args.timeout if args.timeout is not None else critic_settings().timeout + 15
    try:
        turn = TurnMessage(query=args.query, answer=args.answer, reference=args.reference, session_id=args.session,
                           query_id=f"cli-{uuid.uuid4().hex[:12]}")
    except ValidationError as exc:
        raise ValueError(describe_errors(exc)) from None
    with Publisher(bus, source="cns grade") as pub, Subscriber([CRITIQUE], bus) as sub:
        sub.wait_ready(pub)
        envelope = pub.publish(RESPONSE, turn.model_dump(exclude_none=True))
        kept, _ = _journaled(bus, [envelope.message_id], "cns grade")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            envelope = sub.recv(timeout=max(0.0, deadline - time.monotonic()))
            if envelope is not None and envelope.payload.get("query_id") == turn.query_id:
                return max(_print_critique(envelope.payload, args.json), 0 if kept else 1)
    print(f"cns grade: error: no critique for {turn.query_id} within {timeout:g} s; is `cns agents` running "
          "with a CriticAgent?", file=sys.stderr)
    return 1


def _journaled(bus: Any, message_ids: list[str], command: str) -> tuple[bool, list[str]]:
    """(whether the journal holds the turns just sent on disk, the ids it was not seen to record). When it
    cannot write (a full disk) or is gone (the loop died while they were sent), says so on stderr: the sender
    is told its turns are not kept (a loop without a journal is not asked). Turns held in memory by a journal
    that cannot write are not among the ids: the loop writes those to a file itself at a stop."""
    from cns_core.agents.journal import JournalRefused, JournalUnavailable, confirm_kept

    if not message_ids or not bus.journal_enabled:
        return True, []
    try:
        confirm_kept(bus, message_ids, timeout=max(5.0, len(message_ids) / 200))
    except JournalRefused as exc:
        print(f"{command}: error: {exc}", file=sys.stderr)
        return False, []
    except JournalUnavailable as exc:
        print(f"{command}: error: the turns are not known to be kept: {exc}", file=sys.stderr)
        return False, exc.not_recorded or list(message_ids)
    return True, []


def _print_critique(critique: dict[str, Any], as_json: bool) -> int:
    """The critique on stdout; what the judge wrote is printed with its control characters escaped (JSON
    escapes them itself)."""
    from cns_core.bounds import printable, printable_json

    if as_json:
        print(printable_json(critique, indent=2))
    elif critique.get("score") is None:
        print(f"score: none ({printable(critique.get('error'))})")
    else:
        latency = critique.get("latency_s")
        print(f"score: {critique['score']}/5   judge: {printable(critique.get('judge_model'))}"
              + (f"   {latency:.1f} s" if isinstance(latency, (int, float)) else ""))
        print(f"feedback: {printable(critique.get('feedback', ''))}")
    return 0 if critique.get("score") is not None else 1


# ---------------------------------------------------------------- cns replay

def read_turns(path: str | Path, session: str = "replay") -> Iterator[tuple[int, dict[str, Any] | None, str]]:
    """``(line number, turn payload or None, problem)`` for each non-blank line of a JSONL file (read by
    :func:`~cns_core.bounds.jsonl_records`, as ``cns annotate`` reads its files: a byte-order mark is fine)."""
    from cns_core.agents.messages import TurnMessage, describe_errors
    from cns_core.agents.wire import MAX_JSON_DEPTH, MAX_MESSAGE_BYTES
    from cns_core.bounds import jsonl_records

    with open(path, "rb") as handle:
        for number, raw, problem in jsonl_records(handle, MAX_JSON_DEPTH, MAX_MESSAGE_BYTES, "the bus limit"):
            if problem:
                yield number, None, problem
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


class _RepeatedIds:
    """Lines that reuse a query id with another answer: the memory keeps one answer per id (the last one
    stored), so each is worth a warning naming both lines."""

    def __init__(self, path: Path):
        self.path = path
        self.first: dict[str, tuple[int, str]] = {}
        self.warnings: list[str] = []

    def check(self, number: int, payload: dict[str, Any]) -> None:
        qid, answer = payload["query_id"], payload.get("answer", "")
        line, first_answer = self.first.setdefault(qid, (number, answer))
        if line != number and answer != first_answer:
            self.warnings.append(f"{self.path}:{number}: warning: query_id {printable(qid)!r} was sent on line {line} "
                                 "with another answer; the memory keeps one answer per query id (the last stored)")


def run_replay(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from cns_core.agents.bus import CRITIQUE, RESPONSE, BusError, Publisher, Subscriber
    from cns_core.bounds import regular_file_problem

    path = Path(args.file)
    problem = regular_file_problem(path)
    if problem:
        raise OSError(f"{path}: {problem}")
    bus = loop_bus()
    bad: list[str] = []
    sent: set[str] = set()
    published = 0
    envelopes: dict[str, dict[str, Any]] = {}      # message id -> the turn sent: re-sent if not recorded
    unsent: list[dict[str, Any]] = []              # turns after the bus refused one (the loop is gone)
    repeats = _RepeatedIds(path)
    with Publisher(bus, source="cns replay") as pub, Subscriber([CRITIQUE], bus) as sub:
        if args.wait:
            sub.wait_ready(pub)
        with tqdm(desc="publishing", unit="turn", file=sys.stderr) as bar:
            for number, payload, problem in read_turns(path, args.session):
                if payload is None:
                    bad.append(f"{path}:{number}: {printable(problem)}")
                    continue
                repeats.check(number, payload)
                if unsent:
                    unsent.append(payload)
                    continue
                try:
                    envelopes[pub.publish(RESPONSE, payload).message_id] = payload
                except BusError as exc:
                    print(f"cns replay: error: {path}:{number}: {printable(str(exc))}; the rest is not sent",
                          file=sys.stderr)
                    unsent.append(payload)
                    continue
                sent.add(payload["query_id"])
                published += 1
                bar.update(1)
        for line in bad + repeats.warnings:
            print(line, file=sys.stderr)
        print(f"sent {published} turn(s)" + (f" for {len(sent)} query id(s)" if len(sent) != published else "")
              + (f", {len(repeats.warnings)} repeating a query id with another answer" if repeats.warnings else "")
              + (f", skipped {len(bad)} bad line(s)" if bad else ""))
        kept, not_recorded = _journaled(bus, list(envelopes), "cns replay")
        if not_recorded or unsent:
            _keep_unsent(path, [envelopes[i] for i in not_recorded] + unsent, published + len(unsent))
        graded = _wait_for_critiques(sub, sent, args.timeout) if args.wait and sent else True
    return 1 if bad or unsent or not kept or not graded else 0


def _keep_unsent(source: Path, turns: list[dict[str, Any]], total: int) -> Path | None:
    """Write turns the journal was not seen to record as JSON lines ``cns replay`` sends again (each with its
    query id, so a turn that did arrive is not stored twice): beside ``source``, else in the temporary folder."""
    from cns_core.agents.journal import spill_folder

    stamp = time.strftime("%Y%m%d-%H%M%S")
    name = f"{source.stem}.not-kept-{stamp}-{uuid.uuid4().hex[:6]}.jsonl"
    text = "".join(json.dumps(t, ensure_ascii=False) + "\n" for t in turns)
    for folder in (source.parent, spill_folder()):
        target = folder / name
        try:
            with open(target, "x", encoding="utf-8") as handle:
                handle.write(text)
        except OSError as exc:
            print(f"cns replay: warning: cannot write {printable(str(target))}: {exc}", file=sys.stderr)
            continue
        print(f"cns replay: error: {len(turns):,} of {total:,} turn(s) are not kept; wrote them to "
              f"{printable(str(target))}: send them again with `cns replay {printable(str(target))}` once the "
              "judge loop runs", file=sys.stderr)
        return target
    print(f"cns replay: error: {len(turns):,} of {total:,} turn(s) are not kept and could not be written anywhere; "
          f"send {printable(str(source))} again once the judge loop runs", file=sys.stderr)
    return None


def _wait_for_critiques(sub: Any, pending: set[str], timeout: float) -> bool:
    """Print how the turns were graded; True when every one has a score."""
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
    return not failed and not pending
