"""Agent state machines as data: states, actions and a transition table.

Each agent declares its table once (``CRITIC_MACHINE``, ``MEMORY_MACHINE``); the
agent only calls :meth:`StateMachine.fire`. An action the table does not allow in
the current state raises :class:`InvalidTransition` instead of silently moving,
so a logic slip shows up in tests rather than as a stuck agent.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from enum import Enum
from typing import Callable, Generic, Mapping, TypeVar

__all__ = ["InvalidTransition", "MachineSpec", "StateMachine",
           "CriticState", "CriticAction", "CRITIC_MACHINE",
           "MemoryState", "MemoryAction", "MEMORY_MACHINE"]

S = TypeVar("S", bound=Enum)
A = TypeVar("A", bound=Enum)


class InvalidTransition(RuntimeError):
    """An action that the transition table does not allow in the current state."""


@dataclass(frozen=True)
class MachineSpec(Generic[S, A]):
    """The data: a name, the initial state and ``(state, action) -> next state``."""

    name: str
    initial: S
    transitions: Mapping[tuple[S, A], S]

    def allowed(self, state: S) -> list[A]:
        return [action for (src, action) in self.transitions if src == state]


@dataclass
class StateMachine(Generic[S, A]):
    """The running instance: current state, a bounded history and an optional listener."""

    spec: MachineSpec[S, A]
    on_change: Callable[[S, A, S], None] | None = None
    history_size: int = 50
    state: S = field(init=False)
    history: list[tuple[S, A, S]] = field(init=False, default_factory=list)

    def __post_init__(self) -> None:
        self.state = self.spec.initial
        self._lock = threading.Lock()

    def fire(self, action: A) -> S:
        with self._lock:
            target = self.spec.transitions.get((self.state, action))
            if target is None:
                allowed = ", ".join(a.name for a in self.spec.allowed(self.state)) or "none"
                raise InvalidTransition(f"{self.spec.name}: {action.name} is not allowed in state "
                                        f"{self.state.name} (allowed: {allowed})")
            step = (self.state, action, target)
            self.state = target
            self.history.append(step)
            del self.history[:-self.history_size]
        if self.on_change is not None:
            self.on_change(*step)
        return target


class CriticState(Enum):
    IDLE = "idle"                 # waiting for response.generation
    RECEIVING = "receiving"       # envelope consumed, building the prompt
    GRADING = "grading"           # the judge call is in flight
    PUBLISHING = "publishing"     # sending critique.result
    ERROR = "error"               # the judge or the parse failed; a null score is published


class CriticAction(Enum):
    RECEIVE = "receive"
    START_GRADE = "start_grade"
    PUBLISH = "publish"
    FAIL = "fail"
    RESET = "reset"


CRITIC_MACHINE: MachineSpec[CriticState, CriticAction] = MachineSpec("CriticAgent", CriticState.IDLE, {
    (CriticState.IDLE, CriticAction.RECEIVE): CriticState.RECEIVING,
    (CriticState.RECEIVING, CriticAction.START_GRADE): CriticState.GRADING,
    (CriticState.RECEIVING, CriticAction.FAIL): CriticState.ERROR,
    (CriticState.GRADING, CriticAction.PUBLISH): CriticState.PUBLISHING,
    (CriticState.GRADING, CriticAction.FAIL): CriticState.ERROR,
    (CriticState.PUBLISHING, CriticAction.RESET): CriticState.IDLE,
    (CriticState.PUBLISHING, CriticAction.FAIL): CriticState.ERROR,
    (CriticState.ERROR, CriticAction.RESET): CriticState.IDLE,
})


class MemoryState(Enum):
    IDLE = "idle"
    WRITING = "writing"                   # storing engrams from response.generation
    UPDATING_SCORE = "updating_score"     # merging critique.result scores (or parking them)
    ERROR = "error"


class MemoryAction(Enum):
    WRITE = "write"
    UPDATE_SCORE = "update_score"
    DONE = "done"
    FAIL = "fail"
    RESET = "reset"


MEMORY_MACHINE: MachineSpec[MemoryState, MemoryAction] = MachineSpec("MemoryAgent", MemoryState.IDLE, {
    (MemoryState.IDLE, MemoryAction.WRITE): MemoryState.WRITING,
    (MemoryState.IDLE, MemoryAction.UPDATE_SCORE): MemoryState.UPDATING_SCORE,
    (MemoryState.WRITING, MemoryAction.DONE): MemoryState.IDLE,
    (MemoryState.WRITING, MemoryAction.FAIL): MemoryState.ERROR,
    (MemoryState.UPDATING_SCORE, MemoryAction.DONE): MemoryState.IDLE,
    (MemoryState.UPDATING_SCORE, MemoryAction.FAIL): MemoryState.ERROR,
    (MemoryState.ERROR, MemoryAction.RESET): MemoryState.IDLE,
})
