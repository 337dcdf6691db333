"""Latency of the coherence hook per chain of 10 propositions, retrieval over 10,000 engrams.

    .venv/bin/python benchmarks/coherence.py                 # builds a 10k-engram store in a temp folder
    .venv/bin/python benchmarks/coherence.py --store .cns/bench-chroma   # build once, reuse next time
    .venv/bin/python benchmarks/coherence.py --sizes 3 5 10 20 --threads 2 --store .cns/bench-chroma

``--sizes`` prints the pre-write latency table instead: for chains of each size, the model pass
(stage 3 alone: the NLI call over the chosen pairs) and the whole hook, p50 / p95, with the
shipped pre-write settings (``latency.max_model_pairs`` pairs at most, pair cache on) side by
side with every pair of m per proposition and no cache (the hook before the pair limit), against
the 250 ms pre-write budget (lifted while measuring, so that no chain silently drops its model
pass). The hook's time includes embedding the chain. Chains are fresh text, so the pair cache
cannot help them; load average is printed
before and after (on a shared machine, re-run it when the machine is quiet).

Everything runs in one process, side by side, on fresh chains (texts the embedder has
not seen, as a new thought chain would be):

* ``heuristics``: stages 0-9 without the model pass, evidence from the real ChromaDB
  store through MemoryService (the engram path of production);
* ``model``: the same with the NLI model pass (the configured backend, offline lexical
  by default) over the top-m evidence, one batched call per chain;
* ``heuristics, pre-embedded`` / ``model, pre-embedded``: the same chains once their
  propositions are embedded (upstream selection usually has the vectors already), i.e.
  the hook's own cost without the sentence encoder;
* ``model, pre-embedded, engrams seen``: also the answers of the engrams the chain meets are in
  the embedder's cache, as in a long-running MemoryAgent whose hook embedded each answer when it
  checked it before the write (the model pass then embeds nothing new);
* ``SNO matrix``: retrieval from an in-memory matrix of the same 10,000 vectors instead
  of Chroma (how SNO claims and evidence are searched);
* the engram search itself: one batched Chroma query per chain against one query per
  proposition.

The latency budget is lifted for the measurement (so no chain silently drops its model
pass) and the periodic quarantine re-check is off (in production it runs on a background
thread). Wall time and CPU time (``time.process_time``: this process's work, all its threads)
are printed side by side: on a shared machine other processes inflate wall time, and with
``--threads 1`` CPU time is close to what the chain costs on an idle core. Modes take turns
chain by chain, so a busy moment of the machine weighs on all of them alike. p50 / p95 / max
are printed per mode with the ratios between them, and the load average before and after.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

import numpy as np  # noqa: E402

PEOPLE = ["Alice", "Bruno", "Chen", "Dana", "Emeka", "Farah", "Goran", "Hana", "Ivan", "Jia", "Kofi", "Lena",
          "Marco", "Nadia", "Omar", "Priya", "Quinn", "Rosa", "Sven", "Tariq", "Uma", "Viktor", "Wen", "Yara"]
PROJECTS = ["Apollo", "Borealis", "Cobalt", "Delta", "Ember", "Falcon", "Granite", "Helios", "Iris", "Juniper",
            "Kepler", "Lumen", "Meridian", "Nimbus", "Orion", "Pioneer", "Quartz", "Raven", "Sequoia", "Titan"]
CITIES = ["Lisbon", "Oslo", "Nairobi", "Lima", "Hanoi", "Dublin", "Accra", "Porto", "Quito", "Tallinn", "Seoul",
          "Denver", "Krakow", "Manila", "Rabat", "Perth"]
DEVICES = ["server", "door", "valve", "window", "gate", "printer", "router", "pump", "heater", "camera"]
STATES = [("open", "closed"), ("on", "off"), ("locked", "unlocked"), ("full", "empty"), ("active", "inactive")]
TRAITS = ["careful", "honest", "patient", "punctual", "friendly", "reliable", "quiet", "curious"]
EVENTS = ["the audit", "the launch", "the merger", "the review", "the demo", "the release", "the hiring freeze"]
TOPICS = ["pricing", "security", "hiring", "logistics", "marketing", "compliance", "research", "support"]


def _fact(rng: random.Random) -> str:
    kind = rng.randrange(7)
    if kind == 0:
        return f"The {rng.choice(PROJECTS)} budget is {rng.randrange(2, 90)} thousand dollars."
    if kind == 1:
        return f"{rng.choice(PEOPLE)} moved to {rng.choice(CITIES)} in {rng.randrange(1995, 2025)}."
    if kind == 2:
        return f"The {rng.choice(PROJECTS)} {rng.choice(DEVICES)} is {rng.choice(rng.choice(STATES))}."
    if kind == 3:
        return f"{rng.choice(PEOPLE)} is {rng.choice(TRAITS)} about {rng.choice(TOPICS)}."
    if kind == 4:
        return f"The {rng.choice(PROJECTS)} team finished {rng.choice(EVENTS)} before {rng.choice(EVENTS)}."
    if kind == 5:
        return (f"{rng.choice(PEOPLE)} leads {rng.choice(TOPICS)} for {rng.choice(PROJECTS)} "
                f"with {rng.randrange(3, 40)} people.")
    return f"{rng.choice(PEOPLE)} does not work on {rng.choice(TOPICS)} for {rng.choice(PROJECTS)}."


def _twist(fact: str, rng: random.Random) -> str:
    """A variant of a stored fact: negated, a number changed, a state swapped, or reworded."""
    choice = rng.randrange(4)
    if choice == 0 and " is " in fact:
        return fact.replace(" is ", " is not ", 1)
    if choice == 1:
        digits = [w for w in fact.rstrip(".").split() if w.isdigit()]
        if digits:
            return fact.replace(digits[0], str(int(digits[0]) * 3 + 7), 1)
    if choice == 2:
        for a, b in STATES:
            if f" {a}." in fact:
                return fact.replace(f" {a}.", f" {b}.")
    return fact.replace("The ", "Our ", 1) if fact.startswith("The ") else f"Reportedly, {fact[0].lower()}{fact[1:]}"


def build_store(path: Path, n: int, seed: int):
    from cns_core.memory import MemoryService

    memory = MemoryService(path=path, collection="bench_engrams")
    have = memory.count()
    if have >= n:
        print(f"store: {path} already holds {have} engrams")
        return memory
    rng = random.Random(seed)
    facts: list[str] = []
    seen: set[str] = set()
    while len(facts) < n - have:
        f = _fact(rng)
        if f not in seen:
            seen.add(f)
            facts.append(f)
    start = time.perf_counter()
    turns = [{"query": f"What do we know about item {have + i}?", "answer": f, "session_id": "bench",
              "query_id": f"e{have + i}", "timestamp": 1.7e9 + have + i} for i, f in enumerate(facts)]
    memory.write_episodic_many(turns)
    print(f"store: wrote {len(turns)} engrams in {time.perf_counter() - start:.1f} s ({path})")
    return memory


def make_chains(memory, count: int, size: int, seed: int) -> list[list[str]]:
    """Chains of ``size`` propositions: half twist stored facts (so contradictions are found), half new."""
    rng = random.Random(seed)
    stored = [e.answer for e in memory.get([f"e{rng.randrange(memory.count())}" for _ in range(count * size)])]
    chains, used = [], set()
    for c in range(count):
        chain = []
        while len(chain) < size:
            text = _twist(stored[rng.randrange(len(stored))], rng) if rng.random() < 0.5 else _fact(rng)
            text = f"{text[:-1]} in phase {seed}-{c}-{len(chain)}."     # fresh text: never in a cache
            if text not in used:
                used.add(text)
                chain.append(text)
        chains.append(chain)
    return chains


def percentiles(values: list[float]) -> tuple[float, float, float]:
    arr = np.asarray(values)
    return float(np.percentile(arr, 50)), float(np.percentile(arr, 95)), float(arr.max())


def run_mode(hook, chains: list[list[str]], pre_embed: bool, warm_memory=None
             ) -> tuple[list[tuple[float, float]], dict[str, int]]:
    """(wall ms, CPU ms) per chain and the degradations seen.

    ``warm_memory`` (the MemoryService) puts the answers of the engrams the chain will meet in the
    embedder's cache first: a long-running MemoryAgent's hook embedded each answer when it checked
    it before the write, so the model pass finds them there.
    """
    times, degraded = [], {}
    for chain in chains:
        i = hook.tick
        if pre_embed:
            vectors = hook.embedder.encode(chain)
            if warm_memory is not None:
                hits = warm_memory.search_episodic_many(chain, hook.settings.retrieval.k_sem, embeddings=vectors)
                hook.embedder.encode([e.answer for row in hits for e in row])
        wall, cpu = time.perf_counter(), time.process_time()
        result = hook.check_chain(f"bench-{i}", propositions=chain)
        times.append(((time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000))
        for d in result.degraded:
            degraded[d] = degraded.get(d, 0) + 1
        if result.error:
            raise RuntimeError(f"chain {i}: {result.error}")
    return times, degraded


class TimedModelPass:
    """The hook's model pass with the time of each call recorded (stage 3 alone)."""

    def __init__(self, inner):
        self.inner, self.calls = inner, []

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def predict(self, pairs, timeout_s):
        start = time.perf_counter()
        try:
            return self.inner.predict(pairs, timeout_s)
        finally:
            self.calls.append(((time.perf_counter() - start) * 1000, len(pairs)))


def size_table(memory, settings, budget: float, sizes: list[int], chains: int, seed: int) -> None:
    """p50 / p95 of the model pass and of the whole hook per chain size, shipped pre-write path vs all pairs."""
    from cns_core.coherence import CoherenceHook
    from cns_core.coherence.nli import ModelPass
    from cns_core.coherence.retrieval import EngramRetriever, MemoryAPI

    engrams = MemoryAPI(semantic=(EngramRetriever(memory),))
    all_pairs = replace(settings, latency=replace(settings.latency, max_model_pairs=10**6, pair_cache=0))
    variants = [("shipped (pair limit, cache)", settings), ("all m pairs, no cache", all_pairs)]
    hooks = []
    for name, s in variants:
        hook = CoherenceHook(s, mem_api=engrams, log=False,
                             model=ModelPass(cache_size=s.latency.pair_cache)).warm_up()
        hook.model = TimedModelPass(hook.model)
        hooks.append((name, hook))
    print(f"pre-write budget {budget:.0f} ms; max_model_pairs {settings.latency.max_model_pairs}; "
          f"m {settings.retrieval.m}; k_sem {settings.retrieval.k_sem}; {chains} chains per cell")
    print(f"{'props':>5s}  {'variant':28s} {'pairs':>5s} {'model p50':>10s} {'model p95':>10s} "
          f"{'hook p50':>9s} {'hook p95':>9s} {'hook CPU p95':>12s}  fits {budget:.0f} ms at p95 (wall)")
    for size in sizes:
        sets = [make_chains(memory, chains + 2, size, seed=seed * 1000 + size * 10 + k) for k in range(len(hooks))]
        hook_ms: dict[str, list[float]] = {name: [] for name, _ in hooks}
        hook_cpu: dict[str, list[float]] = {name: [] for name, _ in hooks}
        model_calls: dict[str, list[tuple[float, int]]] = {name: [] for name, _ in hooks}
        for i in range(chains + 2):        # variants take turns chain by chain; 2 warm-up chains each
            for (name, hook), chain_set in zip(hooks, sets):
                hook.model.calls.clear()
                start, cpu = time.perf_counter(), time.process_time()
                result = hook.check_chain(f"size{size}-{i}", propositions=chain_set[i])
                took = (time.perf_counter() - start) * 1000
                if result.error:
                    raise RuntimeError(result.error)
                if i >= 2:
                    hook_ms[name].append(took)
                    hook_cpu[name].append((time.process_time() - cpu) * 1000)
                    model_calls[name].extend(hook.model.calls)
        for name, hook in hooks:
            kept = model_calls[name]
            m50, m95, _ = percentiles([ms for ms, _ in kept] or [0.0])
            h50, h95, _ = percentiles(hook_ms[name])
            c95 = percentiles(hook_cpu[name])[1]
            pairs = float(np.mean([n for _, n in kept])) if kept else 0.0
            print(f"{size:5d}  {name:28s} {pairs:5.1f} {m50:7.1f} ms {m95:7.1f} ms {h50:6.1f} ms {h95:6.1f} ms "
                  f"{c95:9.1f} ms  "
                  f"model {'yes' if m95 <= budget else 'NO'}, hook {'yes' if h95 <= budget else 'NO'}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engrams", type=int, default=10_000, help="engrams in the store (default 10000)")
    parser.add_argument("--chains", type=int, default=60, help="chains measured per mode (default 60)")
    parser.add_argument("--size", type=int, default=10, help="propositions per chain (default 10)")
    parser.add_argument("--store", type=Path, default=None, help="keep the store here and reuse it")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--sizes", type=int, nargs="*", default=None,
                        help="print the pre-write latency table for chains of these sizes instead (e.g. 3 5 10 20)")
    parser.add_argument("--threads", type=int, default=0,
                        help="torch CPU threads (0: torch's default); on a shared machine use 1 and read CPU time")
    args = parser.parse_args(argv)

    from cns_core.coherence import CoherenceHook, CoherenceSettings
    from cns_core.coherence.retrieval import EngramRetriever, MatrixRetriever, MemoryAPI
    from cns_core.models import get_embedder

    tmp = None
    if args.store is None:
        tmp = tempfile.TemporaryDirectory(prefix="cns-bench-")
        store = Path(tmp.name) / "chroma"
    else:
        store = args.store
    os.environ.setdefault("CNS_STATE_DIR", str(Path(tmp.name if tmp else store.parent) / "state"))
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"machine: {os.cpu_count()} cpu(s), torch threads {torch.get_num_threads()}, "
          f"cuda {'yes' if torch.cuda.is_available() else 'no'}, load average {os.getloadavg()[0]:.2f}")
    memory = build_store(store, args.engrams, args.seed)
    settings = CoherenceSettings.from_config()
    budget = settings.latency.budget("pre_write")     # the shipped one, before it is lifted for measuring
    settings = replace(settings, latency=replace(settings.latency, pre_write_ms=1e9),
                       quarantine={**settings.quarantine, "recheck_every_ticks": 0})
    if args.sizes:
        size_table(memory, settings, budget, args.sizes, args.chains, args.seed)
        print(f"load average after: {os.getloadavg()[0]:.2f}")
        if tmp is not None:
            tmp.cleanup()
        return 0
    engrams = MemoryAPI(semantic=(EngramRetriever(memory),))
    heuristic = CoherenceHook(settings, mem_api=engrams, model=False, log=False).warm_up()
    modelled = CoherenceHook(settings, mem_api=engrams, log=False).warm_up()
    if not modelled.model.ready:
        print(f"model: unavailable ({modelled.model.unavailable})")
        return 2
    print(f"model: {getattr(modelled.model.backend, 'name', '?')}; engrams: {memory.count()}; "
          f"chains: {args.chains} x {args.size} propositions per mode")

    # the SNO path: the same 10,000 vectors as an in-memory matrix
    got = memory._engrams.get(include=["embeddings", "documents"], limit=args.engrams)
    matrix = MatrixRetriever(got["ids"], got["documents"], np.asarray(got["embeddings"]), source="semantic")
    sno_hook = CoherenceHook(settings, mem_api=MemoryAPI(semantic=(matrix,)), model=False, log=False)

    modes = [("heuristics", heuristic, False, None), ("model", modelled, False, None),
             ("heuristics, pre-embedded", heuristic, True, None), ("model, pre-embedded", modelled, True, None),
             ("model, pre-embedded, engrams seen", modelled, True, memory),
             ("SNO matrix heuristics, pre-embedded", sno_hook, True, None)]
    chain_sets = [make_chains(memory, args.chains + 3, args.size, seed=args.seed * 100 + k)
                  for k in range(len(modes))]
    for _ in range(20):   # let Chroma load its index before anything is timed
        memory.search_episodic_many(chain_sets[0][0], settings.retrieval.k_sem)
    times: dict[str, list[tuple[float, float]]] = {name: [] for name, *_ in modes}
    degraded: dict[str, dict[str, int]] = {name: {} for name, *_ in modes}
    # round robin: chain i of every mode runs before chain i + 1 of any, so a busy moment of the
    # machine weighs on all modes alike; the first 3 chains of each mode only warm the code paths
    for i in range(args.chains + 3):
        for (name, hook, pre, warm), chains in zip(modes, chain_sets):
            took, flags = run_mode(hook, chains[i:i + 1], pre, warm)
            if i >= 3:
                times[name].extend(took)
                for flag, n in flags.items():
                    degraded[name][flag] = degraded[name].get(flag, 0) + n
    rows, cpu_rows = {}, {}
    print(f"{'per chain':38s} {'wall p50':>9s} {'wall p95':>9s} {'wall max':>9s} {'CPU p50':>9s} {'CPU p95':>9s}")
    for name, *_ in modes:
        rows[name] = percentiles([w for w, _ in times[name]])
        cpu_rows[name] = percentiles([c for _, c in times[name]])
        note = f"  degraded: {degraded[name]}" if degraded[name] else ""
        (p50, p95, worst), (c50, c95, _) = rows[name], cpu_rows[name]
        print(f"{name:38s} {p50:6.1f} ms {p95:6.1f} ms {worst:6.1f} ms {c50:6.1f} ms {c95:6.1f} ms{note}")

    # the engram search alone: one batched query against one query per proposition
    chains = make_chains(memory, 20, args.size, seed=args.seed * 100 + 99)
    embedder = get_embedder()
    batched, single = [], []
    retriever = EngramRetriever(memory)
    for chain in chains:
        vectors = embedder.encode(chain)
        start = time.perf_counter()
        retriever.retrieve(chain, vectors, settings.retrieval.k_sem)
        batched.append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        for text in chain:
            memory.search_episodic(text, settings.retrieval.k_sem)
        single.append((time.perf_counter() - start) * 1000)
    b, s = percentiles(batched), percentiles(single)
    print(f"{'engram search, batched (per chain)':38s} {b[0]:6.1f} ms {b[1]:6.1f} ms")
    print(f"{'engram search, one query per prop':38s} {s[0]:6.1f} ms {s[1]:6.1f} ms")
    print(f"ratio model / heuristics p95: {rows['model'][1] / rows['heuristics'][1]:.2f}")
    pre = rows["heuristics, pre-embedded"][1] / rows["heuristics"][1]
    print(f"ratio pre-embedded / fresh heuristics p95: {pre:.2f}")
    print(f"ratio one-query-per-prop / batched search p95: {s[1] / max(b[1], 1e-9):.2f}")
    for name, limit in (("heuristics", 20), ("model", 100), ("heuristics, pre-embedded", 20),
                        ("model, pre-embedded", 100), ("model, pre-embedded, engrams seen", 100)):
        print(f"target {name} p95 < {limit} ms: wall {'met' if rows[name][1] < limit else 'NOT met'}, "
              f"CPU {'met' if cpu_rows[name][1] < limit else 'NOT met'}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
