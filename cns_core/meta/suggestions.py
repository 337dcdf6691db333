"""Actionable suggestions from the issue codes of weak critics and from conflicts (spec 4.4).

Codes map to advice through the ``suggestions`` table of ``config/meta.yaml``;
a weak critic whose code is not in the table, or that reports no issue at all,
gets its critic's fallback advice, so a low score never goes unexplained.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from cns_core.critics.base import CRITIC_NAMES, CriticResult
from cns_core.meta.conflicts import Conflict
from cns_core.meta.settings import MetaConfig

__all__ = ["advice_for", "generate_suggestions"]


def advice_for(critic: str, result: CriticResult, config: MetaConfig) -> list[str]:
    """The advice for one critic's issues, in the order the critic reported them, deduplicated."""
    fallback = config.fallback_suggestions.get(critic, f"Improve the {critic} score")
    advice = [config.suggestions.get(code, fallback) for code in result.issue_codes] or [fallback]
    return list(dict.fromkeys(advice))


def _weakest_first(results: Mapping[str, CriticResult]) -> list[str]:
    rank = {name: i for i, name in enumerate(CRITIC_NAMES)}
    return sorted(results, key=lambda n: (results[n].score, rank.get(n, len(rank)), n))


def generate_suggestions(results: Mapping[str, CriticResult], conflicts: Iterable[Conflict],
                         config: MetaConfig) -> list[str]:
    """Advice for every critic scoring below ``suggestion_below`` (weakest first), then one
    ``"Address: <interpretation>"`` per conflict; repeats are dropped, first occurrence kept.

    Failed critics give no advice about the SNO: their failure is reported separately.
    """
    weak = {n: r for n, r in results.items() if r.ok and r.score < config.suggestion_below}
    out = [text for name in _weakest_first(weak) for text in advice_for(name, weak[name], config)]
    out += [f"Address: {c.interpretation}" for c in conflicts]
    return list(dict.fromkeys(out))
