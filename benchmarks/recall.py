"""Recall ranked by quality on real judged answers, the preference pairs it gives, and recall's speed.

    .venv/bin/python benchmarks/recall.py                         # quality: 100 EVOUNA held-out questions
    .venv/bin/python benchmarks/recall.py --questions 0           # every held-out question with 2+ answers
    .venv/bin/python benchmarks/recall.py --latency 100000        # also recall of 5 from 100,000 engrams
    .venv/bin/python benchmarks/recall.py --latency 100000 --served   # ... embedded and through a chroma server
    .venv/bin/python benchmarks/recall.py --json out.json         # the figures as JSON as well

**Quality.** EVOUNA's questions of held-out fold 0 (of 10; the verifier never trained on them), each with the
answers of several QA systems and LLMs, people's verdict on each (right or wrong against the gold answer).
Every answer is stored as an engram with its reference; the answer verdict (:mod:`cns_core.judging.answer_verdict`)
is its machine reading, as the MemoryAgent stores it. People's verdicts are the truth and are *not* stored
(with them stored, recall would only read them back). There is no judge grade (no LLM here) and no Trust Score.
For each question, recall is asked the question and its top answer counted right when it answers that
question and people judged it correct:

* **similarity**: the nearest engram by meaning (``search_episodic``), as the memory answered before;
* **quality, wrong included**: ``recall(include_wrong=True)``: re-ranked, nothing left out;
* **quality**: ``recall()``: re-ranked, answers whose verdict is incorrect left out; of the questions where it
  recalls something, and how many it leaves with nothing to recall (every answer read incorrect);
* **best possible**: the share of questions with at least one answer people judged correct.

Preference pairs (:mod:`cns_core.memory.preferences`): of the pairs drawn from the same memory, the share whose
chosen answer people judged correct, and whose rejected answer they judged incorrect.

**Speed.** ``--latency N``: a memory of N engrams built as ``benchmarks/memory_browse.py`` builds it (random
unit vectors, graded 1-5 or not), then ``recall(question, 5)`` for 20 questions (the real embedder embeds each);
median and slowest, best of 3 per question. ``--served`` also measures it through a ``chroma run`` server.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cns_core.cli.quiet import offline_and_quiet  # noqa: E402

offline_and_quiet()

from cns_core.engrams import question_key  # noqa: E402
from cns_core.judging.answer_trust import AnswerItem, evidence_metadata  # noqa: E402
from cns_core.judging.answer_verdict import judge_answers  # noqa: E402
from cns_core.memory import MemoryService  # noqa: E402
from cns_core.memory.preferences import preference_pairs  # noqa: E402
from cns_core.models import get_embedder, get_nli_backend  # noqa: E402
from cns_core.training.answer_sets import answer_set, sample  # noqa: E402


def judged_questions(limit: int, seed: int = 34) -> dict[str, list]:
    """Held-out EVOUNA questions with two or more answers: question key -> its judged turns."""
    groups: dict[str, list] = defaultdict(list)
    for turn in answer_set("evouna_held"):
        groups[question_key(turn.question)].append(turn)
    keys = sorted(k for k, turns in groups.items() if len(turns) >= 2)
    return {k: groups[k] for k in sample(keys, limit, seed)}


def store(memory: MemoryService, questions: dict[str, list]) -> dict[str, bool]:
    """Every answer as an engram with its verdict; returns id -> people's verdict (right)."""
    truth: dict[str, bool] = {}
    rows, items = [], []
    for qn, (key, turns) in enumerate(questions.items()):
        for an, turn in enumerate(turns):
            qid = f"q{qn:04d}-a{an}"
            truth[qid] = turn.right
            rows.append({"query": turn.question, "answer": turn.answer, "session_id": f"bench-{qn}", "query_id": qid,
                         "timestamp": 1_700_000_000 + len(rows), "metadata": evidence_metadata(turn.reference, ())})
            items.append(AnswerItem(qid, turn.question, turn.answer, turn.reference))
    memory.write_episodic_many(rows)
    start = time.perf_counter()
    verdicts = judge_answers(items, get_nli_backend(), get_embedder())
    print(f"  {len(items)} answers judged in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    memory.record_trust({item.query_id: {"trust_score": -1.0, **v.metadata()} for item, v in zip(items, verdicts)})
    return truth


def quality_figures(questions: dict[str, list]) -> dict[str, float]:
    folder = Path(tempfile.mkdtemp(prefix="cns-bench-recall-"))
    try:
        memory = MemoryService(path=folder, collection="engrams")
        truth = store(memory, questions)
        by_question = {key: {f"q{qn:04d}-a{an}" for an in range(len(turns))}
                       for qn, (key, turns) in enumerate(questions.items())}
        counts = defaultdict(int)
        for key, turns in questions.items():
            ours = by_question[key]

            def right(engram_id: str | None) -> bool:
                return engram_id in ours and truth[engram_id]

            question = turns[0].question
            nearest = memory.search_episodic(question, 1)
            counts["similarity"] += right(nearest[0].id if nearest else None)
            everything = memory.recall(question, 1, include_wrong=True)
            counts["quality_all"] += right(everything[0].engram.id if everything else None)
            kept = memory.recall(question, 1)
            if kept:
                counts["recalled"] += 1
                counts["quality"] += right(kept[0].engram.id)
            counts["possible"] += any(truth[i] for i in ours)
        engrams = memory.get(sorted(truth))
        pairs = preference_pairs(engrams, memory.recall_settings)
        memory.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    n = len(questions)
    return {"questions": n, "answers": len(truth), "share_right_answers": round(sum(truth.values()) / len(truth), 4),
            "top1_similarity": round(counts["similarity"] / n, 4),
            "top1_quality_wrong_included": round(counts["quality_all"] / n, 4),
            "top1_quality": round(counts["quality"] / max(1, counts["recalled"]), 4),
            "questions_recalled": counts["recalled"], "questions_nothing_recalled": n - counts["recalled"],
            "top1_quality_over_all_questions": round(counts["quality"] / n, 4),
            "best_possible": round(counts["possible"] / n, 4),
            "preference_pairs": len(pairs),
            "pairs_chosen_right": round(sum(truth[p.chosen_id] for p in pairs) / max(1, len(pairs)), 4),
            "pairs_chosen_right_rejected_wrong": round(
                sum(truth[p.chosen_id] and not truth[p.rejected_id] for p in pairs) / max(1, len(pairs)), 4)}


LATENCY_QUESTIONS = ["What is the capital of Australia?", "Who wrote Hamlet?", "How do volcanoes erupt?",
                     "When did the Roman empire fall?", "Why do tides happen?", "What is a prime number?",
                     "Who invented jazz?", "How do vaccines work?", "What is inside a black hole?",
                     "How do glaciers move?", "What does a compiler do?", "Why is Paris called the city of light?",
                     "How does photosynthesis work?", "What is the longest river?", "Who discovered penicillin?",
                     "How many moons does Jupiter have?", "What causes earthquakes?", "Who painted the Mona Lisa?",
                     "How fast is light?", "What is DNA made of?"]


def latency(memory: MemoryService) -> dict[str, float]:
    from memory_browse import best_of

    memory.recall(LATENCY_QUESTIONS[0], 5)          # the embedder's first load is not recall's cost
    times = [best_of(lambda q=q: memory.recall(q, 5))[0] for q in LATENCY_QUESTIONS]
    return {"median_ms": round(statistics.median(times) * 1000, 1), "slowest_ms": round(max(times) * 1000, 1)}


def latency_figures(n: int, served: bool) -> dict[str, dict[str, float]]:
    from memory_browse import build

    out = {}
    folder = Path(tempfile.mkdtemp(prefix="cns-bench-recall-speed-"))
    try:
        memory = MemoryService(path=folder / "embedded", collection="engrams")
        print(f"building {n:,} engrams (embedded) ...", file=sys.stderr)
        build(memory, n)
        out["embedded"] = latency(memory)
        memory.close()
        if served:
            out["served"] = served_latency(folder / "served", n)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return out


def served_latency(folder: Path, n: int) -> dict[str, float]:
    from local_servers import free_port  # tests/ helper: a free loopback port

    from memory_browse import build

    port = free_port()
    chroma = shutil.which("chroma") or str(Path(sys.executable).parent / "chroma")
    log = open(folder.parent / "chroma.log", "wb")
    proc = subprocess.Popen([chroma, "run", "--path", str(folder), "--host", "127.0.0.1", "--port", str(port)],
                            stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "ANONYMIZED_TELEMETRY": "False"})
    try:
        url = f"http://127.0.0.1:{port}"
        for _ in range(600):
            try:
                urllib.request.urlopen(f"{url}/api/v2/heartbeat", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        memory = MemoryService(url=url, collection="engrams")
        print(f"building {n:,} engrams (served at {url}) ...", file=sys.stderr)
        build(memory, n)
        return latency(memory)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=100, help="held-out questions sampled (0: all)")
    parser.add_argument("--latency", type=int, default=0, help="also time recall of 5 from a memory of this many")
    parser.add_argument("--served", action="store_true", help="time it through a chroma server as well")
    parser.add_argument("--no-quality", action="store_true", help="the speed alone")
    parser.add_argument("--json", help="write the figures to this file too")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    figures: dict = {}
    if not args.no_quality:
        figures["quality"] = quality_figures(judged_questions(args.questions))
        q = figures["quality"]
        print(f"EVOUNA held out: {q['questions']} questions, {q['answers']} answers "
              f"({q['share_right_answers']:.0%} judged right by people)")
        print(f"  top answer right: similarity {q['top1_similarity']:.3f} | quality, wrong included "
              f"{q['top1_quality_wrong_included']:.3f} | quality {q['top1_quality']:.3f} of "
              f"{q['questions_recalled']} recalled ({q['questions_nothing_recalled']} with nothing to recall) | "
              f"best possible {q['best_possible']:.3f}")
        print(f"  preference pairs: {q['preference_pairs']}, chosen right {q['pairs_chosen_right']:.3f}, "
              f"chosen right and rejected wrong {q['pairs_chosen_right_rejected_wrong']:.3f}")
    if args.latency:
        figures["latency"] = {"engrams": args.latency, **latency_figures(args.latency, args.served)}
        for where, t in figures["latency"].items():
            if isinstance(t, dict):
                print(f"recall of 5 from {args.latency:,} engrams, {where}: median {t['median_ms']} ms, "
                      f"slowest {t['slowest_ms']} ms")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
