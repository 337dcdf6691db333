"""MemoryAgent: writes an engram for every ``response.generation`` and merges every
``critique.result`` score into it, losing none.

* Batches: what is queued is handled together (one embedding pass, a few Chroma
  calls); in a batch turns are written before critiques are applied.
* The race: a critique whose engram is not written yet is parked in the memory's
  persisted pending collection and applied when the engram arrives.
* Restarts: after each batch the id of its last message is saved (a checkpoint
  file in the state folder). On start the agent asks the bus journal for every
  message after it, so what arrived while it was down is handled too. Handling
  is idempotent (a rewritten turn keeps its score), so overlaps are harmless.
* The coherence hook: ``pre_write_hook(query_id, query, answer, metadata)`` may
  block a turn (it then goes to the quarantine) and may add flat metadata; a hook
  that raises is logged and the turn is written as usual.
* The critics' Trust Score: with a ``trust`` scorer (:mod:`cns_core.agents.answer_trust`)
  each written answer is drafted into an SNO (its reference and sources as evidence,
  which the engram keeps for a later backfill), scored, and the score stored beside the
  judge's grade. The engram is written first: a failure to draft or score leaves it
  without a score (``trust_error`` says why, and the log) and never stops the agent.
"""

from __future__ import annotations

import json
import logging
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from pydantic import ValidationError

from cns_core.agents.answer_trust import AnswerItem, AnswerScorer, evidence_metadata
from cns_core.agents.base import Agent
from cns_core.agents.bus import CRITIQUE, RESPONSE, BusConfig, Envelope
from cns_core.agents.journal import JournalUnavailable, journal_tail, replay
from cns_core.agents.messages import CritiqueMessage, TurnMessage, describe_errors
from cns_core.agents.state_machine import MEMORY_MACHINE, MemoryAction, StateMachine
from cns_core.config import replace_atomically, state_dir
from cns_core.memory import OWNED_PREFIXES, MemoryService, memory_owned

__all__ = ["MemoryAgent", "PreWriteHook"]

log = logging.getLogger(__name__)

PreWriteHook = Callable[[str, str, str, dict[str, Any]], Any]
_SEEN = 200_000          # message ids remembered to skip duplicates (replay overlapping live traffic)


class MemoryAgent(Agent):
    """Subscribes to ``response.generation`` and ``critique.result``; owns the episodic store."""

    name = "memory"
    subjects = (RESPONSE, CRITIQUE)
    max_batch = 256

    def __init__(self, bus: BusConfig | None = None, memory: MemoryService | None = None, *,
                 pre_write_hook: PreWriteHook | None = None, checkpoint: str | Path | None = None,
                 replay_on_start: bool = True, retries: int = 2, trust: AnswerScorer | None = None):
        super().__init__(bus)
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
        self.replayed = 0
        self.trust_scored = 0
        self.trust_failed = 0
        self._hold_checkpoint = False   # set when a batch failed: a restart must replay it

    # ---------------------------------------------------------------- start-up

    def before_subscribe(self) -> None:
        if self.memory is None:
            self.memory = MemoryService()
        if self._read_checkpoint() is None and self.bus.journal_enabled:
            try:   # first start: remember where the journal is, before we subscribe
                self._write_checkpoint({"after_seq": journal_tail(self.bus, timeout=1.0)})
            except JournalUnavailable as exc:
                log.info("memory: %s; starting without a replay position", exc)

    def after_ready(self) -> None:
        assert self.memory is not None
        applied = self.memory.apply_pending()
        if applied:
            log.info("memory: applied %d parked critique(s) whose engrams exist", applied)
        position = self._read_checkpoint()
        if not self.replay_on_start or position is None or not self.bus.journal_enabled:
            return
        batch: list[Envelope] = []
        try:
            for _, envelope in replay(self.bus, after_seq=position.get("after_seq"),
                                      after_message_id=position.get("after_message_id"), subjects=self.subjects):
                batch.append(envelope)
                if len(batch) >= self.max_batch:
                    self.replayed += len(batch)
                    self.handle_batch(batch)
                    batch = []
        except JournalUnavailable as exc:
            log.warning("memory: cannot catch up on missed messages: %s", exc)
        if batch:
            self.replayed += len(batch)
            self.handle_batch(batch)
        if self.replayed:
            log.info("memory: caught up on %d message(s) from the journal", self.replayed)

    def _read_checkpoint(self) -> dict[str, Any] | None:
        try:
            data = json.loads(self.checkpoint_path.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            log.warning("memory: unreadable checkpoint %s (%s); replaying from the journal start", 
                        self.checkpoint_path, exc)
            return {"after_seq": 0}
        return data if isinstance(data, dict) else {"after_seq": 0}

    def _write_checkpoint(self, position: dict[str, Any]) -> None:
        with replace_atomically(self.checkpoint_path) as tmp:
            tmp.write_text(json.dumps(position))

    # ---------------------------------------------------------------- handling

    def handle_batch(self, envelopes: Sequence[Envelope]) -> None:
        fresh = [e for e in envelopes if e.message_id not in self._seen]
        turns: list[TurnMessage] = []
        critiques: list[CritiqueMessage] = []
        for env in fresh:
            try:
                if env.subject == RESPONSE:
                    turns.append(TurnMessage.model_validate(env.payload))
                elif env.subject == CRITIQUE:
                    critique = CritiqueMessage.model_validate(env.payload)
                    if critique.score is None:
                        log.info("memory: critique of %s has no score (%s); nothing to merge",
                                 critique.query_id, critique.error)
                    else:
                        critiques.append(critique)
            except ValidationError as exc:
                log.warning("memory: dropped %s %s: %s", env.subject, env.message_id, describe_errors(exc))
        if turns:
            stamps = {str(e.payload["query_id"]): e.timestamp for e in fresh
                      if e.subject == RESPONSE and "query_id" in e.payload}
            self._step(MemoryAction.WRITE, self.write_turns, turns, stamps)
        if critiques:
            self._step(MemoryAction.UPDATE_SCORE, self._score, critiques)
        for env in fresh:
            self._seen[env.message_id] = None
        while len(self._seen) > _SEEN:
            self._seen.popitem(last=False)
        if envelopes and not self._hold_checkpoint:
            self._write_checkpoint({"after_message_id": envelopes[-1].message_id})

    def _step(self, action: MemoryAction, work: Callable[..., None], *args: Any) -> None:
        """One state-machine step with retries; a batch that keeps failing is logged, not fatal."""
        for attempt in range(self.retries + 1):
            self.machine.fire(action)
            try:
                work(*args)
                self.machine.fire(MemoryAction.DONE)
                return
            except Exception as exc:
                self.machine.fire(MemoryAction.FAIL)
                self.machine.fire(MemoryAction.RESET)
                if attempt == self.retries:
                    self.failures += 1
                    self._hold_checkpoint = True
                    log.exception("memory: %s failed after %d attempt(s): %s; the checkpoint stays before this "
                                  "batch so a restart replays it", action.value, attempt + 1, exc)
                    return
                time.sleep(0.2 * (attempt + 1))

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
