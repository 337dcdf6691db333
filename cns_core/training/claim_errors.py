"""A development set for summaries and answers: true claims, and the same claims with one injected error.

A summary or an answer is wrong in small ways: a changed number, date, name or quantity word, or a
fact the source never states added to one it does. Each *supported* claim of a development set
(WiCE dev's ``supported`` claims against their cited page; SciFact's ``SUPPORT`` claims of the
held-out folds against their abstract) is kept as it is (it should be judged supported) and once
with one error injected (it should not). The error kinds take turns over the claims, each claim
getting the first kind in turn that it admits, so the kinds stay balanced. Everything is
deterministic: the same data gives the same set, and nothing is written anywhere.

The grounding critic's AUC of p(supported), originals against corrupted claims, is the figure
(``benchmarks/claim_errors.py``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from cns_core.config import data_dir
from cns_core.training.fact_swaps import ERROR_KINDS, inject_error
from cns_core.training.grounding_fusion import DevClaim
from cns_core.training.nli_data import SCIFACT_FOLDS, SCIFACT_HELD_FOLDS, scifact_fold

__all__ = ["ERROR_KINDS", "SCIFACT_TRAINING_FOLDS", "inject_error", "claim_error_set", "scifact_supported_claims",
           "supported_claims"]

SCIFACT_TRAINING_FOLDS = tuple(f for f in range(SCIFACT_FOLDS) if f not in SCIFACT_HELD_FOLDS)


def _json_rows(path: Path) -> list[dict]:
    if not path.is_file():
        raise FileNotFoundError(f"{path}: not found (set CNS_DATA_DIR to the shared data folder)")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def supported_claims(root: Path | None = None, scifact_folds: int = SCIFACT_FOLDS,
                     scifact_held_folds: Sequence[int] = SCIFACT_HELD_FOLDS) -> list[DevClaim]:
    """WiCE dev's supported claims and SciFact's SUPPORT claims of the held-out folds, with their sources."""
    root = root or data_dir()
    wice = [DevClaim("wice", f"wice-{r['meta']['id']}", "original", "supported", r["claim"].strip(),
                     " ".join(s.strip() for s in r["evidence"] if s.strip()))
            for r in _json_rows(root / "wice_dev" / "claim_dev.jsonl") if r["label"] == "supported"]
    return wice + scifact_supported_claims(root, scifact_folds, scifact_held_folds)


def scifact_supported_claims(root: Path | None = None, folds: int = SCIFACT_FOLDS,
                             wanted_folds: Sequence[int] = SCIFACT_HELD_FOLDS) -> list[DevClaim]:
    """SciFact's SUPPORT claims of ``wanted_folds`` (by claim) with their abstracts. The training folds (2-4
    of 5) make the development set of claims against long sources: the verifier trains on those claims as
    they are, never on their injected errors, so a round that forgets how to catch an error shows there
    before the held-out WiCE and SciFact folds are looked at."""
    root = root or data_dir()
    return [DevClaim("scifact", f"scifact-{r['claim_id']}-{r['doc_id']}", "original", "supported",
                     r["claim"].strip(), " ".join(r["abstract"]))
            for r in _json_rows(root / "scifact_train" / "train_claim_doc_pairs.jsonl")
            if r["label"] == "SUPPORT" and scifact_fold(r["claim_id"], folds) in wanted_folds]


def claim_error_set(claims: Sequence[DevClaim] | None = None, limit: int | None = None) -> list[DevClaim]:
    """Each supported claim, then the same claim with one injected error (``label`` = the error kind,
    ``verdict`` = not_enough_info). Kinds take turns per dataset; a claim that admits none is left out.
    ``limit``: the first N claims of each dataset."""
    claims = list(supported_claims() if claims is None else claims)
    out: list[DevClaim] = []
    for dataset in dict.fromkeys(c.dataset for c in claims):
        part = [c for c in claims if c.dataset == dataset][:limit]
        turn = 0
        for i, claim in enumerate(part):
            donor = part[(i + len(part) // 2) % len(part)].claim      # a claim about something else
            for step in range(len(ERROR_KINDS)):
                kind = ERROR_KINDS[(turn + step) % len(ERROR_KINDS)]
                changed = inject_error(claim.claim, kind, donor)
                if changed:
                    out.append(claim)
                    out.append(DevClaim(claim.dataset, claim.group, kind, "not_enough_info", changed, claim.source))
                    turn = (turn + step + 1) % len(ERROR_KINDS)
                    break
    return out
