"""How `judged_extremes` of the Logic critic's recipe was chosen: on inner development topics, never the held-out ones.

    .venv/bin/python benchmarks/logic_variants.py [--values 0 0.1 0.25]

Inside the *train* split of each judged genre, a share of topics is set aside by hash (IBM 15%, Webis 25%), and
of the gold texts a fifth by another hash; each value of ``judged_extremes`` trains the recipe on what is left
and is measured there: mean per-topic Spearman, Pearson and pairwise agreement of the score with people (IBM,
Webis) and the flaw AUC per gold genre. The held-out parts the benchmark reports (``benchmarks/logic_critic.py``)
are never read. Uses the training cache of ``cns train-logic``.
"""

from __future__ import annotations

import argparse
from dataclasses import replace

from cns_core.training.logic import (build_data, embed_data, examples_inputs, flaw_auc, judged_figures,
                                     load_logic_settings, train_logic)
from cns_core.training.logic_data import held_topics, mark_extremes, text_split

DEV_SHARE = {"ibm": 0.15, "webis": 0.25}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--values", nargs="+", type=float, default=[0.0, 0.1, 0.25])
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    settings = load_logic_settings({"threads": args.threads})
    data = build_data(settings, log=lambda m: None)
    emb = embed_data(data, settings, log=lambda m: None)
    dev = {}
    for genre, share in DEV_SHARE.items():
        train = [e for e in data.judged if e.corpus == genre and e.meta["split"] == "train"]
        held = held_topics({e.topic for e in train}, share)
        for e in train:
            if e.topic in held:
                e.meta["split"] = "dev"
        dev[genre] = [e for e in train if e.topic in held]
        print(f"{genre}: {len(held)} development topics, {len(dev[genre])} arguments")
    gold_dev = [e for e in data.gold if e.meta["split"] == "train" and text_split(e.corpus, e.text_id + "#dev") == "test"]
    for e in gold_dev:
        e.meta["split"] = "dev"
    for value in args.values:
        for e in data.judged:                     # the extremes of this value, on what is still trained on
            e.sound, e.flaw = None, "none"
        mark_extremes([e for e in data.judged if e.meta["split"] == "train"], value)
        model = train_logic(replace(settings, judged_extremes=value), data, emb, log=lambda m: None).model
        parts = []
        for genre, examples in dev.items():
            f = judged_figures(examples, model.predict(examples_inputs(examples, emb))[:, 0].tolist())
            parts.append(f"{genre} Spearman {f['spearman']:.3f} Pearson {f['pearson']:.3f} pairwise {f['pairwise']:.3f}")
        flaws = flaw_auc(gold_dev, model.predict(examples_inputs(gold_dev, emb))[:, 1].tolist())
        parts.append("flaw AUC " + " ".join(f"{c} {row['all']:.3f}" for c, row in flaws.items()))
        print(f"judged_extremes {value:g}: " + " | ".join(parts), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
