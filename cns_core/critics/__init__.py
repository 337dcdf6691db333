"""The five critics of the pipeline, one module each, one result type (:mod:`.base`).

``default_critics()`` builds them from ``config/critics.yaml`` in the canonical order
of :data:`~cns_core.critics.base.CRITIC_NAMES`.
"""

from __future__ import annotations

from typing import Any, Mapping

from cns_core.critics.base import CRITIC_NAMES, Critic, CriticContext, CriticResult, Issue
from cns_core.critics.bias import BiasCritic
from cns_core.critics.causal import CausalCritic
from cns_core.critics.grounding import GroundingCritic
from cns_core.critics.logic import LogicCritic
from cns_core.critics.novelty import NoveltyCritic

__all__ = [
    "CRITIC_NAMES", "Critic", "CriticContext", "CriticResult", "Issue",
    "GroundingCritic", "LogicCritic", "NoveltyCritic", "CausalCritic", "BiasCritic",
    "CRITIC_CLASSES", "default_critics",
]

CRITIC_CLASSES = {cls.name: cls for cls in (GroundingCritic, LogicCritic, NoveltyCritic, CausalCritic, BiasCritic)}


def default_critics(overrides: Mapping[str, Mapping[str, Any]] | None = None) -> list[Critic]:
    """The five built-in critics; ``overrides`` maps a critic name to settings merged over the YAML."""
    overrides = overrides or {}
    unknown = set(overrides) - set(CRITIC_CLASSES)
    if unknown:
        raise ValueError(f"critic overrides: unknown critic(s) {sorted(unknown)} (known: {', '.join(CRITIC_NAMES)})")
    return [CRITIC_CLASSES[name](overrides.get(name)) for name in CRITIC_NAMES]
