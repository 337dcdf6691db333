"""The coherence hook: tags, blocks and scores a thought chain before it is written to memory.

Spec: ``shared/specs/coherence-classifier-hook.md``. One module per stage:
``extract`` (0), ``retrieval`` (1), ``heuristics`` (2), ``nli`` (3), ``fusion`` (4-5),
``calibration`` (6), ``decision`` (7-8), ``log`` (9); ``latency`` (budget),
``quarantine`` and ``hook`` (the orchestration, fail-safes and adapters), ``sno_check``
(the same stages over an SNO's claims), ``evaluate`` (section-13 metrics).
"""

from cns_core.coherence.calibration import CalibrationState, Calibrator, margin_ece
from cns_core.coherence.extract import extract_propositions, make_proposition
from cns_core.coherence.hook import CoherenceHook, PreWriteVerdict
from cns_core.coherence.quarantine import FileQuarantine, QuarantinedChain
from cns_core.coherence.retrieval import (
    EngramRetriever,
    FunctionRetriever,
    MatrixRetriever,
    MemoryAPI,
    RecentEngramRetriever,
)
from cns_core.coherence.schemas import (
    CONFLICT_TYPES,
    ChainMetrics,
    ContextItem,
    EvidenceNode,
    HookResult,
    Proposition,
    PropTag,
    QuarantineDirective,
    ThoughtChain,
    Triplet,
)
from cns_core.coherence.settings import CoherenceSettings
from cns_core.coherence.sno_check import ClaimCoherence, ContradictionPair, SNOCoherence

__all__ = [
    "CONFLICT_TYPES", "CalibrationState", "Calibrator", "ChainMetrics", "ClaimCoherence", "CoherenceHook",
    "CoherenceSettings", "ContextItem", "ContradictionPair", "EngramRetriever", "EvidenceNode", "FileQuarantine",
    "FunctionRetriever", "HookResult", "MatrixRetriever", "MemoryAPI", "PreWriteVerdict", "PropTag",
    "Proposition", "QuarantineDirective", "QuarantinedChain", "RecentEngramRetriever", "SNOCoherence",
    "ThoughtChain", "Triplet", "extract_propositions", "make_proposition", "margin_ece",
]
