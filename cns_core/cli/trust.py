"""``cns trust-backfill``: the critics' Trust Score for answers already in memory.

The MemoryAgent scores every answer it writes (:mod:`cns_core.judging.answer_trust`); this
command does the same for turns stored before, or while scoring was off. Idempotent: an
engram already scored under the same settings (weights, critic settings, models) is skipped.
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["register", "run_trust_backfill"]


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("trust-backfill", help="score stored answers with the critics (Trust Score beside "
                                                     "the judge's grade)")
    p.add_argument("--path", help="embedded Chroma folder (default: the configured memory)")
    p.add_argument("--limit", type=int, help="score at most this many engrams")
    p.add_argument("--force", action="store_true", help="score again engrams already scored under these settings")
    p.set_defaults(func=run_trust_backfill)


def run_trust_backfill(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from cns_core.judging.answer_trust import AnswerScorer, TrustSettings, backfill
    from cns_core.memory import MemoryService

    if args.limit is not None and args.limit < 1:
        raise ValueError(f"--limit must be at least 1 (got {args.limit})")
    memory = MemoryService(path=args.path, create=False)     # scores go on stored answers: a typo is an error
    scorer = AnswerScorer(TrustSettings.from_config())
    with tqdm(desc="scoring answers", unit="answer", file=sys.stderr) as bar:
        def progress(done: int, todo: int) -> None:
            bar.total = todo
            bar.update(done - bar.n)

        report = backfill(memory, scorer, force=args.force, limit=args.limit, on_progress=progress)
    print(f"trust-backfill: {report.scored} scored, {report.abstained} with nothing to judge, "
          f"{report.failed} failed (trust_error says why), "
          f"{report.skipped} already scored under these settings, of {report.total} engrams in "
          f"{memory.url or memory.path} ({report.elapsed_s:.0f} s; profile {scorer.settings.profile}, "
          f"settings {scorer.fingerprint})")
    return 0
