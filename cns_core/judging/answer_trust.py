"""The critics' Trust Score of a stored answer, beside the judge's grade.

The judge (an LLM) grades an answer 1-5 as a whole; the critics judge the argument the
answer makes. To put the two side by side, an answer is drafted into an SNO
(:func:`cns_core.text.draft_sno`: its claims and relations, the query as the question the
main claim answers, the turn's reference and sources as evidence), scored by the critic
pipeline under the configured weight profile (``trust`` in ``config/memory.yaml``) and the
result stored in the engram's ``trust_*`` metadata (:data:`cns_core.engrams.TRUST_KEYS`).

Beside the Trust Score each answer gets a verdict (:mod:`cns_core.judging.answer_verdict`):
correct, incorrect, unverified or no answer, judged by the verifier against the reference or the
sources, given the question. That verdict is the answer's grounding (:func:`answer_results`): whether
an answer is right is one fact, judged once. The Grounding critic's claim-by-claim reading of the drafted
SNO read a bare answer ("A negatively charged subatomic particle ...") without its question and found the
very reference it restates "contradicting" it, so its contradiction cap set an answer identical to its
reference to Trust 0.00. Now the verdict's p(right) is the grounding score, no per-claim cap applies, and
the Trust Score follows the verdict: a verified-wrong answer is also capped below the lowest accepting band
(config/meta.yaml), whatever its argument's structure. Without a reference or sources, or when the answer
declines, grounding has nothing to read and abstains.

The MemoryAgent does this for every turn it writes; :func:`backfill` (``cns trust-backfill``)
for turns already stored, skipping those scored under the same settings. A failure to draft
or score never loses a turn: the outcome carries the reason (stored as ``trust_error``,
logged) and no score.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from cns_core.config import ConfigError
from cns_core.engrams import UNTRUSTED, DisagreementRule, Engram
from cns_core.memory import memory_settings
from cns_core.scoring import incomplete_note, load_profiles, weigh
from cns_core.bounds import logger

__all__ = ["TrustSettings", "AnswerItem", "TrustOutcome", "AnswerScorer", "BackfillReport", "backfill",
           "item_from_engram", "evidence_metadata", "rejudge", "relabel", "RelabelReport", "wrong_ceiling",
           "answer_results"]

log = logger(__name__)

_FILE = "memory.yaml"


@dataclass(frozen=True)
class TrustSettings:
    """``trust`` in config/memory.yaml: whether answers are scored, under which weights, and the
    disagreement rule of the Engrams page."""

    enabled: bool = True
    profile: str = "verification"
    timeout_s: float = 30.0
    rule: DisagreementRule = field(default_factory=DisagreementRule)

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any] | None = None) -> "TrustSettings":
        """From ``cfg`` (default: memory.yaml's ``trust`` section); errors name the key."""
        from cns_core.config import config_mapping, config_number

        section = dict(cfg if cfg is not None else config_mapping(memory_settings(), "trust", file=_FILE))
        unknown = sorted(set(section) - {"enabled", "profile", "timeout_s", "disagree"})
        if unknown:
            raise ConfigError(f"{_FILE}: trust: unknown key(s) {', '.join(map(str, unknown))}")
        enabled = section.get("enabled", True)
        if not isinstance(enabled, bool):
            raise ConfigError(f"{_FILE}: trust.enabled: expected true or false, got {enabled!r}")
        profile = section.get("profile", cls.profile)
        timeout = config_number(section, "timeout_s", file=_FILE, path="trust", default=cls.timeout_s, low=0.1)
        try:
            rule = DisagreementRule.from_config(config_mapping(section, "disagree", file=_FILE))
        except ValueError as exc:
            raise ConfigError(f"{_FILE}: trust.{exc}") from None
        settings = cls(enabled=enabled, profile=str(profile), timeout_s=timeout, rule=rule)
        settings.weights()   # the profile must exist
        return settings

    def weights(self) -> dict[str, float]:
        """The weights of ``profile`` (config/profiles.yaml); an unknown profile is an error naming it."""
        profiles = load_profiles()
        if self.profile not in profiles:
            raise ConfigError(f"{_FILE}: trust.profile: unknown weight profile {self.profile!r} "
                              f"(known: {', '.join(profiles)})")
        return dict(profiles[self.profile])


@dataclass(frozen=True)
class AnswerItem:
    """One answer to score: the turn's query and answer, and what it may be grounded on."""

    query_id: str
    query: str
    answer: str
    reference: str | None = None
    sources: tuple[str, ...] = ()

    def source_texts(self) -> list[Any]:
        """The evidence for the draft: the reference first, then each source (blank ones left out)."""
        from cns_core.text import SourceText

        out = [SourceText("reference", self.reference)] if self.reference and self.reference.strip() else []
        out += [SourceText(f"source {i}", text) for i, text in enumerate(self.sources, start=1) if text.strip()]
        return out


def evidence_metadata(reference: str | None, sources: Sequence[str]) -> dict[str, Any]:
    """What an engram keeps of a turn's evidence, so a later backfill drafts with the same evidence:
    ``reference`` (text) and ``sources`` (a JSON list; Chroma metadata holds no lists)."""
    out: dict[str, Any] = {}
    if reference and reference.strip():
        out["reference"] = reference
    kept = [s for s in sources if isinstance(s, str) and s.strip()]
    if kept:
        out["sources"] = json.dumps(kept, ensure_ascii=False)
    return out


def item_from_engram(engram: Engram) -> AnswerItem:
    """The answer of a stored turn, with the evidence its metadata kept (an unreadable list is none)."""
    meta = engram.metadata
    try:
        sources = json.loads(meta.get("sources") or "[]")
    except ValueError:
        sources = []
    if not isinstance(sources, list):
        sources = []
    reference = meta.get("reference")
    return AnswerItem(query_id=engram.id, query=engram.query, answer=engram.answer,
                      reference=reference if isinstance(reference, str) else None,
                      sources=tuple(s for s in sources if isinstance(s, str)))


@dataclass(frozen=True)
class TrustOutcome:
    """The critics' verdict on one answer; ``trust_score`` is None when ``error`` says why not."""

    query_id: str
    trust_score: float | None
    profile: str
    settings: str
    complete: bool = True
    incomplete: tuple[str, ...] = ()
    claims: int = 0
    evidence: int = 0
    error: str | None = None
    verdict: Any = None          # the AnswerVerdict; None when scoring failed
    capped_from: float | None = None   # the critics' score before a verified-wrong answer was capped
    abstained: bool = False      # every critic abstained: no score, and nothing went wrong

    def metadata(self) -> dict[str, Any]:
        """The engram's ``trust_*`` keys (every key of TRUST_KEYS that applies; the rest are cleared)."""
        out: dict[str, Any] = {"trust_score": UNTRUSTED if self.trust_score is None else round(self.trust_score, 6),
                               "trust_profile": self.profile, "trust_settings": self.settings}
        if self.error is not None:
            out["trust_error"] = self.error[:500]
        else:
            out.update({"trust_complete": self.complete, "trust_claims": self.claims,
                        "trust_evidence": self.evidence})
            if self.incomplete:
                out["trust_incomplete"] = ",".join(self.incomplete)
            if self.verdict is not None:
                out.update(self.verdict.metadata())
            if self.capped_from is not None:
                out["trust_uncapped"] = round(self.capped_from, 6)
        return out


class AnswerScorer:
    """Drafts and scores answers; one critic pipeline (its models loaded once, its cache shared)."""

    def __init__(self, settings: TrustSettings | None = None, pipeline: Any = None):
        self.settings = settings or TrustSettings.from_config()
        self._weights = self.settings.weights()
        self._pipeline = pipeline
        self._fingerprint: str | None = None
        from cns_core.judging.answer_verdict import VerdictSettings

        self._verdict_settings = VerdictSettings.from_config()

    @classmethod
    def configured(cls) -> "AnswerScorer | None":
        """One with memory.yaml's ``trust`` settings, or None when ``trust.enabled`` is false."""
        settings = TrustSettings.from_config()
        return cls(settings) if settings.enabled else None

    @property
    def pipeline(self) -> Any:
        if self._pipeline is None:
            from cns_core.pipeline import CriticPipeline

            self._pipeline = CriticPipeline(timeout_s=self.settings.timeout_s)
        return self._pipeline

    @property
    def fingerprint(self) -> str:
        """What made a score: weights, each critic's settings, the NLI and embedding models, the
        drafting settings. Two scores with the same fingerprint came from the same judges (the backfill skips a match)."""
        if self._fingerprint is None:
            from cns_core.models import get_embedder, get_nli_backend
            from cns_core.models.nli import nli_fingerprint

            pipeline = self.pipeline
            try:
                nli = nli_fingerprint(pipeline.nli or get_nli_backend())
            except Exception as exc:  # noqa: BLE001 - an unavailable model is part of the settings
                nli = f"unavailable: {type(exc).__name__}"
            try:
                embedder = getattr(pipeline.embedder or get_embedder(), "name", "?")
            except Exception as exc:  # noqa: BLE001
                embedder = f"unavailable: {type(exc).__name__}"
            from cns_core.text import DraftSettings, drafter_identity

            payload = {"profile": self.settings.profile, "weights": self._weights, "nli": nli, "embedder": embedder,
                       "critics": {name: critic.config_key() for name, critic in pipeline.critics.items()},
                       "drafting": [drafter_identity(), repr(DraftSettings())],   # a new drafter scores again
                       "verdict": self._verdict_settings.identity(), "wrong_ceiling": self.wrong_ceiling,
                       "grounding": "answer verdict"}     # the verdict is the answer's grounding (answer_results)
            blob = json.dumps(payload, sort_keys=True, default=str)
            self._fingerprint = hashlib.blake2b(blob.encode("utf-8"), digest_size=8).hexdigest()
        return self._fingerprint

    def _failed(self, item: AnswerItem, reason: str, abstained: bool = False) -> TrustOutcome:
        (log.info if abstained else log.warning)("trust: answer %s not scored: %s", item.query_id, reason)
        return TrustOutcome(item.query_id, None, self.settings.profile, self.fingerprint, error=reason,
                            abstained=abstained)

    def score(self, item: AnswerItem) -> TrustOutcome:
        """Draft ``item``'s answer into an SNO and score it; never raises (a failure is the outcome's error)."""
        from cns_core.text import TextInputError, draft_sno

        if not item.answer.strip():
            return self._failed(item, "answer: empty, nothing to draft", abstained=True)
        try:
            draft = draft_sno(item.answer, sources=item.source_texts(), question=item.query,
                              sno_id=f"answer-{item.query_id}")
        except TextInputError as exc:
            return self._failed(item, f"drafting: {exc}")
        except Exception as exc:  # noqa: BLE001 - a drafting bug must not cost the turn
            return self._failed(item, f"drafting failed: {type(exc).__name__}: {exc}")
        try:
            evaluation = self.pipeline.evaluate(draft.sno, self._weights)
            verdict = self.verdicts([item])[0]
        except Exception as exc:  # noqa: BLE001 - nor a scoring bug
            return self._failed(item, f"scoring failed: {type(exc).__name__}: {exc}")
        if evaluation.failed:
            log.info("trust: answer %s scored without %s", item.query_id, incomplete_note(evaluation.failed))
        weighted = weigh(answer_results(evaluation.results, verdict), self._weights)
        if weighted.judged_nothing:
            return TrustOutcome(item.query_id, None, self.settings.profile, self.fingerprint,
                                claims=len(draft.sno.claims), evidence=len(draft.sno.evidence), verdict=verdict,
                                error=f"nothing to judge: {weighted.abstention_note()}", abstained=True)
        trust, capped_from = float(weighted.trust_score), None
        if verdict.verdict == "incorrect" and trust > self.wrong_ceiling:
            trust, capped_from = self.wrong_ceiling, trust
        return TrustOutcome(item.query_id, trust, self.settings.profile, self.fingerprint,
                            complete=evaluation.complete, incomplete=tuple(evaluation.failed),
                            claims=len(draft.sno.claims), evidence=len(draft.sno.evidence), verdict=verdict,
                            capped_from=capped_from)

    def verdicts(self, items: Sequence[AnswerItem]) -> list[Any]:
        """Each answer's verdict (right, wrong, unverified, no answer), with the pipeline's own models and the
        verdict settings in force now (config/memory.yaml, or the active calibration)."""
        from cns_core.judging.answer_verdict import judge_answers
        from cns_core.models import get_embedder, get_nli_backend

        from cns_core.judging.answer_verdict import VerdictSettings

        current = VerdictSettings.from_config()      # a calibration fitted or reverted meanwhile takes effect now
        if current != self._verdict_settings:
            self._verdict_settings, self._fingerprint = current, None
        pipeline = self.pipeline
        return judge_answers(items, pipeline.nli or get_nli_backend(), pipeline.embedder or get_embedder(),
                             self._verdict_settings)

    @property
    def wrong_ceiling(self) -> float:
        return wrong_ceiling()

    def score_many(self, items: Iterable[AnswerItem]) -> list[TrustOutcome]:
        return [self.score(item) for item in items]

    def record(self, memory: Any, items: Sequence[AnswerItem]) -> list[TrustOutcome]:
        """Score ``items`` and store the outcomes on their engrams (one write)."""
        outcomes = self.score_many(items)
        memory.record_trust({o.query_id: o.metadata() for o in outcomes})
        return outcomes


def answer_results(results: Mapping[str, Any], verdict: Any) -> dict[str, Any]:
    """The critics' results for an answer's SNO with the answer's verdict as its grounding (module docstring).

    The verdict's p(right) (its ``score``) is the grounding score; the Grounding critic's own per-claim reading
    is kept in the evidence for comparison and caps nothing. No p(right) (no reference or sources, or an answer
    that declines) leaves grounding nothing to read: it abstains.
    """
    from cns_core.critics.base import CriticResult

    own = results.get("grounding")
    kept = {"claims_reading": {"score": own.score, "explanation": own.explanation}} if own is not None and own.ok else {}
    p_right = getattr(verdict, "score", None)
    if verdict is None or p_right is None or verdict.verdict == "no_answer":
        why = ("the answer declines to answer" if verdict is not None and verdict.verdict == "no_answer"
               else "no reference or sources to check the answer against")
        grounding = CriticResult.not_applicable("grounding", why, evidence=kept)
    else:
        grounding = CriticResult(
            critic="grounding", score=float(min(1.0, max(0.0, p_right))), confidence=float(verdict.probability or 0.0),
            explanation=(f"The answer's verdict: {verdict.label}, p(right) {float(p_right):.2f} "
                         f"({verdict.note or 'judged against the ' + (verdict.evidence or 'evidence')})."),
            evidence={**kept, "answer_verdict": verdict.verdict, "p_right": float(p_right)})
    return {**results, "grounding": grounding}


def wrong_ceiling() -> float:
    """The highest Trust Score a verified-wrong answer keeps: the top of the "poor" band (config/meta.yaml),
    so such an answer never reads better than poor."""
    from cns_core.meta.settings import MetaConfig

    bands = sorted(MetaConfig.load().bands, key=lambda band: band.min_score)
    poor = next((i for i, band in enumerate(bands) if band.name == "poor"), None)
    edge = bands[poor + 1].min_score if poor is not None and poor + 1 < len(bands) else 0.5
    return round(max(0.0, edge - 0.01), 2)


@dataclass
class BackfillReport:
    """What :func:`backfill` did."""

    total: int = 0          # engrams in the memory
    skipped: int = 0        # already scored under the same settings
    scored: int = 0
    failed: int = 0         # stored with trust_error, no score: something went wrong
    abstained: int = 0      # stored with trust_error, no score: every critic had nothing to judge
    elapsed_s: float = 0.0


def _in_batches(ids: Sequence[str], batch: int,
                on_progress: Callable[[int, int], None] | None) -> Iterator[Sequence[str]]:
    """``ids`` in chunks of ``batch``; ``on_progress(done, todo)`` before the first and after each chunk is handled."""
    if on_progress is not None:
        on_progress(0, len(ids))
    for start in range(0, len(ids), batch):
        yield ids[start:start + batch]
        if on_progress is not None:
            on_progress(min(start + batch, len(ids)), len(ids))


def rejudge(memory: Any, scorer: AnswerScorer, *, ids: Sequence[str] | None = None, batch: int = 32,
            on_progress: Callable[[int, int], None] | None = None) -> BackfillReport:
    """Judge the verdicts of scored answers (all, or those of ``ids``) again with the verifier, under
    ``scorer``'s verdict settings, and re-apply the Trust cap; the critics' own score is kept, not recomputed.
    For answers stored without their readings (an older memory): once judged here they carry them, and
    :func:`relabel` decides them from then on without the model. ``on_progress(done, todo)`` as for
    :func:`backfill`; each batch is stored as it finishes."""
    started = time.perf_counter()
    every = memory.ids_matching(None, None) if ids is None else list(ids)
    report = BackfillReport(total=len(every))
    ceiling = scorer.wrong_ceiling
    for chunk in _in_batches(every, batch, on_progress):
        engrams = [e for e in memory.get(chunk) if _critics_score(e.metadata) is not None]
        report.skipped += len(chunk) - len(engrams)
        if engrams:
            verdicts = scorer.verdicts([item_from_engram(e) for e in engrams])
            memory.record_trust({e.id: _relabelled(e.metadata, v, ceiling, scorer.fingerprint)
                                 for e, v in zip(engrams, verdicts)})
            report.scored += len(engrams)
    report.elapsed_s = time.perf_counter() - started
    return report


@dataclass
class RelabelReport:
    """What :func:`relabel` did."""

    relabelled: int = 0                  # verdicts decided again from their stored readings
    changed: int = 0                     # ... whose verdict or p(right) changed
    needs_model: list[str] = field(default_factory=list)   # scored answers stored without readings
    unscored: int = 0                    # answers without a critics' score (nothing to re-decide)
    elapsed_s: float = 0.0


RELABEL_BATCH = 500       # engrams read and written per Chroma call when relabelling


def relabel(memory: Any, on_progress: Callable[[int, int], None] | None = None) -> RelabelReport:
    """Decide every stored verdict again from its readings (:func:`cns_core.judging.answer_verdict.decide`)
    under the verdict settings in force now (a calibration fitted or reverted), without the model, and
    re-apply the Trust cap: hundreds of answers a second. Answers stored without readings are listed in
    ``needs_model`` for :func:`rejudge`. Each batch is stored as it finishes."""
    from cns_core.judging.answer_verdict import VerdictReadings, VerdictSettings, decide

    started = time.perf_counter()
    settings = VerdictSettings.from_config()
    head, ceiling = settings.verdict_head(), wrong_ceiling()
    every = memory.ids_matching({"trust_score": {"$gte": 0.0}}, None)
    report = RelabelReport(unscored=max(0, memory.size() - len(every)))
    for chunk in _in_batches(every, RELABEL_BATCH, on_progress):
        updates: dict[str, dict[str, Any]] = {}
        for engram in memory.get(chunk):
            if _critics_score(engram.metadata) is None:
                report.unscored += 1
                continue
            try:
                readings = VerdictReadings.from_json(engram.metadata.get("trust_readings"))
            except ValueError:
                report.needs_model.append(engram.id)
                continue
            verdict = decide(readings, engram.answer.strip(), settings, head)
            keys = _relabelled(engram.metadata, verdict, ceiling, str(engram.metadata.get("trust_settings") or ""))
            report.changed += any(keys.get(k) != engram.metadata.get(k)
                                  for k in ("trust_verdict", "trust_verdict_score", "trust_score"))
            updates[engram.id] = keys
        if updates:
            memory.record_trust(updates)
            report.relabelled += len(updates)
    report.elapsed_s = time.perf_counter() - started
    return report


def _critics_score(meta: Mapping[str, Any]) -> float | None:
    """The critics' own Trust Score of a stored answer (before any cap); None when it was never scored."""
    score = meta.get("trust_uncapped", meta.get("trust_score"))
    if not isinstance(score, (int, float)) or isinstance(score, bool) or score == UNTRUSTED or meta.get("trust_error"):
        return None
    return float(score)


def _relabelled(meta: Mapping[str, Any], verdict: Any, ceiling: float, fingerprint: str) -> dict[str, Any]:
    """An engram's ``trust_*`` keys with a new verdict: the same critics' score, capped again at ``ceiling``."""
    critics = _critics_score(meta)
    trust, capped_from = critics, None
    if verdict.verdict == "incorrect" and critics > ceiling:
        trust, capped_from = ceiling, critics
    incomplete = str(meta.get("trust_incomplete") or "")
    outcome = TrustOutcome(str(meta.get("query_id") or ""), trust, str(meta.get("trust_profile") or "verification"),
                           fingerprint, complete=bool(meta.get("trust_complete", True)),
                           incomplete=tuple(x for x in incomplete.split(",") if x),
                           claims=int(meta.get("trust_claims") or 0), evidence=int(meta.get("trust_evidence") or 0),
                           verdict=verdict, capped_from=capped_from)
    return outcome.metadata()


def backfill(memory: Any, scorer: AnswerScorer, *, ids: Sequence[str] | None = None, force: bool = False,
             limit: int | None = None, batch: int = 32,
             on_progress: Callable[[int, int], None] | None = None) -> BackfillReport:
    """Score every stored answer (or those of ``ids`` that are stored) that has no Trust Score under
    ``scorer``'s settings (all with ``force``; at most ``limit``). Idempotent: a second run finds
    nothing to do. ``on_progress(done, todo)`` follows the run batch by batch; each batch is stored
    as it finishes, so an interrupted run keeps what it did."""
    if limit is not None and limit < 1:
        raise ValueError(f"--limit must be at least 1 (got {limit})")
    started = time.perf_counter()
    every = memory.ids_matching(None, None)
    if ids is not None:
        wanted = set(ids)
        every = [i for i in every if i in wanted]
    done = set() if force else {i for i, s in memory.trust_settings_of(every).items() if s == scorer.fingerprint}
    todo = [i for i in every if i not in done]
    if limit is not None:
        todo = todo[:limit]
    report = BackfillReport(total=len(every), skipped=len(done))
    for chunk in _in_batches(todo, batch, on_progress):
        outcomes = scorer.record(memory, [item_from_engram(e) for e in memory.get(chunk)])
        report.scored += sum(o.error is None for o in outcomes)
        report.failed += sum(o.error is not None and not o.abstained for o in outcomes)
        report.abstained += sum(o.abstained for o in outcomes)
    report.elapsed_s = time.perf_counter() - started
    return report
