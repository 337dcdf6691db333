"""``cns grade --pair``: two answers to one question compared by the judge, the winner and why printed.

``cns grade --pair --question Q --a A --b B [--reference R] [--rubric CRITERIA]`` asks the configured judge
(Prometheus' relative grading, :mod:`cns_core.agents.compare`) and, when it names a winner, keeps the
comparison in the memory so that preference pairs choose it (``--no-store``: print only). ``--a-id`` and
``--b-id`` compare two stored answers instead. Exit 0 with a winner, 1 without (the judge failed, chose by
position, or answered with a single score: the reason is printed).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

__all__ = ["add_pair_arguments", "run_grade_pair"]


def add_pair_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--pair", action="store_true",
                   help="compare two answers to the question (--a and --b, or --a-id and --b-id) and print which "
                        "the judge prefers and why")
    p.add_argument("--a", help="with --pair: answer A")
    p.add_argument("--b", help="with --pair: answer B")
    p.add_argument("--a-id", help="with --pair: the engram id of a stored answer, as answer A")
    p.add_argument("--b-id", help="with --pair: the engram id of a stored answer, as answer B")
    p.add_argument("--rubric", help="with --pair: the criterion to compare by (default: the rubric's criteria in "
                                    "config/critic.yaml)")
    p.add_argument("--no-store", action="store_true", help="with --pair: do not keep the comparison in the memory")
    p.add_argument("--path", help="with --pair: embedded Chroma folder (default: the configured memory)")


def _answers(args: argparse.Namespace, memory_of) -> tuple[str, str, str, str | None, str | None]:
    """(question, answer A, answer B, id A, id B) from the texts or the stored engrams named."""
    by_id = args.a_id is not None or args.b_id is not None
    by_text = args.a is not None or args.b is not None
    if by_id and by_text:
        raise ValueError("--a-id/--b-id: give two texts (--a, --b) or two stored answers (--a-id, --b-id), not both")
    if by_id:
        if args.a_id is None or args.b_id is None:
            raise ValueError(f"--{'a' if args.a_id is None else 'b'}-id: required with the other id")
        from cns_core.memory import UnknownEngramError

        found = {e.id: e for e in memory_of().get([args.a_id, args.b_id])}
        missing = [i for i in (args.a_id, args.b_id) if i not in found]
        if missing:
            raise UnknownEngramError(f"id: no engram has the id {', '.join(map(repr, missing))}")
        a, b = found[args.a_id], found[args.b_id]
        return args.query or a.query, a.answer, b.answer, a.id, b.id
    for flag, value in (("--question", args.query), ("--a", args.a), ("--b", args.b)):
        if value is None:
            raise ValueError(f"{flag}: required with --pair (or --a-id and --b-id for two stored answers)")
    return args.query, args.a, args.b, None, None


def run_grade_pair(args: argparse.Namespace) -> int:
    from cns_core.agents.compare import check_pair, compare_answers, keep_comparison
    from cns_core.agents.prometheus import critic_settings
    from cns_core.bounds import printable, printable_json

    memory = None

    def memory_of():
        nonlocal memory
        if memory is None:
            from cns_core.memory import MemoryService

            memory = MemoryService(path=args.path)
        return memory

    question, answer_a, answer_b, a_id, b_id = _answers(args, memory_of)
    check_pair(question, answer_a, answer_b, args.reference, args.rubric)     # before the judge or the memory
    settings = critic_settings()
    if args.timeout is not None:
        if not args.timeout > 0:
            raise ValueError(f"--timeout: {args.timeout:g} must be more than 0 seconds")
        settings = dataclasses.replace(settings, timeout=args.timeout)
    comparison = compare_answers(question, answer_a, answer_b, settings, reference=args.reference, rubric=args.rubric)
    kept, kept_error = None, None
    if comparison.ok and not args.no_store:
        try:
            kept = keep_comparison(memory_of(), question, answer_a, answer_b, comparison, a_id=a_id, b_id=b_id,
                                   session_id=args.session)
        except (ValueError, OSError, RuntimeError) as exc:
            kept_error = str(exc)
    if args.json:
        out = comparison.as_dict()
        out["kept"] = dataclasses.asdict(kept) if kept else None
        out["kept_error"] = kept_error
        print(printable_json(out, indent=2))
    elif comparison.ok:
        print(f"winner: answer {comparison.winner}   judge: {printable(comparison.judge_model)}   "
              f"{comparison.latency_s:.1f} s")
        print(f"why: {printable(comparison.feedback, keep=chr(10))}")
        if kept:
            now = f" (stored now: {', '.join(kept.stored_now)})" if kept.stored_now else ""
            print(f"kept in the memory: answer A {kept.a_id}, answer B {kept.b_id}{now}")
    if not comparison.ok:
        print(f"cns grade: error: the judge named no winner: {printable(comparison.error)}", file=sys.stderr)
        return 1
    if kept_error:
        print(f"cns grade: error: the comparison was not kept in the memory: {printable(kept_error)}", file=sys.stderr)
        return 1
    return 0
