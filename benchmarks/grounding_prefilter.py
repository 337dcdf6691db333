"""The BM25 pre-filter of sentences to embed: all sentences vs each claim's top N, side by side.

Run: ``.venv/bin/python benchmarks/grounding_prefilter.py [--limit 40] [--embed-top 8 12] [--min-sentences 100]``

On the first ``--limit`` SciFact train pairs and WiCE dev claims, the fused verdict is computed
with every sentence embedded (``embed_top: 0``, the issue-21 path) and with only each claim's
top N sentences by BM25 and their run neighbours embedded, for each N given (default: the one in
``config/critics.yaml``). Same fusion (``config/grounding_fusion.yaml``, not refitted), same NLI
model. Printed: claims/s per set (cold embedding cache, each path timed in this one run, the
paths' order reversed on the second set so the machine's load changes all alike), the max and mean absolute
difference of p(supported) against the all-sentences path, and the AUCs.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time

from cns_core.cli.quiet import offline_and_quiet

offline_and_quiet()

import numpy as np  # noqa: E402

from cns_core.critics.common import critic_settings  # noqa: E402
from cns_core.critics.grounding import fusion_of  # noqa: E402
from cns_core.training.grounding_fusion import auc_figures, dev_features, load_scifact, load_wice, predict_dev  # noqa: E402
from cns_core.critics.grounding_judge import RetrievalSettings  # noqa: E402

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from grounding_real import embedder_cache_reset, warm_models  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=40, help="first N rows of each set")
    parser.add_argument("--embed-top", type=int, nargs="*", default=None,
                        help="the N values to compare with embedding every sentence (default: the config's)")
    parser.add_argument("--min-sentences", type=int, default=0,
                        help="WiCE: the first --limit claims whose page splits into at least this many sentences")
    args = parser.parse_args(argv)

    nli, embedder = warm_models()
    settings = critic_settings("grounding")
    configured = RetrievalSettings.from_settings(settings)
    paths = {"all sentences": dataclasses.replace(configured, embed_top=0)}
    for n in args.embed_top if args.embed_top is not None else [configured.embed_top]:
        paths[f"top {n}"] = dataclasses.replace(configured, embed_top=n)
    max_chars = int(settings["max_window_chars"])
    wice = load_wice(None if args.min_sentences else args.limit)
    if args.min_sentences:
        wice = [c for c in wice if len(c.problem(max_chars).units[0]) >= args.min_sentences][:args.limit]
    sets = {"scifact": load_scifact(args.limit), "wice": wice}
    claims = sets["scifact"] + sets["wice"]
    fusion = fusion_of(settings)

    speed = {name: {} for name in paths}
    features = {name: [] for name in paths}
    for turn, (d, part) in enumerate(sets.items()):
        for name, retrieval in list(paths.items())[::1 if turn % 2 == 0 else -1]:   # first on one set, last on the next
            embedder_cache_reset(embedder)
            t = time.perf_counter()
            features[name].append(dev_features(part, nli, embedder, retrieval, max_chars))
            speed[name][d] = len(part) / (time.perf_counter() - t)
    p = {name: predict_dev(fusion, np.vstack(x))[:, 0] for name, x in features.items()}
    base = p["all sentences"]
    datasets = np.array([c.dataset for c in claims])

    pages = [len(c.problem(max_chars).units[0]) for c in wice]
    print(f"{len(sets['scifact'])} SciFact train pairs, {len(wice)} WiCE dev claims (pages of "
          f"{min(pages, default=0)}-{max(pages, default=0)} sentences, median {np.median(pages or [0]):.0f}); "
          "fusion not refitted\n")
    width = 44
    print(f"{'figure':{width}s}" + "".join(f"{k:>16s}" for k in paths))
    for d in sets:
        print(f"{'claims/s: ' + d:{width}s}" + "".join(f"{speed[k][d]:>16.2f}" for k in paths))
    for d in sets:
        for label, f in (("max", np.max), ("mean", np.mean)):
            print(f"{f'{label} |dp(supported)|: {d}':{width}s}"
                  + "".join(f"{float(f(np.abs(p[k] - base)[datasets == d])):>16.4f}" for k in paths))
    aucs = {k: auc_figures(claims, v) for k, v in p.items()}
    for n in aucs["all sentences"]:
        print(f"{'AUC ' + n:{width}s}"
              + "".join(f"{'n/a' if aucs[k][n] is None else format(aucs[k][n], '.3f'):>16s}" for k in paths))
    print(f"\nretrieval: {configured}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
