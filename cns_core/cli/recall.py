"""``cns recall QUESTION``: the stored answers a generator would recall, ranked by how right they were judged.

The nearest answers by meaning, re-ranked by a person's verdict, the answer verdict and its p(right), the
judge's grade and the Trust Score (:mod:`cns_core.memory.recall`); each with the reasons of its place.
Answers judged incorrect and quarantined turns are left out unless ``--include-wrong`` (then marked).
"""

from __future__ import annotations

import argparse
import json

__all__ = ["register", "run_recall"]


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("recall", help="the stored answers nearest a question, ranked by how right they "
                                             "were judged, with the reasons")
    p.add_argument("query", help="the question (at most recall.max_query_chars characters)")
    p.add_argument("--k", type=int, default=5, help="how many answers (default 5; at most recall.max_k)")
    p.add_argument("--json", action="store_true", help="print the results as a JSON list")
    p.add_argument("--include-wrong", action="store_true",
                   help="also answers judged incorrect and quarantined turns, marked")
    p.add_argument("--path", help="embedded Chroma folder (default: the configured memory)")
    p.set_defaults(func=run_recall)


def run_recall(args: argparse.Namespace) -> int:
    from cns_core.bounds import excerpt, printable
    from cns_core.memory import MemoryService
    from cns_core.memory.recall import check_recall_request, recall_settings

    check_recall_request(args.query, args.k, recall_settings())      # before the memory opens: a typo costs nothing
    memory = MemoryService(path=args.path, create=False)             # recall reads; it never creates a store
    results = memory.recall(args.query, args.k, include_wrong=args.include_wrong)
    if args.json:
        print(json.dumps([r.as_dict() for r in results], ensure_ascii=False, indent=1))
        return 0
    if not results:
        print("recall: no stored answer is near this question" + ("" if args.include_wrong else
              " (or every near one was judged incorrect: --include-wrong shows them)"))
        return 0
    for r in results:
        print(f"{r.rank}. [score {r.score:.2f} · quality {r.quality.value:.2f}] {printable(excerpt(r.engram.query, 120))}")
        print(f"   {printable(excerpt(r.engram.answer, 300))}")
        print(f"   why: {printable('; '.join(r.quality.reasons))}; similarity {r.similarity:.2f}")
        if r.excluded:
            print(f"   left out unless asked: {r.excluded}")
    return 0
