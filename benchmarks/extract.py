"""Drafting SNOs from text against annotated argument graphs of three genres, beside positional baselines.

    python benchmarks/extract.py [--data ../shared/data] [--folds 3] [--rules] [--speed-texts 40]

Genres (``cns_core.text.annotated``): the 112 microtexts, 581 CDCP user comments and 400 AbstRCT
trial abstracts, each text given as plain text, its annotation the gold. Every figure of the
learned drafter is on texts its model did not see:

* **in genre**: k-fold by text; each fold's model is trained on the other folds of the genre
  and on the other two genres whole;
* **leave one genre out**: trained on the two other genres only. This is the figure that
  predicts a user's own text, whose genre no model here was trained on.

The shipped model (``models/argument-miner``) is trained on all three genres and so is not
scored here. ``--rules`` adds the rule drafter that preceded the miner (cues, position, NLI).

Figures per method and genre: main claim accuracy (texts whose gold marks one), unit P/R/F1,
relation P/R/F1 labelled (support/attack must match) and unlabelled. Spans match at half their
words (``cns_core.text.annotated.align``); relations are read as the SNO's reasoning graph reads
them (an undercut counts at the claim it finally attacks).

Baselines (positional, no model): units are sentences; the main claim is the first sentence, the
last sentence of the introduction (the first paragraph), or the last sentence; each paragraph's
other sentences support its first sentence, which supports the main claim.

Speed: drafting texts of about 250 words with the shipped miner, models loaded before the clock
starts, and the time loading the miner adds.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cns_core.config import data_dir  # noqa: E402
from cns_core.sno import SNO  # noqa: E402
from cns_core.text import draft_snos  # noqa: E402
from cns_core.text.annotated import GENRES, GoldText, GraphScore, read_genre  # noqa: E402
from cns_core.training.drafter import build_examples, fit_miner, labelled, load_miner_settings  # noqa: E402
from cns_core.text.segment import segment_units  # noqa: E402


def positional(text: str, sno_id: str, *, main_rule: str) -> SNO:
    """The positional baseline: sentences, main claim by position, paragraphs support their first sentence."""
    units, _ = segment_units(text, clauses=False)   # the prose paragraphs' sentences
    sentences = [" ".join(u.text.split()) for u in units]
    first_of = [u.index for u in units if u.sentence_in_paragraph == 0]
    if main_rule == "intro_last":
        main = (first_of[1] - 1) if len(first_of) > 1 else len(sentences) - 1
    elif main_rule == "last":
        main = len(sentences) - 1
    else:
        main = 0
    ids = [f"s{i + 1}" for i in range(len(sentences))]
    relations = []
    bounds = first_of + [len(sentences)]
    for p, start in enumerate(first_of):
        head = main if start <= main < bounds[p + 1] else start
        for i in range(start, bounds[p + 1]):
            if i != head:
                relations.append({"source": ids[i], "target": ids[head], "kind": "support"})
        if head != main:
            relations.append({"source": ids[head], "target": ids[main], "kind": "support"})
    return SNO.model_validate({"id": sno_id, "hypothesis": ids[main],
                               "claims": [{"id": i, "text": t} for i, t in zip(ids, sentences)],
                               "relations": relations})


def score(snos: list[SNO], golds: list[GoldText]) -> GraphScore:
    tally = GraphScore()
    for sno, gold in zip(snos, golds):
        tally.add(sno, gold)
    return tally


def row(name: str, genre: str, tally: GraphScore) -> str:
    main = "-" if tally.main_accuracy is None else f"{tally.main_accuracy:.3f}"
    up, ur, uf = tally.units
    rp, rr, rf = tally.relations
    _, _, uf1 = tally.relations_unlabelled
    return (f"| {name} | {genre} | {tally.texts} | {main} | {up:.3f} / {ur:.3f} / {uf:.3f} | "
            f"{rp:.3f} / {rr:.3f} / {rf:.3f} | {uf1:.3f} |")


def folds_of(golds: list[GoldText], k: int) -> list[int]:
    """A text's fold: its position in name order, modulo k (deterministic, no tuning)."""
    order = sorted(range(len(golds)), key=lambda i: golds[i].name)
    fold = [0] * len(golds)
    for rank, i in enumerate(order):
        fold[i] = rank % k
    return fold


def described(golds: dict[str, list[GoldText]], embedder, max_distance: int, cache: Path | None) -> dict:
    """Every genre's texts segmented, described and labelled, from ``cache`` when it holds them."""
    import pickle

    if cache is not None and cache.exists():
        with cache.open("rb") as handle:        # a file this script wrote, outside the repository
            return {g: [labelled(e.gold, e.units, max_distance) for e in examples]
                    for g, examples in pickle.load(handle).items()}
    examples = {g: build_examples(golds[g], embedder, max_distance) for g in GENRES}
    if cache is not None:
        with cache.open("wb") as handle:
            pickle.dump(examples, handle)
    return examples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=data_dir())
    parser.add_argument("--folds", type=int, default=3, help="in-genre folds by text (default 3)")
    parser.add_argument("--rules", action="store_true", help="also score the rule drafter (slow: one NLI pass)")
    parser.add_argument("--speed-texts", type=int, default=40, help="~250-word texts drafted for the speed figure")
    parser.add_argument("--logo-only", action="store_true", help="only leave-one-genre-out and the baselines "
                        "(no in-genre folds: a third of the time)")
    parser.add_argument("--corrections", default="0,5,20,50",
                        help="corrected texts of the left-out genre for the corrections curve ('' skips it)")
    parser.add_argument("--cache", type=Path, help="keep the described texts in this file (outside the repository) "
                        "and reuse them on the next run")
    args = parser.parse_args()
    from cns_core.models import get_embedder

    embedder = get_embedder()
    settings = load_miner_settings()
    golds = {g: read_genre(g, args.data) for g in GENRES}
    started = time.perf_counter()
    examples = described(golds, embedder, settings.max_distance, args.cache)
    print(f"described {sum(len(e) for e in examples.values())} texts in {time.perf_counter() - started:.0f} s "
          f"(load average {os.getloadavg()[0]:.1f})", flush=True)

    def drafted(miner, texts: list[GoldText]) -> list[SNO]:
        return [d.sno for d in draft_snos([g.text for g in texts], sno_ids=[g.name for g in texts], miner=miner,
                                          embedder=embedder)]

    counts = [int(n) for n in args.corrections.split(",") if n.strip()]
    links: list[tuple[float, bool, bool]] = []
    curve: list[str] = []
    lines = ["| method | genre | texts | main claim | unit P / R / F1 | relation P / R / F1 | unlabelled F1 |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for genre in GENRES:
        texts = golds[genre]
        # leave one genre out: the figure that predicts a new genre
        logo = fit_miner([e for g in GENRES if g != genre for e in examples[g]], settings)
        logo_snos = drafted(logo, texts)
        lines.append(row("miner, leave-one-genre-out", genre, score(logo_snos, texts)))
        links.extend(link_outcomes(logo_snos, texts))
        if counts:
            curve.append(corrections_curve(genre, examples, settings, counts, drafted, logo))
        if args.logo_only:
            baselines(lines, genre, texts)
            print(f"{genre} done ({time.perf_counter() - started:.0f} s)", flush=True)
            continue
        # in genre: k folds by text, the other genres always in training
        fold = folds_of(texts, args.folds)
        by_name = {e.gold.name: e for e in examples[genre]}
        predicted: dict[str, SNO] = {}
        for k in range(args.folds):
            held = [t for t, f in zip(texts, fold) if f == k]
            held_names = {t.name for t in held}
            train = [e for g in GENRES if g != genre for e in examples[g]]
            train += [e for name, e in by_name.items() if name not in held_names]
            miner = fit_miner(train, settings)
            predicted.update({s.id: s for s in drafted(miner, held)})
        lines.append(row(f"miner, in genre ({args.folds}-fold)", genre,
                         score([predicted[t.name] for t in texts], texts)))
        if args.rules:
            rule_snos = [d.sno for d in draft_snos([t.text for t in texts], sno_ids=[t.name for t in texts],
                                                   rules=True)]
            lines.append(row("rule drafter (cues, position, NLI)", genre, score(rule_snos, texts)))
        baselines(lines, genre, texts)
        print(f"{genre} done ({time.perf_counter() - started:.0f} s)", flush=True)
    print("\n".join(lines))
    print(weak_link_table(links))
    if curve:
        print("\ncorrections: relation F1 on the rest of a genre left out of training, after N of its texts "
              "are corrected (their gold graphs added to training)\n")
        print("| genre | " + " | ".join(f"N = {n}" for n in counts) + " |")
        print("| --- |" + " --- |" * len(counts))
        print("\n".join(curve))
    speed(args.speed_texts, embedder)


def baselines(lines: list[str], genre: str, texts: list[GoldText]) -> None:
    for rule, label in (("first", "first sentence"), ("intro_last", "intro's last sentence"),
                        ("last", "last sentence")):
        base = [positional(t.text, t.name, main_rule=rule) for t in texts]
        lines.append(row(f"positional: {label}", genre, score(base, texts)))


def link_outcomes(snos: list[SNO], golds: list[GoldText]) -> list[tuple[float, bool, bool]]:
    """(link probability, drafted as weak, in the gold graph unlabelled) of every scored drafted relation."""
    from cns_core.text.annotated import align

    out = []
    for sno, gold in zip(snos, golds):
        claims = list(sno.claims)
        to_gold = {claims[i].id: j for i, j in align([c.text for c in claims], gold.units).items()}
        edges = {(s, t) for s, t, _ in gold.relations}
        for r in sno.relations:
            if "p_none" not in r.metadata:
                continue
            hit = (to_gold.get(r.source), to_gold.get(r.target)) in edges
            out.append((1.0 - float(r.metadata["p_none"]), "a weak link" in str(r.metadata.get("why", "")), hit))
    return out


def weak_link_table(links: list[tuple[float, bool, bool]]) -> str:
    """How often a drafted link is right, by its link probability and by the "weak link" flag (leave one genre out)."""
    rows = ["\nlinks (leave one genre out, all genres): how often a drafted relation is in the gold graph\n",
            "| drafted links | share | right (unlabelled) |", "| --- | --- | --- |"]
    groups = [(f"p(link) {lo:.1f}-{hi:.1f}", [h for p, _, h in links if lo <= p < hi])
              for lo, hi in ((0.0, 0.1), (0.1, 0.2), (0.2, 0.3), (0.3, 0.5), (0.5, 1.01))]
    groups += [("flagged 'a weak link'", [h for _, w, h in links if w]),
               ("not flagged", [h for _, w, h in links if not w])]
    for name, hits in groups:
        if hits:
            rows.append(f"| {name} | {len(hits) / len(links):.2f} | {np.mean(hits):.3f} |")
    return "\n".join(rows)


def corrections_curve(genre: str, examples: dict, settings, counts: list[int], drafted, logo) -> str:
    """Relation F1 on the genre's texts after 50 (the most asked for), when the first N of them (name order)
    are corrected: their gold graphs join the other genres in training. Every N scores the same texts."""
    ordered = sorted(examples[genre], key=lambda e: e.gold.name)
    held = [e.gold for e in ordered[max(counts):]]
    others = [e for g in GENRES if g != genre for e in examples[g]]
    cells = []
    for n in counts:
        miner = logo if n == 0 else fit_miner(others + ordered[:n], settings)     # N = 0 is leave-one-genre-out
        cells.append(f"{score(drafted(miner, held), held).relations[2]:.3f}")
    return f"| {genre} ({len(held)} texts scored) | " + " | ".join(cells) + " |"


def speed(count: int, embedder) -> None:
    """Texts of about 250 words with the shipped miner (models loaded first), and the miner's load time."""
    from cns_core.text.miner import ArgumentMiner, default_miner_path

    load_start = time.perf_counter()
    miner = ArgumentMiner.load(default_miner_path())
    load_s = time.perf_counter() - load_start
    sentences = [t for g in read_genre("microtexts", data_dir()) for t in g.units]
    texts, k = [], 0
    for i in range(count):
        words, parts = 0, []
        while words < 250:
            s = sentences[k % len(sentences)]
            parts.append(s if s.endswith((".", "!", "?")) else s + ".")
            words += len(s.split())
            k += 1
        texts.append(" ".join(parts))
    draft_snos(texts[:2], miner=miner, embedder=embedder)        # warm
    start, cpu = time.perf_counter(), time.process_time()
    for text in texts:
        draft_snos([text], miner=miner, embedder=embedder)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    print(f"\nspeed: {count / wall:.1f} texts/s of ~250 words one at a time ({wall:.1f} s wall, {cpu:.1f} s CPU; "
          f"the miner loads in {load_s * 1000:.0f} ms; torch threads {__import__('torch').get_num_threads()}, "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
