"""Weighting critic results into a Trust Score: pure functions, no critic is run here.

Moving a weight slider in the dashboard calls :func:`weigh` on cached results,
so it must stay cheap and side-effect free.

A weighted average lets strong scores elsewhere hide claims that the SNO's own evidence
contradicts (Vitamin C: 5 of 7 claims contradicted, yet a weighted sum of 0.611). So contradiction is a cap,
not a term: while grounding carries weight, the Trust Score is at most the share of claims
that are *not* contradicted (:class:`ContradictionCap`), read from the Grounding critic's one
verdict per claim. An SNO mostly contradicted by its evidence stays below 0.5 whatever the
other critics say or how the weights are set, as long as grounding counts at all.

One rounding rule (:data:`TRUST_DIGITS`, :data:`SCORE_DIGITS`): the Trust Score and what moves it
(contributions, gains) are shown with 3 decimals, critic scores with 2. A gap between two critic scores is
computed from the unrounded scores and only rounded to be shown (Logic 0.155 and Novelty 0.905 are 0.750
apart, not the 0.76 between 0.15 and 0.91); where a gap is quoted beside its two scores, all three are shown
with :data:`GAP_DIGITS` decimals so the numbers add up. The gate compares the Trust Score as shown, so a
score shown as 0.700 never fails a 0.70 threshold.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping

from cns_core.config import ConfigError, load_config
from cns_core.critics.base import CRITIC_NAMES, CriticResult, in_critic_order

__all__ = ["WeightedScore", "ContradictionCap", "contradiction_cap", "weigh", "normalise", "load_profiles", "blend",
           "parse_weights", "incomplete_note", "abstention_note", "TRUST_DIGITS", "SCORE_DIGITS", "trust_shown", "score_shown",
           "score_gap", "GAP_DIGITS", "SCORING_VERSION"]

TRUST_DIGITS = 3      # the Trust Score, contributions and gains: 0.554
SCORE_DIGITS = 2      # a critic's score: 0.91
GAP_DIGITS = 3        # a gap quoted beside its two scores: Novelty 0.905 vs Logic 0.155 (gap 0.750)
SCORING_VERSION = 3   # 3: critics with nothing to judge abstain; 2: contradicted claims cap the Trust Score
                      # (a results table made before is re-scored)


def trust_shown(value: float) -> float:
    """A Trust Score quantity as it is shown (and compared: the gate compares what it shows)."""
    return round(float(value), TRUST_DIGITS)


def score_shown(value: float) -> float:
    """A critic score as it is shown."""
    return round(float(value), SCORE_DIGITS)


def score_gap(a: float, b: float) -> float:
    """The gap between two critic scores, from the unrounded scores (0.905 and 0.155: 0.750)."""
    return abs(float(a) - float(b))


@dataclass(frozen=True)
class ContradictionCap:
    """Claims of the SNO that its own evidence contradicts, and the ceiling they put on the Trust Score.

    ``limit`` = 1 - contradicted / claims: with 5 of 7 claims contradicted nothing above 0.286 is
    believable, with 1 of 7 the ceiling 0.857 rarely bites. ``ids`` name the contradicted claims.
    """

    contradicted: int
    claims: int
    ids: tuple[str, ...] = ()

    @property
    def limit(self) -> float:
        return 1.0 - self.contradicted / self.claims if self.claims else 1.0

    def describe(self) -> str:
        """``5 of 7 claims are contradicted by the SNO's own evidence``."""
        verb = "is" if self.contradicted == 1 else "are"
        return f"{self.contradicted} of {self.claims} claims {verb} contradicted by the SNO's own evidence"


def contradiction_cap(results: Mapping[str, CriticResult]) -> ContradictionCap | None:
    """The cap from the Grounding critic's verdicts (None when it failed, gave none, or none is contradicted)."""
    from cns_core.critics.grounding_verdict import claim_verdicts

    verdicts = claim_verdicts(results)
    ids = tuple(cid for cid, g in verdicts.items() if g.verdict == "contradicted")
    return ContradictionCap(len(ids), len(verdicts), ids) if ids else None


@dataclass(frozen=True)
class WeightedScore:
    """The Trust Score, the weight-normalised sum it comes from and how each critic contributed.

    ``weights`` are the normalised weights actually used (failed and abstaining critics get 0);
    ``left_out`` names critics whose weight was redistributed because they failed;
    ``not_applicable`` maps each weighted critic that abstained (nothing to judge) to why: its weight
    went to the critics that judged, and the score is complete all the same;
    ``cap`` the contradicted claims that bound the score while grounding carries weight
    (``trust_score = min(weighted_sum, cap.limit)``; None when none is contradicted or
    grounding carries no weight).
    """

    trust_score: float
    weights: dict[str, float]
    contributions: dict[str, float]
    left_out: tuple[str, ...] = ()
    requested: dict[str, float] = field(default_factory=dict)
    weighted_sum: float | None = None
    cap: ContradictionCap | None = None
    not_applicable: dict[str, str] = field(default_factory=dict)

    @property
    def redistributed(self) -> bool:
        return bool(self.left_out or self.not_applicable)

    @property
    def judged_nothing(self) -> bool:
        """True when no weighted critic judged: there is no Trust Score to speak of (it reads 0)."""
        return not any(self.weights.values())

    def abstention_note(self, label: Callable[[str], str] = str.capitalize) -> str:
        """``not applicable: Causal (no causal claim to judge); its weight 0.10 went to the critics that judged``
        (empty when every weighted critic judged): shown wherever the score is."""
        return abstention_note(self.not_applicable, self.requested, label)

    @property
    def capped(self) -> bool:
        """True when the contradicted claims, not the weighted sum, set the Trust Score."""
        return self.cap is not None and self.weighted_sum is not None and self.weighted_sum > self.cap.limit

    def cap_note(self) -> str:
        """Why the Trust Score is lower than the weighted sum (empty when it is not): shown wherever the score is."""
        if not self.capped:
            return ""
        assert self.cap is not None and self.weighted_sum is not None
        return (f"capped at {trust_shown(self.cap.limit):.3f}: {self.cap.describe()} "
                f"(weighted sum {trust_shown(self.weighted_sum):.3f})")


def abstention_note(abstained: Mapping[str, str], requested: Mapping[str, float],
                    label: Callable[[str], str] = str.capitalize) -> str:
    """How abstaining critics are marked everywhere: ``not applicable: Causal (no causal claim to judge); its
    weight 0.10 went to the critics that judged``. ``requested`` are the weights asked for (normalised here)."""
    if not abstained:
        return ""
    share = normalise({n: float(w) for n, w in requested.items()}) if any(requested.values()) else {}
    names = in_critic_order(abstained)
    parts = "; ".join(f"{label(n)} ({abstained[n]})" for n in names)
    total = sum(share.get(n, 0.0) for n in names)
    whose = "its weight" if len(names) == 1 else "their weight"
    return f"not applicable: {parts}; {whose} {total:.2f} went to the critics that judged"


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
    """Trust Score = sum(w_i * score_i) / sum(w_i) over critics that succeeded, capped by the
    contradicted claims while grounding carries weight (module docstring).

    A failed critic's weight is dropped and the rest renormalised, so a broken
    model lowers confidence in the breakdown, never the score itself. An abstaining critic
    (nothing to judge) gives its weight to the others the same way, but the score stays complete.
    """
    usable = {name: w for name, w in weights.items() if name in results and results[name].ok}
    abstained = {name: results[name].abstention for name in in_critic_order(weights)
                 if weights[name] > 0 and name in results and not results[name].applicable}
    left_out = tuple(name for name, w in weights.items() if w > 0 and name not in usable and name not in abstained)
    norm = normalise(usable) if usable else {}
    contributions = {name: norm[name] * results[name].score for name in norm}
    used = {name: norm.get(name, 0.0) for name in weights}
    total = float(sum(contributions.values()))
    cap = contradiction_cap(results) if norm.get("grounding", 0.0) > 0 else None
    return WeightedScore(trust_score=min(total, cap.limit) if cap else total, weights=used,
                         contributions=contributions, left_out=left_out, requested=dict(weights),
                         weighted_sum=total, cap=cap, not_applicable=abstained)


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
