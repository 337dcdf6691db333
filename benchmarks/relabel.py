"""How fast a calibration re-labels the memory: fit the verdict to a person's verdicts, decide every stored
verdict again from the readings kept on its engram (no model), then revert and do it again.

    make demo-memory && .venv/bin/python benchmarks/relabel.py          # the demo memory of .cns (or CNS_STATE_DIR)
    .venv/bin/python benchmarks/relabel.py --embedded                   # the embedded client instead of a server
    .venv/bin/python benchmarks/relabel.py --with-model                 # also the verifier re-judging them all (slow)

It works on a copy of the memory folder (the original is never touched), served by the same Chroma server
``cns run`` starts (``python -m cns_core.cli.memory_server``), as under ``make run``. The person is played by
the demo's own answers: a seeded 40 (``--marked``) of the fact answers marked correct (the demo's good answer) or incorrect
(its vague or its wrong one: a strict reader). Printed: the fit, the relabelling (answers, seconds, how many changed), the check that one
p(right) as the badges show it reads one verdict, and the revert. Each timing is one run.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))   # this checkout's cns_core, not an installed one
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")


def _serve(folder: Path) -> subprocess.Popen:
    """The memory server ``cns run`` starts, on ``folder``, with this process as its supervisor."""
    from cns_core.cli.run import free_port
    from cns_core.memory.access import server_answers, write_server_record

    port = free_port("127.0.0.1")
    proc = subprocess.Popen([sys.executable, "-m", "cns_core.cli.memory_server", "--path", str(folder),
                             "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    write_server_record(folder, "127.0.0.1", port, proc.pid)
    deadline = time.monotonic() + 60
    while not server_answers("127.0.0.1", port):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the memory server on {folder} did not start")
        time.sleep(0.1)
    return proc


def _mark(memory, count: int) -> int:
    """The person's verdicts: a seeded sample of fact answers, right when the demo's good answer was given."""
    from cns_core.cli.demo_memory import FACTS
    from cns_core.engrams import question_key
    from cns_core.people.annotations import Annotation

    answers = {question_key(q): (good, partial, wrong) for q, good, partial, wrong in FACTS}
    marks = []
    for engram in memory.get(memory.ids_matching({"trust_score": {"$gte": 0.0}}, None)):
        key = next((k for k in answers if k in question_key(engram.query)), None)
        if key is not None and engram.answer in answers[key]:      # a strict reader: a vague answer is not right
            marks.append(Annotation(engram.id, "correct" if engram.answer == answers[key][0] else "incorrect",
                                    who="bench"))
    random.Random(11).shuffle(marks)
    memory.record_annotations(marks[:count])
    return len(marks[:count])


def _one_verdict_per_shown_p_right(memory) -> int:
    """How many shown p(right) values read more than one correct/not-correct verdict (0 expected)."""
    from cns_core.critics.grounding_verdict import shown_probability

    seen: dict[float, set[bool]] = {}
    for engram in memory.get(memory.ids_matching({"trust_score": {"$gte": 0.0}}, None)):
        score = engram.metadata.get("trust_verdict_score")
        if isinstance(score, (int, float)):
            seen.setdefault(shown_probability(score), set()).add(engram.answer_verdict == "correct")
    return sum(len(v) > 1 for v in seen.values())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--state", help="the state folder whose memory to copy (default: CNS_STATE_DIR or .cns)")
    parser.add_argument("--marked", type=int, default=40, help="answers the person marks (default 40)")
    parser.add_argument("--embedded", action="store_true", help="open the copy embedded instead of serving it")
    parser.add_argument("--with-model", action="store_true", help="also time the verifier re-judging every answer")
    args = parser.parse_args(argv)
    from cns_core.config import state_dir

    source = Path(args.state) if args.state else state_dir(create=False)
    if not (source / "chroma" / "chroma.sqlite3").is_file():
        print(f"no memory under {source} (run `make demo-memory`, or give --state)", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="cns-relabel-"))
    os.environ["CNS_STATE_DIR"] = str(work)          # the calibration versions go here, not to the real state
    folder = work / "chroma"
    shutil.copytree(source / "chroma", folder, ignore=shutil.ignore_patterns("cns-*"))
    server = None if args.embedded else _serve(folder)
    try:
        from cns_core.judging.answer_trust import AnswerScorer, rejudge, relabel
        from cns_core.memory import MemoryService
        from cns_core.people.calibrate import annotated_engrams, calibrate_message, relabel_words, revert_message

        memory = MemoryService(path=folder)
        how = "served (HttpClient)" if memory.served else "embedded"
        print(f"memory: {memory.count()} engrams, {how}; {_mark(memory, args.marked)} marked by the person")
        if relabel(memory).needs_model:
            print("some answers carry no readings (an older memory): run the demo again (make demo-memory on a "
                  "fresh state) to time the relabelling alone", file=sys.stderr)
            return 2
        started = time.perf_counter()
        said = calibrate_message(annotated_engrams(memory))
        fit_s = time.perf_counter() - started
        report = relabel(memory)
        print(f"fit: {fit_s:.2f} s; {said}")
        print(f"relabel: {report.relabelled} answers in {report.elapsed_s:.2f} s, {report.changed} changed; "
              f"fit + relabel {fit_s + report.elapsed_s:.2f} s")
        print(f"shown p(right) values reading two verdicts: {_one_verdict_per_shown_p_right(memory)}")
        said = revert_message()
        report = relabel(memory)
        print(f"revert: {said} {relabel_words(report)}")
        if args.with_model:
            done = rejudge(memory, AnswerScorer())
            print(f"for comparison, the verifier re-judging them: {done.scored} answers in {done.elapsed_s:.0f} s")
        memory.close()
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
