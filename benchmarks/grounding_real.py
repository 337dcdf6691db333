"""Grounding on real claim-vs-source sets: the previous critic and the fused verdict, side by side.

Run: ``.venv/bin/python benchmarks/grounding_real.py [--limit N] [--folds 5]``

Sets (``CNS_DATA_DIR``): SciFact train (claims vs the abstracts they cite) and WiCE dev
(Wikipedia claims vs the web page each cites, about 120 sentences). Each claim is judged
against its source as one evidence text, the way an SNO holds it.

* **old**: the previous critic. The source in windows of 2 sentences, its 4 windows most
  similar to the claim scored by the NLI model; support score = best entailment; verdict:
  supported when that is >= 0.5, else contradicted when the highest contradiction reaches
  the model's threshold, else not enough information.
* **new, dev**: the fused verdict with the fusion shipped in ``config/grounding_fusion.yaml``,
  which was FITTED ON THESE SETS: development figures, optimistic.
* **new, cross-validated**: each claim scored by a fusion fitted on the other folds (grouped
  by claim). Still development figures (the features and retrieval settings were chosen on
  these sets), but no claim is scored by weights fitted on itself.

Claims per second are end to end (embedding the source, retrieval, NLI), the model loaded
beforehand, both paths timed in this one run (the machine's load changes both alike).
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from cns_core.cli.quiet import offline_and_quiet

offline_and_quiet()

import numpy as np  # noqa: E402

from cns_core.critics.common import contradiction_threshold, critic_settings  # noqa: E402
from cns_core.critics.grounding import evidence_windows, fusion_of, top_k_windows, verdict_rule_of  # noqa: E402
from cns_core.training.grounding_fusion import (auc_figures, cross_validated, dev_features, load_scifact,  # noqa: E402
                                            load_wice, predict_dev, verdict_accuracy)
from cns_core.critics.grounding_judge import RetrievalSettings  # noqa: E402

OLD = {"max_window_chars": 400, "window_sentences": 2, "window_stride": 2, "top_k": 4, "weak_entailment": 0.5}


def old_grounding(claims, nli, embedder, chunk: int = 64) -> tuple[np.ndarray, list[str]]:
    """Support scores and verdicts of the previous critic (module docstring), batched per chunk."""
    threshold = contradiction_threshold({}, nli)
    scores, verdicts = [], []
    for lo in range(0, len(claims), chunk):
        part = claims[lo:lo + chunk]
        windows = [evidence_windows(c.source, OLD["max_window_chars"], OLD["window_sentences"], OLD["window_stride"])
                   for c in part]
        pairs, spans = [], []
        for c, w in zip(part, windows):
            vectors = embedder.encode([c.claim] + w)
            chosen = top_k_windows(vectors[:1], vectors[1:], OLD["top_k"])[0]
            spans.append(len(chosen))
            pairs.extend((w[j], c.claim) for j in chosen)
        probs = np.asarray(nli.predict(pairs))
        at = 0
        for n in spans:
            rows = probs[at:at + n]
            at += n
            ent, con = float(rows[:, 0].max()), float(rows[:, 2].max())
            scores.append(ent)
            verdicts.append("supported" if ent >= OLD["weak_entailment"] else
                            "contradicted" if con >= threshold else "not_enough_info")
    return np.array(scores), verdicts


def _fmt(x) -> str:
    return "  n/a" if x is None or x != x else f"{x:.3f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None, help="first N rows of each set (a quick run)")
    parser.add_argument("--folds", type=int, default=5)
    args = parser.parse_args(argv)

    from cns_core.models.nli import nli_identity

    nli, embedder = warm_models()
    settings = critic_settings("grounding")
    retrieval = RetrievalSettings.from_settings(settings)
    sets = {"scifact": load_scifact(args.limit), "wice": load_wice(args.limit)}
    claims = sets["scifact"] + sets["wice"]
    print(f"NLI {nli_identity(nli)}; {len(sets['scifact'])} SciFact train pairs, {len(sets['wice'])} WiCE dev "
          f"claims; DEVELOPMENT figures (the fusion is fitted on these sets)\n")

    speed: dict[str, dict[str, float]] = {"old": {}, "new": {}}
    old_scores, old_verdicts, features = [], [], []
    for name, part in sets.items():               # each path timed per set, alternating
        embedder_cache_reset(embedder)
        t = time.perf_counter()
        s, v = old_grounding(part, nli, embedder)
        speed["old"][name] = len(part) / (time.perf_counter() - t)
        embedder_cache_reset(embedder)
        t = time.perf_counter()
        x = dev_features(part, nli, embedder, retrieval, int(settings["max_window_chars"]))
        speed["new"][name] = len(part) / (time.perf_counter() - t)
        old_scores.append(s)
        old_verdicts.extend(v)
        features.append(x)
    fusion = fusion_of(settings)                  # read after judging: a refit meanwhile is the one shown
    old_s = np.concatenate(old_scores)
    x_all = np.vstack(features)
    dev = predict_dev(fusion, x_all)
    try:
        cv = cross_validated(x_all, [c.verdict for c in claims], [c.group for c in claims], fusion.features,
                             args.folds)
    except ValueError as exc:                     # a --limit too small for every fold to hold all verdicts
        print(f"cross-validation not possible: {exc}")
        cv = np.full_like(dev, np.nan)

    rule = verdict_rule_of(settings)     # the critic's own labelling of the probabilities
    rows = {"old": (auc_figures(claims, old_s), verdict_accuracy(claims, old_verdicts)),
            "new, dev (fitted here)": (auc_figures(claims, dev[:, 0]),
                                       verdict_accuracy(claims, [rule.decide(p) for p in dev])),
            f"new, {args.folds}-fold CV": (auc_figures(claims, cv[:, 0]),
                                          verdict_accuracy(claims, [rule.decide(p) for p in cv])
                                          if np.isfinite(cv).all() else {})}
    names = list(next(iter(rows.values()))[0])
    width = max(len("AUC " + n) for n in names) + 2
    print(f"{'figure':{width}s}" + "".join(f"{k:>24s}" for k in rows))
    for n in names:
        print(f"{'AUC ' + n:{width}s}" + "".join(f"{_fmt(r[0][n]):>24s}" for r in rows.values()))
    for d in sets:
        print(f"{'verdict accuracy: ' + d:{width}s}" + "".join(f"{_fmt(r[1].get(d)):>24s}" for r in rows.values()))
    for d in sets:
        print(f"{'claims/s: ' + d:{width}s}" + f"{speed['old'][d]:>24.2f}" + f"{speed['new'][d]:>24.2f}"
              + f"{'(same as dev)':>24s}")
    print(f"\nfusion features: {', '.join(fusion.features)}; fitted {fusion.fitted.get('date', '?')} on "
          f"{fusion.fitted.get('data', '?')}; retrieval: {retrieval}")
    print("Verdicts: WiCE partially_supported and not_supported count as not enough information; "
          "SciFact's labels map directly.")
    return 0


def warm_models() -> tuple[Any, Any]:
    """The configured NLI backend and embedder, each called once so loading is not timed."""
    from cns_core.models import get_embedder, get_nli_backend

    nli, embedder = get_nli_backend(), get_embedder()
    nli.predict([("warm up", "warm up")])
    embedder.encode(["warm up"])
    return nli, embedder


def embedder_cache_reset(embedder) -> None:
    """Empty the embedder's text cache so each path pays for embedding its sources (a cold run)."""
    cache = getattr(embedder, "_cache", None)
    if cache is not None:
        with embedder._lock:
            cache.clear()


if __name__ == "__main__":
    sys.exit(main())
