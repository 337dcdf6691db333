"""The coherence hook: stages 0-9 of the spec, with its latency budget and fail-safes.

``CoherenceHook.check_chain`` runs a candidate thought chain through

0. normalise (extract propositions, canonical negations and numbers),
1. retrieve (engram memory, narrative and goal context, self evidence, the chain's own earlier propositions),
2. heuristics (shared text cues),
3. model pass (one batched NLI call over the top-m evidence, with a timeout),
4. fusion, 5. conflict typing, 6. calibration,
7. decision (drift facets, blocking and quarantine), 8. chain metrics and reward hint,
9. the JSONL log,

and returns a :class:`HookResult`. It never raises on a chain it could read:
a crash anywhere inside is logged as an ``error`` event and the chain is
treated as neutral and not blocked (spec section 19).

``check_sno`` runs the same stages over an SNO's claims (each against its most
similar claims and evidence) for the dashboard, and ``as_pre_write_hook`` is
the adapter the MemoryAgent calls before it writes an engram.
"""

from __future__ import annotations

import hashlib
import threading
import time
import traceback
from collections import OrderedDict, deque
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from cns_core.coherence.calibration import Calibrator
from cns_core.coherence.decision import chain_metrics, is_blocking, tag_proposition
from cns_core.coherence.extract import extract_propositions, make_proposition, subject_stems
from cns_core.coherence.fusion import fuse, fuse_parts
from cns_core.coherence.heuristics import HeuristicScore, features, read_with_question, score_features
from cns_core.coherence.latency import LatencyGovernor, LatencyPlan
from cns_core.coherence.log import CoherenceLog, text_digest
from cns_core.coherence.nli import ModelPass, ModelTimeout, select_top_m
from cns_core.coherence.quarantine import FileQuarantine, QuarantinedChain, QuarantineStore, matches_subjects
from cns_core.coherence.retrieval import MemoryAPI, Retriever
from cns_core.coherence.schemas import (
    ChainMetrics,
    ContextItem,
    EvidenceNode,
    HookResult,
    PairScore,
    Proposition,
    PropTag,
    QuarantineDirective,
    ThoughtChain,
)
from cns_core.coherence.settings import CoherenceSettings
from cns_core.models.nli import NLI_LABELS
from cns_core.bounds import RepeatedFailure, logger

__all__ = ["CoherenceHook", "PreWriteVerdict"]

if TYPE_CHECKING:
    from cns_core.coherence.sno_check import SNOCoherence

_log = logger(__name__)
_SNO_CHECKS_KEPT = 64   # SNO check results kept (by content hash and settings)
# evidence whose similarity is known and must reach retrieval.min_similarity to count
_FILTERED = frozenset({"semantic", "temporal", "self", "claim", "evidence", "narrative", "goal"})


@dataclass(frozen=True)
class PreWriteVerdict:
    """What the MemoryAgent's ``pre_write_hook`` gets back: block or not, and flat tags for the engram."""

    blocked: bool
    metadata: dict[str, Any]
    reason: str | None = None
    result: HookResult | None = field(default=None, repr=False, compare=False)


def _context_items(items: Iterable[Any] | None, prefix: str) -> tuple[ContextItem, ...]:
    out = []
    for i, item in enumerate(items or ()):
        if isinstance(item, ContextItem):
            out.append(item)
        elif isinstance(item, str):
            out.append(ContextItem(f"{prefix}:{i}", item))
        elif isinstance(item, Mapping) and isinstance(item.get("text"), str):
            out.append(ContextItem(str(item.get("id", f"{prefix}:{i}")), item["text"]))
        elif isinstance(item, (tuple, list)) and len(item) == 2 and isinstance(item[1], str):
            out.append(ContextItem(str(item[0]), item[1]))
        else:
            raise ValueError(f"{prefix}_ctx[{i}]: expected text, (id, text) or {{id, text}}, "
                             f"got {type(item).__name__}")
    return tuple(out)


def _checked_text(chain: ThoughtChain) -> str:
    """What a chain's verdict is about: its text, or its propositions' (the log's ``text_sha``)."""
    return "\n".join([chain.text or ""] + [p.text for p in chain.propositions or ()])


def _propositions(items: Iterable[Any], chain_id: str) -> tuple[Proposition, ...]:
    out = []
    for i, item in enumerate(items):
        if isinstance(item, Proposition):
            out.append(item)
        elif isinstance(item, str) and item.strip():
            out.append(make_proposition(f"{chain_id}:{i}", item))
        else:
            raise ValueError(f"propositions[{i}]: expected a Proposition or non-empty text, got {item!r:.60}")
    return tuple(out)


def _label_index(label: int | str) -> int:
    if isinstance(label, str):
        name = label.strip().lower()
        if name not in NLI_LABELS:
            raise ValueError(f"label: expected one of {', '.join(NLI_LABELS)}, got {label!r}")
        return NLI_LABELS.index(name)
    if label not in (0, 1, 2):
        raise ValueError(f"label: expected 0, 1 or 2, got {label!r}")
    return int(label)


class CoherenceHook:
    """The pre-memory-write coherence and contradiction hook (one per process or agent).

    Parameters
    ----------
    settings: thresholds, weights, budget (default: ``config/coherence.yaml``).
    mem_api: where evidence comes from; default: the engram store of ``memory`` when given.
    memory: a :class:`cns_core.memory.MemoryService` (retrieval, quarantine, release).
    model: a :class:`ModelPass`, an NLI backend, ``None`` for the configured backend, ``False``
        for heuristics only (the spec's phase A).
    embedder: the embedding backend (default: ``get_embedder()``, loaded when first needed).
    calibrator / calibration_path: fitted calibration; default: the state file of coherence.yaml if present.
    log: a :class:`CoherenceLog`, a path, ``None`` for ``state_dir()/coherence.jsonl``, ``False`` for none.
    quarantine: where blocked chains wait; default: the memory's quarantine, else a file in the state folder.
    clock: seconds as a float (tests pass a controllable clock to exercise the latency budget).
    """

    def __init__(self, settings: CoherenceSettings | None = None, *, mem_api: MemoryAPI | None = None,
                 memory: Any = None, model: Any = None, embedder: Any = None,
                 calibrator: Calibrator | None = None, calibration_path: str | Path | None = None,
                 log: CoherenceLog | str | Path | bool | None = None, quarantine: QuarantineStore | None = None,
                 clock: Callable[[], float] = time.perf_counter):
        self.settings = settings or CoherenceSettings.from_config()
        s = self.settings
        self.memory = memory
        self.mem_api = mem_api or (self._memory_api(memory) if memory is not None else MemoryAPI())
        if model is False:
            self.model: ModelPass | None = None
        elif model is None or isinstance(model, ModelPass):
            self.model = model or ModelPass(cache_size=s.latency.pair_cache)
        else:
            self.model = ModelPass(backend=model, cache_size=s.latency.pair_cache)
        self._embedder = embedder
        self.clock = clock
        self.governor = LatencyGovernor(s.latency)
        cal = s.calibration
        self.calibration_path = Path(calibration_path) if calibration_path else s.state_path(
            cal, "state_file", "coherence_calibration.json")
        self.calibration_error: str | None = None
        if calibrator is None and self.calibration_path.is_file():
            try:
                calibrator = Calibrator.from_config(cal, self.calibration_path)
            except (ValueError, OSError, TypeError) as exc:  # a broken state file: identity calibration
                self.calibration_error = str(exc)
        self.calibrator = calibrator if calibrator is not None else Calibrator.from_config(cal)
        if log is False:
            self.log: CoherenceLog | None = None
        elif isinstance(log, CoherenceLog):
            self.log = log
        else:
            path = Path(log) if isinstance(log, (str, Path)) else s.state_path(s.log, "file", "coherence.jsonl")
            self.log = CoherenceLog(path, max_bytes=int(float(s.log.get("max_mb", 50)) * 1_000_000))
        self._log_failures = RepeatedFailure(_log, "coherence log")   # a full disk: said once, then counted
        if quarantine is None:
            from cns_core.coherence.memory_adapter import MemoryQuarantine

            quarantine = (MemoryQuarantine(memory) if MemoryQuarantine.supports(memory)
                          else FileQuarantine(s.state_path(s.quarantine, "file", "coherence_quarantine.jsonl")))
        self.quarantine = quarantine
        self.tau_c = s.thresholds.tau_c
        # ticks never repeat across restarts, and a chain checked again is not logged again (log.py)
        self.tick = self.log.resume() if self.log is not None else 0
        self.backlog = False
        self.counters = {"chains": 0, "blocked": 0, "released": 0, "errors": 0, "model_judged": 0,
                         "model_dropped": 0, "model_timeout": 0, "k_halved": 0}
        self._coherence_est: float | None = None
        self._recent_coherence: deque[float] = deque(maxlen=50)   # for chain coherence stability
        self._lock = threading.Lock()
        self._recheck_lock = threading.Lock()
        self._warm_lock = threading.Lock()
        self._warm = False
        self._sno_checks: OrderedDict[tuple[str, str], "SNOCoherence"] = OrderedDict()
        self._recheck_thread: threading.Thread | None = None
        self._recent_raw: OrderedDict[str, tuple[np.ndarray, bool]] = OrderedDict()
        adaptive = s.adaptive
        self._flag_outcomes: deque[bool] = deque(maxlen=int(adaptive.get("window", 500)))
        if self.calibration_error:
            self._event("calibration_error", None, error=self.calibration_error)

    # ----- small helpers ---------------------------------------------------
    @property
    def embedder(self):
        if self._embedder is None:
            from cns_core.models import get_embedder

            self._embedder = get_embedder()
        return self._embedder

    def warm_up(self) -> "CoherenceHook":
        """Load the embedder and the NLI backend and run each once now, so that no budget is charged
        for loading (the MemoryAgent, the dashboard and the CLI call it at start; later calls are free)."""
        with self._warm_lock:
            if not self._warm:
                self.embedder.encode(["warm up"])
                if self.model is not None and self.model.ready:
                    self.model.backend.predict([("warm up", "warm up")])   # not through the pair cache
                self._warm = True
        return self

    def warm_up_in_background(self) -> "CoherenceHook":
        """:meth:`warm_up` on a daemon thread (a page starting up is not kept waiting); a check that
        comes first waits for it to finish, still outside its budget."""
        threading.Thread(target=self.warm_up, name="coherence-warm-up", daemon=True).start()
        return self

    def _event(self, event: str, chain_id: str | None, **fields: Any) -> None:
        if self.log is None:
            return
        try:
            self.log.write_event(event, self.tick, chain_id, **fields)
        except OSError as exc:  # a full disk must not take the hook down, nor flood the log
            self._log_failures.failed(exc)
        else:
            self._log_failures.succeeded()

    def effective_settings(self) -> CoherenceSettings:
        """The settings with tau_c as adapted so far (phase E)."""
        s = self.settings
        return s if self.tau_c == s.thresholds.tau_c else s.with_thresholds(tau_c=self.tau_c)

    def _ms(self, since: float) -> float:
        return (self.clock() - since) * 1000.0

    # ----- stage 1 ------------------------------------------------------------
    def _gather(self, props: Sequence[Proposition], vectors: np.ndarray | None, chain: ThoughtChain,
                mem_api: MemoryAPI, plan: LatencyPlan, extra: Sequence[EvidenceNode],
                exclude: set[str], settings: CoherenceSettings) -> list[list[EvidenceNode]]:
        r = settings.retrieval
        scale = 0.5 if plan.halve_k else 1.0
        k = {name: (max(1, int(value * scale)) if value > 0 else 0)
             for name, value in (("sem", r.k_sem), ("temp", r.k_temp), ("self", r.k_self))}
        texts = [p.text for p in props]
        found: list[dict[str, EvidenceNode]] = [{} for _ in props]

        def add(i: int, node: EvidenceNode, filtered: bool = True) -> None:
            if node.id in exclude or node.id == props[i].id or not node.text.strip():
                return
            if filtered and node.source in _FILTERED and vectors is not None and node.similarity < r.min_similarity:
                return
            old = found[i].get(node.id)
            # a self statement is also found by the semantic search, at the same similarity: the self
            # search's copy must win, or it would never count as self evidence (self_trait, drift)
            if old is None or node.similarity > old.similarity or (
                    node.source == "self" and node.similarity >= old.similarity):
                found[i][node.id] = node

        sources: list[tuple[Retriever, int]] = [(ret, k["sem"]) for ret in mem_api.semantic]
        if mem_api.temporal is not None:
            sources.append((mem_api.temporal, k["temp"]))
        if mem_api.self_ is not None:
            sources.append((mem_api.self_, k["self"]))
        for retriever, kk in sources:
            if kk <= 0:
                continue
            for i, nodes in enumerate(retriever.retrieve(texts, vectors, kk)):
                for node in nodes:
                    add(i, node)
        asked = chain.metadata.get("query") if isinstance(chain.metadata, Mapping) else None
        if mem_api.question is not None and r.k_question > 0 and isinstance(asked, str):
            for node in mem_api.question.retrieve(asked, r.k_question):   # however crowded the answers' neighbourhood
                for i in range(len(props)):
                    add(i, node, filtered=False)
        context = [EvidenceNode(c.id, c.text, source="narrative") for c in chain.narrative_ctx]
        context += [EvidenceNode(c.id, c.text, source="goal", facet=c.id) for c in chain.goals_ctx]
        if context:
            sims = self._similarities(vectors, [c.text for c in context])
            for i in range(len(props)):
                for j, node in enumerate(context):
                    add(i, node if sims is None else _with_similarity(node, float(sims[i, j])))
        for node in extra:  # handed in on purpose (a quarantine re-check): always compared
            for i in range(len(props)):
                add(i, node, filtered=False)
        if r.intra_chain and len(props) > 1:
            for i in range(1, len(props)):
                for j in range(i):
                    sim = float(vectors[i] @ vectors[j]) if vectors is not None else 0.0
                    add(i, EvidenceNode(props[j].id, props[j].text, source="chain", similarity=sim))
        return [list(f.values()) for f in found]

    def _similarities(self, vectors: np.ndarray | None, texts: Sequence[str]) -> np.ndarray | None:
        if vectors is None or not texts:
            return None
        return vectors @ np.asarray(self.embedder.encode(list(texts))).T

    # ----- stages 2-6 ---------------------------------------------------------
    def score_evidence(self, props: Sequence[Proposition], evidence: Sequence[Sequence[EvidenceNode]],
                       plan: LatencyPlan | None = None, started: float | None = None,
                       degraded: list[str] | None = None, *, budgeted: bool = True,
                       settings: CoherenceSettings | None = None,
                       calibrator: Calibrator | None = None, deadline: float | None = None,
                       question: str | None = None) -> list[list[PairScore]]:
        """Stages 2-6 for each proposition against its evidence.

        The pre-write path (default) sends at most ``latency.max_model_pairs`` pairs in one model call,
        cut at ``budgets.pre_write_ms``; ``budgeted=False`` ignores the governor's cut. With ``deadline``
        (``self.clock()`` seconds; ``math.inf``: no time limit) the model scores in batches until then
        (a person waiting: every pair of m per proposition, no batch started later).
        ``degraded`` collects what was switched off; ``settings`` and ``calibrator`` replace the
        hook's own for this call. ``question`` is what the new text answers: evidence answering another
        question does not contradict it by its numbers alone ("The result is 5." / "The result is 8."
        answer "2+3?" and "4+4?"), so that cue, and the model's verdict on such a pair, are dropped.
        A short answer, new or stored, is read with its question (:func:`read_with_question`): "17" and
        "12" to the same question differ in what they count, as two sentences would; a stored short
        answer to another question is no evidence at all (its words are that question's).
        """
        settings = settings or self.settings
        calibrator = calibrator or self.calibrator
        plan = plan or LatencyPlan()
        started = self.clock() if started is None else started
        degraded = [] if degraded is None else degraded
        owners: list[int] = []
        nodes: list[EvidenceNode] = []
        heur: list[HeuristicScore] = []
        numbers_only: list[int] = []      # pairs of different questions whose only conflict is their numbers
        read: list[tuple[str, str]] = []  # each pair as compared (evidence, new); a short answer with its question
        for i, (prop, evs) in enumerate(zip(props, evidence)):
            said = read_with_question(prop.text, question)
            new = features(said) if said != prop.text or not prop.tokens else features(tokens=prop.tokens)
            for ev in evs:
                ev_said = read_with_question(ev.text, ev.question)
                if ev_said != ev.text and not _same_question(question, ev.question):
                    continue        # a short answer to another question ("12") says nothing about this one
                owners.append(i)
                nodes.append(ev)
                read.append((ev_said, said))
                old = features(ev_said)
                h = score_features(new, old, settings.heuristics)
                if "numeric" in h.types and not _same_question(question, ev.question):
                    h = score_features(new, old, settings.heuristics, numeric=False)
                    if not h.types:
                        numbers_only.append(len(heur))
                heur.append(h)
        n = len(nodes)
        entail_h = np.array([h.entail for h in heur], dtype=np.float64)
        contr_h = np.array([h.contradict for h in heur], dtype=np.float64)
        entail_m = np.full(n, np.nan)
        contr_m = np.full(n, np.nan)
        scored = np.zeros(n, dtype=bool)
        if self.model is not None and n:
            if not plan.use_model or (budgeted and self.governor.over_model_cut(self._ms(started))):
                degraded.append("model_dropped")
            elif not self.model.ready:
                degraded.append("model_unavailable")
            else:
                groups: list[list[int]] = [[] for _ in props]
                for index, owner in enumerate(owners):
                    groups[owner].append(index)
                sims = np.array([ev.similarity for ev in nodes], dtype=np.float64)
                chosen = select_top_m(groups, sims, contr_h > 0, settings.retrieval.m,
                                      None if deadline is not None else settings.latency.max_model_pairs)
                pairs = [read[j] for j in chosen]
                try:
                    if deadline is not None:
                        by_owner: dict[int, list[int]] = {}
                        for k, j in enumerate(chosen):
                            by_owner.setdefault(owners[j], []).append(k)
                        probs, done = self.model.predict_until(pairs, list(by_owner.values()), deadline,
                                                               self.clock)
                        if not done.all():
                            degraded.append("model_budget")
                        chosen = [j for j, ok in zip(chosen, done) if ok]
                        probs = probs[done]
                    else:
                        probs = self.model.predict(pairs, settings.latency.pre_write_ms / 1000.0)
                except ModelTimeout:
                    degraded.append("model_timeout")
                except Exception as exc:  # a failing backend (HTTP error, bad output): heuristics only
                    degraded.append("model_error")
                    self._event("model_error", None, error=f"{type(exc).__name__}: {exc}")
                else:
                    if chosen:
                        entail_m[chosen], contr_m[chosen], scored[chosen] = probs[:, 0], probs[:, 2], True
        if numbers_only:
            contr_m[numbers_only] = np.where(scored[numbers_only], 0.0, np.nan)
        raw = fuse(entail_h, contr_h, entail_m, contr_m, scored, settings.weights)
        cal = calibrator.apply(raw) if n else raw
        out: list[list[PairScore]] = [[] for _ in props]
        for j in range(n):
            out[owners[j]].append(PairScore(
                prop_id=props[owners[j]].id, evidence=nodes[j], entail_h=float(entail_h[j]),
                contr_h=float(contr_h[j]), types=heur[j].types,
                entail_m=float(entail_m[j]) if scored[j] else None,
                contr_m=float(contr_m[j]) if scored[j] else None,
                raw=tuple(float(x) for x in raw[j]), calibrated=tuple(float(x) for x in cal[j])))
        return out

    def _vectors(self, props: Sequence[Proposition], chain: ThoughtChain, mem_api: MemoryAPI,
                 settings: CoherenceSettings) -> np.ndarray | None:
        needed = (mem_api.needs_vectors or bool(chain.self_facets)
                  or (settings.retrieval.intra_chain and len(props) > 1)
                  or bool(chain.narrative_ctx or chain.goals_ctx))
        if not needed or not props:
            return None
        return np.asarray(self.embedder.encode([p.text for p in props]), dtype=np.float32)

    # ----- the whole chain ----------------------------------------------------
    def check_chain(self, chain: ThoughtChain | str, text: str | None = None, *,
                    propositions: Sequence[Proposition | str] | None = None, importance: float | None = None,
                    narrative_ctx: Iterable[Any] = (), goals_ctx: Iterable[Any] = (),
                    self_facets: Mapping[str, np.ndarray] | None = None, coherence_prev: float | None = None,
                    metadata: Mapping[str, Any] | None = None, mem_api: MemoryAPI | None = None,
                    backlog: bool = False, extra_evidence: Sequence[EvidenceNode] = (),
                    exclude_ids: Iterable[str] = (), store_quarantine: bool = True,
                    settings: CoherenceSettings | None = None, calibration: Calibrator | None = None
                    ) -> HookResult:
        """Check one candidate chain; see the module docstring for the stages.

        ``chain`` is a :class:`ThoughtChain` or the chain id (then ``text`` or ``propositions``
        is required). ``backlog`` says the caller is behind: the calibration is not re-fitted.
        ``extra_evidence`` is checked besides what retrieval finds (a quarantine re-check passes
        the new evidence); ``exclude_ids`` never count as evidence (the chain's own engram).
        ``settings`` (thresholds, weights) and ``calibration`` replace the hook's own for this chain.
        Raises ``ValueError`` only for unusable input; any failure inside is the neutral fail-safe.
        """
        if not isinstance(chain, ThoughtChain):
            if not isinstance(chain, str) or not chain.strip():
                raise ValueError(f"chain.id: expected a non-empty string, got {chain!r:.60}")
            if propositions is None and not (isinstance(text, str) and text.strip()):
                raise ValueError(f"chain {chain}: give chain.text or chain.propositions")
            if importance is not None and not (isinstance(importance, (int, float)) and 0 <= importance <= 1):
                raise ValueError(f"chain {chain}: importance: expected a number in [0, 1], got {importance!r}")
            chain = ThoughtChain(
                id=chain, text=text, propositions=_propositions(propositions, chain) if propositions else None,
                importance=importance, narrative_ctx=_context_items(narrative_ctx, "narrative"),
                goals_ctx=_context_items(goals_ctx, "goal"), self_facets=self_facets,
                coherence_prev=coherence_prev, metadata=dict(metadata or {}))
        with self._lock:
            self.tick += 1
            tick = self.tick
            self.backlog = backlog
        started = self.clock()
        plan = self.governor.plan()
        try:
            result = self._check(chain, tick, started, plan, mem_api or self.mem_api, extra_evidence,
                                 set(exclude_ids) | {chain.id}, settings, calibration)
        except Exception as exc:  # spec 19: a crash treats the chain as neutral, no block, logged
            result = self._neutral(chain, tick, started, exc)
        # one outlier (a model loading on first use) must not silence the model for long
        self.governor.observe(min(result.latency_ms, 3.0 * self.settings.latency.budget_ms))
        self._account(result, plan)
        if result.error is None:
            self._track_coherence(result.chain_metrics.coherence_chain)
        if result.blocked and store_quarantine and result.quarantine is not None:
            self._store_quarantined(chain, result)
        if self.log is not None and result.error is None:
            try:
                self.log.write_result(result, text_digest(_checked_text(chain)))
            except OSError as exc:
                self._log_failures.failed(exc)
            else:
                self._log_failures.succeeded()
        self._maybe_recheck(tick)
        return result

    def _check(self, chain: ThoughtChain, tick: int, started: float, plan: LatencyPlan, mem_api: MemoryAPI,
               extra: Sequence[EvidenceNode], exclude: set[str], settings: CoherenceSettings | None = None,
               calibrator: Calibrator | None = None) -> HookResult:
        s = settings or self.effective_settings()
        degraded: list[str] = []
        if not plan.advanced_parse:
            degraded.append("parse_skipped")
        if plan.halve_k:
            degraded.append("k_halved")
        chain_importance = s.default_importance if chain.importance is None else float(chain.importance)
        props = chain.propositions or tuple(extract_propositions(chain.text or "", chain.id,
                                                                 advanced=plan.advanced_parse))
        vectors = self._vectors(props, chain, mem_api, s)
        evidence = self._gather(props, vectors, chain, mem_api, plan, extra, exclude, s)
        asked = chain.metadata.get("query") if isinstance(chain.metadata, Mapping) else None
        pair_scores = self.score_evidence(props, evidence, plan, started, degraded, settings=s,
                                          calibrator=calibrator, question=asked if isinstance(asked, str) else None)
        tags = []
        for i, (prop, pairs) in enumerate(zip(props, pair_scores)):
            importance = chain_importance if prop.importance is None else float(prop.importance)
            tag = tag_proposition(prop, pairs, s, importance=importance,
                                  vector=None if vectors is None else vectors[i], self_facets=chain.self_facets)
            tags.append(tag)
            self._remember(tag, pairs)
        prev = chain.coherence_prev if chain.coherence_prev is not None else (self._coherence_est or 0.0)
        metrics = chain_metrics(tags, s, chain_importance=chain_importance, coherence_prev=prev)
        directive = None
        if metrics.blocked:
            blocking = [t for t, p in zip(tags, props) if is_blocking(t, s)]
            ids = {t.p_id for t in blocking}
            subjects = subject_stems(p for p in props if p.id in ids)
            directive = QuarantineDirective(
                chain_id=chain.id, props=tuple(sorted(ids)), subjects=tuple(sorted(subjects)),
                reason="; ".join(f"{t.p_id} contradicted ({t.contradict:.2f}, "
                                 f"{'/'.join(t.contradiction_types) or 'semantic'})" for t in blocking))
        return HookResult(chain_id=chain.id, blocked=metrics.blocked, prop_tags=tuple(tags), chain_metrics=metrics,
                          quarantine=directive, degraded=tuple(dict.fromkeys(degraded)),
                          latency_ms=self._ms(started), tick=tick,
                          pairs=tuple(p for pairs in pair_scores for p in pairs))

    def _neutral(self, chain: ThoughtChain, tick: int, started: float, exc: BaseException) -> HookResult:
        error = f"{type(exc).__name__}: {exc}"
        self._event("error", chain.id, error=error,
                    where=" <- ".join(f"{f.name}:{f.lineno}" for f in traceback.extract_tb(exc.__traceback__)[-3:]))
        return HookResult(chain_id=chain.id, blocked=False, prop_tags=(),
                          chain_metrics=ChainMetrics(0.0, 0.0, 0.0, 0.0, False), degraded=("error",), error=error,
                          latency_ms=self._ms(started), tick=tick)

    def _track_coherence(self, coherence: float) -> None:
        """The running estimate the next reward hint compares with, and the stability window."""
        with self._lock:
            self._recent_coherence.append(coherence)
            est = self._coherence_est
            self._coherence_est = coherence if est is None else \
                est + self.settings.prev_smoothing * (coherence - est)

    def _account(self, result: HookResult, plan: LatencyPlan) -> None:
        with self._lock:
            c = self.counters
            c["chains"] += 1
            c["blocked"] += int(result.blocked)
            c["errors"] += int(result.error is not None)
            c["model_judged"] += int(result.model_pairs > 0)
            for key in ("model_dropped", "model_timeout", "k_halved"):
                c[key] += int(key in result.degraded)

    # ----- feedback, calibration and adaptive tau_c ----------------------------
    def _remember(self, tag: PropTag, pairs: Sequence[PairScore]) -> None:
        """Keep the raw scores of each proposition's deciding pair for later feedback."""
        if not pairs:
            return
        cal = np.array([p.calibrated for p in pairs]) * np.array([[p.evidence.trust] for p in pairs])
        j = int(cal[:, 2].argmax()) if tag.contradict >= self.tau_c else int(cal[:, 0].argmax())
        with self._lock:
            self._recent_raw[tag.p_id] = (np.asarray(pairs[j].raw), tag.contradict >= self.tau_c)
            while len(self._recent_raw) > 10_000:
                self._recent_raw.popitem(last=False)

    def record_feedback(self, p_id: str, label: int | str, *, backlog: bool | None = None) -> str | None:
        """The true label of a proposition checked earlier (e.g. a reviewer's verdict).

        Feeds the online calibration (skipped re-fit under backlog; drift resets T to 1)
        and the precision window that adapts tau_c (phase E). Returns the calibration
        action ('refit', 'reset') or None.
        """
        index = _label_index(label)
        with self._lock:
            known = self._recent_raw.get(p_id)
        if known is None:
            raise ValueError(f"p_id: {p_id!r} was not checked recently (or was forgotten)")
        raw, flagged = known
        backlog = self.backlog if backlog is None else backlog
        action = self.calibrator.observe(raw, index, allow_refit=not backlog)
        if action:  # a re-fit or a drift reset survives a restart
            self._event(f"calibration_{action}", None, temperature=self.calibrator.state.temperature)
            try:
                self.calibrator.save(self.calibration_path)
            except OSError as exc:
                self._event("error", None, error=f"calibration save: {exc}")
        if flagged:
            self._adapt(index == 2)
        return action

    def _adapt(self, true_positive: bool) -> None:
        cfg = self.settings.adaptive
        self._flag_outcomes.append(true_positive)
        if not cfg.get("enabled") or len(self._flag_outcomes) < self._flag_outcomes.maxlen:
            return
        precision = sum(self._flag_outcomes) / len(self._flag_outcomes)
        target, step = float(cfg.get("target_precision", 0.9)), float(cfg.get("step", 0.02))
        old = self.tau_c
        if precision > target:
            self.tau_c = max(float(cfg.get("floor", 0.5)), self.tau_c - step)
        elif precision < target:  # not in the spec: give back what was lowered when precision drops
            self.tau_c = min(self.settings.thresholds.tau_c, self.tau_c + step)
        if self.tau_c != old:
            self._flag_outcomes.clear()
            self._event("tau_c", None, old=old, new=self.tau_c, precision=precision)

    def fit_calibration(self, pairs: Sequence[tuple[str, str]], labels: Sequence[int | str], *,
                        method: str | None = None, save: bool | str | Path = True):
        """Fit stage 6 on labelled (evidence, proposition) pairs; save the state unless ``save=False``."""
        raw, _ = self.score_pairs(pairs)
        state = self.calibrator.fit(raw, [_label_index(x) for x in labels], method=method)  # type: ignore[arg-type]
        if save:
            self.calibrator.save(self.calibration_path if save is True else Path(save))
        self._event("calibration_fit", None, temperature=state.temperature, method=state.method,
                    ece_before=state.ece_before, ece_after=state.ece_after, n=state.n_samples)
        return state

    def score_parts(self, pairs: Sequence[tuple[str, str]], *, batch: int = 4096) -> tuple[dict[str, np.ndarray], list[tuple[str, ...]]]:
        """Stages 2-3 of (evidence, proposition) pairs before fusion: the heuristic and model scores
        (``e_h, c_h, e_m, c_m, scored``) and the cue types, so fusion weights can be tried cheaply."""
        parts: dict[str, list[np.ndarray]] = {k: [] for k in ("e_h", "c_h", "e_m", "c_m", "scored")}
        types: list[tuple[str, ...]] = []
        for start in range(0, len(pairs), batch):
            chunk = pairs[start:start + batch]
            heur = [score_features(features(hyp), features(prem), self.settings.heuristics) for prem, hyp in chunk]
            n = len(chunk)
            parts["e_h"].append(np.array([h.entail for h in heur]))
            parts["c_h"].append(np.array([h.contradict for h in heur]))
            if self.model is not None and self.model.ready:
                probs = self.model.predict(list(chunk), None)
                parts["scored"].append(np.ones(n, dtype=bool))
                parts["e_m"].append(probs[:, 0])
                parts["c_m"].append(probs[:, 2])
            else:
                parts["scored"].append(np.zeros(n, dtype=bool))
                parts["e_m"].append(np.zeros(n))
                parts["c_m"].append(np.zeros(n))
            types.extend(h.types for h in heur)
        return {k: (np.concatenate(v) if v else np.zeros(0)) for k, v in parts.items()}, types

    def score_pairs(self, pairs: Sequence[tuple[str, str]], *,
                    batch: int = 4096) -> tuple[np.ndarray, list[tuple[str, ...]]]:
        """Raw fused (entail, neutral, contradict) of (evidence, proposition) pairs, and their cue types.

        Stages 2-4 exactly as a chain runs them, without retrieval (for evaluation and fitting).
        """
        parts, types = self.score_parts(pairs, batch=batch)
        if not len(parts["e_h"]):
            return np.zeros((0, 3)), types
        return fuse_parts(parts, self.settings.weights), types

    # ----- quarantine ---------------------------------------------------------
    def _store_quarantined(self, chain: ThoughtChain, result: HookResult) -> None:
        text = chain.text if chain.text else " ".join(p.text for p in chain.propositions or ())
        item = QuarantinedChain(chain_id=chain.id, text=text, subjects=result.quarantine.subjects,
                                reason=result.quarantine.reason, importance=chain.importance,
                                payload={"metadata": {k: v for k, v in dict(chain.metadata).items()
                                                      if isinstance(v, (str, int, float, bool))}})
        try:
            self.quarantine.add(item)
        except Exception as exc:  # never lose the verdict because the store failed
            self._event("error", chain.id, error=f"quarantine store: {type(exc).__name__}: {exc}")
            return
        self._event("quarantine", chain.id, reason=result.quarantine.reason,
                    subjects=list(result.quarantine.subjects))

    def on_new_evidence(self, text: str, evidence_id: str | None = None,
                        source: str = "semantic") -> list[QuarantinedChain]:
        """New evidence arrived: re-check the quarantined chains about the same subjects.

        Returns the chains released (no longer blocked); they leave the quarantine.
        """
        if not text or not text.strip():
            return []
        node = EvidenceNode(id=evidence_id or f"new:{self.tick}", text=text, source=source, similarity=1.0)
        return self.recheck_quarantine(evidence=node)

    def recheck_quarantine(self, evidence: EvidenceNode | None = None) -> list[QuarantinedChain]:
        """Re-check quarantined chains (those matching ``evidence``'s subjects, or all of them).

        A re-check runs the stages with the full plan (no latency cuts) and leaves no trace in
        the tick count, the latency estimate or the reward's running coherence; only releases
        (and errors) are logged. One re-check at a time: a second caller gets ``[]``.
        """
        if not self._recheck_lock.acquire(blocking=False):
            return []
        limit = int(self.settings.quarantine.get("max_recheck", 50))
        released: list[QuarantinedChain] = []
        try:
            items = self.quarantine.items()
            if evidence is not None:
                items = [i for i in items if i.chain_id != evidence.id and matches_subjects(i.subjects, evidence.text)]
            extra = (evidence,) if evidence is not None else ()
            for item in items[:limit]:
                chain = ThoughtChain(id=item.chain_id, text=item.text or item.chain_id, importance=item.importance)
                result = self._check(chain, self.tick, self.clock(), LatencyPlan(), self.mem_api, extra, {chain.id})
                if not result.blocked:
                    got = self.quarantine.release(item.chain_id)
                    if got is not None:
                        released.append(got)
                        with self._lock:
                            self.counters["released"] += 1
                        self._event("release", item.chain_id, evidence=evidence.id if evidence else None)
                else:
                    self.quarantine.update(QuarantinedChain(**{**item.to_dict(), "rechecks": item.rechecks + 1}))
        except Exception as exc:  # a failing store or check must not break the caller
            self._event("error", None, error=f"quarantine re-check: {type(exc).__name__}: {exc}")
        finally:
            self._recheck_lock.release()
        return released

    def _maybe_recheck(self, tick: int) -> None:
        """Every Q ticks, re-check the whole quarantine on a background thread (the chain that
        reaches tick Q is not kept waiting for it)."""
        every = int(self.settings.quarantine.get("recheck_every_ticks", 0) or 0)
        if every > 0 and tick % every == 0 and not self._recheck_lock.locked():
            thread = threading.Thread(target=self.recheck_quarantine, name="coherence-recheck", daemon=True)
            self._recheck_thread = thread
            thread.start()

    def join_background(self, timeout: float | None = None) -> None:
        """Wait for a periodic quarantine re-check still running (tests, clean shutdown)."""
        thread = self._recheck_thread
        if thread is not None:
            thread.join(timeout)

    # ----- reporting ----------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        """Counters, false block rate (released / blocked), chain coherence stability (std of the last
        50 chains' coherence), current tau_c, temperature and latency pressure."""
        with self._lock:
            c = dict(self.counters)
            recent = list(self._recent_coherence)
        c["chain_coherence_stability"] = float(np.std(recent)) if len(recent) > 1 else 0.0
        c["false_block_rate"] = c["released"] / c["blocked"] if c["blocked"] else 0.0
        c["tau_c"] = self.tau_c
        c["temperature"] = self.calibrator.state.temperature
        c["latency_pressure"] = self.governor.pressure
        return c

    # ----- adapters -------------------------------------------------------------
    def _memory_api(self, memory: Any) -> MemoryAPI:
        r = self.settings.retrieval
        return MemoryAPI.from_memory(memory, temporal=r.temporal, self_=r.self_search,
                                     default_trust=r.engram_default_trust, trust_by_score=r.trust_by_score)

    def attach_memory(self, memory: Any) -> "CoherenceHook":
        """Use a MemoryService: its engrams as semantic evidence and its quarantine for blocked chains."""
        from cns_core.coherence.memory_adapter import MemoryQuarantine

        self.memory = memory
        self.mem_api = self._memory_api(memory)
        if MemoryQuarantine.supports(memory):
            self.quarantine = MemoryQuarantine(memory)
        return self

    def as_pre_write_hook(self, memory: Any = None) -> Callable[[str, str, str, Mapping[str, Any]], PreWriteVerdict]:
        """The MemoryAgent's ``pre_write_hook(query_id, query, answer, metadata)``.

        Checks the answer (the chain) against memory; the verdict's metadata holds flat
        tags for the engram (``coherence_chain``, ``contradiction_types``, ...). A blocked
        chain is *not* stored by the hook: the agent writes it to the memory's quarantine,
        with the subjects in its metadata. A chain that passes is new evidence: quarantined
        chains about the same subjects are re-checked and released into memory.
        """
        if memory is not None and memory is not self.memory:
            self.attach_memory(memory)
        memory = self.memory

        def pre_write_hook(query_id: str, query: str, answer: str, metadata: Mapping[str, Any] | None = None
                           ) -> PreWriteVerdict:
            meta = dict(metadata or {})
            importance = meta.get("importance")
            if not (isinstance(importance, (int, float)) and not isinstance(importance, bool)
                    and 0 <= importance <= 1):
                importance = None
            try:
                result = self.check_chain(str(query_id), answer if (answer or "").strip() else (query or "-"),
                                          importance=importance, metadata={"query": query},
                                          store_quarantine=False)
            except ValueError as exc:  # unusable input: let it through untagged, say why
                return PreWriteVerdict(False, {"coherence_error": str(exc)[:300]})
            tags = result.tags_metadata()
            if result.error:
                tags["coherence_error"] = result.error[:300]
            reason = None
            if result.blocked and result.quarantine is not None:
                tags["quarantine_subjects"] = ",".join(result.quarantine.subjects)
                reason = result.quarantine.reason[:500]
            elif memory is not None and (answer or "").strip():
                self.on_new_evidence(answer, evidence_id=str(query_id))
            return PreWriteVerdict(result.blocked, tags, reason, result)

        return pre_write_hook

    # ----- SNOs for the dashboard ---------------------------------------------
    def settings_key(self) -> str:
        """A hash of what an SNO check's verdict depends on besides the SNO: the effective settings
        (thresholds as adapted, weights, budgets) and the fitted calibration."""
        state = self.calibrator.state
        text = repr((self.effective_settings(), state.method, state.temperature, state.bias, state.isotonic))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def check_sno(self, sno: Any, *, unlimited: bool = False, grounding: Any = None) -> "SNOCoherence":
        """Claims against each other and against the SNO's evidence, for the dashboard, within
        ``budgets.sno_check_ms`` unless ``unlimited`` (see :func:`cns_core.coherence.sno_check.check_sno`);
        ``grounding``: the claims' verdicts from a critic run the caller has (else computed here).

        Results are kept by SNO content hash, :meth:`settings_key` and the verdicts given (a page
        re-run or a second visit costs nothing); a degraded one is replaced when checked again ``unlimited``.
        """
        from cns_core.coherence.sno_check import check_sno

        given = None if grounding is None else tuple(sorted(grounding.items()))
        key = (sno.content_hash(), self.settings_key(), given)
        with self._lock:
            hit = self._sno_checks.get(key)
            if hit is not None:
                self._sno_checks.move_to_end(key)
        if hit is not None and not (unlimited and hit.degraded):
            return hit
        result = check_sno(self, sno, unlimited=unlimited, grounding=grounding)
        with self._lock:
            self._sno_checks[key] = result
            while len(self._sno_checks) > _SNO_CHECKS_KEPT:
                self._sno_checks.popitem(last=False)
        return result

    def close(self) -> None:
        self.join_background(5.0)
        if self.model is not None:
            self.model.close()
        if self.log is not None:
            self.log.close()


def _with_similarity(node: EvidenceNode, similarity: float) -> EvidenceNode:
    return replace(node, similarity=similarity)


def _same_question(asked: str | None, answered: str | None) -> bool:
    """Whether two answers answer the same question (unknown counts as the same: the cue then decides)."""
    if not asked or not answered:
        return True
    return " ".join(asked.lower().split()).rstrip("?.! ") == " ".join(answered.lower().split()).rstrip("?.! ")
