"""Does fitting the answer verdict to one person's verdicts help on answers they have not marked?

    .venv/bin/python benchmarks/calibration.py --limit 400      # score 400 NQ301 answers (cached), then fit
    .venv/bin/python benchmarks/calibration.py --limit 0        # every answer

NQ301's people's verdicts (``Acceptable?``) stand in for one user's annotations. p(answer right) comes
from :func:`cns_core.judging.answer_verdict.judge_answers` against the gold answers; on CPU that is slow
(about 1-3 answers a second), so scores are cached in ``--cache`` (JSONL, one row per answer, keyed by
question and answer) and a rerun only scores what is missing.

The split is by question (:func:`cns_core.training.verifier_data.question_fold`): the calibration is fitted
(:func:`cns_core.judging.verdict_calibration.fit_calibration`, itself cross-validated by question) on the
answers to half the questions, and balanced accuracy is compared on the other half: the configured
threshold against the fitted one. Fitting must not lower it.

2026-11-26, CPU, ``--limit 0`` (1,463 scored answers; 687 to fit, 776 held out): the fit was not adopted
(cross-validated BA 0.787 -> 0.779), held-out BA 0.812 -> 0.812; the unguarded best threshold (0.563)
would give 0.808. 26 answers made only of digits fail in the verifier's BM25 step and are left out.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # this checkout's cns_core, not an installed one

from cns_core.cli.quiet import offline_and_quiet  # noqa: E402

offline_and_quiet()

import numpy as np  # noqa: E402

from cns_core.config import data_dir, state_dir  # noqa: E402
from cns_core.training.answer_sets import sample  # noqa: E402
from cns_core.training.verifier_data import question_fold, question_key, read_nq301  # noqa: E402


def _key(question: str, answer: str) -> str:
    return f"{question_key(question)}\t{answer.strip()}"


def score_answers(answers: list, cache: Path, batch: int = 16) -> dict[str, float | None]:
    """p(right) of each answer, from the cache or :func:`judge_answers` (appended to the cache as it goes)."""
    from cns_core.judging.answer_trust import AnswerItem
    from cns_core.judging.answer_verdict import judge_answers
    from cns_core.models import get_embedder, get_nli_backend

    done: dict[str, float | None] = {}
    if cache.is_file():
        for line in cache.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                done[row["key"]] = row["score"]
    todo = [a for a in answers if _key(a.question, a.answer) not in done]
    if todo:
        nli, embedder = get_nli_backend(), get_embedder()
        cache.parent.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        with cache.open("a", encoding="utf-8") as out:
            for start in range(0, len(todo), batch):
                part = todo[start:start + batch]
                items = [AnswerItem(f"nq-{start + i}", a.question, a.answer, a.reference) for i, a in enumerate(part)]
                try:
                    scores = [v.score for v in judge_answers(items, nli, embedder)]
                except ValueError:              # one answer the verifier cannot take sinks the batch: go one by one
                    scores = [_one_score(item, nli, embedder) for item in items]
                for a, score in zip(part, scores):
                    done[_key(a.question, a.answer)] = score
                    out.write(json.dumps({"key": _key(a.question, a.answer), "score": score}) + "\n")
                out.flush()
                n = start + len(part)
                print(f"scored {n}/{len(todo)} ({n / (time.perf_counter() - started):.1f} answers/s)",
                      file=sys.stderr)
    return done


def _one_score(item, nli, embedder) -> float | None:
    """p(right) of one answer; None (left out, counted) where the verifier fails on it (e.g. a BM25 index
    of a reference made of stop words only)."""
    from cns_core.judging.answer_verdict import judge_answers

    try:
        return judge_answers([item], nli, embedder)[0].score
    except ValueError as exc:
        print(f"not scored: {item.query!r} / {item.answer!r}: {exc}", file=sys.stderr)
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=400, help="NQ301 answers, a seeded sample (0: all)")
    parser.add_argument("--cache", default=str(state_dir() / "benchmarks" / "nq301_verdict_scores.jsonl"),
                        help="JSONL cache of p(right) per answer")
    parser.add_argument("--score-only", action="store_true", help="only fill the cache")
    args = parser.parse_args(argv)

    judged = data_dir() / "answer_judgements"
    if not judged.is_dir():
        print(f"no answer_judgements under {data_dir()} (set CNS_DATA_DIR)", file=sys.stderr)
        return 2
    answers = sample(read_nq301(judged / "nq301_human.tsv", judged / "nq301_gold.tsv"), args.limit, seed=37)
    scores = score_answers(answers, Path(args.cache))
    if args.score_only:
        return 0
    from cns_core.judging.answer_verdict import VerdictSettings
    from cns_core.judging.verdict_calibration import _best_threshold, balanced_accuracy, fit_calibration, platt
    from cns_core.memory import memory_settings

    rows = [(a, scores[_key(a.question, a.answer)]) for a in answers]
    rows = [(a, s) for a, s in rows if s is not None]       # no answer / nothing to check: no score
    fit_half = [(a, s) for a, s in rows if question_fold(a.question, 2) == 0]
    test_half = [(a, s) for a, s in rows if question_fold(a.question, 2) == 1]
    calibration = fit_calibration([s for _, s in fit_half], [bool(a.correct) for a, _ in fit_half],
                                  [question_key(a.question) for a, _ in fit_half],
                                  base_threshold=VerdictSettings.from_config(memory_settings()["verdict"]).correct_at)
    score = np.array([s for _, s in test_half])
    right = np.array([bool(a.correct) for a, _ in test_half])
    before = balanced_accuracy(score >= calibration.base_threshold, right)
    shown = platt(score, *calibration.p_map) if calibration.p_map else score     # p(right) as the pages show it
    after = balanced_accuracy(shown >= calibration.threshold, right)
    print(f"NQ301: {len(rows)} scored answers ({len(fit_half)} to fit, {len(test_half)} held out, split by question)")
    print(f"fitting half: {calibration.describe()}")
    print(f"held-out balanced accuracy: {before:.3f} -> {after:.3f} ({after - before:+.3f})"
          + ("" if calibration.adopted else " (the fit was not adopted: it did not help in cross-validation)"))
    raw = _best_threshold(np.array([s for _, s in fit_half]), np.array([bool(a.correct) for a, _ in fit_half]),
                          calibration.base_threshold)
    print(f"for comparison, the best threshold on the fitting half without that check: {raw:.3f}, held-out "
          f"balanced accuracy {balanced_accuracy(score >= raw, right):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
