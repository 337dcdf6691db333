"""Bias critic: perspective balance, loaded language, diversity of sources (1.0 = no bias found).

* **balance**: opposing claims are those arguing against the hypothesis (side -1 in
  :func:`~cns_core.critics.structure.claim_sides`) or marked ``role: opponent``. None at
  all gives ``one_sided_balance``; otherwise balance = 1 - answered_bonus x the share of
  opposing claims that nothing attacks back.
* **language**: 1 - loaded_penalty x share of claims with loaded wording
  - absolutist_penalty x share with absolutist wording (``cns_core/data/bias_lexicon.yaml``).
* **sources**: normalised Shannon entropy of the evidence sources, H / log(n evidence),
  1.0 when every item has its own source, 0 when one source provides all. Sources are
  compared lower-cased with punctuation dropped; an empty source counts as one "unknown".
  Skipped (its weight redistributed) when there is no evidence, which is grounding's concern.

Score = weighted mean of the components present.
"""

from __future__ import annotations

import math
import re
from collections import Counter

from cns_core.critics import structure
from cns_core.critics.base import CriticContext, CriticResult, Issue
from cns_core.critics.common import ConfiguredCritic
from cns_core.critics.cues import load_cues
from cns_core.sno import SNO

__all__ = ["BiasCritic", "source_diversity"]


def _source_key(source: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", source.lower())) or "unknown"


def source_diversity(sources: list[str]) -> float:
    """Normalised entropy of the source distribution over ``len(sources)`` evidence items."""
    n = len(sources)
    if n < 2:
        return 0.0
    counts = Counter(_source_key(s) for s in sources).values()
    entropy = sum((c / n) * math.log(n / c) for c in counts)    # never -0.0 ("sources -0.00" for one source)
    return entropy / math.log(n)


class BiasCritic(ConfiguredCritic):
    """Balance of perspectives, wording, and source diversity."""

    name = "bias"

    def evaluate(self, sno: SNO, context: CriticContext | None = None) -> CriticResult:
        s = self.settings
        lexicon = load_cues(str(s["lexicon_file"]))
        issues: list[Issue] = []
        components: dict[str, float] = {}

        sides = structure.claim_sides(sno)
        opposing = [c.id for c in sno.claims if sides.get(c.id) == -1 or c.role == "opponent"]
        attacked = {r.target for r in sno.relations if r.kind == "attack"}
        unanswered = [c for c in opposing if c not in attacked]
        if not opposing:
            components["balance"] = float(s["one_sided_balance"])
            issues.append(Issue("one_sided", "No claim argues against the hypothesis: the opposing view is "
                                "missing.", (sno.hypothesis,), "medium"))
        else:
            components["balance"] = 1.0 - float(s["answered_bonus"]) * len(unanswered) / len(opposing)
            if unanswered:
                issues.append(Issue("unanswered_opposition", f"Opposing claim(s) {', '.join(unanswered)} are "
                                    "raised but not answered.", tuple(unanswered), "low"))

        loaded = {c.id: lexicon.find("loaded", c.text) for c in sno.claims}
        absolutist = {c.id: lexicon.find("absolutist", c.text) for c in sno.claims}
        loaded_ids = [k for k, v in loaded.items() if v]
        absolutist_ids = [k for k, v in absolutist.items() if v]
        n = len(sno.claims)
        loaded_share, absolutist_share = len(loaded_ids) / n, len(absolutist_ids) / n
        components["language"] = max(0.0, 1.0 - float(s["loaded_penalty"]) * loaded_share
                                     - float(s["absolutist_penalty"]) * absolutist_share)
        if loaded_ids:
            words = sorted({w for k in loaded_ids for w in loaded[k]})
            issues.append(Issue("loaded_language", f"Loaded wording in {len(loaded_ids)} of {n} claims: "
                                f"{', '.join(words)}.", tuple(loaded_ids), "medium"))
        if absolutist_ids:
            words = sorted({w for k in absolutist_ids for w in absolutist[k]})
            issues.append(Issue("absolutist_language", f"Absolutist wording in {len(absolutist_ids)} of {n} "
                                f"claims: {', '.join(words)}.", tuple(absolutist_ids), "medium"))

        sources = [e.source for e in sno.evidence]
        if sources:
            components["sources"] = source_diversity(sources)
            if components["sources"] < float(s["low_source_diversity"]):
                distinct = len({_source_key(x) for x in sources})
                issues.append(Issue("low_source_diversity", f"{len(sources)} evidence item(s) from {distinct} "
                                    f"source(s).", tuple(e.id for e in sno.evidence), "medium"))

        weights = {k: float(v) for k, v in s["weights"].items() if k in components}
        total = sum(weights.values())
        score = sum(weights[k] * components[k] for k in weights) / total if total > 0 else 1.0
        parts = ", ".join(f"{k} {v:.2f}" for k, v in components.items())
        return CriticResult(
            critic=self.name, score=float(min(1.0, max(0.0, score))), confidence=float(s["confidence"]),
            explanation=f"Bias {score:.3f} (1.0 = none found): {parts}.",
            sub_scores=dict(components),
            evidence={"opposing": opposing, "unanswered": unanswered, "loaded": {k: loaded[k] for k in loaded_ids},
                      "absolutist": {k: absolutist[k] for k in absolutist_ids},
                      "sources": dict(Counter(_source_key(x) for x in sources))},
            issues=tuple(issues))
