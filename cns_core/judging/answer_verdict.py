"""Is a stored answer right? One verdict per answer, against its reference or sources, given its question.

The critics' Trust Score judges the argument an answer makes; a reader first wants to know whether
the answer is *right*. That is a different question, asked the way a careful grader asks it:

* an answer that declines ("I don't know", "As an AI I cannot ...") is **no answer**: neither
  right nor wrong;
* the answer, read as the answer to its question, is judged by the verifier
  (``models/nli-minilm-l6``, trained on answers people judged against a reference) against the
  reference, or, without one, against the sources' passages most like it: **correct** when they
  support it, **incorrect** when they contradict it, **unverified** when they do neither;
* every other sentence that states something is checked against the same evidence, plainly (a
  detail need not answer the question): one the evidence contradicts makes the answer incorrect,
  one it does not mention stays an unverified detail and never sinks a verified answer.

The verdict carries its probability, the claim and the passage behind it, so every page shows the
same reason. Thresholds live in ``config/memory.yaml`` (``verdict``).

Judging is two steps: the verifier's *readings* of the answer (:class:`VerdictReadings`: its numbers, and
the claims and passages behind them) and the *decision* from them (:func:`decide`). The readings are kept
on the engram (``trust_readings``), so a person's calibration (a Platt map of p(right) and a threshold on
that scale, :mod:`cns_core.judging.verdict_calibration`) re-decides every stored verdict at once, without
the model, exactly as a fresh judgement would: one p(right) gives one verdict everywhere.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Mapping, Sequence

import numpy as np

from cns_core.judging.verdict_head import (FEATURES, fallback_probability, figures_differ, load_head, name_gap,
                                         verdict_features)
from cns_core.config import ConfigError
from cns_core.engrams import INCOMPLETE_LABEL, VERDICT_LABELS, verdict_label

__all__ = ["ANSWER_VERDICTS", "VERDICT_LABELS", "INCOMPLETE_LABEL", "verdict_label", "VerdictSettings", "DetailCheck", "AnswerVerdict", "VerdictReadings",
           "Evidence", "WrongDetail", "judge_answers", "decide", "raw_p_right", "raw_scores", "is_non_answer"]

ANSWER_VERDICTS: tuple[str, ...] = ("correct", "incorrect", "unverified", "no_answer")
_FILE = "memory.yaml"
_TEXT_KEPT = 400          # characters of a claim or passage kept on the engram
# How a verdict is made from the verifier's readings, part of the scorer's identity: a change re-scores the stored
# answers, so every answer is judged the same way (2: a long answer's backing, 2026-11-28; 3: whether a right
# answer says all its reference does, 2026-12-07).
VERDICT_RULES = 3
_MAX_UNITS = 64           # reference units judged (alternatives and their sentences)
_ALTERNATIVES = re.compile(r"\s*(?:\||;|\n)\s*")

# A refusal or a profession of ignorance, at the start of an answer (or the whole of a short one). A hedge
# ("there is no single answer", "it depends") is an answer: it is judged, and agrees with a reference that
# says people disagree or nobody knows.
_NON_ANSWER = re.compile(
    r"^\W*(?:i\s+(?:do\s*n[o']t|don't|cannot|can't|am\s+(?:not\s+(?:sure|able|aware)|unable|sorry))"
    r"|i'?m\s+(?:not\s+(?:sure|able|aware)|unable|sorry)|sorry\s*(?:[,.!]|but\b|i\b)|as\s+an\s+ai\b"
    r"|(?:unknown|no\s+idea)\W*$"
    r"|i\s+have\s+no\s+(?:comment|idea|information|way))", re.IGNORECASE)


def is_non_answer(answer: str) -> bool:
    """Whether the answer declines to answer (a refusal, "I don't know")."""
    return bool(_NON_ANSWER.match(answer.strip()))


@dataclass(frozen=True)
class VerdictSettings:
    """``verdict`` in config/memory.yaml: where a probability becomes a verdict."""

    correct_at: float = 0.5          # p(right) of the answer at or above this: correct
    wrong_at: float = 0.1            # p(right) at or below this, with a reason a reader can check: incorrect
    incorrect_at: float = 0.5        # a unit contradicting the answer at or above this, with no support: such a reason
    support_below: float = 0.5       # ... "no support": every unit's p(supported) below this
    detail_contradicted_at: float = 0.9   # a detail sentence contradicted this surely (and unsupported): incorrect
    max_details: int = 12            # sentences checked as details (the first ones)
    answer_sentences: int = 2        # sentences of a long answer also read as its answer (0: the whole answer only)
    whole_answer_words: int = 80     # an answer up to this long is also read whole (a longer one through its sentences)
    detail_passages: int = 3         # evidence passages each detail sentence is checked against
    complete_at: float = 0.5         # a right answer read as the reference reads it this surely: complete
    head: str | None = None          # a learned p(right) (a folder with head.json); None: the verifier's numbers alone
    # A person's calibration in force (cns calibrate): correct_at is then its threshold, on the scale of its Platt map
    platt: tuple[float, float] | None = None    # (a, b): p(right) = platt(the verifier's p(right)); None: as it is
    calibration: int = 0                        # the calibration's version (0: none), stamped on each verdict
    configured_correct_at: float | None = None  # correct_at as configured, while a calibration replaces it

    def p_right(self, raw: float) -> float:
        """p(right) as every surface shows it and the verdict compares: the calibration's Platt map of the
        verifier's p(right) when one is in force, rounded to the 6 decimals the memory stores."""
        if self.platt is not None:
            a, b = self.platt
            clipped = min(1 - 1e-4, max(1e-4, float(raw)))
            raw = 1.0 / (1.0 + math.exp(-(a * math.log(clipped / (1 - clipped)) + b)))
        return round(float(raw), 6)

    def identity(self) -> str:
        """What makes a verdict: these settings and the head's weights (a retrained head judges anew). A
        calibration is not part of it: it re-decides the stored verdicts from their readings, at once."""
        head = self.verdict_head()
        weights = "none" if head is None else repr((head.weights, head.bias, head.mean, head.scale))
        configured = replace(self, correct_at=self.configured_correct_at if self.configured_correct_at is not None
                             else self.correct_at, platt=None, calibration=0, configured_correct_at=None)
        head_hash = hashlib.blake2b(weights.encode(), digest_size=6).hexdigest()
        return f"{configured!r} head={head_hash} rules={VERDICT_RULES}"

    def verdict_head(self) -> Any:
        """The learned head of p(right) (None: :func:`~cns_core.judging.verdict_head.fallback_probability`);
        a damaged head file is a ConfigError naming it."""
        try:
            return _cached_head(self.head)
        except ValueError as exc:
            raise ConfigError(f"{_FILE}: verdict.head: {exc}") from None

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any] | None = None) -> "VerdictSettings":
        from cns_core.config import config_mapping, config_number
        from cns_core.memory import memory_settings

        section = dict(cfg if cfg is not None else config_mapping(memory_settings(), "verdict", file=_FILE))
        unknown = sorted(set(section) - set(cls.__dataclass_fields__))
        if unknown:
            raise ConfigError(f"{_FILE}: verdict: unknown key(s) {', '.join(map(str, unknown))}")
        values = {name: config_number(section, name, file=_FILE, path="verdict", default=getattr(cls, name),
                                      low=0.0, high=1.0) for name in ("correct_at", "wrong_at", "incorrect_at",
                                                                      "support_below",
                                                                      "detail_contradicted_at", "complete_at")}
        values["max_details"] = int(config_number(section, "max_details", file=_FILE, path="verdict",
                                                  default=cls.max_details, low=0, high=200))
        for name, high in (("answer_sentences", 12), ("whole_answer_words", 1000), ("detail_passages", 20)):
            values[name] = int(config_number(section, name, file=_FILE, path="verdict", default=getattr(cls, name),
                                             low=0 if name != "detail_passages" else 1, high=high))
        head = section.get("head", cls.head)
        if head is not None and (not isinstance(head, str) or not head.strip() or len(head) > 500):
            raise ConfigError(f"{_FILE}: verdict.head: expected a folder (text) or null, got {head!r}")
        values["head"] = head
        if cfg is None:         # the configured settings: a person's calibration wins (cns calibrate)
            from cns_core.judging.verdict_calibration import active_calibration

            calibration = active_calibration()
            if calibration is not None:
                values.update(configured_correct_at=values["correct_at"], calibration=calibration.version,
                              correct_at=calibration.threshold_for(values["correct_at"]), platt=calibration.p_map)
        return cls(**values)


@functools.lru_cache(maxsize=4)
def _cached_head(folder: str | None) -> Any:
    return load_head(folder)


@dataclass(frozen=True)
class DetailCheck:
    """One sentence of the answer checked against the evidence (without the question)."""

    sentence: str
    verdict: str                 # supported / contradicted / not_enough_info (the grounding verdict rule)
    p_supported: float
    p_contradicted: float
    passage: str
    best_support: float = 0.0    # the highest entailment of any passage for this sentence


@dataclass(frozen=True)
class AnswerVerdict:
    """The verdict on one answer and what it rests on; ``score`` is p(the answer is right)."""

    verdict: str
    probability: float | None    # of the verdict (None for no answer / nothing to check against)
    score: float | None
    p_supported: float | None = None
    p_contradicted: float | None = None
    p_not_enough_info: float | None = None
    claim: str = ""
    passage: str = ""
    evidence: str = ""           # which evidence: "reference" or "source N"
    note: str = ""
    details: tuple[DetailCheck, ...] = field(default=(), compare=False)
    features: tuple[float, ...] = field(default=(), compare=False)   # verdict_head.FEATURES, for training
    readings: "VerdictReadings | None" = field(default=None, compare=False)   # what it was decided from
    calibration: int = 0                 # the calibration version it was decided under (0: none)
    # Informativeness, judged apart from truth (as TruthfulQA's annotators do): of a correct answer checked
    # against a reference, whether it says what the reference says (False: true but incomplete, "An English
    # novelist." for Jane Austen); None where it was not judged (not correct, or no reference).
    complete: bool | None = None

    @property
    def label(self) -> str:
        return verdict_label(self.verdict, self.complete)

    def metadata(self) -> dict[str, Any]:
        """The engram's ``trust_verdict*`` keys and its readings (Chroma metadata: scalars only)."""
        out: dict[str, Any] = {"trust_verdict": self.verdict, "trust_verdict_note": self.note[:_TEXT_KEPT],
                               "trust_verdict_calibration": int(self.calibration)}
        if self.readings is not None:
            out["trust_readings"] = self.readings.to_json()
        for key, value in (("trust_verdict_p", self.probability), ("trust_verdict_score", self.score),
                           ("trust_p_supported", self.p_supported), ("trust_p_contradicted", self.p_contradicted)):
            if value is not None:
                out[key] = round(float(value), 6)
        if self.complete is not None:
            out["trust_verdict_complete"] = bool(self.complete)
        if self.claim:
            out["trust_verdict_claim"] = self.claim[:_TEXT_KEPT]
        if self.passage:
            out["trust_verdict_passage"] = self.passage[:_TEXT_KEPT]
            out["trust_verdict_evidence"] = self.evidence
        return out


@dataclass(frozen=True)
class _Question:
    """One answer to judge: its question, text, and named evidence texts (reference first)."""

    query: str
    answer: str
    evidence: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Reading:
    """The answer (or one of its sentences) judged against every evidence unit: the best support and the
    strongest contradiction, each with its passage."""

    claim: str
    support: Any | None          # JudgedPassage with the highest entailment (None without passages)
    contradiction: Any | None    # ... and with the highest contradiction

    @property
    def p_supported(self) -> float:
        return self.support.entailment if self.support is not None else 0.0

    @property
    def p_contradicted(self) -> float:
        return self.contradiction.contradiction if self.contradiction is not None else 0.0


def reference_units(reference: str, split: Any) -> list[str]:
    """A reference's units, each judged on its own: its alternative answers (a list joined by " | ",
    ";" or new lines) and each alternative's sentences. One sentence that supports the answer is
    enough, so a reference listing "Cats purr when content. Cats also purr when anxious." cannot let
    its second sentence outvote the first."""
    units: list[str] = []
    for alternative in _ALTERNATIVES.split(reference):
        alternative = alternative.strip()
        if alternative:
            units.extend(s.strip() for s in (split(alternative) or [alternative]) if s.strip())
    return list(dict.fromkeys(units))[:_MAX_UNITS] or [reference.strip()]


def answering_sentences(question: str, sentences: Sequence[str], embedder: Any, keep: int = 2) -> list[str]:
    """The sentences of a long answer that answer its question: the first (answers lead with the
    answer) and those most like the question in meaning, ``keep`` at most."""
    if len(sentences) <= 1 or keep <= 0:
        return []
    chosen = [sentences[0]]
    if question and keep > 1:
        vectors = np.asarray(embedder.encode([question, *sentences[1:]]), dtype=np.float32)
        order = np.argsort(-(vectors[1:] @ vectors[0]), kind="stable")
        chosen.extend(sentences[1 + i] for i in order[:keep - 1])
    return chosen


def judge_answers(items: Sequence[Any], nli: Any, embedder: Any, settings: VerdictSettings | None = None,
                  grounding: Mapping[str, Any] | None = None) -> list[AnswerVerdict]:
    """The verdict of each item (``query``, ``answer``, ``source_texts()`` as :class:`AnswerItem` has
    them), every pair of every item scored in one batched call of ``nli``."""
    from cns_core.critics.common import critic_settings
    from cns_core.critics.grounding import fusion_of, verdict_rule_of
    from cns_core.critics.grounding_judge import GroundingProblem, RetrievalSettings, judge_problems
    from cns_core.critics.grounding_passages import source_units
    from cns_core.text.segment import split_sentences

    settings = settings or VerdictSettings.from_config()
    grounding = dict(grounding if grounding is not None else critic_settings("grounding"))
    max_chars = int(grounding["max_window_chars"])
    out: list[AnswerVerdict | None] = [None] * len(items)
    asked: list[Any] = []
    checked: list[Any] = []
    covering: list[Any] = []
    plans: list[tuple] = []
    unit_texts: list[list[str]] = []
    head = settings.verdict_head()
    for i, item in enumerate(items):
        question = _Question(item.query.strip(), item.answer.strip(),
                             tuple((s.name, s.text) for s in item.source_texts()))
        if is_non_answer(question.answer) or not question.evidence:
            kind = "no_answer" if is_non_answer(question.answer) else "no_evidence"
            out[i] = decide(VerdictReadings(kind=kind), question.answer, settings, head)
            continue
        # The answer is judged against the reference when there is one (it is the gold answer), each of
        # its units on its own; else against the sources' passages. Details against all the evidence.
        unit_sources = [(name, (u,)) for name, t in question.evidence if name == "reference"
                        for u in reference_units(t, split_sentences)]
        page_sources = [(name, tuple(source_units(t, max_chars, split_sentences)))
                        for name, t in question.evidence if name != "reference"]
        main, every = unit_sources or page_sources, unit_sources + page_sources
        sentences = split_sentences(question.answer)
        details = sentences[:settings.max_details] if len(sentences) > 1 else []
        # A long answer is read through the sentences that answer the question (the whole of it would
        # not fit the verifier's window); a short one as a whole, and through them too.
        answering = answering_sentences(question.query, details, embedder, settings.answer_sentences)
        whole = len(question.answer.split()) <= settings.whole_answer_words or not answering
        readings = list(dict.fromkeys(([question.answer] if whole else []) + answering))
        plain = ([question.answer] if whole else []) + details
        asked.append(GroundingProblem(tuple(readings), tuple(units for _, units in main),
                                      tuple([question.query] * len(readings))))
        checked.append(GroundingProblem(tuple(plain), tuple(units for _, units in every)))
        # The other way round, against a reference only: does the answer say what the reference says? Each of
        # the reference's units (its alternatives) read as the question's answer, against the answer's passages.
        reference = tuple(u for _, units in unit_sources for u in units)
        if reference:
            covering.append(GroundingProblem(reference, (tuple(source_units(question.answer, max_chars,
                                                                            split_sentences)),),
                                             tuple([question.query] * len(reference))))
        plans.append((i, question, [name for name, _ in main], [name for name, _ in every], details, whole,
                      bool(reference)))
        unit_texts.append([u for _, units in main for u in units])
    if plans:
        retrieval = RetrievalSettings.from_settings(grounding)
        fusion, rule = fusion_of(grounding), verdict_rule_of(grounding)
        judged_asked = judge_problems(asked, nli, embedder, fusion, retrieval, rule)
        judged_plain = judge_problems(checked, nli, embedder, fusion,
                                      replace(retrieval, top_k=min(retrieval.top_k, settings.detail_passages)), rule)
        covered = iter(judge_problems(covering, nli, embedder, fusion, retrieval, rule) if covering else ())
        for n, ((i, question, main_names, every_names, details, whole, has_reference), problem, by_reading,
                by_sentence) in enumerate(zip(plans, asked, judged_asked, judged_plain)):
            readings = [_reading(claim, v) for claim, v in zip(problem.claims, by_reading)]
            plain_answer = _reading(question.answer, by_sentence[0]) if whole else Reading(question.answer, None, None)
            checks = tuple(_detail(sentence, d, every_names)
                           for sentence, d in zip(details, by_sentence[1:] if whole else by_sentence))
            read = _readings(question, readings, plain_answer, checks, main_names, every_names, unit_texts[n], settings,
                             whole)
            if has_reference:
                read = replace(read, covers=round(_covers(next(covered)), 6))
            out[i] = replace(decide(read, question.answer, settings, head), details=checks)
    return [v for v in out if v is not None]


def _covers(by_unit: Sequence[Any]) -> float:
    """The best p(entailment) of any reference unit read against the answer (0 when nothing was read)."""
    best = [v.strongest("entailment") for v in by_unit]
    return max((float(b.entailment) for b in best if b is not None), default=0.0)


def _reading(claim: str, verdict: Any) -> Reading:
    if not verdict.passages:
        return Reading(claim, None, None)
    return Reading(claim, verdict.strongest("entailment"), verdict.strongest("contradiction"))


def _detail(sentence: str, verdict: Any, names: Sequence[str]) -> DetailCheck:
    best = verdict.strongest("contradiction") if verdict.verdict == "contradicted" else verdict.strongest("entailment")
    support = verdict.strongest("entailment")
    return DetailCheck(sentence, verdict.verdict, verdict.p_supported, verdict.p_contradicted,
                       best.passage.text if best is not None else "",
                       best_support=support.entailment if support is not None else 0.0)


def _evidence(claim: str, judged: Any, names: Sequence[str]) -> "Evidence":
    """A reading's claim and the passage it rests on (judged: a JudgedPassage, or None without passages)."""
    if judged is None:
        return Evidence(claim[:_TEXT_KEPT])
    return Evidence(claim[:_TEXT_KEPT], judged.passage.text[:_TEXT_KEPT], names[judged.passage.source],
                    float(judged.neutral))


def _readings(question: _Question, readings: Sequence[Reading], plain: Reading, checks: Sequence[DetailCheck],
              names: Sequence[str], every_names: Sequence[str], units: Sequence[str],
              settings: VerdictSettings, read_whole: bool) -> "VerdictReadings":
    """What the verifier read of one answer, everything :func:`decide` needs (see :class:`VerdictReadings`).
    ``names`` name the evidence the answer's readings were judged against (the reference's units, else the
    sources'), ``every_names`` that of the plain reading (all of it)."""
    features = verdict_features(readings, plain, checks, question.answer, units)
    supported = max(readings, key=lambda r: r.p_supported)
    contradicted = max([*readings[:1], plain], key=lambda r: r.p_contradicted)
    # A passage that states other figures than the answer does not support it ("1944." against "... ended in
    # 1945."): the verifier reads such pairs as support far too often. Only against a reference: a page of
    # sources states many figures, most of them about something else.
    other_figures = supported.support is not None and names[supported.support.passage.source] == "reference" \
        and figures_differ(supported.claim, supported.support.passage.text)
    wrong = max((c for c in checks if c.p_contradicted >= settings.detail_contradicted_at
                 and c.best_support < settings.support_below), key=lambda c: c.p_contradicted, default=None)
    return VerdictReadings(
        features=tuple(round(float(f), 6) for f in features), support=round(supported.p_supported, 6),
        against=round(contradicted.p_contradicted, 6), other_figures=bool(other_figures),
        supported=_evidence(supported.claim, supported.support, names),
        contradicted=_evidence(contradicted.claim, contradicted.contradiction,
                               every_names if contradicted is plain else names),
        first_claim=readings[0].claim[:_TEXT_KEPT], missing_names=tuple(sorted(name_gap(readings[0].claim, units)[1])[:3]),
        wrong_detail=None if wrong is None else WrongDetail(wrong.sentence[:_TEXT_KEPT], wrong.passage[:_TEXT_KEPT],
                                                            round(wrong.p_contradicted, 6)),
        open_details=sum(c.verdict == "not_enough_info" for c in checks),
        backing=round(answer_backing(supported, checks, question.answer, units, read_whole), 6),
        read_whole=read_whole)


def answer_backing(supported: Reading, checks: Sequence[DetailCheck], answer: str, units: Sequence[str],
                   read_whole: bool) -> float:
    """How well the evidence backs the answer. An answer too long to read whole (``whole_answer_words``) is
    read through the sentences that answer the question; where the evidence says at least as much as the
    answer (several full reference answers, a summary's document), a careful reader expects every sentence
    of it to be backed: the mean best support of its sentences, so one well-supported sentence does not make
    a summary right. Otherwise (an answer read whole, with its question; a reference shorter than the answer,
    whose asides it never mentions) the best support. On SQuALITY's long answers (a development set) the mean
    ranks right above wrong where the best support barely did (docs/history.md, "Stages 6 and 7, and a long
    answer's backing"); an answer short enough to read whole is better judged whole, with its question, than by its
    sentences read plainly (SAF's exam answers)."""
    if read_whole or not checks or sum(len(u.split()) for u in units) < len(answer.split()):
        return supported.p_supported
    return float(np.mean([c.best_support for c in checks]))


def raw_p_right(readings: "VerdictReadings", head: Any) -> float:
    """The verifier's p(right) of an answer from its readings, before any calibration: the head (or the
    fallback) on the features, held below an even chance by other figures and by a contradicted detail."""
    score = head.probability(np.asarray(readings.features)) if head is not None else \
        fallback_probability(np.asarray(readings.features), readings.backing)
    if readings.other_figures:
        score = min(score, 0.5 * (1.0 - readings.against))
    if readings.wrong_detail is not None:   # a contradicted detail still matters, whatever else is supported
        score = min(score, 1.0 - readings.wrong_detail.p_contradicted)
    return float(score)


def decide(readings: "VerdictReadings", answer: str, settings: VerdictSettings, head: Any = None) -> AnswerVerdict:
    """The verdict from the readings of ``answer`` under ``settings`` (and the verdict head, if any).

    * **correct**: p(right) reaches ``correct_at``;
    * **incorrect**: p(right) at or below ``wrong_at`` *and* a reason a reader can check: a unit contradicts
      the answer (``incorrect_at``) while none supports it (``support_below``), the supporting passage
      states other figures, the answer names what no unit names while the evidence names something else,
      or a detail nothing supports is contradicted (``detail_contradicted_at``). Chosen for precision: a
      wrong red badge costs more than "unverified". Figures are checkable, so other figures with a
      reading that contradicts the answer at ``incorrect_at`` are enough, whatever p(right);
    * **unverified** otherwise.

    p(right) is :meth:`VerdictSettings.p_right` of :func:`raw_p_right`: a calibration's Platt map applies to
    it and its threshold is on that scale, so the same p(right) gives the same verdict on every answer.
    """
    calibration = settings.calibration
    if readings.kind == "no_answer":
        return AnswerVerdict("no_answer", None, None, claim=answer, readings=readings, calibration=calibration,
                             note="The answer declines to answer: neither right nor wrong.")
    if readings.kind == "no_evidence":
        return AnswerVerdict("unverified", None, None, claim=answer, readings=readings, calibration=calibration,
                             note="No reference or sources to check the answer against.")
    score = settings.p_right(raw_p_right(readings, head))
    support, against = readings.support, readings.against
    supported, contradicted = readings.supported, readings.contradicted

    def verdict(name: str, probability: float, side: Evidence, claim: str, note: str) -> AnswerVerdict:
        return AnswerVerdict(name, probability, score, p_supported=support, p_contradicted=against,
                             p_not_enough_info=side.neutral, passage=side.passage, evidence=side.evidence,
                             claim=claim, note=note, features=readings.features, readings=readings,
                             calibration=calibration)

    if score >= settings.correct_at:
        note = f"The {supported.evidence} supports the answer."
        complete = None if readings.covers is None else readings.covers >= settings.complete_at
        if complete is False:
            note = (f"True but incomplete: the {supported.evidence} supports the answer, but the answer does not "
                    "say what the reference does.")
        if readings.open_details:
            note += f" {readings.open_details} detail(s) the evidence does not mention stay unverified."
        return replace(verdict("correct", score, supported, supported.claim, note), complete=complete)
    # The answer-level reasons were made for an answer read whole: on a long answer read through its sentences
    # they gave red badges at precision 0.68 (SQuALITY); a detail the evidence surely contradicts while nothing
    # supports it is a reason a reader can check in any answer.
    answer_level = readings.read_whole
    if answer_level and readings.other_figures and (against >= settings.incorrect_at or score <= settings.wrong_at):
        return verdict("incorrect", 1.0 - score, supported, supported.claim,
                       f"The {supported.evidence} states other figures than the answer.")
    if score <= settings.wrong_at:
        if answer_level and against >= settings.incorrect_at and support < settings.support_below:
            return verdict("incorrect", 1.0 - score, contradicted, contradicted.claim,
                           f"The {contradicted.evidence} contradicts the answer and nothing in it supports it.")
        if answer_level and readings.features[FEATURES.index("name_mismatch")] > 0:
            return verdict("incorrect", 1.0 - score, supported, readings.first_claim,
                           f"The answer names {', '.join(readings.missing_names)}, which the evidence does not; it "
                           "names something else.")
        wrong = readings.wrong_detail
        if wrong is not None:
            return AnswerVerdict("incorrect", wrong.p_contradicted, score, p_supported=support, p_contradicted=against,
                                 passage=wrong.passage, evidence="evidence", claim=wrong.sentence,
                                 features=readings.features, readings=readings, calibration=calibration,
                                 note="The evidence contradicts a detail of the answer.")
    side = supported if support >= against else contradicted
    return verdict("unverified", 1.0 - abs(score - 0.5) * 2, side, answer,
                   f"The {side.evidence} neither supports nor contradicts the answer surely enough.")


_MAX_READINGS_CHARS = 20_000       # a stored readings record larger than this is not read (damaged)


@dataclass(frozen=True)
class Evidence:
    """A claim of the answer and the evidence passage a reading rests on ("evidence" when there is none)."""

    claim: str
    passage: str = ""
    evidence: str = "evidence"       # "reference", "source 2", ...
    neutral: float | None = None     # p(not enough information) of that passage


@dataclass(frozen=True)
class WrongDetail:
    """A detail sentence nothing supports that the evidence contradicts (surely enough to matter)."""

    sentence: str
    passage: str
    p_contradicted: float


@dataclass(frozen=True)
class VerdictReadings:
    """What the verifier read of one answer: every number and text :func:`decide` needs, so a verdict is
    decided again (a new threshold, a calibration) without the model. Kept on the engram as JSON
    (``trust_readings``). ``kind``: ``judged``, or ``no_answer`` / ``no_evidence`` (nothing to read)."""

    kind: str = "judged"
    features: tuple[float, ...] = ()           # verdict_head.FEATURES
    support: float = 0.0                       # the best p(supported) of the answer's readings
    against: float = 0.0                       # the strongest p(contradicted) of the answer, read either way
    other_figures: bool = False                # the supporting reference passage states other figures
    supported: Evidence = field(default_factory=lambda: Evidence(""))
    contradicted: Evidence = field(default_factory=lambda: Evidence(""))
    first_claim: str = ""                      # the answer as first read (its names are compared)
    missing_names: tuple[str, ...] = ()        # names of the answer no evidence unit states (up to 3)
    wrong_detail: WrongDetail | None = None
    open_details: int = 0                      # detail sentences the evidence does not mention
    # answer_backing(); None on readings stored before it existed, which were decided on the best support
    backing: float | None = None
    # The answer was read whole (else, too long, through its sentences: then only a contradicted detail
    # makes it incorrect). Readings stored before this field existed load as read whole, as they were decided.
    read_whole: bool = True
    # p(the reference, read as the answer to the question, follows from the answer): how much of what the
    # reference says the answer says too. None without a reference, and on readings stored before it existed.
    covers: float | None = None
    version: int = 1

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: Any) -> "VerdictReadings":
        """The readings stored on an engram; ValueError naming the problem when they are absent or damaged."""
        if not isinstance(text, str) or not text:
            raise ValueError("no readings stored")
        if len(text) > _MAX_READINGS_CHARS:
            raise ValueError(f"readings: {len(text):,} characters, more than {_MAX_READINGS_CHARS:,}")
        try:
            raw = json.loads(text)
            if raw.get("version") != 1:
                raise ValueError(f"readings version {raw.get('version')!r} is not 1")
            if raw["kind"] not in ("judged", "no_answer", "no_evidence"):
                raise ValueError(f"readings kind {raw['kind']!r}")
            features = tuple(float(f) for f in raw["features"])
            if raw["kind"] == "judged" and len(features) != len(FEATURES):
                raise ValueError(f"readings: {len(features)} features, not {len(FEATURES)}")
            backing = None if raw.get("backing") is None else float(raw["backing"])
            covers = None if raw.get("covers") is None else float(raw["covers"])
            numbers = [*features, float(raw["support"]), float(raw["against"]),
                       *([] if backing is None else [backing]), *([] if covers is None else [covers])]
            if not all(math.isfinite(x) for x in numbers):
                raise ValueError("readings: a number is not finite")
            wrong = raw.get("wrong_detail")
            return cls(kind=raw["kind"], features=features, support=float(raw["support"]),
                       against=float(raw["against"]), other_figures=bool(raw["other_figures"]),
                       supported=Evidence(**raw["supported"]), contradicted=Evidence(**raw["contradicted"]),
                       first_claim=str(raw["first_claim"]), missing_names=tuple(map(str, raw["missing_names"])),
                       wrong_detail=None if wrong is None else WrongDetail(str(wrong["sentence"]), str(wrong["passage"]),
                                                                           float(wrong["p_contradicted"])),
                       open_details=int(raw["open_details"]), backing=backing,
                       read_whole=bool(raw.get("read_whole", True)), covers=covers)
        except (TypeError, KeyError, AttributeError, json.JSONDecodeError) as exc:
            raise ValueError(f"readings: damaged ({type(exc).__name__}: {exc})") from None


def raw_scores(engrams: Sequence[Any], head: Any) -> dict[str, float]:
    """The verifier's own p(right) of each engram that has one: from its stored readings, else its stored
    p(right) when no calibration decided it (an older verdict)."""
    out: dict[str, float] = {}
    for e in engrams:
        try:
            readings = VerdictReadings.from_json(e.metadata.get("trust_readings"))
        except ValueError:
            stored = e.metadata.get("trust_verdict_score")
            if isinstance(stored, (int, float)) and not isinstance(stored, bool) \
                    and not e.metadata.get("trust_verdict_calibration"):
                out[e.id] = float(stored)
            continue
        if readings.kind == "judged":
            out[e.id] = raw_p_right(readings, head)
    return out
