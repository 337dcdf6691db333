"""Is a stored answer right? The answer verdict beside today's scores and two baselines, per set, in one run.

    .venv/bin/python benchmarks/answers.py                          # every set, 200 answers each
    .venv/bin/python benchmarks/answers.py --limit 0 --trust-limit 0   # every answer, no Trust columns
    .venv/bin/python benchmarks/answers.py --baseline-model DIR     # also the pipeline before the verifier

Sets (``CNS_DATA_DIR``; a seeded sample of ``--limit`` answers each):

* **NQ301** (development set; the verifier's training left its questions out): answers to NQ questions,
  people's verdicts, gold answers joined by ``" | "``;
* **EVOUNA held out**: answers to the NQ / TriviaQA questions of question fold 0 (of 10), never trained on;
* **SAF unseen questions**: exam answers to questions the verifier never saw, against the teacher's
  reference (``Partially correct`` left out: neither right nor wrong);
* **swaps**: WiCE dev and SciFact held-out supported claims against their sources, and each with one
  injected error (``cns_core.training.claim_errors``), as answers without a question.

Scores, each as an AUC for "the answer is right" and, where it decides, a balanced accuracy:

* **verdict**: p(right) of :func:`cns_core.agents.answer_verdict.judge_answers`; decides "correct";
* **Trust**: the Trust Score the memory stores (``AnswerScorer``: drafted SNO, critics, the verdict's cap);
  decides at 0.5 (``--trust-limit`` answers of each set: it drafts and runs every critic);
* **Trust before**: the pipeline before this verifier (``--baseline-model``, the old NLI folder), no cap;
* **cosine**: MiniLM cosine of the answer to the reference; **length**: the answer's words (AUC only).

Speed: answers per second of the verdict, and verifier pairs per second, on this machine.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from cns_core.cli.quiet import offline_and_quiet

offline_and_quiet()

import numpy as np  # noqa: E402

from cns_core.agents.answer_trust import AnswerItem, AnswerScorer  # noqa: E402
from cns_core.agents.answer_verdict import judge_answers  # noqa: E402
from cns_core.config import data_dir  # noqa: E402
from cns_core.models import get_embedder, get_nli_backend  # noqa: E402
from cns_core.training.verifier_data import read_evouna, read_nq301, read_saf  # noqa: E402


def _sample(rows: list, limit: int, seed: int = 34) -> list:
    if limit <= 0 or limit >= len(rows):
        return rows
    keep = np.sort(np.random.default_rng(seed).choice(len(rows), limit, replace=False))
    return [rows[i] for i in keep]


def answer_sets(root: Path, limit: int) -> dict[str, list[tuple[AnswerItem, bool]]]:
    """Set name -> (answer item, the person's verdict) rows."""
    judged = root / "answer_judgements"
    nq = read_nq301(judged / "nq301_human.tsv", judged / "nq301_gold.tsv")
    from cns_core.training.verifier_data import nq301_questions

    evouna, _ = read_evouna(judged / "evouna.jsonl", exclude=nq301_questions(judged / "nq301_human.tsv"),
                            folds=10, held_folds=(0,), held=True)
    saf, _ = read_saf(judged / "saf_en" / "unseen_questions")
    saf = [a for a in saf if a.correct is not None]

    def items(name: str, answers: list) -> list[tuple[AnswerItem, bool]]:
        return [(AnswerItem(f"{name}-{i}", a.question, a.answer, a.reference), bool(a.correct))
                for i, a in enumerate(_sample(answers, limit))]

    from cns_core.training.claim_errors import claim_error_set

    swaps = _sample(claim_error_set(), limit)
    return {"NQ301 (dev)": items("nq301", nq), "EVOUNA held out": items("evouna", evouna),
            "SAF unseen questions": items("saf", saf),
            "swaps (WiCE, SciFact)": [(AnswerItem(f"swap-{i}", "", c.claim, None, (c.source,)), c.label == "original")
                                      for i, c in enumerate(swaps)]}


def auc(score: np.ndarray, right: np.ndarray) -> float:
    from sklearn.metrics import roc_auc_score

    ok = np.isfinite(score)
    if len(set(right[ok])) < 2:
        return float("nan")
    return float(roc_auc_score(right[ok], score[ok]))


def balanced(decided: np.ndarray, right: np.ndarray) -> float:
    from sklearn.metrics import balanced_accuracy_score

    return float(balanced_accuracy_score(right, decided))


def old_trust(items: list[AnswerItem], model: str) -> np.ndarray:
    """The Trust Score as the memory made it before the verifier: the old NLI model, no verdict, no cap."""
    from cns_core.models.nli import TransformersNLI
    from cns_core.pipeline import CriticPipeline
    from cns_core.scoring import load_profiles
    from cns_core.text import draft_sno

    pipeline = CriticPipeline(nli=TransformersNLI(model))
    weights = dict(load_profiles()["verification"])
    out = []
    for item in items:
        draft = draft_sno(item.answer, sources=item.source_texts(), question=item.query or None,
                          sno_id=f"answer-{item.query_id}")
        out.append(pipeline.evaluate(draft.sno, weights).trust_score)
    return np.array(out, dtype=float)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=200, help="answers sampled from each set (0: all)")
    parser.add_argument("--trust-limit", type=int, default=40,
                        help="answers of each set given the Trust columns (slow: drafting and every critic; 0: none)")
    parser.add_argument("--baseline-model", help="the NLI model folder of the pipeline before the verifier")
    parser.add_argument("--sets", nargs="+", help="only the sets whose names start with these words (e.g. SAF swaps)")
    args = parser.parse_args(argv)

    root = data_dir()
    if not (root / "answer_judgements").is_dir():
        print(f"no answer_judgements under {root} (set CNS_DATA_DIR)", file=sys.stderr)
        return 2
    nli, embedder = get_nli_backend(), get_embedder()
    sets = {name: rows for name, rows in answer_sets(root, args.limit).items()
            if not args.sets or any(name.lower().startswith(word.lower()) for word in args.sets)}
    scorer = AnswerScorer() if args.trust_limit else None
    header = f"{'set':24} {'n':>5} {'right':>6} | {'verdict AUC':>11} {'BA':>6} | {'Trust AUC':>9} {'BA':>6} | " \
             f"{'before AUC':>10} {'BA':>6} | {'cosine AUC':>10} | {'length AUC':>10}"
    print(header)
    print("-" * len(header))
    answers_timed, seconds = 0, 0.0
    for name, rows in sets.items():
        items = [item for item, _ in rows]
        right = np.array([r for _, r in rows])
        started = time.perf_counter()
        verdicts = judge_answers(items, nli, embedder)
        seconds += time.perf_counter() - started
        answers_timed += len(items)
        score = np.array([np.nan if v.score is None else v.score for v in verdicts])
        correct = np.array([v.verdict == "correct" for v in verdicts])
        references = [i.reference or " ".join(i.sources) for i in items]
        vectors = np.asarray(embedder.encode([i.answer for i in items] + references), dtype=float)
        cosine = np.sum(vectors[:len(items)] * vectors[len(items):], axis=1)
        length = np.array([len(i.answer.split()) for i in items], dtype=float)
        trust_cells = before_cells = f"{'-':>9} {'-':>6}"
        if scorer is not None:
            sub = _sample(list(range(len(items))), args.trust_limit, seed=7)
            trust = np.array([scorer.score(items[i]).trust_score or np.nan for i in sub], dtype=float)
            trust_cells = f"{auc(trust, right[sub]):9.3f} {balanced(trust >= 0.5, right[sub]):6.3f}"
            if args.baseline_model:
                before = old_trust([items[i] for i in sub], args.baseline_model)
                before_cells = f"{auc(before, right[sub]):10.3f} {balanced(before >= 0.5, right[sub]):6.3f}"
        print(f"{name:24} {len(items):5d} {right.mean():6.2f} | {auc(score, right):11.3f} "
              f"{balanced(correct, right):6.3f} | {trust_cells} | {before_cells:>17} | {auc(cosine, right):10.3f} | "
              f"{auc(length, right):10.3f}", flush=True)
    print(f"\nverdict speed: {answers_timed / seconds:.1f} answers/s on this machine "
          f"({answers_timed} answers, every pair of a set in one batched verifier call)")
    if args.trust_limit:
        print(f"Trust columns on {args.trust_limit} answers of each set (seeded sample)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
