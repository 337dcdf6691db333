"""One large SNO (a long debate map) scored by all five critics: seconds per critic.

Run: ``.venv/bin/python benchmarks/large_sno.py [--claims 5000 --evidence 5000 --relations 5000]``

The SNO is generated (seeded): claims are sentences built from a topic vocabulary, the
relations form a tree towards the hypothesis (one support or attack per claim) plus extra
edges, some of them closing support cycles, and the evidence items are two-sentence passages
that reuse the claims' words. Each critic runs alone, in this process, with the configured
backends warmed up first (model loading is not counted), then the whole pipeline runs once
(critics in parallel threads) with the 120 s target as its time limit.
"""

from __future__ import annotations

import argparse
import os
import random
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

_SUBJECTS = ["the city council", "public transport", "the new tax", "renewable energy", "school uniforms",
             "remote work", "the minimum wage", "nuclear power", "social media", "organic farming",
             "the museum", "cycling lanes", "the vaccine programme", "rent control", "tourism"]
_VERBS = ["reduces", "increases", "improves", "harms", "causes", "prevents", "supports", "weakens"]
_OBJECTS = ["air pollution", "local jobs", "household costs", "public health", "traffic accidents",
            "student grades", "energy prices", "crime rates", "housing supply", "tax revenue",
            "carbon emissions", "small businesses", "social trust", "water quality", "commuting time"]
_HEDGES = ["", "probably ", "clearly ", "in most cases ", "according to critics ", "always "]


def _sentence(rng: random.Random) -> str:
    return (f"{rng.choice(_SUBJECTS).capitalize()} {rng.choice(_HEDGES)}{rng.choice(_VERBS)} "
            f"{rng.choice(_OBJECTS)} in district {rng.randint(1, 400)}.")


def make_large_sno(claims: int = 5000, evidence: int = 5000, relations: int = 5000, cycles: int = 30,
                   seed: int = 13) -> dict:
    """SNO data (for ``SNO.model_validate``) of the given size; ``cycles`` extra support edges close loops."""
    rng = random.Random(seed)
    claim_rows = [{"id": f"c{i}", "text": _sentence(rng), "role": rng.choice(["proponent", "opponent"])}
                  for i in range(claims)]
    rels = []
    for i in range(1, claims):   # a tree: every claim argues about an earlier one
        rels.append({"source": f"c{i}", "target": f"c{rng.randrange(max(0, i - 50), i)}",
                     "kind": "support" if rng.random() < 0.7 else "attack"})
    edges = {(r["source"], r["target"]) for r in rels}
    extra, loops = relations - len(rels), 0
    while extra > 0:
        a, b = rng.randrange(claims), rng.randrange(claims)
        closing = loops < cycles
        source, target = (f"c{min(a, b)}", f"c{max(a, b)}") if closing else (f"c{max(a, b)}", f"c{min(a, b)}")
        if a == b or (source, target) in edges or (target, source) in edges:
            continue
        edges.add((source, target))
        rels.append({"source": source, "target": target, "kind": "support" if closing else
                     rng.choice(["support", "attack"])})
        loops += closing
        extra -= 1
    evidence_rows = [{"id": f"e{i}", "text": f"{_sentence(rng)} {_sentence(rng)}", "source": f"source-{i % 97}",
                      "validity": round(rng.uniform(0.4, 1.0), 2)} for i in range(evidence)]
    return {"id": f"large-{claims}", "title": f"A debate map of {claims} claims", "hypothesis": "c0",
            "claims": claim_rows, "relations": rels, "evidence": evidence_rows}


def main() -> None:
    from cns_core.critics import default_critics
    from cns_core.critics.base import CriticContext
    from cns_core.models import get_embedder, get_nli_backend
    from cns_core.models.nli import nli_settings
    from cns_core.pipeline import CriticPipeline
    from cns_core.sno import SNO

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--claims", type=int, default=5000)
    parser.add_argument("--evidence", type=int, default=5000)
    parser.add_argument("--relations", type=int, default=5000)
    parser.add_argument("--target", type=float, default=120.0, help="seconds the whole pipeline may take")
    parser.add_argument("--skip", nargs="*", default=[], metavar="CRITIC", help="critics left out (reported as such)")
    args = parser.parse_args()

    started = time.perf_counter()
    sno = SNO.model_validate(make_large_sno(args.claims, args.evidence, args.relations))
    build_s = time.perf_counter() - started
    nli, embedder = get_nli_backend(), get_embedder()
    nli.predict([("warm up", "warm up")])
    embedder.encode(["warm up"])
    population = embedder.encode([f"hypothesis {i}" for i in range(200)])
    context = CriticContext(population=population, nli=nli, embedder=embedder)
    print(f"SNO: {len(sno.claims)} claims, {len(sno.evidence)} evidence, {len(sno.relations)} relations "
          f"(built in {build_s:.1f} s); NLI backend {nli_settings()[0]}; {os.cpu_count()} CPU core(s)")

    print(f"\n{'critic':<10} {'seconds':>8}  score  note")
    total = 0.0
    critics = [c for c in default_critics() if c.name not in args.skip]
    for name in args.skip:
        print(f"{name:<10} {'skipped':>8}")
    for critic in critics:
        t0 = time.perf_counter()
        result = critic.evaluate(sno, context)
        seconds = time.perf_counter() - t0
        total += seconds
        note = ""
        if critic.name == "logic":
            note = f"{len(result.evidence.get('cycles', []))} cycles listed, capped: " \
                   f"{result.evidence.get('cycles_capped')}"
        print(f"{critic.name:<10} {seconds:>8.1f}  {result.score:.3f}  {note}", flush=True)
    print(f"{'sum':<10} {total:>8.1f}")

    pipeline = CriticPipeline(critics, timeout_s=args.target, cache_size=0)
    t0 = time.perf_counter()
    evaluation = pipeline.evaluate(sno, "default", context)
    wall = time.perf_counter() - t0
    state = "complete" if evaluation.complete else f"INCOMPLETE ({', '.join(evaluation.failed)} failed)"
    print(f"pipeline (critics in parallel threads): {wall:.1f} s wall, Trust Score "
          f"{evaluation.trust_score:.3f}, {state}; target {args.target:.0f} s")


if __name__ == "__main__":
    main()
