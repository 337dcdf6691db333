"""Where should a contradicted detail make a whole answer incorrect? The verdict's thresholds on development sets.

    .venv/bin/python benchmarks/verdict_thresholds.py                       # 200 answers a set, 60 of the long sets
    .venv/bin/python benchmarks/verdict_thresholds.py --limit 300 --long-limit 100

A long answer with one wrong detail is a wrong answer: the verdict makes it "incorrect" when a detail
sentence that nothing supports is contradicted at ``verdict.detail_contradicted_at`` or more
(``config/memory.yaml``; :mod:`cns_core.judging.answer_verdict`). This sweeps that threshold, and
``wrong_at``, on the **development** sets only, judging each answer once and deciding it again from its
readings for every setting: NQ301 (short answers), SQuALITY (long answers against four references) and the
trainable folds (1-4) of BUMP and SummEdits (summaries with one edited detail, against their document).
The benchmark's held-out folds are never read here. For each setting: precision and recall of "incorrect"
and of "correct" per set; a red badge must be right, so a setting is acceptable only where "incorrect"
keeps a precision of at least ``--precision`` (0.85) on every set where it fires.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace

from cns_core.cli.quiet import offline_and_quiet

offline_and_quiet()

import numpy as np  # noqa: E402

from cns_core.judging.answer_trust import AnswerItem  # noqa: E402
from cns_core.judging.answer_verdict import VerdictSettings, WrongDetail, decide, judge_answers  # noqa: E402
from cns_core.config import data_dir  # noqa: E402
from cns_core.models import get_embedder, get_nli_backend  # noqa: E402
from cns_core.training.answer_sets import answer_set  # noqa: E402

DEV_SETS = {"NQ301 (dev)": "nq301", "SQuALITY (dev, long)": "squality", "BUMP folds 1-4": "bump_train",
            "SummEdits folds 1-4": "summedits_train"}
LONG = ("squality", "bump_train", "summedits_train")
DETAIL_AT = (1.0, 0.98, 0.95, 0.9, 0.85, 0.8, 0.7, 0.6)   # 1.0: a contradicted detail never decides
WRONG_AT = (0.1, 0.2, 0.3)


def _redecide(verdict, answer: str, settings: VerdictSettings, head):
    """The verdict again under ``settings``, the wrong detail chosen anew from the checked details."""
    readings = verdict.readings
    if readings is None or readings.kind != "judged":
        return verdict
    wrong = max((c for c in verdict.details if c.p_contradicted >= settings.detail_contradicted_at
                 and c.best_support < settings.support_below), key=lambda c: c.p_contradicted, default=None)
    readings = replace(readings, wrong_detail=None if wrong is None else
                       WrongDetail(wrong.sentence, wrong.passage, round(wrong.p_contradicted, 6)))
    return decide(readings, answer, settings, head)


def _figures(said: np.ndarray, right: np.ndarray) -> dict[str, float]:
    out = {}
    for name, truth in (("incorrect", ~right), ("correct", right)):
        pick = said == name
        out[f"{name}_n"] = int(pick.sum())
        out[f"{name}_p"] = float(truth[pick].mean()) if pick.any() else float("nan")
        out[f"{name}_r"] = float((pick & truth).sum() / max(truth.sum(), 1))
    return out


def _auc(verdicts, right: np.ndarray) -> float:
    """AUC of p(right) for "the answer is right" (answers without a p(right), such as refusals, left out)."""
    from cns_core.metrics import roc_auc

    kept = [(v.score, r) for v, r in zip(verdicts, right) if v.score is not None]
    return roc_auc([s for s, _ in kept], [r for _, r in kept], missing=float("nan"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=200, help="answers sampled from each short-answer set")
    parser.add_argument("--long-limit", type=int, default=60, help="answers sampled from each long set")
    parser.add_argument("--precision", type=float, default=0.85, help="the least precision of 'incorrect'")
    args = parser.parse_args(argv)
    root = data_dir()
    nli, embedder = get_nli_backend(), get_embedder()
    from cns_core.config import config_mapping
    from cns_core.memory import memory_settings

    base = VerdictSettings.from_config(config_mapping(memory_settings(), "verdict", file="memory.yaml"))  # no calibration
    head = base.verdict_head()
    judged: dict[str, tuple[list, list[str], np.ndarray]] = {}
    for name, key in DEV_SETS.items():
        try:
            turns = answer_set(key, args.long_limit if key in LONG else args.limit, root=root)
        except FileNotFoundError as exc:
            print(f"{name}: left out ({exc})", file=sys.stderr)
            continue
        items = [AnswerItem(f"{key}-{i}", t.question, t.answer, t.reference, t.sources) for i, t in enumerate(turns)]
        # judged once with the loosest detail threshold, so every detail check is kept on the verdict
        verdicts = judge_answers(items, nli, embedder, replace(base, detail_contradicted_at=min(DETAIL_AT)))
        judged[name] = (verdicts, [i.answer for i in items], np.array([t.right for t in turns], dtype=bool))
        print(f"{name}: {len(items)} answers judged", file=sys.stderr, flush=True)
    print(f"AUC of p(right), 'incorrect' P/R and 'correct' P/R per development set; * = 'incorrect' precision below "
          f"{args.precision} somewhere\n")
    print(f"{'detail_at':>9} {'wrong_at':>8} | " + " | ".join(f"{n[:27]:^29}" for n in judged))
    for detail_at in DETAIL_AT:
        for wrong_at in WRONG_AT:
            settings = replace(base, detail_contradicted_at=detail_at, wrong_at=wrong_at)
            cells, low = [], False
            for name, (verdicts, answers, right) in judged.items():
                again = [_redecide(v, a, settings, head) for v, a in zip(verdicts, answers)]
                said = np.array([v.verdict for v in again])
                f = _figures(said, right)
                low |= f["incorrect_n"] > 0 and f["incorrect_p"] < args.precision
                cells.append(f"{_auc(again, right):5.3f} {f['incorrect_p']:4.2f} {f['incorrect_r']:4.2f} "
                             f"{f['correct_p']:4.2f} {f['correct_r']:4.2f}")
            print(f"{detail_at:9.2f} {wrong_at:8.2f} | " + " | ".join(f"{c:^29}" for c in cells) + (" *" if low else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
