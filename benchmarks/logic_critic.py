"""The learned Logic critic beside the heuristic and the length baseline, per genre and across genres.

    .venv/bin/python benchmarks/logic_critic.py [--cache-dir DIR] [--model DIR] [--skip across trust speed ...]

Figures (each column: learned critic, heuristic critic, length of the text in words), every one on a
part of its genre the model never trained on:

* flaw detection AUC per gold corpus and flaw type on the held-out gold texts (20% of the texts of
  arg_microtexts_en, abstrct_train, cdcp_train by hash; sound graph against its flawed copies);
* agreement with people: IBM-ArgQ dev quality (7 topics never trained on; mean per-topic Spearman and
  pooled Pearson) and Webis Logical Quality (the held-out topics; Spearman and pairwise agreement);
* across genres: the same recipe trained with one genre left out, measured on that genre (what a
  user's own kind of text can expect);
* pairwise agreement with people of the Trust Score (default profile, no sources, all five critics)
  with the heuristic and the learned Logic critic, and of the length alone, on ``--trust-per-topic``
  (``-webis``) texts per held-out topic (the other critics run in the real pipeline; cached in ``cache_dir``);
* speed: what the learned part adds to a 10-claim SNO, and a 5,000-claim SNO scored whole.

Drafted SNOs and embeddings come from the training cache (``cns train-logic`` fills it).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402

from cns_core.critics import default_critics  # noqa: E402
from cns_core.critics.base import CriticContext  # noqa: E402
from cns_core.critics.logic import HeuristicLogicCritic, LogicCritic  # noqa: E402
from cns_core.training.logic_data import FLAW_TYPES, Example  # noqa: E402
from cns_core.metrics import roc_auc  # noqa: E402
from cns_core.models.logic_gnn import load_logic_model  # noqa: E402
from cns_core.training.logic import (build_data, embed_data, examples_inputs, judged_figures,  # noqa: E402
                                     load_logic_settings, mean_topic_spearman, pairwise_agreement, train_logic)
from cns_core.scoring import load_profiles, weigh  # noqa: E402
from cns_core.sno import SNO  # noqa: E402


def words(e: Example) -> float:
    return float(e.meta.get("words") or sum(len(c.text.split()) for c in e.sno.claims))


def heuristic_scores(examples: list[Example], cache: Path) -> list[float]:
    """The heuristic critic (with its NLI check) on each example, cached by content hash. Where it abstains (one
    claim: nothing to judge for structure) it counts as 0.5, neither for nor against, so that it can be ranked."""
    done = json.loads(cache.read_text()) if cache.is_file() else {}
    critic = HeuristicLogicCritic()
    ctx = CriticContext()
    out = []
    for i, e in enumerate(examples):
        key = e.sno.content_hash()
        if key not in done:
            done[key] = critic.evaluate(e.sno, ctx).score
            if i % 200 == 0:
                cache.write_text(json.dumps(done))
        out.append(0.5 if done[key] is None else done[key])
    cache.write_text(json.dumps(done))
    return out


def trust_results(examples: list[Example], cache: Path) -> list[dict[str, dict]]:
    """Each example's other critic results in the default pipeline (no sources), cached by content hash."""
    from cns_core.pipeline import CriticPipeline

    done = json.loads(cache.read_text()) if cache.is_file() else {}
    critics = [c if c.name != "logic" else HeuristicLogicCritic() for c in default_critics()]
    pipe = CriticPipeline(critics)
    out = []
    for i, e in enumerate(examples):
        key = e.sno.content_hash()
        if key not in done:
            ev = pipe.evaluate(e.sno, "default")
            done[key] = {n: {"score": r.score, "status": r.status} for n, r in ev.results.items()}
            if i % 20 == 0:
                cache.write_text(json.dumps(done))
                print(f"  trust: {i + 1}/{len(examples)}", flush=True)
        out.append(done[key])
    cache.write_text(json.dumps(done))
    return out


def trust(results: dict[str, dict], logic: float | None) -> float:
    from cns_core.critics.base import CriticResult

    rs = {n: CriticResult(critic=n, score=r["score"], confidence=1.0, explanation="", status=r["status"])
          for n, r in results.items()}
    if logic is not None:       # the learned critic judges every drafted argument, one sentence included
        rs["logic"] = replace(rs["logic"], score=logic, status="ok")
    return weigh(rs, load_profiles()["default"]).trust_score


def per_topic(examples: list[Example], n: int, seed: int) -> list[Example]:
    rng = random.Random(seed)
    by: dict[str, list[Example]] = {}
    for e in examples:
        by.setdefault(e.topic, []).append(e)
    return [e for t in sorted(by) for e in (by[t] if len(by[t]) <= n else rng.sample(by[t], n))]


def speed(model_folder: str, large_heuristic: bool = False) -> dict[str, float]:
    """What the learned part adds to the heuristic (which runs anyway): milliseconds for a 10-claim SNO
    (claims embedded, graph built, scored, every claim and relation left out; median of 20), and the
    same for a 5,000-claim SNO, which is scored whole (no attribution above 64 claims)."""
    from cns_core.models import get_embedder

    def chain(n: int) -> SNO:
        claims = [{"id": f"c{i}", "text": f"Claim number {i} says that measure {i % 37} helps group {i % 11}."}
                  for i in range(n)]
        rels = [{"source": f"c{i}", "target": f"c{(i - 1) // 3}", "kind": "support" if i % 5 else "attack"}
                for i in range(1, n)]
        return SNO.model_validate({"id": f"speed{n}", "hypothesis": "c0", "claims": claims, "relations": rels})

    embedder = get_embedder()
    ctx = CriticContext(embedder=embedder)
    critic, heuristic = LogicCritic({"model": model_folder}), HeuristicLogicCritic()
    model = load_logic_model(Path(model_folder))

    def added(sno: SNO, base) -> float:
        t = time.perf_counter()
        vectors = embedder.encode([c.text for c in sno.claims])
        result = critic._learned(sno, vectors, model, base)
        assert "learned" in result.evidence
        return time.perf_counter() - t

    small = chain(10)
    embedder.encode([c.text for c in small.claims])      # the other critics embed the claims first
    t = time.perf_counter()
    base = heuristic.evaluate(small, ctx)
    heuristic_s = time.perf_counter() - t
    small_added = [added(small, base) for _ in range(20)]
    out = {"10-claim SNO: heuristic (runs anyway) ms": 1000 * heuristic_s,
           "10-claim SNO: learned part adds ms (median of 20)": 1000 * float(np.median(small_added))}
    big = chain(5000)
    t = time.perf_counter()
    embedder.encode([c.text for c in big.claims])
    out["5,000-claim SNO: embedding the claims s (shared with other critics)"] = time.perf_counter() - t
    if large_heuristic:
        t = time.perf_counter()
        big_base = heuristic.evaluate(big, ctx)
        out["5,000-claim SNO: heuristic s"] = time.perf_counter() - t
    else:
        big_base = HeuristicLogicCritic({"max_cycles": 1}).evaluate(big, CriticContext(embedder=embedder,
                                                                                      nli=_NoSupportsNLI()))
    out["5,000-claim SNO: learned part adds s (scored whole)"] = added(big, big_base)
    out["load average (1 min) at the end"] = os.getloadavg()[0]
    return out


class _NoSupportsNLI:
    """A neutral NLI, so that timing the learned part of a 5,000-claim SNO does not wait on 4,000 NLI pairs."""

    name = "neutral"

    def predict(self, pairs):
        return np.tile([0.1, 0.8, 0.1], (len(list(pairs)), 1))


def judged_rows(name: str, examples: list[Example], columns: list[list[float]]) -> list[tuple[str, ...]]:
    """Spearman, Pearson and pairwise rows of one judged genre, one column per scorer."""
    figures = [judged_figures(examples, c) for c in columns]
    n_topics = len({e.topic for e in examples})
    return [(f"{name} {k} ({len(examples)} args, {n_topics} topics{', %d pairs' % figures[0]['pairs'] if k == 'pairwise' else ''})",
             *(f"{f[k]:.3f}" for f in figures)) for k in ("spearman", "pearson", "pairwise")]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache-dir", help="training cache (drafted SNOs, embeddings)")
    parser.add_argument("--model", default="models/logic-gnn")
    parser.add_argument("--trust-per-topic", type=int, default=12, help="IBM dev texts a topic for the Trust figures")
    parser.add_argument("--trust-per-topic-webis", type=int, default=15, help="held-out Webis texts a topic for them")
    parser.add_argument("--skip", nargs="*", default=[], choices=["flaws", "judged", "across", "trust", "speed"])
    parser.add_argument("--large-heuristic", action="store_true", help="time the heuristic on 5,000 claims too")
    args = parser.parse_args()
    settings = load_logic_settings({"cache_dir": args.cache_dir})
    cache = settings.path(settings.cache_dir)
    data = build_data(settings, log=lambda m: print("#", m))
    emb = embed_data(data, settings, log=lambda m: None)
    model = load_logic_model(settings.path(args.model))
    print(f"# model {args.model} (weights sha256 {model.digest[:12]}); left out of its training: "
          f"{model.net.cfg.extra.get('left_out') or 'no genre'}")
    rows: list[tuple[str, ...]] = []

    def fmt(x: float) -> str:
        return f"{x:.3f}"

    def flaw_rows(label: str, test: list[Example], learned: list[float], with_baselines: bool) -> None:
        heur = heuristic_scores(test, cache / "bench-heuristic-gold.json") if with_baselines else None
        length = [words(e) for e in test]
        for corpus in sorted({e.corpus for e in test}):
            sound = [i for i, e in enumerate(test) if e.corpus == corpus and e.flaw == "none"]
            for flaw in ((*FLAW_TYPES, "all") if with_baselines else ("all",)):
                bad = [i for i, e in enumerate(test) if e.corpus == corpus and e.flaw != "none"
                       and (flaw == "all" or e.flaw == flaw)]
                y = [1] * len(sound) + [0] * len(bad)
                cols = [learned] + ([heur, length] if heur is not None else [])
                rows.append((f"{label}{corpus} {flaw} ({len(sound)}/{len(bad)})",
                             *(fmt(roc_auc([c[i] for i in sound + bad], y, missing=float("nan"))) for c in cols)))

    gold_test = [e for e in data.gold if e.meta["split"] == "test"]
    judged_test = {g: data.of(g, "test") for g in ("ibm", "webis")}
    if "flaws" not in args.skip:
        flaw_rows("flaw AUC ", gold_test, model.predict(examples_inputs(gold_test, emb))[:, 1].tolist(), True)
    logic_new: dict[str, float] = {}
    if "judged" not in args.skip:
        for genre, label in (("ibm", "IBM dev"), ("webis", "Webis held-out topics")):
            test = judged_test[genre]
            learned = model.predict(examples_inputs(test, emb))[:, 0].tolist()
            logic_new.update({e.text_id: s for e, s in zip(test, learned)})
            heur = heuristic_scores(test, cache / f"bench-heuristic-{genre}.json")
            rows += judged_rows(label, test, [learned, heur, [words(e) for e in test]])
    if "across" not in args.skip:
        for genre in ("microtexts", "abstrct", "cdcp", "ibm", "webis"):
            left = train_logic(replace(settings, leave_out=(genre,)), data, emb, log=lambda m: None).model
            if genre in judged_test:
                test = judged_test[genre]
                rows += [(f"across genres, {genre} not trained on: {r[0]}", r[1], "", "")
                         for r in judged_rows(genre, test, [left.predict(examples_inputs(test, emb))[:, 0].tolist()])]
            else:
                test = [e for e in gold_test if e.corpus == genre]
                flaw_rows(f"across genres, {genre} not trained on: flaw AUC ", test,
                          left.predict(examples_inputs(test, emb))[:, 1].tolist(), False)
    if "trust" not in args.skip and logic_new:
        for name, pool, n in (("IBM dev", judged_test["ibm"], args.trust_per_topic),
                              ("Webis held-out topics", judged_test["webis"], args.trust_per_topic_webis)):
            chosen = [e for e in per_topic(pool, n, 0) if e.text_id in logic_new]
            if not chosen:
                continue
            results = trust_results(chosen, cache / "bench-trust.json")
            old = [trust(r, None) for r in results]
            new = [trust(r, logic_new[e.text_id]) for r, e in zip(results, chosen)]
            quality = [e.meta["raw"] for e in chosen]
            topics = [e.topic for e in chosen]
            (a_new, n), (a_old, _), (a_len, _) = (pairwise_agreement(s, quality, topics)
                                                  for s in (new, old, [words(e) for e in chosen]))
            rows.append((f"Trust pairwise agreement {name} ({n} pairs, {len(chosen)} args)",
                         fmt(a_new), fmt(a_old), fmt(a_len)))
            rows.append((f"Trust Spearman {name} (same args)", fmt(mean_topic_spearman(chosen, new)),
                         fmt(mean_topic_spearman(chosen, old)), fmt(mean_topic_spearman(chosen, [words(e) for e in chosen]))))
    width = max(len(r[0]) for r in rows) + 2 if rows else 10
    print(f"{'figure':<{width}}{'learned':>10}{'heuristic':>11}{'length':>9}")
    for r in rows:
        print(f"{r[0]:<{width}}" + "".join(f"{v:>{w}}" for v, w in zip(r[1:], (10, 11, 9))))
    if "speed" not in args.skip:
        for k, v in speed(args.model, args.large_heuristic).items():
            print(f"{k:<{width}}{v:>10.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
