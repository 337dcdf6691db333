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
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from cns_core.config import ConfigError

__all__ = ["ANSWER_VERDICTS", "VERDICT_LABELS", "VerdictSettings", "DetailCheck", "AnswerVerdict", "judge_answers",
           "is_non_answer"]

ANSWER_VERDICTS: tuple[str, ...] = ("correct", "incorrect", "unverified", "no_answer")
VERDICT_LABELS: dict[str, str] = {"correct": "correct", "incorrect": "incorrect", "unverified": "unverified",
                                  "no_answer": "no answer"}
_FILE = "memory.yaml"
_TEXT_KEPT = 400          # characters of a claim or passage kept on the engram

# A refusal or a profession of ignorance, at the start of an answer (or the whole of a short one).
_NON_ANSWER = re.compile(
    r"^\W*(?:i\s+(?:do\s*n[o']t|don't|cannot|can't|am\s+(?:not\s+(?:sure|able|aware)|unable|sorry))"
    r"|i'?m\s+(?:not\s+(?:sure|able|aware)|unable|sorry)|sorry\s*(?:[,.!]|but\b|i\b)|as\s+an\s+ai\b"
    r"|(?:unknown|no\s+idea)\W*$"
    r"|there\s+is\s+no\s+(?:way\s+to\s+know|(?:definitive|single|clear)\s+answer)"
    r"|i\s+have\s+no\s+(?:idea|information|way))", re.IGNORECASE)


def is_non_answer(answer: str) -> bool:
    """Whether the answer declines to answer (a refusal, "I don't know")."""
    return bool(_NON_ANSWER.match(answer.strip()))


@dataclass(frozen=True)
class VerdictSettings:
    """``verdict`` in config/memory.yaml: where a probability becomes a verdict."""

    correct_at: float = 0.5          # p(supported) of the answer at or above this: correct
    incorrect_at: float = 0.5        # p(contradicted) at or above this (and above p(supported)): incorrect
    detail_contradicted_at: float = 0.9   # a detail sentence contradicted this surely makes the answer incorrect
    max_details: int = 12            # sentences checked as details (the first ones)

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any] | None = None) -> "VerdictSettings":
        from cns_core.config import config_mapping, config_number
        from cns_core.memory import memory_settings

        section = dict(cfg if cfg is not None else config_mapping(memory_settings(), "verdict", file=_FILE))
        unknown = sorted(set(section) - set(cls.__dataclass_fields__))
        if unknown:
            raise ConfigError(f"{_FILE}: verdict: unknown key(s) {', '.join(map(str, unknown))}")
        values = {name: config_number(section, name, file=_FILE, path="verdict", default=getattr(cls, name),
                                      low=0.0, high=1.0) for name in ("correct_at", "incorrect_at",
                                                                      "detail_contradicted_at")}
        values["max_details"] = int(config_number(section, "max_details", file=_FILE, path="verdict",
                                                  default=cls.max_details, low=0, high=200))
        if cfg is None:         # the configured settings: a person's fitted threshold wins (cns calibrate)
            from cns_core.agents.verdict_calibration import active_threshold

            values["correct_at"] = active_threshold(values["correct_at"])
        return cls(**values)


@dataclass(frozen=True)
class DetailCheck:
    """One sentence of the answer checked against the evidence (without the question)."""

    sentence: str
    verdict: str                 # supported / contradicted / not_enough_info (the grounding verdict rule)
    p_supported: float
    p_contradicted: float
    passage: str


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

    @property
    def label(self) -> str:
        return VERDICT_LABELS[self.verdict]

    def metadata(self) -> dict[str, Any]:
        """The engram's ``trust_verdict*`` keys (Chroma metadata: scalars only)."""
        out: dict[str, Any] = {"trust_verdict": self.verdict, "trust_verdict_note": self.note[:_TEXT_KEPT]}
        for key, value in (("trust_verdict_p", self.probability), ("trust_verdict_score", self.score),
                           ("trust_p_supported", self.p_supported), ("trust_p_contradicted", self.p_contradicted)):
            if value is not None:
                out[key] = round(float(value), 6)
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


def judge_answers(items: Sequence[Any], nli: Any, embedder: Any, settings: VerdictSettings | None = None,
                  grounding: Mapping[str, Any] | None = None) -> list[AnswerVerdict]:
    """The verdict of each item (``query``, ``answer``, ``source_texts()`` as :class:`AnswerItem` has
    them), every pair of every item scored in one batched call of ``nli``."""
    from cns_core.critics.common import critic_settings
    from cns_core.critics.grounding import fusion_of
    from cns_core.critics.grounding_judge import GroundingProblem, RetrievalSettings, judge_problems
    from cns_core.critics.grounding_passages import source_units
    from cns_core.critics.grounding_verdict import VerdictRule
    from cns_core.text.segment import split_sentences

    settings = settings or VerdictSettings.from_config()
    grounding = dict(grounding if grounding is not None else critic_settings("grounding"))
    max_chars = int(grounding["max_window_chars"])
    out: list[AnswerVerdict | None] = [None] * len(items)
    problems, plans = [], []
    for i, item in enumerate(items):
        question = _Question(item.query.strip(), item.answer.strip(),
                             tuple((s.name, s.text) for s in item.source_texts()))
        if is_non_answer(question.answer):
            out[i] = AnswerVerdict("no_answer", None, None, claim=question.answer,
                                   note="The answer declines to answer: neither right nor wrong.")
            continue
        if not question.evidence:
            out[i] = AnswerVerdict("unverified", None, None, claim=question.answer,
                                   note="No reference or sources to check the answer against.")
            continue
        # The main claim is judged against the reference when there is one (it is the gold answer),
        # else against the sources; details against all the evidence.
        main_sources = [t for name, t in question.evidence if name == "reference"] or \
                       [t for _, t in question.evidence]
        sentences = split_sentences(question.answer)
        details = sentences[:settings.max_details] if len(sentences) > 1 else []
        problems.append(GroundingProblem((question.answer, question.answer),
                                         tuple(tuple(source_units(t, max_chars, split_sentences)) for t in main_sources),
                                         (question.query, "")))
        problems.append(GroundingProblem(tuple(details),
                                         tuple(tuple(source_units(t, max_chars, split_sentences))
                                               for _, t in question.evidence)))
        plans.append((i, question, main_sources, details))
    if problems:
        judged = judge_problems(problems, nli, embedder, fusion_of(grounding), RetrievalSettings.from_settings(grounding),
                                VerdictRule.from_settings(grounding))
        for n, (i, question, main_sources, details) in enumerate(plans):
            asked, plain = judged[2 * n]
            out[i] = _decide(question, main_sources, asked, plain, details, judged[2 * n + 1], settings)
    return [v for v in out if v is not None]


def _evidence_name(question: _Question, text: str) -> str:
    return next((name for name, t in question.evidence if t == text), "evidence")


def _decisive(verdict: Any) -> Any:
    """The passage that most strongly supports or contradicts a claim (a short reference is the only one)."""
    return max(verdict.passages, key=lambda p: max(p.entailment, p.contradiction))


def _decide(question: _Question, main_sources: list[str], asked: Any, plain: Any, sentences: Sequence[str],
            details: Sequence[Any], settings: VerdictSettings) -> AnswerVerdict:
    """The verdict from the answer's own judgement and its details' (see the module docstring).

    The answer is read twice against the same evidence: as the answer to its question, and plainly
    as a statement. Either reading contradicted makes it incorrect; p(right) is the first reading's
    p(supported) discounted by the second's p(contradicted) (on NQ301, the development set, balanced
    accuracy 0.789 -> 0.802 and AUC 0.850 -> 0.858 over the first reading alone).
    """
    decisive, statement = _decisive(asked), _decisive(plain)
    p = np.array([decisive.entailment, decisive.neutral, decisive.contradiction])
    score = float(p[0]) * (1.0 - statement.contradiction)
    if statement.contradiction > p[2] and statement.contradiction > statement.entailment:
        decisive, p = statement, np.array([statement.entailment, statement.neutral, statement.contradiction])
    source = main_sources[decisive.passage.source]
    base = dict(p_supported=float(p[0]), p_contradicted=float(p[2]), p_not_enough_info=float(p[1]),
                passage=decisive.passage.text, evidence=_evidence_name(question, source))
    checks = tuple(DetailCheck(sentence, d.verdict, d.p_supported, d.p_contradicted,
                               (d.strongest("contradiction") if d.verdict == "contradicted"
                                else d.strongest("entailment")).passage.text if d.passages else "")
                   for sentence, d in zip(sentences, details))
    wrong_detail = max((c for c in checks if c.verdict == "contradicted"
                        and c.p_contradicted >= settings.detail_contradicted_at),
                       key=lambda c: c.p_contradicted, default=None)
    if p[2] >= settings.incorrect_at and p[2] > p[0]:
        return AnswerVerdict("incorrect", float(p[2]), score, claim=question.answer, details=checks,
                             note=f"The {base['evidence']} contradicts the answer.", **base)
    if wrong_detail is not None:
        return AnswerVerdict("incorrect", wrong_detail.p_contradicted,
                             min(score, 1.0 - wrong_detail.p_contradicted),
                             **{**base, "passage": wrong_detail.passage, "evidence": "evidence"},
                             claim=wrong_detail.sentence, details=checks,
                             note="The evidence contradicts a detail of the answer.")
    if score >= settings.correct_at:
        open_details = sum(c.verdict == "not_enough_info" for c in checks)
        note = f"The {base['evidence']} supports the answer."
        if open_details:
            note += f" {open_details} detail(s) the evidence does not mention stay unverified."
        return AnswerVerdict("correct", score, score, claim=question.answer, details=checks, note=note, **base)
    return AnswerVerdict("unverified", float(p[1]), score, claim=question.answer, details=checks,
                         note=f"The {base['evidence']} neither supports nor contradicts the answer.", **base)
