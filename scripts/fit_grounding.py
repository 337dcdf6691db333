"""Fit the grounding fusion on the development sets and write it to config/grounding_fusion.yaml.

Run: ``.venv/bin/python scripts/fit_grounding.py [--limit N] [--folds 5] [--out config/grounding_fusion.yaml]``

Every SciFact train claim-abstract pair and every WiCE dev claim is judged with the configured
NLI model and retrieval settings (``config/critics.yaml``, grounding); a multinomial logistic
regression maps the per-claim features to supported / contradicted / not enough information.
The YAML records the data, the date and the figures of a cross-validation grouped by claim
(each claim scored by a fusion fitted on the other folds). Those are still development-set
figures: the fusion's few weights and the feature choice were made on these sets.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

from cns_core.cli.quiet import offline_and_quiet

offline_and_quiet()

from cns_core.config import PROJECT_ROOT, state_dir  # noqa: E402
from cns_core.critics.common import critic_settings  # noqa: E402
from cns_core.training.grounding_fusion import (auc_figures, cached_dev_features, cross_validated,  # noqa: E402
                                            fit_fusion, fitted_record, load_scifact, load_wice, predict_dev,
                                            verdict_accuracy)
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
    parser.add_argument("--features-cache", type=Path, default=None,
                        help="keep the judged features here and reuse them (default: <state dir>/grounding_dev_features.npz)")
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / "config" / "grounding_fusion.yaml")
    args = parser.parse_args(argv)

    from cns_core.models import get_embedder, get_nli_backend

    settings = critic_settings("grounding")
    retrieval = RetrievalSettings.from_settings(settings)
    claims = load_scifact(args.limit) + load_wice(args.limit)
    print(f"judging {len(claims)} dev claims ...", file=sys.stderr)
    cache = args.features_cache or state_dir() / "grounding_dev_features.npz"
    x = cached_dev_features(claims, get_nli_backend(), get_embedder(), retrieval, int(settings["max_window_chars"]),
                            cache)
    verdicts = [c.verdict for c in claims]
    groups = [c.group for c in claims]
    rule = VerdictRule.from_settings(settings)        # labelled as the critic labels them
    cv_figures = _figures(claims, rule, cross_validated(x, verdicts, groups, args.features, args.folds, args.c))
    # the fusion in force, on the same features: the refit's baseline
    print(f"the shipped fusion on these features: {_figures(claims, rule, predict_dev(load_fusion(), x))}")
    record = fitted_record(claims, args.folds, cv_figures, args.c, retrieval)
    fusion = fit_fusion(x, verdicts, args.features, args.c, record)
    header = ("# Grounding fusion: p(verdict) = softmax(coef . features + intercept), written by\n"
              "# scripts/fit_grounding.py (see `fitted`). Features: cns_core/critics/grounding_verdict.py.\n")
    args.out.write_text(header + yaml.safe_dump(fusion.to_mapping(), sort_keys=False), encoding="utf-8")
    print(f"wrote {args.out}; cross-validated: {cv_figures}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
