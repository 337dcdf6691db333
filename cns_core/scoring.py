"""Weighting critic results into a Trust Score: pure functions, no critic is run here.

Moving a weight slider in the dashboard calls :func:`weigh` on cached results,
so it must stay cheap and side-effect free.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping

from cns_core.config import ConfigError, load_config
from cns_core.critics.base import CRITIC_NAMES, CriticResult, in_critic_order

__all__ = ["WeightedScore", "weigh", "normalise", "load_profiles", "blend", "parse_weights", "incomplete_note"]


@dataclass(frozen=True)
class WeightedScore:
    """The weight-normalised sum and how each critic contributed to it.

    ``weights`` are the normalised weights actually used (failed critics get 0);
    ``left_out`` names critics whose weight was redistributed because they failed.
    """

    trust_score: float
    weights: dict[str, float]
    contributions: dict[str, float]
    left_out: tuple[str, ...] = ()
    requested: dict[str, float] = field(default_factory=dict)

    @property
    def redistributed(self) -> bool:
        return bool(self.left_out)


def incomplete_note(failed: Iterable[str]) -> str:
    """How an incomplete Trust Score is marked everywhere: ``incomplete: grounding, logic failed``.

    A Trust Score is incomplete when any critic failed or timed out: the weights of the rest
    were renormalised, so the number is not the full score. Empty when nothing failed.
    """
    names = in_critic_order(failed)
    return f"incomplete: {', '.join(names)} failed" if names else ""


def normalise(weights: Mapping[str, float]) -> dict[str, float]:
    """Scale non-negative weights to sum to 1 (all-zero stays all-zero)."""
    bad = {k: v for k, v in weights.items() if v < 0}
    if bad:
        raise ValueError(f"weights must not be negative: {bad}")
    total = float(sum(weights.values()))
    return {k: (float(v) / total if total > 0 else 0.0) for k, v in weights.items()}


def weigh(results: Mapping[str, CriticResult], weights: Mapping[str, float]) -> WeightedScore:
    """Trust Score = sum(w_i * score_i) / sum(w_i) over critics that succeeded.

    A failed critic's weight is dropped and the rest renormalised, so a broken
    model lowers confidence in the breakdown, never the score itself.
    """
    usable = {name: w for name, w in weights.items() if name in results and results[name].ok}
    left_out = tuple(name for name, w in weights.items() if w > 0 and name not in usable)
    norm = normalise(usable) if usable else {}
    contributions = {name: norm[name] * results[name].score for name in norm}
    used = {name: norm.get(name, 0.0) for name in weights}
    return WeightedScore(trust_score=float(sum(contributions.values())), weights=used,
                         contributions=contributions, left_out=left_out, requested=dict(weights))


def load_profiles() -> dict[str, dict[str, float]]:
    """Named weight profiles from ``config/profiles.yaml``, each over all five critics."""
    raw = load_config("profiles").get("profiles", {})
    profiles: dict[str, dict[str, float]] = {}
    for name, weights in raw.items():
        if not isinstance(weights, dict):
            raise ConfigError(f"profiles.yaml: profiles.{name}: expected a mapping of critic to weight")
        unknown = set(weights) - set(CRITIC_NAMES)
        if unknown:
            raise ConfigError(f"profiles.yaml: profiles.{name}: unknown critic(s) {sorted(unknown)}")
        profiles[name] = {c: float(weights.get(c, 0.0)) for c in CRITIC_NAMES}
    return profiles


def blend(a: Mapping[str, float], b: Mapping[str, float], t: float) -> dict[str, float]:
    """Linear blend ``(1-t)*a + t*b`` of two profiles, t in [0, 1], normalised."""
    if not 0.0 <= t <= 1.0:
        raise ValueError(f"blend factor t must be between 0 and 1 (got {t})")
    names = list(dict.fromkeys([*a, *b]))
    return normalise({n: (1 - t) * a.get(n, 0.0) + t * b.get(n, 0.0) for n in names})


def parse_weights(text: str) -> dict[str, float]:
    """Parse ``grounding=0.5,logic=0.3`` (command line); errors name the bad item."""
    weights: dict[str, float] = {}
    for item in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep:
            raise ValueError(f"--weights: {item!r} is not NAME=VALUE")
        if name not in CRITIC_NAMES:
            raise ValueError(f"--weights: unknown critic {name!r} (known: {', '.join(CRITIC_NAMES)})")
        try:
            weights[name] = float(value)
        except ValueError:
            raise ValueError(f"--weights: {name}={value!r} is not a number") from None
        if weights[name] < 0:
            raise ValueError(f"--weights: {name} must not be negative")
    if not weights:
        raise ValueError("--weights: no weights given")
    return weights
