"""One results-table row per SNO: what the in-process and the Ray engines both write."""

from __future__ import annotations

import json
import math
from typing import Any, Mapping

from cns_core.critics.base import CRITIC_NAMES, CriticResult, abstentions, failures
from cns_core.meta.conflicts import detect_conflicts, ok_scores
from cns_core.scoring import weigh
from cns_core.sno import SNO

__all__ = ["evaluation_row", "error_row"]


def evaluation_row(results: Mapping[str, CriticResult], sno: SNO, file: str, fingerprint: str,
                   profiles: Mapping[str, Mapping[str, float]]) -> dict[str, Any]:
    """One table row from a pipeline's critic results (pure: no critic is run)."""
    row: dict[str, Any] = {"file": file, "sno_id": sno.id, "title": sno.title, "content_hash": sno.content_hash(),
                           "config_fingerprint": fingerprint, "error": ""}
    for name, weights in profiles.items():
        row[f"trust_{name}"] = weigh(results, weights).trust_score
    for name in (*CRITIC_NAMES, *sorted(set(results) - set(CRITIC_NAMES))):
        result = results.get(name)
        row[f"score_{name}"] = result.score if result is not None and result.ok else math.nan
    conflicts = detect_conflicts(ok_scores(results))
    row["conflicts"] = json.dumps([{"higher": c.higher, "lower": c.lower, "delta": c.delta} for c in conflicts])
    row["n_conflicts"] = len(conflicts)
    failed = failures(results)
    row["complete"] = not failed      # an incomplete Trust Score is marked, never passed off as full
    row["incomplete_critics"] = ",".join(failed)
    row["failures"] = json.dumps(failed)
    # critics with nothing to judge: no score (NaN above), their weight went to the others; not a failure
    row["not_applicable"] = ",".join(abstentions(results))
    row["issues"] = json.dumps({n: list(r.issue_codes) for n, r in results.items() if r.issue_codes})
    row["n_claims"], row["n_relations"], row["n_evidence"] = len(sno.claims), len(sno.relations), len(sno.evidence)
    return row


def error_row(file: str, error: str, sno: SNO | None = None, fingerprint: str = "") -> dict[str, Any]:
    return {"file": file, "sno_id": sno.id if sno else "", "title": sno.title if sno else "",
            "content_hash": sno.content_hash() if sno else "", "config_fingerprint": fingerprint, "error": error,
            "complete": False, "incomplete_critics": ""}
