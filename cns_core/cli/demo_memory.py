"""A demo episodic memory for ``make run``: a few hundred graded turns spread over a month.

    python -m cns_core.cli.demo_memory              # into the default memory (state dir or CNS_CHROMA_URL)
    python -m cns_core.cli.demo_memory --count 500 --path /tmp/demo-chroma

The turns come from a small table of questions, each with a good, a partial and a
wrong answer written here; the grade follows the answer's quality (with some
noise), the feedback quotes the configured rubric, and about one turn in seven is
left ungraded, as if the judge had not caught up. Ids are fixed (``demo-0000``..),
so running it again is a no-op once every demo engram is there.

Every turn passes through the coherence hook the way the MemoryAgent writes a turn
(:meth:`MemoryAgent.write_turns`, a session at a time), so ``<state dir>/coherence.jsonl``
gets its log and the engrams their coherence tags; a blocked turn goes to the quarantine.
The demo hook runs the model path (the configured NLI backend, warmed before the first
turn) with no time limit -- a set-up, not a live write: nobody waits on a turn, so no turn
falls back to the heuristics because the machine was busy -- and searches self statements
(``retrieval.self_search``). The first turns state three
habits of the assistant (engrams marked ``self: true`` with a ``facet``); three times in
the month it contradicts one of them (a drift facet, spec section 8) and its next few
answers get numbers wrong, which the hook sees as contradictions of earlier answers: the
Coherence page's drift indicator has something to find.

Each fact turn carries its good answer as the reference (as a judge's score-5 answer would),
so the MemoryAgent's critics ground the answer on it: the engrams carry the critics' Trust
Score beside the demo judge's grade, and the Engrams page has disagreements to mark.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from cns_core.config import load_config

__all__ = ["FACTS", "PERSONA", "DemoPlan", "demo_turns", "plan_demo", "build_demo", "demo_hook", "write_demo_memory",
           "main"]

# (question, good answer, partial answer, wrong answer)
FACTS: tuple[tuple[str, str, str, str], ...] = (
    ("What is the capital of Australia?", "Canberra is the capital of Australia.",
     "It is one of the big cities in the south-east.", "Sydney is the capital of Australia."),
    ("How many bones are in the adult human body?", "An adult human has 206 bones.",
     "Roughly two hundred.", "An adult has 312 bones."),
    ("Why is the sky blue?", "Air molecules scatter short blue wavelengths of sunlight more than red ones "
     "(Rayleigh scattering), so blue light reaches us from every direction.",
     "Because of how sunlight interacts with the air.", "Because the sky reflects the colour of the oceans."),
    ("What does DNA stand for?", "Deoxyribonucleic acid.", "Something nucleic acid.", "Dynamic nuclear antibody."),
    ("Who painted the Mona Lisa?", "Leonardo da Vinci painted the Mona Lisa in the early 16th century.",
     "An Italian Renaissance painter.", "Michelangelo painted it."),
    ("What is the boiling point of water at sea level?", "100 degrees Celsius (212 degrees Fahrenheit).",
     "About a hundred degrees.", "It boils at 90 degrees Celsius."),
    ("How does a vaccine protect you?", "It trains the immune system with a harmless antigen so that memory "
     "cells respond quickly when the real pathogen appears.", "It makes you a bit immune.",
     "It kills every virus in the body right away."),
    ("What is the largest planet in the solar system?", "Jupiter is the largest planet.",
     "One of the gas giants.", "Saturn is the largest planet."),
    ("What causes the seasons on Earth?", "The tilt of Earth's axis (about 23.4 degrees) changes how directly "
     "sunlight strikes each hemisphere over the year.", "The way the Earth is angled.",
     "The Earth is closer to the Sun in summer."),
    ("How many continents are there?", "By the common convention there are seven continents.",
     "Around six or seven, depending on who you ask.", "There are nine continents."),
    ("What is photosynthesis?", "The process by which plants use light, water and carbon dioxide to make "
     "glucose and release oxygen.", "How plants make food.", "How plants breathe in oxygen at night."),
    ("Who wrote 'Pride and Prejudice'?", "Jane Austen, published in 1813.", "An English novelist.",
     "Charlotte Bronte wrote it."),
    ("What is the speed of light in vacuum?", "About 299,792 kilometres per second.",
     "Very fast, hundreds of thousands of km per second.", "About 30,000 kilometres per second."),
    ("What is a prime number?", "A whole number greater than 1 whose only divisors are 1 and itself.",
     "A number that is hard to divide.", "Any odd number."),
    ("Why do we have leap years?", "A year is about 365.24 days, so an extra day every four years (with "
     "century exceptions) keeps the calendar aligned with the seasons.", "To fix the calendar.",
     "Because February is too short."),
    ("What is the chemical symbol for gold?", "Au, from the Latin aurum.", "Something starting with A.",
     "Go."),
    ("How far is the Moon from Earth?", "On average about 384,400 kilometres.", "A few hundred thousand km.",
     "About 40,000 kilometres."),
    ("What is inflation?", "A general rise in prices over time, which lowers the purchasing power of money.",
     "When things get more expensive.", "When the economy grows too fast."),
    ("What does a CPU do?", "It executes program instructions: arithmetic, logic, control and data movement.",
     "It is the computer's brain.", "It stores files permanently."),
    ("What is the tallest mountain above sea level?", "Mount Everest, about 8,849 metres.",
     "A mountain in the Himalayas.", "K2 is the tallest."),
    ("Who developed the theory of general relativity?", "Albert Einstein, published in 1915.",
     "A famous physicist in the early 20th century.", "Isaac Newton."),
    ("What is the main gas in Earth's atmosphere?", "Nitrogen, about 78 percent.", "Not oxygen, mostly.",
     "Oxygen is the main gas."),
    ("How do antibiotics work?", "They kill bacteria or stop them from multiplying; they do not work "
     "against viruses.", "They fight infections.", "They destroy viruses."),
    ("What is the Pythagorean theorem?", "In a right triangle the square of the hypotenuse equals the sum of "
     "the squares of the other two sides.", "Something about triangles and squares.",
     "The angles of any triangle add up to 360 degrees."),
    ("When did the Second World War end?", "In 1945: in Europe in May, in the Pacific in September.",
     "In the mid 1940s.", "In 1939."),
    ("What is the freezing point of water in Fahrenheit?", "32 degrees Fahrenheit.", "Around thirty degrees.",
     "0 degrees Fahrenheit."),
    ("What is machine learning?", "Building systems that learn patterns from data to make predictions "
     "instead of following hand-written rules.", "Computers that learn.", "Programming robots by hand."),
    ("How many sides does a hexagon have?", "Six.", "More than five.", "Eight."),
    ("What is the function of the heart?", "It pumps blood through the body, carrying oxygen and nutrients "
     "to tissues.", "It keeps you alive.", "It filters toxins from the blood."),
    ("What is the smallest unit of life?", "The cell.", "Something microscopic.", "The atom."),
    ("Why does ice float on water?", "Ice is less dense than liquid water because its hydrogen-bonded "
     "crystal lattice holds molecules farther apart.", "It is lighter.", "Because it contains trapped air."),
    ("What is the currency of Japan?", "The yen.", "An Asian currency.", "The yuan."),
    ("How many minutes are in a day?", "1,440 minutes.", "A bit under 1,500.", "1,200 minutes."),
    ("What does HTTP stand for?", "Hypertext Transfer Protocol.", "Something transfer protocol.",
     "High Throughput Transmission Process."),
    ("What is the longest river in Africa?", "The Nile.", "A river in north-east Africa.", "The Congo."),
    ("What is an electron?", "A negatively charged subatomic particle that surrounds the atomic nucleus.",
     "A tiny particle in atoms.", "A positively charged particle in the nucleus."),
)

# (facet, question, the habit stated first, the answer that contradicts it later)
PERSONA: tuple[tuple[str, str, str, str], ...] = (
    ("sources", "Do you cite your sources?", "I always cite my sources.", "I never cite my sources."),
    ("uncertainty", "What do you do when you are not sure?", "I say so when I am not sure.",
     "I do not say so when I am not sure."),
    ("medical", "Do you give medical advice?", "I do not give medical advice.", "I give medical advice."),
)
_NO_LIMIT_MS = 1e9             # the demo's pre-write budget: none (a set-up, see the module docstring)
_DRIFT_AT = (0.3, 0.55, 0.8)   # where in the month the assistant contradicts a habit
_OFF_TRACK = 4                 # wrong answers after each contradiction
# facts whose wrong answer gets a number wrong (the heuristics see numeric contradictions)
_NUMERIC = tuple(i for i, f in enumerate(FACTS) if any(ch.isdigit() for ch in f[3]))

_REMARKS = {
    5: "Nothing material is missing.",
    4: "A little more detail would make it complete.",
    3: "It stays vague where a precise answer was possible.",
    2: "The main claim is off and the useful part is thin.",
    1: "The central fact is wrong.",
}
_SCORES = {"good": (5, 5, 4), "partial": (3, 3, 2, 4), "wrong": (1, 1, 2)}   # a judge is not perfectly consistent
_OPENERS = ("", "Quick question: ", "Can you tell me: ", "I was wondering, ")


def _ask(opener: str, question: str) -> str:
    return opener + question[0].lower() + question[1:] if opener else question


def demo_turns(count: int = 300, seed: int = 7, now: float | None = None, days: float = 30.0) -> list[dict[str, Any]]:
    """``count`` turns (with ``score`` and ``feedback``, None when ungraded), oldest first."""
    rng = random.Random(seed)
    now = time.time() if now is None else now
    rubric = load_config("critic").get("rubric") or {}
    stamps = sorted(rng.sample(range(int(days * 86400)), count))
    drift_at = {int(f * count): k for k, f in enumerate(_DRIFT_AT) if len(PERSONA) <= int(f * count) < count}
    off_track = {i + j: j for i in drift_at for j in range(1, _OFF_TRACK + 1)}
    turns = []
    for i, offset in enumerate(stamps):
        question, good, partial, wrong = FACTS[i % len(FACTS)]
        quality = rng.choices(("good", "partial", "wrong"), weights=(6, 3, 2))[0]
        metadata: dict[str, Any] = {"intent": "fact", "model": "demo", "demo": True}
        if i < len(PERSONA):                          # the habits, stated first
            facet, question, good, _ = PERSONA[i]
            quality, metadata = "good", {**metadata, "intent": "self", "self": True, "facet": facet}
        elif i in drift_at:                           # a habit contradicted
            facet, question, _, good = PERSONA[drift_at[i] % len(PERSONA)]
            quality, metadata = "good", {**metadata, "intent": "self"}
        elif i in off_track:                          # then numbers go wrong
            question, good, partial, wrong = FACTS[_NUMERIC[(i * 7) % len(_NUMERIC)]]
            quality = "wrong"
        answer = {"good": good, "partial": partial, "wrong": wrong}[quality]
        reference = good if metadata["intent"] == "fact" else None
        score = rng.choice(_SCORES[quality])
        graded = rng.random() >= 1 / 7
        description = rubric.get(f"score{score}_description", "")
        turns.append({
            "query_id": f"demo-{i:04d}", "query": _ask(rng.choice(_OPENERS), question), "answer": answer,
            "reference": reference,
            "session_id": f"demo-session-{i // 15:02d}",
            "timestamp": now - days * 86400 + offset + rng.random(),
            "metadata": metadata,
            "score": score if graded else None,
            "feedback": f"{description} {_REMARKS[score]}".strip() if graded else None,
            "latency_s": round(rng.uniform(2.0, 11.0), 2),
        })
    return turns


@dataclass
class DemoPlan:
    """What the demo memory lacks, read in one pass over its ids (no model is loaded): the turns to write, the
    stored turns without the grade the demo gives them (a run stopped between a write and its grade), and the
    stored answers the critics never scored."""

    turns: list[dict[str, Any]]
    missing: list[dict[str, Any]]
    ungraded: list[dict[str, Any]]
    unscored: list[str]

    @property
    def present(self) -> list[str]:
        """Ids of the demo turns the memory holds, stored or quarantined."""
        gone = {t["query_id"] for t in self.missing}
        return [t["query_id"] for t in self.turns if t["query_id"] not in gone]

    def complete(self, with_trust: bool) -> bool:
        """Nothing to write, grade or (``with_trust``) score: a second ``make run`` loads no model for it."""
        return not self.missing and not self.ungraded and not (with_trust and self.unscored)


def plan_demo(memory: Any, count: int = 300, seed: int = 7, now: float | None = None) -> DemoPlan:
    turns = demo_turns(count, seed, now)
    stored = {e.id: e for e in memory.get([t["query_id"] for t in turns])}
    quarantined = {e.id for e in memory.list_quarantined()}
    return DemoPlan(turns, [t for t in turns if t["query_id"] not in stored and t["query_id"] not in quarantined],
                    [t for t in turns if t["query_id"] in stored and t["score"] is not None
                     and not stored[t["query_id"]].graded],
                    [i for i, e in stored.items() if not e.metadata.get("trust_settings")])


def _grades(turns: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"query_id": t["query_id"], "score": t["score"], "feedback": t["feedback"], "judge_model": "demo judge",
             "latency_s": t["latency_s"]} for t in turns if t["score"] is not None]


def build_demo(memory: Any, count: int = 300, seed: int = 7, now: float | None = None,
               hook: Any = None, trust: Any = None, on_progress: Callable[[int, int], None] | None = None) -> int:
    """Write the demo turns that are missing (neither engrams nor quarantined), a session at a time
    through ``hook`` (a :class:`CoherenceHook`; None writes without one) and with the critics' Trust
    Score of each answer (``trust``, an :class:`AnswerScorer`; None: without), and grade each session as it is
    written (so a run stopped half-way keeps its grades). Then every stored demo turn gets what it lacks
    (:func:`_complete_stored`). ``on_progress(present, total)`` follows the demo turns the memory holds, session
    by session. Returns how many turns were written."""
    from cns_core.agents.memory_agent import MemoryAgent
    from cns_core.agents.messages import TurnMessage

    plan = plan_demo(memory, count, seed, now)
    done = len(plan.present)
    if on_progress is not None:
        on_progress(done, count)
    if plan.missing:
        writer = MemoryAgent(memory=memory, pre_write_hook=hook.as_pre_write_hook(memory) if hook else None,
                             replay_on_start=False, trust=trust)
        sessions: dict[str, list[dict[str, Any]]] = {}
        for t in plan.missing:
            sessions.setdefault(t["session_id"], []).append(t)
        for batch in sessions.values():   # a session is one batch, as the agent would see it
            writer.write_turns([TurnMessage(query=t["query"], answer=t["answer"], session_id=t["session_id"],
                                            query_id=t["query_id"], metadata=t["metadata"], reference=t["reference"])
                                for t in batch],
                               {t["query_id"]: t["timestamp"] for t in batch})
            memory.apply_scores(_grades(batch))
            done += len(batch)
            if on_progress is not None:
                on_progress(done, count)
    _complete_stored(memory, count, seed, now, trust)
    return len(plan.missing)


def _complete_stored(memory: Any, count: int, seed: int, now: float | None, trust: Any) -> None:
    """The grade and (with ``trust``) the Trust Score under ``trust``'s settings of every stored demo turn that
    lacks one: a turn the hook quarantined and later released (it was not stored when its session was graded
    and scored), a run stopped between a write and its grade, an older demo memory without Trust Scores."""
    plan = plan_demo(memory, count, seed, now)
    if plan.ungraded:
        memory.apply_scores(_grades(plan.ungraded))
    if trust is not None and plan.present:
        from cns_core.judging.answer_trust import backfill

        backfill(memory, trust, ids=plan.present)


def demo_hook(memory: Any) -> Any:
    """The coherence hook the demo turns pass through: the configured one with its model, the
    pre-write budget lifted (see the module docstring) and the self search on; warmed up."""
    from dataclasses import replace

    from cns_core.coherence import CoherenceHook, CoherenceSettings, extract_propositions

    settings = CoherenceSettings.from_config()
    settings = replace(settings, retrieval=replace(settings.retrieval, self_search=True),
                       latency=replace(settings.latency, pre_write_ms=_NO_LIMIT_MS))
    hook = CoherenceHook(settings, memory=memory).warm_up()
    answers = sorted({a for f in FACTS for a in f[1:]} | {a for p in PERSONA for a in p[2:]})
    props = [p.text for a in answers for p in extract_propositions(a, "warm")]
    hook.embedder.encode(answers + props)   # one batch now; every chain then hits the embedder's cache
    return hook


def write_demo_memory(memory: Any, count: int = 300, *, with_hook: bool = True, with_trust: bool = True,
                      on_progress: Callable[[int, int], None] | None = None) -> list[str]:
    """:func:`build_demo` with the demo's coherence hook (:func:`demo_hook`) and the configured Trust scoring,
    each loaded here unless switched off; returns the lines that say what was done (``demo memory: ...``)."""
    started = time.perf_counter()
    hook = trust = None
    try:
        if with_hook:
            hook = demo_hook(memory)
        if with_trust:
            from cns_core.judging.answer_trust import AnswerScorer

            trust = AnswerScorer.configured()
        written = build_demo(memory, count, hook=hook, trust=trust, on_progress=on_progress)
    finally:
        if hook is not None:
            hook.close()
    where = memory.url or memory.path
    if written:
        from cns_core.agents.pending import memory_counts

        counts = memory_counts(memory)       # the pages' own count of the quarantine, released turns said
        through = (f", the NLI model judging {hook.counters['model_judged']} of {hook.counters['chains']} chains "
                   f"(log: {hook.log.path})" if hook is not None and hook.log is not None else "")
        lines = [f"demo memory: wrote {written} turns to {where}{through} in {time.perf_counter() - started:.0f} s "
                 f"({counts.engrams} engrams in total, {counts.quarantine_words()})"]
    else:
        lines = [f"demo memory: already present in {where} ({memory.count()} engrams); nothing to do"]
    if trust is not None:
        from cns_core.engrams import EngramFilters

        lines.append(f"demo memory: {memory.count(EngramFilters(min_trust=0.0))} engrams carry the critics' Trust "
                     f"Score, {memory.count(EngramFilters(disagreeing=trust.settings.rule))} of them disagree with "
                     "the judge")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cns_core.cli.demo_memory", description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=300, help="demo engrams (default 300)")
    parser.add_argument("--path", help="embedded Chroma folder (default: the configured memory)")
    parser.add_argument("--no-hook", action="store_true", help="write without the coherence hook")
    parser.add_argument("--no-trust", action="store_true", help="write without the critics' Trust Score")
    args = parser.parse_args(argv)
    if args.count < 1:
        parser.error("--count must be at least 1")
    from cns_core.cli.quiet import offline_and_quiet

    offline_and_quiet()
    from cns_core.memory import MemoryService, MemoryStoreError

    try:
        lines = write_demo_memory(MemoryService(path=args.path), args.count, with_hook=not args.no_hook,
                                  with_trust=not args.no_trust)
    except (MemoryStoreError, ValueError, OSError) as exc:
        print(f"demo memory: error: {exc}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
