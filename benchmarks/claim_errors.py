"""NLI models side by side on what they are retrained for: claims with injected errors, scientific claims
and held-out NLI, one column per model.

    .venv/bin/python benchmarks/claim_errors.py                                  # the configured model
    .venv/bin/python benchmarks/claim_errors.py --model models/nli-minilm-l6-new # ... beside a candidate
    .venv/bin/python benchmarks/claim_errors.py --nli-limit 0 --limit 40         # a quick run
    ... --cache DIR     keeps each model's outputs (keyed by its weights): a model is measured once

Sets (``CNS_DATA_DIR``), all held out by the verifier's recipe (``config/verifier_train.yaml``; the shipped
stage 13 trained on SNLI dev in its generic stages, docs/history.md):

* **claim errors** (``cns_core.training.claim_errors``): WiCE dev supported claims and SciFact
  held-out-fold SUPPORT claims against their sources, each also with one injected error (a changed
  number, date, name or quantity word, or an added fact). Figure: the grounding critic's AUC of
  p(supported), originals against corrupted claims, overall, per set and per kind; and the same AUC
  of the highest p(entailment) over the chosen passages (the NLI alone, no fusion). ``--limit``:
  the first N supported claims of each set (default 60; 0: all 115 + 160).
* **SciFact held-out folds** (claims hashed by id, folds 0 and 1): SUPPORT vs CONTRADICT and SUPPORT vs
  NOT_ENOUGH_INFO AUC of the grounding critic (claim against the whole abstract) and of the NLI on (rationale sentences, claim)
  pairs (score p(entailment) - p(contradiction)).
* **Claims against the sentences they cite** (WiCE dev's supported claims against the first set of
  sentences annotated as supporting them; SciFact's held-out SUPPORT and CONTRADICT claims against their
  rationale sentences): how many the critic calls supported, and how many contradicted. The fusion was
  fitted on the WiCE claims in both forms (development figures), never on SciFact's held-out folds.
* **NLI**: accuracy on MultiNLI dev-mismatched and SNLI dev (a seeded sample of ``--nli-limit``
  pairs each). The shipped model was trained on SNLI dev, so its SNLI figure is not held out.
* **Numbers in other slots** (``cns_core.training.other_slots``): two sentences of one held-out true document
  (SciFact's held-out abstracts, BUMP's and SummEdits' fold 0, WiCE dev's cited pages) that share their topic
  and each give their own number. A true document does not contradict itself; figure: the share the NLI flags
  as contradicted (p(contradiction) at the model's threshold), the false alarm the Logic critic raises
  between two claims of one text.
* **Red badges** (issue 67: a red badge that is right first): the critic's verdict (its
  ``verdict`` thresholds) on the true claims (called supported, called contradicted), on each kind of
  injected error (called contradicted; an added fact should not be, the source never mentions it),
  and on SciFact's SUPPORT abstracts (called contradicted) beside contradiction precision and
  recall; the NLI's own flag (p(contradiction) at the model's threshold) on the rationale and NLI
  pairs the same way.

The grounding critic runs with the configured fusion, which was fitted on the shipped model's
features: a candidate's fused figures are measured before any refit, so its NLI-alone rows are the
fairer comparison until the fusion is refitted for it (``scripts/fit_grounding.py``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Callable

from cns_core.cli.quiet import offline_and_quiet

offline_and_quiet()

import numpy as np  # noqa: E402

from cns_core.config import data_dir  # noqa: E402
from cns_core.training.claim_errors import ERROR_KINDS, claim_error_set, supported_claims  # noqa: E402
from cns_core.critics.common import contradiction_threshold, critic_settings  # noqa: E402
from cns_core.critics.grounding import fusion_of, verdict_rule_of  # noqa: E402
from cns_core.training.grounding_fusion import (DevClaim, dev_features, in_held_folds, load_scifact,  # noqa: E402
                                              load_wice, predict_dev)
from cns_core.critics.grounding_judge import RetrievalSettings  # noqa: E402
from cns_core.critics.grounding_verdict import FEATURES  # noqa: E402
from cns_core.models.nli import TransformersNLI, nli_settings, weights_fingerprint  # noqa: E402
from cns_core.training.nli_data import (SCIFACT_FOLDS, SCIFACT_HELD_FOLDS, NLIPairs, read_nli_tsv,  # noqa: E402
                                       read_scifact_pairs, sample_pairs)
from cns_core.training.nli_metrics import red_badge_figures  # noqa: E402
from cns_core.training.other_slots import documents_in, other_slot_pairs  # noqa: E402

FOLDS, HELD_FOLDS = SCIFACT_FOLDS, SCIFACT_HELD_FOLDS      # the verifier's split (in_held_folds reads it too)
NLI_FILES = ("mnli_dev_mismatched.tsv.gz", "snli_dev.tsv.gz")


def auc(positive: np.ndarray, negative: np.ndarray) -> float:
    """ROC AUC of scores (positives should score higher); ties count half."""
    from cns_core.metrics import roc_auc

    return roc_auc(np.r_[positive, negative], np.r_[np.ones(len(positive), bool), np.zeros(len(negative), bool)],
                   missing=float("nan"))


def claim_figures(name: str, claims: list[DevClaim], supported: np.ndarray, entail: np.ndarray,
                  verdicts: np.ndarray, rows: dict[str, float]) -> None:
    """AUC of fused p(supported) and of the NLI's best p(entailment): originals vs corrupted claims; and the
    critic's verdicts: how many true claims read supported and how many read contradicted (a wrong red badge),
    how many corrupted claims read contradicted (an added fact should not: the source never mentions it)."""
    labels = np.array([c.label for c in claims])
    sets = np.array([c.dataset for c in claims])
    groups = [("all", np.ones(len(claims), bool))] + [(d, sets == d) for d in dict.fromkeys(sets)]
    original = labels == "original"
    for group, mask in groups:
        for verdict in ("supported", "contradicted"):
            rows[f"{name} {group}: true claims called {verdict}"] = float(np.mean(verdicts[mask & original] == verdict))
    for kind in ERROR_KINDS:
        rows[f"{name} {kind}: corrupted called contradicted"] = float(np.mean(verdicts[labels == kind] == "contradicted"))
    for score_name, score in (("grounding p(supported)", supported), ("NLI best p(entailment)", entail)):
        for group, mask in groups:
            rows[f"{name} {group}: {score_name} AUC"] = auc(score[mask & (labels == "original")],
                                                            score[mask & (labels != "original")])
        if score_name.startswith("grounding"):
            for kind in ERROR_KINDS:
                rows[f"{name} {kind}: {score_name} AUC"] = auc(score[labels == "original"], score[labels == kind])


class Cached:
    """Model outputs kept in ``folder`` under a key of the model's weights (their hash) and the inputs, so a model measured once is not run again (the candidate is measured while the shipped
    model's figures are reused). ``folder=None`` keeps nothing."""

    def __init__(self, folder: Path | None, model: str):
        self.folder = folder
        self.model_key = weights_fingerprint(model)

    def __call__(self, inputs: object, compute: Callable[[], np.ndarray]) -> np.ndarray:
        if self.folder is None:
            return compute()
        key = hashlib.blake2b(json.dumps([self.model_key, inputs], default=str).encode(), digest_size=16).hexdigest()
        path = self.folder / f"{key}.npy"
        if path.is_file():
            return np.load(path)
        out = np.asarray(compute())
        self.folder.mkdir(parents=True, exist_ok=True)
        np.save(path, out)
        return out


def other_slot_sets(root: Path) -> dict[str, NLIPairs]:
    """Held-out neutral pairs of sentences with numbers in other slots, per set of documents."""
    folders = {"SciFact held abstracts": "scifact_train/train_claim_doc_pairs.jsonl",
               "BUMP fold 0": "long_answers/bump", "SummEdits fold 0": "long_answers/summedits"}
    documents = {name: documents_in(root / folder, FOLDS, HELD_FOLDS, held=True) for name, folder in folders.items()}
    with (root / "wice_dev" / "claim_dev.jsonl").open(encoding="utf-8") as handle:
        pages = {json.dumps(row["evidence"]): row["evidence"] for row in map(json.loads, handle)}
    documents["WiCE dev pages"] = list(pages.values())
    return {name: other_slot_pairs(docs, 10_000, 29) for name, docs in documents.items()}


def evaluate(nli, embedder, cache: Cached, claims: list[DevClaim], scifact: list[DevClaim],
             scifact_unstated: list[DevClaim], cited: list[DevClaim], rationale_pairs, nli_sets,
             other_slots: dict[str, NLIPairs], settings: dict) -> dict[str, float]:
    retrieval = RetrievalSettings.from_settings(settings)
    fusion = fusion_of(settings)
    max_chars = int(settings["max_window_chars"])
    rows: dict[str, float] = {}

    def features(part: list[DevClaim]) -> np.ndarray:
        inputs = [str(retrieval), max_chars, list(FEATURES), [[c.claim, c.source] for c in part]]
        return cache(inputs, lambda: dev_features(part, nli, embedder, retrieval, max_chars))

    rule = verdict_rule_of(settings)

    def verdicts(probabilities: np.ndarray) -> np.ndarray:
        return np.array([rule.decide(p) for p in probabilities])

    x = features(claims)
    entail = x[:, list(FEATURES).index("entailment")]
    fused = predict_dev(fusion, x)
    claim_figures("claim errors", claims, fused[:, 0], entail, verdicts(fused), rows)

    fused = predict_dev(fusion, features(scifact))
    labels = np.array([c.label for c in scifact])
    rows["SciFact held folds: grounding SUPPORT vs CONTRADICT AUC"] = auc(fused[labels == "SUPPORT", 0],
                                                                          fused[labels == "CONTRADICT", 0])
    for figure, value in red_badge_figures(verdicts(fused) == "contradicted", labels == "SUPPORT",
                                           labels == "CONTRADICT").items():
        rows[f"SciFact held folds: grounding {figure}"] = value
    unstated = predict_dev(fusion, features(scifact_unstated))        # kept apart: the pairs above stay cached
    rows["SciFact held folds: grounding SUPPORT vs NOT_ENOUGH_INFO AUC"] = auc(fused[labels == "SUPPORT", 0],
                                                                               unstated[:, 0])
    rows["SciFact held folds: grounding NOT_ENOUGH_INFO called contradicted"] = float(
        np.mean(verdicts(unstated) == "contradicted"))
    for name, part in (("WiCE supported claims", [c for c in cited if c.dataset.startswith("wice")]),
                       ("SciFact held folds, SUPPORT", [c for c in cited if c.label == "SUPPORT"]),
                       ("SciFact held folds, CONTRADICT", [c for c in cited if c.label == "CONTRADICT"])):
        read = verdicts(predict_dev(fusion, features(part)))
        for verdict in ("supported", "contradicted"):
            rows[f"{name} against the sentences they cite: called {verdict}"] = float(np.mean(read == verdict))
    threshold = contradiction_threshold({}, nli)
    probs = cache(rationale_pairs.pairs, lambda: nli.predict(rationale_pairs.pairs))
    score, gold = probs[:, 0] - probs[:, 2], np.asarray(rationale_pairs.labels)
    rows["SciFact held folds: NLI (rationale, claim) SUPPORT vs CONTRADICT AUC"] = auc(score[gold == 0],
                                                                                      score[gold == 2])
    for figure, value in red_badge_figures(probs[:, 2] >= threshold, gold == 0, gold == 2).items():
        rows[f"SciFact held folds: NLI (rationale, claim) {figure}"] = value
    for name, data in other_slots.items():
        probs = cache(data.pairs, lambda: nli.predict(data.pairs))
        rows[f"numbers in other slots, {name} ({len(data)}): NLI called contradicted"] = float(
            np.mean(probs[:, 2] >= threshold))
    for name, data in nli_sets.items():
        probs = cache(data.pairs, lambda: nli.predict(data.pairs))
        gold = np.asarray(data.labels)
        rows[f"{name}: accuracy"] = float(np.mean(probs.argmax(1) == gold))
        for figure, value in red_badge_figures(probs[:, 2] >= threshold, gold == 0, gold == 2).items():
            rows[f"{name}: {figure}"] = value
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", action="append", default=[], help="a model folder to compare (repeatable)")
    parser.add_argument("--no-configured", action="store_true", help="leave out the configured model")
    parser.add_argument("--limit", type=int, default=60, help="first N supported claims of each set (0: all)")
    parser.add_argument("--nli-limit", type=int, default=1000, help="pairs sampled from each NLI file (0: none)")
    parser.add_argument("--cache", type=Path, default=None,
                        help="folder keeping each model's outputs (keyed by its weights and the inputs)")
    args = parser.parse_args(argv)

    from cns_core.models import get_embedder

    _, cfg = nli_settings("transformers")
    section = cfg.get("transformers", {})
    models = ([] if args.no_configured else [section.get("model", "models/nli-minilm-l6")]) + args.model
    root = data_dir()
    claims = claim_error_set(supported_claims(root, FOLDS, HELD_FOLDS), args.limit or None)
    held = [c for c in load_scifact(root=root) if in_held_folds(c)]
    scifact = [c for c in held if c.label in ("SUPPORT", "CONTRADICT")]
    scifact_unstated = [c for c in held if c.label == "NOT_ENOUGH_INFO"]
    cited = ([c for c in load_wice(root=root, cited=True) if c.label == "supported"]
             + [c for c in load_scifact(root=root, cited=True) if c.label in ("SUPPORT", "CONTRADICT")
                and in_held_folds(c)])
    rationale = read_scifact_pairs(root / "scifact_train" / "train_claim_doc_pairs.jsonl", folds=FOLDS,
                                   held_folds=HELD_FOLDS, held=True)
    rationale = rationale.subset([i for i, label in enumerate(rationale.labels) if label != 1])
    nli_sets = {name.split(".")[0]: sample_pairs(read_nli_tsv(root / "nli_train" / name), args.nli_limit, 29)
                for name in NLI_FILES} if args.nli_limit else {}
    other_slots = other_slot_sets(root)
    print(f"{len(claims)} claims with injected errors (half originals), {len(scifact)} SciFact held-out "
          f"SUPPORT/CONTRADICT claim-abstract pairs (and {len(scifact_unstated)} NOT_ENOUGH_INFO), "
          f"{len(cited)} WiCE and SciFact claims against their cited sentences, {len(rationale)} rationale pairs; "
          + ", ".join(f"{k} {len(v)} pairs" for k, v in nli_sets.items()))
    embedder = get_embedder()
    settings = critic_settings("grounding")
    columns: dict[str, dict[str, float]] = {}
    for model in models:
        nli = TransformersNLI(model, batch_size=int(section.get("batch_size", 32)),
                              max_length=int(section.get("max_length", 256)), device="cpu")
        columns[Path(model).name] = evaluate(nli, embedder, Cached(args.cache, model), claims, scifact,
                                             scifact_unstated, cited, rationale,
                                             nli_sets, other_slots, settings)
    names = list(dict.fromkeys(n for col in columns.values() for n in col))
    width = max(len(n) for n in names) + 2
    print(f"{'figure':<{width}}" + "".join(f"{m:>24}" for m in columns))
    for name in names:
        print(f"{name:<{width}}" + "".join(f"{col.get(name, float('nan')):>24.3f}" for col in columns.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
