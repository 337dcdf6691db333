"""Is a stored answer right? The answer verdict beside the verdict before it, today's scores and baselines, per set.

    .venv/bin/python benchmarks/answers.py                          # every set, 200 answers each
    .venv/bin/python benchmarks/answers.py --limit 0 --trust-limit 0   # every answer, no Trust columns
    .venv/bin/python benchmarks/answers.py --baseline-model DIR     # also the pipeline before the verifier
    .venv/bin/python benchmarks/answers.py --json out.json          # the figures as JSON as well
    .venv/bin/python benchmarks/answers.py --beside-model DIR       # another verifier's verdicts on each set too

The association probe (``benchmarks/data/association_probe.yaml``; :mod:`cns_core.training.association_probe`)
prints first: of its facts, how many hypotheses the verifier entails when they name the answer people
commonly give instead, an obscure name of the same kind, or the truth against a premise stating the popular
answer (none should be). With ``--beside-model`` (e.g. the verifier shipped before), the probe and every
set's verdict figures are printed for that model as well, on the same sample, with the change of AUC and its
paired 95% bootstrap interval (whether a set's loss is more than its sampling noise).

The verdict before this one is read from ``benchmarks/baselines/answers_before.json`` (the same command
run on the code before the change; the file says which commit) and printed beside today's.

Sets (``CNS_DATA_DIR``; a seeded sample of ``--limit`` answers each):

* **NQ301** (development set; the verifier's training left its questions out): answers to NQ questions,
  people's verdicts, gold answers joined by ``" | "``;
* **EVOUNA held out**: answers to the NQ / TriviaQA questions of question fold 0 (of 10), never trained on;
* **SAF unseen questions**: exam answers to questions the verifier never saw, against the teacher's
  reference (``Partially correct`` left out: neither right nor wrong);
* **swaps**: WiCE dev and SciFact held-out supported claims against their sources, and each with one
  injected error (``cns_core.training.claim_errors``), as answers without a question;
* **swaps dev** (the development set for claims against long sources): the same built from SciFact's
  training folds (the verifier trains on those claims as they are, never on their injected errors);
* **SQuALITY** (the development set for long answers): 300 answers about a story rated by three people
  against four references; right = a rating of 50 or more (also Spearman's rho with the rating);
* the held-out fold (0 of 5, by document or passage; :mod:`cns_core.training.long_answers`) of
  **SummEdits** and **BUMP** (summaries against their document: long evidence, minimal edits),
  **negation NLI** (a negated text or hypothesis) and **CondaQA** ("Yes." / "No." to a question on a
  passage edited around a negation).

Scores, each as an AUC for "the answer is right" and, where it decides, a balanced accuracy:

* **verdict**: p(right) of :func:`cns_core.judging.answer_verdict.judge_answers`; decides "correct";
* **Trust**: the Trust Score the memory stores (``AnswerScorer``: drafted SNO, critics, the verdict's cap);
  decides at 0.5 (``--trust-limit`` answers of each set: it drafts and runs every critic);
* **Trust before**: the pipeline before this verifier (``--baseline-model``, the old NLI folder), no cap;
* **cosine**: MiniLM cosine of the answer to the reference; **length**: the answer's words (AUC only).

For each set: the AUC of p(right) for "the answer is right", the balanced accuracy of "correct", and
the precision and recall of "correct" (of the right answers) and of "incorrect" (of the wrong ones), and
**red**: the share of right answers (supported claims) called incorrect. A red badge must be right, so
"incorrect" is chosen for precision and an unsure answer is "unverified"; models and thresholds are chosen
by red and the precision of "incorrect" first.

Speed: answers per second of the verdict per set (SummEdits and BUMP: claims against a long document).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from cns_core.cli.quiet import offline_and_quiet

offline_and_quiet()

import numpy as np  # noqa: E402

from cns_core.judging.answer_trust import AnswerItem, AnswerScorer  # noqa: E402
from cns_core.judging.answer_verdict import judge_answers  # noqa: E402
from cns_core.config import data_dir  # noqa: E402
from cns_core.models import get_embedder, get_nli_backend  # noqa: E402
from cns_core.training.answer_sets import answer_set, sample  # noqa: E402


BEFORE = Path(__file__).resolve().parent / "baselines" / "answers_before.json"
LONG_SETS = ("SQuALITY", "SummEdits", "BUMP", "negation", "CondaQA")   # no Trust columns: drafting them is slow
LONG_EVIDENCE = ("swaps", "swaps_dev", "squality", "summedits_held", "bump_held")   # long sources or answers: --long-limit


BENCHMARK_SETS = {   # display name -> cns_core.training.answer_sets name
    "NQ301 (dev)": "nq301", "EVOUNA held out": "evouna_held", "SAF unseen questions": "saf_unseen",
    "swaps (WiCE, SciFact)": "swaps", "swaps dev (SciFact train)": "swaps_dev", "SQuALITY (dev, long)": "squality", "SummEdits held out": "summedits_held",
    "BUMP held out": "bump_held", "negation NLI held out": "negation_held", "CondaQA held out": "condaqa_held"}


def answer_sets(root: Path, limit: int, wanted: list[str] | None = None,
                long_limit: int | None = None) -> dict[str, list[tuple[AnswerItem, bool]]]:
    """Set name -> (answer item, the person's verdict) rows (only the names starting with ``wanted``);
    ``long_limit`` samples the sets whose evidence or answers are long (slow on CPU), else ``limit``."""
    out = {}
    for name, key in BENCHMARK_SETS.items():
        if wanted and not any(name.lower().startswith(w.lower()) for w in wanted):
            continue
        try:
            turns = answer_set(key, long_limit if long_limit is not None and key in LONG_EVIDENCE else limit, root=root)
        except FileNotFoundError as exc:          # that corpus is not in this data folder
            print(f"{name}: left out ({exc})", file=sys.stderr)
            continue
        out[name] = [(AnswerItem(f"{key}-{i}", t.question, t.answer, t.reference, t.sources), t.right)
                     for i, t in enumerate(turns)]
    return out


def squality_ratings(root: Path, items: list[AnswerItem]) -> np.ndarray:
    """People's mean correctness rating of each SQuALITY item (by its question and answer)."""
    rating = {(t.question, t.answer): t.rating for t in answer_set("squality", 0, root=root)}
    return np.array([rating.get((i.query, i.answer), np.nan) for i in items], dtype=float)


def verdict_figures(verdicts: list, right: np.ndarray) -> dict[str, float]:
    """AUC of p(right), balanced accuracy of "correct", precision and recall of "correct" and "incorrect", and the
    share of right answers called incorrect (a red badge on a right answer: the error that costs a reader most)."""
    score = _scores(verdicts)
    said = np.array([v.verdict for v in verdicts])
    out = {"auc": auc(score, right), "ba": balanced(said == "correct", right),
           "right_called_incorrect": float((said[right] == "incorrect").mean()) if right.any() else float("nan")}
    for verdict, truth in (("correct", right), ("incorrect", ~right)):
        pick = said == verdict
        out[f"{verdict}_n"] = int(pick.sum())
        out[f"{verdict}_precision"] = float(truth[pick].mean()) if pick.any() else float("nan")
        out[f"{verdict}_recall"] = float((pick & truth).sum() / truth.sum()) if truth.any() else float("nan")
    return out


def _scores(verdicts: list) -> np.ndarray:
    """p(right) of each verdict, NaN where there is none (no answer, no evidence)."""
    return np.array([np.nan if v.score is None else v.score for v in verdicts])


def _cells(f: dict[str, float] | None) -> str:
    if not f:
        return f"{'-':>6} {'-':>6} | {'-':>11} | {'-':>13} | {'-':>5}"
    red = f.get("right_called_incorrect", float("nan"))
    return (f"{f['auc']:6.3f} {f['ba']:6.3f} | {f['correct_precision']:5.2f} {f['correct_recall']:5.2f} | "
            f"{f['incorrect_precision']:6.2f} {f['incorrect_recall']:6.2f} | {red:5.2f}")


def auc(score: np.ndarray, right: np.ndarray) -> float:
    """The probability a right answer outscores a wrong one (ties half), over the answers with a score: the
    rank-sum form of scikit-learn's ``roc_auc_score``, fast enough to resample a thousand times."""
    from cns_core.metrics import roc_auc

    ok = np.isfinite(score)
    return roc_auc(score[ok], right[ok], missing=float("nan"))


def auc_change(before: np.ndarray, after: np.ndarray, right: np.ndarray, rounds: int = 1000,
               seed: int = 0) -> tuple[float, float, float]:
    """The AUC of ``after`` less that of ``before`` on the same answers, with a paired 95% bootstrap interval
    (the same resampled answers scored both ways): whether a development set's loss outruns its sampling noise."""
    rng = np.random.default_rng(seed)
    changes = []
    for _ in range(rounds):
        pick = rng.integers(0, len(right), len(right))
        if right[pick].all() or not right[pick].any():
            continue
        changes.append(auc(after[pick], right[pick]) - auc(before[pick], right[pick]))
    low, high = np.nanpercentile(changes, [2.5, 97.5]) if changes else (float("nan"), float("nan"))
    return auc(after, right) - auc(before, right), float(low), float(high)


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
    parser.add_argument("--long-limit", type=int, help="answers sampled from the sets with long sources or answers "
                                                          "(swaps, SQuALITY, SummEdits, BUMP; default: --limit)")
    parser.add_argument("--trust-limit", type=int, default=40,
                        help="answers of each set given the Trust columns (slow: drafting and every critic; 0: none)")
    parser.add_argument("--baseline-model", help="the NLI model folder of the pipeline before the verifier")
    parser.add_argument("--sets", nargs="+", help="only the sets whose names start with these words (e.g. SAF swaps)")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    parser.add_argument("--before", default=str(BEFORE), help="the figures of the verdict before (JSON of --json)")
    parser.add_argument("--beside-model", help="another verifier folder: its probe and verdicts printed beside")
    args = parser.parse_args(argv)

    root = data_dir()
    if not (root / "answer_judgements").is_dir():
        print(f"no answer_judgements under {root} (set CNS_DATA_DIR)", file=sys.stderr)
        return 2
    nli, embedder = get_nli_backend(), get_embedder()
    beside = None
    if args.beside_model:
        from cns_core.models.nli import TransformersNLI

        beside = TransformersNLI(args.beside_model)
    probe = print_probe(nli, beside, args.beside_model)
    probe["verdicts"] = print_verdict_probe(nli, beside, embedder)
    probe["demo_facts"] = print_demo_facts(nli, beside, embedder)
    probe["completeness"] = print_completeness(nli, beside, embedder, root, args.limit)
    sets = answer_sets(root, args.limit, args.sets, args.long_limit)
    before = json.loads(Path(args.before).read_text(encoding="utf-8")) if Path(args.before).is_file() else {}
    if before and (before.get("limit"), before.get("long_limit")) != (args.limit, args.long_limit):
        print(f"verdict before: left out (measured on --limit {before.get('limit')} --long-limit "
              f"{before.get('long_limit')}, another sample than this run's)", file=sys.stderr)
        before = {}
    scorer = AnswerScorer() if args.trust_limit else None
    print(f"verdict before: {before.get('commit', 'none')}; columns: AUC of p(right), balanced accuracy of "
          f"'correct', precision and recall of 'correct' and of 'incorrect', red: the share of right answers "
          f"called incorrect\n")
    header = (f"{'set':24} {'n':>5} {'right':>5} {'':7}| {'AUC':>6} {'BA':>6} | {'correct P R':>11} | "
              f"{'incorrect P R':>13} | {'red':>5} | {'Trust AUC':>9} {'BA':>6} | {'before AUC':>10} {'BA':>6} | {'cosine':>6} | "
              f"{'length':>6} | {'ans/s':>5}")
    print(header)
    print("-" * len(header))
    figures: dict[str, dict] = {}
    for name, rows in sets.items():
        items = [item for item, _ in rows]
        right = np.array([r for _, r in rows], dtype=bool)
        started = time.perf_counter()
        verdicts = judge_answers(items, nli, embedder)
        speed = len(items) / max(time.perf_counter() - started, 1e-9)
        now = verdict_figures(verdicts, right)
        references = [i.reference or " ".join(i.sources) for i in items]
        vectors = np.asarray(embedder.encode([i.answer for i in items] + references), dtype=float)
        cosine = np.sum(vectors[:len(items)] * vectors[len(items):], axis=1)
        length = np.array([len(i.answer.split()) for i in items], dtype=float)
        trust_cells = before_cells = f"{'-':>9} {'-':>6}"
        if scorer is not None and not name.startswith(LONG_SETS):
            sub = sample(list(range(len(items))), args.trust_limit, seed=7)
            trust = np.array([scorer.score(items[i]).trust_score or np.nan for i in sub], dtype=float)
            now["trust_auc"], now["trust_ba"] = auc(trust, right[sub]), balanced(trust >= 0.5, right[sub])
            trust_cells = f"{now['trust_auc']:9.3f} {now['trust_ba']:6.3f}"
            if args.baseline_model:
                old = old_trust([items[i] for i in sub], args.baseline_model)
                before_cells = f"{auc(old, right[sub]):10.3f} {balanced(old >= 0.5, right[sub]):6.3f}"
        now.update(n=len(items), right=float(right.mean()), cosine_auc=auc(cosine, right),
                   length_auc=auc(length, right), answers_per_s=speed)
        if name.startswith("SQuALITY"):
            from scipy.stats import spearmanr

            score = _scores(verdicts)
            ratings = squality_ratings(root, items)
            ok = np.isfinite(score) & np.isfinite(ratings)
            now["spearman_rating"] = float(spearmanr(score[ok], ratings[ok]).statistic)
        figures[name] = now
        print(f"{name:24} {len(items):5d} {right.mean():5.2f} {'now':7}| {_cells(now)} | {trust_cells} | "
              f"{before_cells:>17} | {now['cosine_auc']:6.3f} | {now['length_auc']:6.3f} | {speed:5.1f}", flush=True)
        if beside is not None:
            beside_verdicts = judge_answers(items, beside, embedder)
            now["beside"] = verdict_figures(beside_verdicts, right)
            change, low, high = auc_change(_scores(verdicts), _scores(beside_verdicts), right)
            now["beside"].update(auc_change=change, auc_change_low=low, auc_change_high=high)
            print(f"{'':24} {'':5} {'':5} {'beside':7}| {_cells(now['beside'])} | AUC {change:+.3f} beside now, "
                  f"95% interval [{low:+.3f}, {high:+.3f}]", flush=True)
        if name in before.get("sets", {}):
            print(f"{'':24} {'':5} {'':5} {'before':7}| {_cells(before['sets'][name])} |", flush=True)
        if "spearman_rating" in now:
            print(f"{'':38}Spearman rho of p(right) with people's rating: {now['spearman_rating']:.3f}")
    if args.trust_limit:
        print(f"\nTrust columns on {args.trust_limit} answers of each short-answer set (seeded sample)")
    if args.json:
        Path(args.json).write_text(json.dumps({"commit": _commit(), "limit": args.limit, "long_limit": args.long_limit,
                                               "beside_model": args.beside_model, "probe": probe, "sets": figures},
                                              indent=1),
                                   encoding="utf-8")
    return 0


def print_probe(nli, beside, beside_name: str | None) -> dict[str, dict]:
    """The association probe for the configured verifier (and the one beside): entailed hypotheses per reading
    (for the control, the truth given to its question, the ones not entailed)."""
    from cns_core.training.association_probe import MUST_ENTAIL, load_probe, probe_figures

    facts = load_probe()
    models = {"now": nli} | ({"beside": beside} if beside is not None else {})
    out = {label: probe_figures(model.predict, facts) for label, model in models.items()}
    readings = list(out["now"])
    print(f"association probe ({len(facts)} facts; hypotheses entailed at p >= 0.5, none should be; "
          f"{', '.join(sorted(MUST_ENTAIL))}: the truth, all should be, and the count is of those missed):")
    print(f"  {'model':8} " + " ".join(f"{r:>13}" for r in readings))
    for label, figures in out.items():
        counts = [figures[r]['facts'] - figures[r]['entailed'] if r in MUST_ENTAIL else figures[r]['entailed']
                  for r in readings]
        print(f"  {label:8} " + " ".join(f"{c:>7} of {figures[r]['facts']:<2}" for c, r in zip(counts, readings)))
    if beside_name:
        print(f"  (beside: {beside_name})")
    print()
    return out


def print_verdict_probe(nli, beside, embedder) -> dict[str, dict]:
    """The memory's answer verdict on the probe's facts (the popular answer to each question against the fact
    in other words; the truth as the control): how many are called correct, incorrect, unverified."""
    from collections import Counter

    from cns_core.judging.answer_trust import AnswerItem
    from cns_core.judging.answer_verdict import judge_answers
    from cns_core.training.association_probe import load_probe, probe_answers

    cases = probe_answers(load_probe())
    if not cases:
        return {}
    models = {"now": nli} | ({"beside": beside} if beside is not None else {})
    out: dict[str, dict] = {}
    print("the memory's verdict on the probe (the answer to each fact's question, against the fact in other words):")
    for label, model in models.items():
        out[label] = {}
        for side, rows in cases.items():
            items = [AnswerItem(f"probe-{side}-{i}", q, a, r, ()) for i, (q, a, r) in enumerate(rows)]
            counts = Counter(v.verdict for v in judge_answers(items, model, embedder))
            out[label][side] = {v: counts.get(v, 0) for v in ("correct", "incorrect", "unverified")}
        pop, tru = out[label]["popular"], out[label]["truth"]
        print(f"  {label:8} popular answer: {pop['correct']} correct (none should be), {pop['incorrect']} incorrect, "
              f"{pop['unverified']} unverified of {len(cases['popular'])}; the truth: {tru['correct']} correct "
              f"(all should be)")
    print()
    return out


def print_demo_facts(nli, beside, embedder) -> dict[str, dict]:
    """The verdict on the demo memory's facts (cns_core.cli.demo_memory.FACTS) against their good answer: the good
    answer itself, the vague but true one ("An English novelist.") and the wrong one ("The yuan."). A development
    check of the two errors a reader sees first: a wrong answer read correct, a vague one read incorrect."""
    from collections import Counter

    from cns_core.cli.demo_memory import FACTS
    from cns_core.judging.answer_trust import AnswerItem
    from cns_core.judging.answer_verdict import judge_answers

    kinds = ("good", "vague", "wrong")
    items = [AnswerItem(f"demo-{i}-{kind}", question, answer, good, ())
             for i, (question, good, *answers) in enumerate(FACTS) for kind, answer in zip(kinds, (good, *answers))]
    models = {"now": nli} | ({"beside": beside} if beside is not None else {})
    out: dict[str, dict] = {}
    print(f"the demo memory's {len(FACTS)} facts against their good answer (verdict of the good, vague and wrong answer):")
    for label, model in models.items():
        verdicts = judge_answers(items, model, embedder)
        counts = Counter((item.query_id.rsplit("-", 1)[1], v.verdict) for item, v in zip(items, verdicts))
        incomplete = Counter(item.query_id.rsplit("-", 1)[1] for item, v in zip(items, verdicts) if v.complete is False)
        out[label] = {kind: {**{v: counts.get((kind, v), 0) for v in ("correct", "incorrect", "unverified")},
                             "true but incomplete": incomplete.get(kind, 0)} for kind in kinds}
        good, vague, wrong = (out[label][k] for k in kinds)
        print(f"  {label:8} good read correct {good['correct']} (of which true but incomplete "
              f"{good['true but incomplete']}, none should be); vague read incorrect {vague['incorrect']} (none "
              f"should be), correct {vague['correct']} (of which true but incomplete "
              f"{vague['true but incomplete']}); wrong read correct {wrong['correct']} (none should be), "
              f"incorrect {wrong['incorrect']}")
    print()
    return out


def print_completeness(nli, beside, embedder, root: Path, limit: int) -> dict[str, dict]:
    """Is a right answer complete? SAF's held-out exam answers (unseen answers and questions) that the teacher
    marked correct against those marked partially correct: the AUC of the answer's ``covers`` reading (the
    reference read the other way round against it) and, at ``verdict.complete_at``, the share of each called
    incomplete. A development check of "true but incomplete" (issue 67 item 4)."""
    import random

    from cns_core.judging.answer_verdict import VerdictSettings
    from cns_core.training.verifier_data import read_saf

    rows = []
    for split in ("unseen_answers", "unseen_questions"):
        answers, _ = read_saf(root / "answer_judgements" / "saf_en" / split)
        rows += [a for a in answers if a.correct is not False]
    rows = random.Random(7).sample(rows, min(limit, len(rows))) if limit else rows
    items = [AnswerItem(f"saf-{i}", a.question, a.answer, a.reference, ()) for i, a in enumerate(rows)]
    full = np.array([a.correct is True for a in rows], dtype=bool)
    at = VerdictSettings.from_config().complete_at
    models = {"now": nli} | ({"beside": beside} if beside is not None else {})
    out: dict[str, dict] = {}
    print(f"completeness: SAF held-out answers the teacher marked correct ({int(full.sum())}) against partially "
          f"correct ({int((~full).sum())}); covers at complete_at {at:g}")
    for label, model in models.items():
        covers = np.array([np.nan if v.readings is None or v.readings.covers is None else v.readings.covers
                           for v in judge_answers(items, model, embedder)])
        out[label] = {"auc": auc(covers, full), "correct_called_incomplete": float((covers[full] < at).mean()),
                      "partial_called_complete": float((covers[~full] >= at).mean())}
        print(f"  {label:8} AUC {out[label]['auc']:.3f}; correct called incomplete "
              f"{out[label]['correct_called_incomplete']:.0%}; partially correct called complete "
              f"{out[label]['partial_called_complete']:.0%}")
    print()
    return out


def _commit() -> str:
    import subprocess

    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=Path(__file__).resolve().parent, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


if __name__ == "__main__":
    raise SystemExit(main())
