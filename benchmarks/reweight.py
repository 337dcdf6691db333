"""Re-weighting cached critic results for 1,000 SNOs: what a weight slider costs.

Setup (not the figure): 1,000 small synthetic SNOs are evaluated once through the real
``CriticPipeline`` with the default critics and offline backends, filling its cache.
Then every SNO is re-weighted under each named profile and a sweep of blends, two ways:

* ``Evaluation.reweighted(weights)``: the pure path the dashboard uses on results it holds;
* ``pipeline.evaluate(sno, weights)``: the same through the pipeline (content hash, cache
  look-up, no critic run: the script checks that no critic ran again).

Target (issue 3): under 1 ms per SNO. Run: ``python benchmarks/reweight.py [--snos 1000]``.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

TOPICS = ["exercise", "sleep", "coffee", "fasting", "air pollution", "screen time", "green space", "vitamin D"]
OUTCOMES = ["blood pressure", "memory", "longevity", "mood", "weight", "asthma"]


def build_snos(n: int, seed: int = 0):
    """``n`` distinct five-claim SNOs drawn from a small pool of sentences.

    Distinct combinations give distinct content hashes, while the texts repeat, so the
    embedding cache keeps the (untimed) setup short.
    """
    from cns_core.sno import SNO

    rng = random.Random(seed)
    hypotheses = [f"{t.capitalize()} improves {o}." for t in TOPICS for o in OUTCOMES]
    premises = [f"Study {k} linked {t} to better {o}." for k in range(1, 4) for t in TOPICS for o in OUTCOMES[:2]]
    findings = [f"In trial {k}, {t} improved {o}." for k in range(1, 3) for t in TOPICS for o in OUTCOMES[:3]]
    snos, seen = [], set()
    while len(snos) < n:
        pick = (rng.choice(hypotheses), tuple(rng.sample(premises, 4)), tuple(rng.sample(findings, 3)))
        if pick in seen:
            continue
        seen.add(pick)
        claims = [{"id": "h", "text": pick[0]}] + [{"id": f"c{k}", "text": t} for k, t in enumerate(pick[1], 1)]
        relations = [{"source": f"c{k}", "target": "h", "kind": "support"} for k in range(1, 5)]
        evidence = [{"id": f"e{k}", "text": t, "source": f"Journal {k}", "validity": 0.8}
                    for k, t in enumerate(pick[2], 1)]
        snos.append(SNO.model_validate({"id": f"sno-{len(snos)}", "hypothesis": "h", "claims": claims,
                                        "relations": relations, "evidence": evidence}))
    return snos


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--snos", type=int, default=1000)
    args = parser.parse_args(argv)

    from cns_core.pipeline import CriticPipeline
    from cns_core.scoring import blend, load_profiles

    snos = build_snos(args.snos)
    pipeline = CriticPipeline()
    start = time.perf_counter()
    evaluations = [pipeline.evaluate(s) for s in snos]
    setup = time.perf_counter() - start
    runs_before = {name: st.count for name, st in pipeline.statistics().items()}
    print(f"setup: {len(snos)} SNOs evaluated by the five critics in {setup:.1f} s "
          f"({1000 * setup / len(snos):.1f} ms per SNO, not part of the figure)")

    profiles = load_profiles()
    settings = list(profiles.values()) + [blend(profiles["exploration"], profiles["verification"], t / 10)
                                          for t in range(11)]

    start = time.perf_counter()
    total = 0.0
    for weights in settings:
        for ev in evaluations:
            total += ev.reweighted(weights).trust_score
    pure = (time.perf_counter() - start) / (len(settings) * len(evaluations))

    start = time.perf_counter()
    for weights in settings:
        for sno in snos:
            pipeline.evaluate(sno, weights)
    through = (time.perf_counter() - start) / (len(settings) * len(snos))

    reran = {n: st.count - runs_before[n] for n, st in pipeline.statistics().items() if st.count != runs_before[n]}
    if reran:
        print(f"error: critics ran again while re-weighting: {reran}", file=sys.stderr)
        return 1
    print(f"weight settings: {len(settings)} ({len(profiles)} profiles + 11 blends), no critic re-run")
    print(f"re-weighting cached results: {1000 * pure:.4f} ms per SNO (Evaluation.reweighted)")
    print(f"through pipeline.evaluate (cache hits): {1000 * through:.4f} ms per SNO")
    return 0


if __name__ == "__main__":
    sys.exit(main())
