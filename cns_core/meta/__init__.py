"""The Meta-Critic (specs/meta-critic.md): aggregation, conflicts, suggestions, plan, quality gate.

One module per concept: ``settings`` (config/meta.yaml), ``conflicts``,
``suggestions`` (what to do and where), ``gain`` (what a fix is worth and how urgent), ``bands`` (quality and confidence bands), ``gate``
(the quality gate, which accepts whole bands), ``plan``
(improvement plan), ``evaluation`` (the pure aggregation) and ``critic``
(the :class:`MetaCritic` that runs the pipeline and caches its verdicts).
"""

from cns_core.meta.bands import confidence_band, quality_band
from cns_core.meta.conflicts import Conflict, detect_conflicts, interpret_conflict, ok_scores
from cns_core.meta.critic import MetaCritic
from cns_core.meta.evaluation import MetaEvaluation, assess
from cns_core.meta.gain import expected_gain
from cns_core.meta.gate import GateDecision, decide
from cns_core.meta.plan import PRIORITY_ORDER, ImprovementStep, improvement_plan
from cns_core.meta.settings import MetaConfig, QualityBand
from cns_core.meta.suggestions import Suggestion, advice_for, critic_suggestions, generate_suggestions

__all__ = [
    "MetaCritic", "MetaEvaluation", "GateDecision", "MetaConfig", "QualityBand", "Conflict",
    "ImprovementStep", "PRIORITY_ORDER", "assess", "detect_conflicts", "interpret_conflict", "ok_scores",
    "Suggestion", "generate_suggestions", "critic_suggestions", "advice_for", "quality_band", "confidence_band", "improvement_plan",
    "expected_gain", "decide",
]
