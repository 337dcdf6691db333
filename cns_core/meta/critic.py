"""The Meta-Critic: runs the five critics through the pipeline and judges the whole.

Contexts are named weight profiles of ``config/profiles.yaml`` (the ones listed
under ``contexts`` in ``config/meta.yaml``):

* ``scientific``, ``philosophical``, ``empirical``, ``default``: spec section 4.3 / 1.
* ``analytical`` is not in the spec. Analysing an argument means taking it apart:
  whether each step follows (logic 0.40) and whether its cause-effect steps hold
  (causal 0.15) matter more than how much evidence is piled up (grounding 0.30,
  still the second weight, so an ungrounded argument cannot score well);
  originality (0.10) and framing (bias 0.05) stay minor. It sits between the
  philosophical profile (logic first, evidence an afterthought) and the empirical
  one (evidence and causes first).

Results are cached by SNO content hash and context for ``cache.ttl_s`` seconds, so
:meth:`MetaCritic.improvement_plan` and :meth:`MetaCritic.passes_quality_gate`
right after :meth:`MetaCritic.evaluate` reuse the same critic results.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import Counter, OrderedDict
from typing import Any, Callable, Hashable, Mapping

from cns_core.config import ConfigError
from cns_core.critics.base import CRITIC_NAMES, CriticContext, CriticResult
from cns_core.meta.evaluation import MetaEvaluation, assess
from cns_core.meta.gate import GateDecision, decide
from cns_core.meta.plan import ImprovementStep
from cns_core.meta.settings import MetaConfig
from cns_core.scoring import load_profiles, normalise
from cns_core.sno import SNO

__all__ = ["MetaCritic", "GateDecision"]

Context = str | Mapping[str, float] | None


class _TTLCache:
    """A small thread-safe map whose entries expire ``ttl_s`` after being stored."""

    def __init__(self, ttl_s: float, max_entries: int, clock: Callable[[], float]):
        self.ttl_s, self.max_entries, self._clock = ttl_s, max_entries, clock
        self._data: OrderedDict[Hashable, tuple[float, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Any | None:
        with self._lock:
            hit = self._data.get(key)
            if hit is None:
                return None
            if self._clock() - hit[0] >= self.ttl_s:
                del self._data[key]
                return None
            self._data.move_to_end(key)
            return hit[1]

    def put(self, key: Hashable, value: Any) -> None:
        if self.ttl_s <= 0:
            return
        with self._lock:
            self._data[key] = (self._clock(), value)
            self._data.move_to_end(key)
            while len(self._data) > self.max_entries:
                self._data.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()

    def __len__(self) -> int:
        return len(self._data)


def _critic_context_key(ctx: CriticContext | None) -> str:
    """What in a critic context changes results: the novelty population and chosen backends."""
    if ctx is None:
        return ""
    digest = hashlib.sha1()
    if ctx.population is not None:
        digest.update(repr(ctx.population.shape).encode())
        digest.update(ctx.population.tobytes())
    digest.update(f"{id(ctx.nli)}:{id(ctx.embedder)}:{sorted(map(repr, ctx.extra.items()))}".encode())
    return digest.hexdigest()


class MetaCritic:
    """Aggregates the critics, finds their conflicts, and says what to improve.

    ``pipeline`` is a :class:`cns_core.pipeline.CriticPipeline` (built lazily with
    the configured ``timeout_s`` when omitted); ``config`` a :class:`MetaConfig` or
    plain data shaped like ``meta.yaml`` (default: the shipped file).
    """

    def __init__(self, pipeline: Any = None, config: MetaConfig | Mapping[str, Any] | None = None, *,
                 clock: Callable[[], float] = time.monotonic):
        if config is None:
            config = MetaConfig.load()
        elif not isinstance(config, MetaConfig):
            config = MetaConfig.from_dict(config)
        self.config = config
        self._pipeline = pipeline
        self._pipeline_lock = threading.Lock()
        profiles = load_profiles()
        missing = [c for c in config.contexts if c not in profiles]
        if missing:
            raise ConfigError(f"meta.yaml: contexts: {missing} not defined in profiles.yaml")
        self._profiles = {c: profiles[c] for c in config.contexts}
        self._cache = _TTLCache(config.cache_ttl_s, config.cache_max_entries, clock)
        self._counts: Counter[str] = Counter()
        self._conflicts: Counter[str] = Counter()
        self._failures: Counter[str] = Counter()
        self._lock = threading.Lock()

    # ----- wiring ---------------------------------------------------------
    @property
    def pipeline(self):
        with self._pipeline_lock:
            if self._pipeline is None:
                from cns_core.pipeline import CriticPipeline

                self._pipeline = CriticPipeline(timeout_s=self.config.timeout_s)
            return self._pipeline

    @property
    def contexts(self) -> tuple[str, ...]:
        return self.config.contexts

    def weights_for(self, context: Context = None) -> tuple[str, dict[str, float]]:
        """``(name, weights)`` of a context name, or of an explicit weight mapping (named ``custom``)."""
        if context is None:
            context = self.config.default_context
        if isinstance(context, Mapping):
            unknown = sorted(set(context) - set(CRITIC_NAMES))
            if unknown:
                raise ValueError(f"context: unknown critic(s) {unknown} (known: {', '.join(CRITIC_NAMES)})")
            weights = normalise({n: float(w) for n, w in context.items()})
            if not any(weights.values()):
                raise ValueError("context: at least one weight must be positive")
            return "custom", weights
        if context not in self._profiles:
            raise ValueError(f"context: unknown context {context!r} (known: {', '.join(self.contexts)})")
        return context, dict(self._profiles[context])

    # ----- evaluation -----------------------------------------------------
    def evaluate(self, sno: SNO, context: Context = None, *,
                 critic_context: CriticContext | None = None) -> MetaEvaluation:
        """Run (or reuse) the critics for ``sno`` and aggregate them under ``context``'s weights.

        A critic that raised or timed out appears in ``failed`` with its reason; the
        others still aggregate, its weight redistributed among them.
        """
        name, weights = self.weights_for(context)
        content_hash = sno.content_hash()
        key = (content_hash, name, tuple(sorted(weights.items())), _critic_context_key(critic_context))
        cached = self._cache.get(key)
        if cached is not None:
            with self._lock:
                self._counts["cache_hits"] += 1
            return cached
        results: dict[str, CriticResult] = self.pipeline.run_critics(sno, critic_context)
        evaluation = assess(results, weights, self.config, sno_id=sno.id, sno_hash=content_hash, context=name)
        self._cache.put(key, evaluation)
        with self._lock:
            self._counts["evaluations"] += 1
            self._conflicts.update(f"{c.higher}>{c.lower}" for c in evaluation.conflicts)
            self._failures.update(evaluation.failed.keys())
        return evaluation

    def critic_breakdown(self, sno: SNO, context: Context = None) -> dict[str, CriticResult]:
        """Every critic's full result, without aggregation (spec 5.1)."""
        return dict(self.evaluate(sno, context).results)

    def improvement_plan(self, sno: SNO, context: Context = None) -> list[ImprovementStep]:
        """Steps ordered high > medium > low priority, then by measured expected impact."""
        evaluation = self.evaluate(sno, context)
        return list(evaluation.plan)

    def quality_gate(self, sno: SNO, threshold: float | None = None, context: Context = None) -> GateDecision:
        """Pass when every critic produced a score and the score reaches ``threshold`` (config: 0.7).

        An incomplete score never passes: the gate cannot vouch for what was not measured,
        however little weight the failed critic carried.
        """
        evaluation = self.evaluate(sno, context)
        if threshold is None:
            return evaluation.gate
        return decide(evaluation.score, threshold, self.config, evaluation.failed)

    def passes_quality_gate(self, sno: SNO, threshold: float | None = None, context: Context = None) -> bool:
        return self.quality_gate(sno, threshold, context).passed

    # ----- bookkeeping ----------------------------------------------------
    def statistics(self) -> dict[str, Any]:
        """Per-critic statistics from the pipeline plus the Meta-Critic's own counts."""
        with self._lock:
            own = {"evaluations": self._counts["evaluations"], "cache_hits": self._counts["cache_hits"],
                   "cached_entries": len(self._cache), "conflicts": dict(self._conflicts),
                   "failures": dict(self._failures)}
        return {"critics": self.pipeline.statistics(), **own}

    def clear_cache(self) -> None:
        self._cache.clear()
