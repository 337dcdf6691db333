"""MemoryAgent: writes an engram for every ``response.generation`` and merges every
``critique.result`` score into it, losing none.

* Batches: what is queued is handled together (one embedding pass, a few Chroma
  calls); in a batch turns are written before critiques are applied.
* The race: a critique whose engram is not written yet is parked in the memory's
  persisted pending collection and applied when the engram arrives.
* Restarts: after each batch the id of its last message is saved (a checkpoint
  file in the state folder). On start the agent asks the bus journal for every
  message after it, so what arrived while it was down is handled too. A first
  start (no checkpoint) replays from where the journal stood when this loop's
  proxy opened it (``start_seq``), so a turn sent while the agents were still
  starting is stored too. A clean stop drains: what the journal holds past the
  checkpoint is handled before the agent exits, for at most ``drain_s``. Handling
  is idempotent: a turn already stored with the same text (an engram or in the
  quarantine) is skipped before the coherence hook, so a replay, even from the
  journal's start after a damaged checkpoint (kept aside as ``*.damaged-<time>``),
  never stores a turn twice. A live message is handled only once the journal keeps
  it (the proxy hands it to both at once), so a kill -9 never leaves a grade stored
  that the journal lacks.
* Failures: a batch the store refuses is held (:mod:`cns_core.agents.held`) and
  retried on a back-off while the agent is idle, the checkpoint staying before it;
  a turn that fails alone while others are written is a poison message: rejected
  once, its reason kept by the journal, which never replays it. A payload that does
  not fit its subject's model is rejected the same way.
* The coherence hook: ``pre_write_hook(query_id, query, answer, metadata)`` may
  block a turn (it then goes to the quarantine) and may add flat metadata; a hook
  that raises is logged and the turn is written as usual.
* Rewards: each time a grade or an answer verdict lands on an engram, the turn's reward (its quality in
  [0, 1] and the parts it is made of, :mod:`cns_core.memory.rewards`) is published on ``reward.signal``
  for the agent that produced it (the turn's model). A failure to publish is logged, never fatal.
* The critics' Trust Score: with a ``trust`` scorer (:mod:`cns_core.judging.answer_trust`)
  each written answer is drafted into an SNO (its reference and sources as evidence,
  which the engram keeps for a later backfill), scored, and the score stored beside the
  judge's grade. The engram is written first: a failure to draft or score leaves it
  without a score (``trust_error`` says why, and the log) and never stops the agent.
"""

from __future__ import annotations

import json
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from pydantic import ValidationError

from cns_core.judging.answer_trust import AnswerItem, AnswerScorer, evidence_metadata
from cns_core.agents.base import Agent
from cns_core.agents.bus import CRITIQUE, RECALL, RECALLED, RESPONSE, REWARD, BusConfig, Envelope
from cns_core.agents.held import HeldWork
from cns_core.agents.journal import JournalRefused, JournalUnavailable, confirm_kept, journal_tail, reject, replay
from cns_core.agents.messages import CritiqueMessage, RecallReply, RecallRequest, TurnMessage, describe_errors
from cns_core.agents.state_machine import MEMORY_MACHINE, MemoryAction, StateMachine
from cns_core.agents.wire import BusError
from cns_core.bounds import keep_damaged, logger
from cns_core.config import replace_atomically, state_dir
from cns_core.memory import OWNED_PREFIXES, MemoryService, memory_owned

__all__ = ["MemoryAgent", "PreWriteHook"]

log = logger(__name__)

PreWriteHook = Callable[[str, str, str, dict[str, Any]], Any]
_SEEN = 200_000          # message ids remembered to skip duplicates (replay overlapping live traffic)
_JOURNAL_QUIET_S = 60.0  # after the journal did not answer, live batches stop waiting for it this long


class MemoryAgent(Agent):
    """Subscribes to ``response.generation`` and ``critique.result``; owns the episodic store; answers
    ``recall.request`` requests (never journaled work: a request is answered live or not at all)."""

    name = "memory"
    subjects = (RESPONSE, CRITIQUE, RECALL)
    stored_subjects = (RESPONSE, CRITIQUE)      # what the journal replays to this agent
    max_batch = 256
    journal_wait_s = 10.0     # how long a live batch waits for the journal to keep it

    def __init__(self, bus: BusConfig | None = None, memory: MemoryService | None = None, *,
                 pre_write_hook: PreWriteHook | None = None, checkpoint: str | Path | None = None,
                 replay_on_start: bool = True, retries: int = 2, trust: AnswerScorer | None = None,
                 start_seq: int | None = None, drain_s: float = 5.0):
        super().__init__(bus)
        self.start_seq = start_seq      # the journal's position when the proxy opened it (first start only)
        self.drain_s = drain_s          # a clean stop handles journaled turns for at most this long
        self.memory = memory
        self.pre_write_hook = pre_write_hook
        self.trust = trust
        self.checkpoint_path = Path(checkpoint) if checkpoint else state_dir() / "memory_agent.checkpoint.json"
        self.replay_on_start = replay_on_start
        self.retries = retries
        self.machine = StateMachine(MEMORY_MACHINE)
        self._seen: OrderedDict[str, None] = OrderedDict()
        self.written = 0
        self.quarantined = 0
        self.scores_applied = 0
        self.scores_parked = 0
        self.scores_stale = 0          # grades of another answer than the engram holds: not stored
        self.replayed = 0
        self.trust_scored = 0
        self.trust_failed = 0
        self.rejected = 0
        self.skipped_stored = 0
        self.rewards_published = 0
        self.recalls_answered = 0
        self.held = HeldWork()          # messages the store refused, retried while idle
        self._last_id: str | None = None
        self._journal_quiet_until = 0.0

    # ---------------------------------------------------------------- start-up

    def before_subscribe(self) -> None:
        if self.memory is None:
            self.memory = MemoryService()
        if self._read_checkpoint() is None and self.bus.journal_enabled:
            if self.start_seq is not None:     # first start beside its own proxy: from where the journal stood
                self._write_checkpoint({"after_seq": int(self.start_seq)})
                return
            try:   # first start, joining a proxy: remember where the journal is, before we subscribe
                self._write_checkpoint({"after_seq": journal_tail(self.bus, timeout=1.0)})
            except JournalUnavailable as exc:
                log.info("memory: %s; starting without a replay position", exc)

    def after_ready(self) -> None:
        assert self.memory is not None
        try:      # a failure here must not cost the replay below
            applied = self.memory.apply_pending()
            if applied:
                log.info("memory: applied %d parked critique(s) whose engrams exist", applied)
        except Exception as exc:  # noqa: BLE001
            log.error("memory: parked critiques could not be applied (%s: %s); they stay parked", type(exc).__name__,
                      exc)
        if not self.replay_on_start:
            return
        self._catch_up()
        if self.replayed:
            log.info("memory: caught up on %d message(s) from the journal", self.replayed)

    def on_stop(self) -> None:
        """A clean stop: handle what the journal holds past the checkpoint (turns received by the bus but
        not yet by this agent), for at most ``drain_s``, so a stop leaves nothing journaled unstored."""
        if self.drain_s <= 0:
            return
        before = self.replayed
        finished = self._catch_up(deadline=time.monotonic() + self.drain_s)
        drained = self.replayed - before
        if drained or not finished:
            log.info("memory: stopping: stored %d journaled message(s)%s", drained,
                     "" if finished else f"; the rest waits for the next start (drain_s {self.drain_s:g} s)")

    def _catch_up(self, deadline: float | None = None) -> bool:
        """Handle every journaled message after the checkpoint, in batches; False when ``deadline``
        (monotonic) came first. Messages seen already are skipped by :meth:`handle_batch`."""
        position = self._read_checkpoint()
        if position is None or not self.bus.journal_enabled:
            return True
        batch: list[Envelope] = []
        try:
            for _, envelope in replay(self.bus, after_seq=position.get("after_seq"),
                                      after_message_id=position.get("after_message_id"), subjects=self.stored_subjects):
                batch.append(envelope)
                if len(batch) >= self.max_batch:
                    self.replayed += len(batch)
                    self.handle_batch(batch)
                    batch = []
                    if deadline is not None and time.monotonic() > deadline:
                        return False
        except JournalUnavailable as exc:
            log.warning("memory: cannot catch up on missed messages: %s", exc)
        if batch:
            self.replayed += len(batch)
            self.handle_batch(batch)
        return True

    def _read_checkpoint(self) -> dict[str, Any] | None:
        """The replay position; a damaged file is kept aside and the journal replayed from its start
        (turns already stored are skipped, so nothing is stored twice)."""
        try:
            data = json.loads(self.checkpoint_path.read_text(encoding="utf-8"))
            if isinstance(data, dict) and (isinstance(data.get("after_message_id"), str)
                                           or isinstance(data.get("after_seq"), int)):
                return data
            problem = "not a replay position"
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            problem = f"{type(exc).__name__}: {exc}"
        try:
            kept = f"kept it as {keep_damaged(self.checkpoint_path)}"
        except OSError as exc:
            kept = f"could not keep a copy ({exc})"
        log.error("memory: damaged checkpoint %s (%s); %s and replay the journal from its start (turns "
                  "already stored are skipped)", self.checkpoint_path, problem[:200], kept)
        self._write_checkpoint({"after_seq": 0})
        return {"after_seq": 0}

    def _write_checkpoint(self, position: dict[str, Any]) -> None:
        with replace_atomically(self.checkpoint_path) as tmp:
            tmp.write_text(json.dumps(position))

    # ---------------------------------------------------------------- handling

    def before_batch(self, envelopes: Sequence[Envelope]) -> None:
        """Wait until the bus journal keeps these live messages. The proxy hands a message to this agent and to
        the journal's thread at once: a grade stored before the journal wrote its critique, then kill -9, left a
        turn graded (never pending again) that the journal never shows graded, and a checkpoint naming a message
        the journal lacks (a full replay at the next start). A journal that cannot write holds nothing up (it
        says so itself); one that does not answer is not waited for again for a while."""
        ids = [e.message_id for e in envelopes if e.message_id not in self._seen]
        if not ids or not self.bus.journal_enabled or time.monotonic() < self._journal_quiet_until:
            return
        try:
            confirm_kept(self.bus, ids, timeout=self.journal_wait_s)
        except JournalRefused:      # held in memory by a full disk, or refused: the memory stores them anyway
            return
        except BusError as exc:
            self._journal_quiet_until = time.monotonic() + _JOURNAL_QUIET_S
            log.warning("memory: %s; handling live messages without waiting for the journal for %g s", exc,
                        _JOURNAL_QUIET_S)

    def handle_batch(self, envelopes: Sequence[Envelope]) -> None:
        fresh = [e for e in envelopes if e.message_id not in self._seen]
        self._process(fresh)
        for env in fresh:
            self._seen[env.message_id] = None
        while len(self._seen) > _SEEN:
            self._seen.popitem(last=False)
        if envelopes:
            self._last_id = envelopes[-1].message_id
        self._save_position()

    def on_idle(self) -> None:
        """Retry what the store refused, once its back-off is over; reject what proved to be poison."""
        retry, poison = self.held.due()
        for env, reason in poison:
            self._reject(env, f"fails on its own while other turns are stored: {reason}")
        if retry:
            self._process(retry)
        if retry or poison:
            self._save_position()

    def _save_position(self) -> None:
        """The checkpoint moves only while nothing is held: a restart must replay what is."""
        if self._last_id is not None and not self.held:
            self._write_checkpoint({"after_message_id": self._last_id})

    def _answer_recalls(self, envelopes: Sequence[Envelope]) -> list[Envelope]:
        """Answer every recall request among ``envelopes`` first (a batch of writes must not keep an asking
        generator waiting); returns the other envelopes. A bad request gets a reply naming the problem."""
        rest = []
        for env in envelopes:
            if env.subject != RECALL:
                rest.append(env)
                continue
            request_id = str((env.payload or {}).get("request_id", ""))[:200] if isinstance(env.payload, dict) else ""
            try:
                request = RecallRequest.model_validate(env.payload)
                results = self.memory.recall(request.query, request.k, include_wrong=request.include_wrong)
                reply = RecallReply(request_id=request.request_id, results=[r.as_dict() for r in results])
            except ValidationError as exc:
                reply = RecallReply(request_id=request_id or "?", error=describe_errors(exc))
            except Exception as exc:  # noqa: BLE001 - a bad question or a store error is the asker's answer
                reply = RecallReply(request_id=request_id or "?", error=f"{type(exc).__name__}: {exc}"[:2000])
            self.recalls_answered += 1
            if self.publisher is not None and reply.request_id != "?":
                self.publisher.publish(RECALLED, reply.model_dump())
        return rest

    def _process(self, envelopes: Sequence[Envelope]) -> None:
        envelopes = self._answer_recalls(envelopes)
        turns: list[tuple[Envelope, TurnMessage]] = []
        critiques: list[tuple[Envelope, CritiqueMessage]] = []
        for env in envelopes:
            try:
                if env.subject == RESPONSE:
                    turns.append((env, TurnMessage.model_validate(env.payload)))
                elif env.subject == CRITIQUE:
                    critique = CritiqueMessage.model_validate(env.payload)
                    if critique.score is None:
                        log.info("memory: critique of %s has no score (%s); nothing to merge",
                                 critique.query_id, critique.error)
                        self.held.release(env.message_id)
                    else:
                        critiques.append((env, critique))
            except ValidationError as exc:
                self._reject(env, describe_errors(exc))
        turns = self._not_stored_yet(turns)
        if turns:
            stamps = {t.query_id: e.timestamp for e, t in turns}
            if self._step(MemoryAction.WRITE, self.write_turns, [t for _, t in turns], stamps):
                self._done(e for e, _ in turns)
            else:
                self._one_by_one(turns, stamps)
        if critiques:
            if self._step(MemoryAction.UPDATE_SCORE, self._score, [c for _, c in critiques]):
                self._done(e for e, _ in critiques)
            else:
                for env, _ in critiques:
                    self.held.hold(env, "the store refused the score")

    def _done(self, envelopes: Any) -> None:
        self.held.succeeded()
        for env in envelopes:
            self.held.release(env.message_id)

    def _not_stored_yet(self, turns: list[tuple[Envelope, TurnMessage]]) -> list[tuple[Envelope, TurnMessage]]:
        """Leave out turns stored already with the same text (a replay); on a store error, keep them all."""
        if not turns or self.memory is None or not hasattr(self.memory, "already_stored"):
            return turns
        try:
            stored = self.memory.already_stored([(t.query_id, t.query, t.answer) for _, t in turns])
        except Exception as exc:  # noqa: BLE001 - the write that follows retries and holds
            log.warning("memory: cannot tell stored turns apart (%s); handling them all", exc)
            return turns
        for env, turn in turns:
            if turn.query_id in stored:
                self.held.release(env.message_id)
        self.skipped_stored += sum(t.query_id in stored for _, t in turns)
        return [(e, t) for e, t in turns if t.query_id not in stored]

    def _one_by_one(self, turns: list[tuple[Envelope, TurnMessage]], stamps: Mapping[str, float]) -> None:
        """A batch that failed: each turn alone. One that fails while another is written is poison;
        when all fail, the store is the cause and they are held for a retry."""
        failed: list[tuple[Envelope, str]] = []
        for env, turn in turns:
            try:
                self.write_turns([turn], stamps)
                self._done([env])
            except Exception as exc:  # noqa: BLE001 - judged below: poison or a store that refuses
                failed.append((env, f"{type(exc).__name__}: {exc}"[:300]))
        if len(turns) > 1 and len(failed) < len(turns):
            for env, reason in failed:
                self._reject(env, f"fails on its own while other turns are stored: {reason}")
            return
        for env, reason in failed:
            self.held.hold(env, reason)
        if failed:
            log.warning("memory: %d turn(s) held for a retry (%s); the checkpoint stays before them", len(failed),
                        failed[0][1])

    def _reject(self, env: Envelope, reason: str) -> None:
        """Reject a message once: logged, counted, and kept by the journal with its reason, out of every
        later replay."""
        self.rejected += 1
        self.held.release(env.message_id)
        log.warning("memory: dropped %s %s: %s (kept by the journal as rejected, never replayed)", env.subject,
                    env.message_id, reason)
        if not self.bus.journal_enabled:
            return
        try:
            reject(self.bus, env.message_id, reason, timeout=2.0)
        except BusError as exc:
            log.warning("memory: the journal did not take the rejection of %s (%s)", env.message_id, exc)

    def _step(self, action: MemoryAction, work: Callable[..., None], *args: Any) -> bool:
        """One state-machine step with retries; False when it kept failing (logged, never fatal)."""
        for attempt in range(self.retries + 1):
            self.machine.fire(action)
            try:
                work(*args)
                self.machine.fire(MemoryAction.DONE)
                return True
            except Exception as exc:
                self.machine.fire(MemoryAction.FAIL)
                self.machine.fire(MemoryAction.RESET)
                if attempt == self.retries:
                    self.failures += 1
                    log.warning("memory: %s failed after %d attempt(s): %s: %s", action.value, attempt + 1,
                                type(exc).__name__, exc)
                    return False
                time.sleep(0.2 * (attempt + 1))
        return False

    def write_turns(self, turns: Sequence[TurnMessage], stamp: Mapping[str, float] | None = None) -> None:
        """Run each turn through the pre-write hook, then write the passing ones as engrams (one batch)
        and the blocked ones to the quarantine. ``stamp`` maps query ids to their timestamps
        (default: now). Also used without a bus, by the demo memory."""
        assert self.memory is not None
        stamp = stamp or {}
        rows = []
        for turn in turns:
            owned = sorted(k for k in turn.metadata if k.startswith(OWNED_PREFIXES))
            if owned:
                log.warning("memory: turn %s: metadata %s dropped (set by the memory itself)",
                            turn.query_id, ", ".join(owned))
            meta: dict[str, Any] = {k: v for k, v in turn.metadata.items() if k not in owned}
            if turn.model:
                meta["model"] = turn.model
            if turn.reference:
                meta["has_reference"] = True
            meta.update(evidence_metadata(turn.reference, turn.sources))   # kept for a later backfill
            blocked, meta = self._run_hook(turn, meta)
            if blocked is not None:
                self.memory.write_quarantined(turn.query, turn.answer, turn.session_id, turn.query_id,
                                              timestamp=stamp.get(turn.query_id), reason=blocked, **meta)
                self.quarantined += 1
                continue
            rows.append({"query": turn.query, "answer": turn.answer, "session_id": turn.session_id,
                         "query_id": turn.query_id, "timestamp": stamp.get(turn.query_id), "metadata": meta})
        if rows:
            self.memory.write_episodic_many(rows)
            self.written += len(rows)
            written = {r["query_id"] for r in rows}
            self._score_answers([t for t in turns if t.query_id in written])

    def _score_answers(self, turns: Sequence[TurnMessage]) -> None:
        """The critics' Trust Score of each written answer, stored beside the grade; never raises."""
        if self.trust is None or not turns:
            return
        items = [AnswerItem(t.query_id, t.query, t.answer, t.reference, tuple(t.sources)) for t in turns]
        try:
            outcomes = self.trust.record(self.memory, items)
        except Exception:  # noqa: BLE001 - the engrams are stored; a missing score is not worth the thread
            self.trust_failed += len(items)
            log.exception("memory: Trust Scores of %d answer(s) could not be stored; the engrams stay "
                          "without one (cns trust-backfill scores them later)", len(items))
            return
        self.trust_scored += sum(o.error is None for o in outcomes)
        self.trust_failed += sum(o.error is not None for o in outcomes)
        self._publish_rewards([item.query_id for item, o in zip(items, outcomes) if o.error is None], "verdict")

    def _publish_rewards(self, ids: Sequence[str], cause: str) -> None:
        """The reward of each of these turns on ``reward.signal``; never raises."""
        if not ids or self.publisher is None or self.memory is None:
            return
        from cns_core.memory.rewards import reward_of

        try:
            settings = self.memory.recall_settings
            for engram in self.memory.get(list(ids)):
                reward = reward_of(engram, settings)
                self.publisher.publish(REWARD, {"query_id": reward.query_id, "session_id": reward.session_id,
                                                "agent": reward.agent, "reward": reward.reward,
                                                "parts": dict(reward.parts), "cause": cause})
                self.rewards_published += 1
        except Exception as exc:  # noqa: BLE001 - the grade is stored; a lost reward is only logged
            log.warning("memory: rewards of %d turn(s) not published (%s: %s)", len(ids), type(exc).__name__, exc)

    def _run_hook(self, turn: TurnMessage, meta: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
        """(reason if blocked else None, metadata to store)."""
        if self.pre_write_hook is None:
            return None, meta
        try:
            result = self.pre_write_hook(turn.query_id, turn.query, turn.answer, dict(meta))
            extra = getattr(result, "metadata", None) or {}
            if not isinstance(extra, dict):
                raise TypeError(f"hook metadata must be a dict, got {type(extra).__name__}")
            extra = {str(k): v for k, v in extra.items()
                     if isinstance(v, (str, int, float, bool))
                     and not memory_owned(str(k))}
            merged = {**meta, **extra}
            if bool(getattr(result, "blocked", False)):
                reason = getattr(result, "reason", None) or extra.get("reason") or "blocked by the coherence hook"
                return str(reason), merged
            return None, merged
        except Exception:
            log.exception("memory: pre-write hook failed for %s; writing the turn as usual", turn.query_id)
            return None, meta

    def _score(self, critiques: list[CritiqueMessage]) -> None:
        assert self.memory is not None
        outcome = self.memory.record_critiques([c.memory_fields() for c in critiques])
        self.scores_applied += outcome.count("applied")
        self.scores_parked += outcome.count("pending")
        self.scores_stale += outcome.count("stale")
        self._publish_rewards(list(dict.fromkeys(c.query_id for c, o in zip(critiques, outcome) if o == "applied")),
                              "grade")
