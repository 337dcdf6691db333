"""Fit the grounding fusion on the development sets and write it to config/grounding_fusion.yaml.

Run: ``.venv/bin/python scripts/fit_grounding.py [--limit N] [--folds 5] [--out config/grounding_fusion.yaml]``

The SciFact train claim-abstract pairs of the folds the verifier trains on (its held-out folds
stay out, so ``benchmarks/claim_errors.py`` reads them as held out for the fusion too) and every
WiCE dev claim, each against its whole abstract or page (and with ``--cited`` again against only
the sentences it cites: evidence as short as a user's reference, where BM25's scale shrinks), are
judged with the configured NLI model and retrieval settings
(``config/critics.yaml``, grounding); a multinomial logistic regression maps the per-claim
features to supported / contradicted / not enough information. The contradiction threshold is
chosen with it: the lowest at which at most ``--max-red`` of each set's supported claims read
contradicted in a cross-validation grouped by claim (each claim scored by a fusion fitted on the
other folds). The YAML records the thresholds, the data, the date and that cross-validation's
figures: still development-set figures, since the fusion's few weights, the feature choice and
the threshold were made on these sets.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

import yaml

from cns_core.cli.quiet import offline_and_quiet

offline_and_quiet()

from cns_core.config import PROJECT_ROOT, state_dir  # noqa: E402
from cns_core.critics.common import critic_settings  # noqa: E402
from cns_core.training.grounding_fusion import (auc_figures, cached_dev_features, cross_validated,  # noqa: E402
                                            fit_fusion, fitted_record, in_held_folds, load_scifact, load_wice,
                                            predict_dev, red_badge_threshold, verdict_accuracy)
from cns_core.critics.grounding_judge import RetrievalSettings  # noqa: E402
from cns_core.critics.grounding_verdict import VerdictRule, load_fusion  # noqa: E402

# The features the shipped fusion uses (chosen by cross-validated AUC on the dev sets; README).
DEFAULT_FEATURES = ("entailment", "contradiction", "similarity", "top_entailment", "top_contradiction", "bm25",
                    "bm25_per_token")


def _rounded(figures: dict) -> dict:
    return {k: (None if v is None else round(float(v), 3)) for k, v in figures.items()}


def _figures(claims, rule: VerdictRule, probabilities) -> dict:
    """The AUCs of p(supported) and the verdict accuracy of per-claim verdict probabilities."""
    return {"auc": _rounded(auc_figures(claims, probabilities[:, 0])),
            "verdict_accuracy": _rounded(verdict_accuracy(claims, [rule.decide(p) for p in probabilities]))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None, help="first N rows of each set (a quick run)")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--c", type=float, default=1.0, help="inverse regularisation strength")
    parser.add_argument("--features", nargs="+", default=list(DEFAULT_FEATURES))
    parser.add_argument("--cited", action="store_true",
                        help="also fit on each claim against only the sentences it cites (short evidence)")
    parser.add_argument("--max-red", type=float, default=0.08,
                        help="most of each set's supported claims read contradicted (cross-validated; default 0.08)")
    parser.add_argument("--features-cache", type=Path, default=None,
                        help="keep the judged features here and reuse them (default: <state dir>/grounding_dev_features.npz)")
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / "config" / "grounding_fusion.yaml")
    args = parser.parse_args(argv)

    from cns_core.models import get_embedder, get_nli_backend

    settings = critic_settings("grounding")
    retrieval = RetrievalSettings.from_settings(settings)
    every = [claim for cited in (False, True)[:1 + args.cited]
             for claim in load_scifact(args.limit, cited=cited) + load_wice(args.limit, cited=cited)]
    print(f"judging {len(every)} dev claims ...", file=sys.stderr)
    cache = args.features_cache or state_dir() / "grounding_dev_features.npz"
    x_every = cached_dev_features(every, get_nli_backend(), get_embedder(), retrieval,
                                  int(settings["max_window_chars"]), cache)
    kept = [i for i, c in enumerate(every) if not in_held_folds(c)]   # never fitted on the held-out folds
    claims, x = [every[i] for i in kept], x_every[kept]
    verdicts = [c.verdict for c in claims]
    groups = [c.group for c in claims]
    out_of_fold = cross_validated(x, verdicts, groups, args.features, args.folds, args.c)
    supported_at = VerdictRule().supported
    contradicted_at, red = red_badge_threshold(claims, out_of_fold, args.max_red, supported_at)
    rule = VerdictRule(supported_at, contradicted_at)
    cv_figures = {**_figures(claims, rule, out_of_fold), "supported_called_contradicted": red}
    # the fusion in force, on the same features: the refit's baseline
    shipped = load_fusion()
    print(f"the shipped fusion on these features: "
          f"{_figures(claims, VerdictRule.from_settings(settings, shipped.verdict), predict_dev(shipped, x))}")
    record = fitted_record(claims, args.folds, {**cv_figures, "max_red": args.max_red}, args.c, retrieval)
    fusion = fit_fusion(x, verdicts, args.features, args.c, record)
    fusion = replace(fusion, verdict={"supported": supported_at, "contradicted": contradicted_at})
    if settings.get("verdict"):
        print(f"note: config/critics.yaml grounding.verdict {settings['verdict']} overrides the fitted thresholds")
    header = ("# Grounding fusion: p(verdict) = softmax(coef . features + intercept), written by\n"
              "# scripts/fit_grounding.py (see `fitted`). Features: cns_core/critics/grounding_verdict.py.\n")
    args.out.write_text(header + yaml.safe_dump(fusion.to_mapping(), sort_keys=False), encoding="utf-8")
    print(f"wrote {args.out}; cross-validated: {cv_figures}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
