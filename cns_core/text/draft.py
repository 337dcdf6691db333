"""Drafting an SNO from text: units become claims, cues, position and NLI give the graph.

The method, offline with the shipped models:

1. **Units**: the clauses of the text's sentences (:func:`segment_units`); headings are
   left out (the first becomes the title).
2. **Main claim**: the unit that answers ``question`` (embedding similarity) when one is
   given; otherwise a score of stance cues ("I believe", "should", "in conclusion"),
   position (first and last unit, the end of the introduction) and how much of the rest
   supports it (NLI entailment towards it).
3. **Relations**: each other unit argues about one unit. Its leading discourse marker
   decides where and how ("because" supports the clause before, "therefore" is supported
   by the unit before, "admittedly"/"although" concede a point against the main claim,
   "but"/"however" turn against the unit before: an *undercut* of a concession's
   relation when they do not contradict its content, a *rebut* otherwise). A unit with
   no marker supports the main claim, or the unit before when NLI says that fits it
   better; NLI contradiction turns a support into an attack.
   NLI runs **once**, batched, over every (unit, candidate target) pair.
4. **Evidence**: the sources' passages with provenance.

Every claim and relation records why it is there in ``metadata["why"]`` (with the NLI
probabilities it used), so a person can see and correct it.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from cns_core.models.nli import nli_identity
from cns_core.sno import SNO
from cns_core.text.cues import (Cue, evaluative_cues, has_argument_marker, inner_conclusion, leading_cue,
                                looks_english, stance_cues)
from cns_core.text.segment import Unit, segment_units
from cns_core.text.sources import SourceText, TextInputError, TextLimits, check_size, source_passages

__all__ = ["Draft", "draft_sno", "draft_snos", "check_text", "DraftSettings"]


@dataclass
class Draft:
    """A drafted SNO, ready for the critics, and remarks for the person who will check it."""

    sno: SNO
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class DraftSettings:
    """Weights of the main-claim score and the NLI thresholds (developed on half the microtexts)."""

    stance_weight: float = 1.0
    summary_weight: float = 1.5
    first_weight: float = 0.7
    last_weight: float = 0.5
    intro_end_weight: float = 0.3
    support_weight: float = 0.6
    subordinate_penalty: float = 1.0
    evaluative_weight: float = 0.3
    inner_conclusion_weight: float = 1.0
    addition_penalty: float = 0.5
    question_weight: float = 4.0
    attack_threshold: float = 0.9       # p(contradiction) above p(entailment) and this: an attack
    rebut_threshold: float = 0.5        # a turn against a concession that contradicts it this much rebuts it
    previous_margin: float = 0.15       # entailment towards the unit before beats the main claim by this much
    rules: int = 2                      # raised whenever the drafting rules change, so stored scores that name
                                        # these settings (the memory's trust fingerprint) are scored again


_SUBORDINATE = ("reason", "concession", "example", "contrast")


def _clean(text: str) -> str:
    return " ".join(text.split()).strip(" ,;")


def check_text(text: Any, limits: TextLimits | None = None) -> str:
    """The checks drafting makes before it starts (a string, not empty, within the size limit, English)."""
    limits = limits or TextLimits.from_config()
    if not isinstance(text, str):
        raise TextInputError(f"text: must be a string (got {type(text).__name__})")
    check_size(len(text.encode("utf-8")), limits.max_text_bytes, "text", "max_text_bytes")
    if "\x00" in text:
        raise TextInputError("text: holds NUL bytes (binary data, not text)")
    if not text.strip():
        raise TextInputError("text: is empty")
    english, share = looks_english(text)
    if not english:
        raise TextInputError(f"text: does not look like English (only {share:.0%} of its words are common English "
                             "words); drafting reads English text")
    return text


def _sno_id(text: str, sno_id: str | None) -> str:
    if sno_id is not None and sno_id.strip():
        return sno_id.strip()
    return "draft-" + hashlib.blake2b(text.encode("utf-8"), digest_size=5).hexdigest()


def _nli_rows(nli: Any, pairs: list[tuple[str, str]]) -> np.ndarray:
    """One batched NLI call over every pair (columns: entailment, neutral, contradiction)."""
    if not pairs:
        return np.zeros((0, 3))
    rows = np.asarray(nli.predict(pairs), dtype=float)
    if rows.shape != (len(pairs), 3):
        raise ValueError(f"NLI backend returned shape {rows.shape}, expected ({len(pairs)}, 3)")
    return rows


@dataclass
class _Plan:
    """A unit's relation while it is being drafted."""

    target: int | None = None         # unit index, or None for "the main claim"
    kind: str = "support"
    attack_type: str | None = None
    why: str = ""
    nli: dict[str, float] = field(default_factory=dict)


class _Drafter:
    """One text's drafting: the main claim, then each other unit's relation, from one NLI pass."""

    def __init__(self, units: list[Unit], texts: list[str], cues: list[Cue | None], embedder: Any,
                 question: str | None, settings: DraftSettings):
        self.units, self.texts, self.cues = units, texts, cues
        self.n = len(units)
        self.embedder, self.question, self.s = embedder, question, settings
        self.scores: dict[tuple[int, int], np.ndarray] = {}
        self.nli_problem: str | None = None

    # ----- candidate targets and the one NLI pass -----------------------------------
    def _prior(self) -> tuple[np.ndarray, list[list[str]]]:
        """Main-claim score before support is counted, with the reasons for each unit."""
        s, n = self.s, self.n
        score = np.zeros(n)
        why: list[list[str]] = [[] for _ in range(n)]
        last_para_0 = max(i for i, u in enumerate(self.units) if u.paragraph == 0)
        several_paragraphs = self.units[-1].paragraph > 0
        for i, (unit, text, cue) in enumerate(zip(self.units, self.texts, self.cues)):
            stance = stance_cues(text)
            if stance:
                score[i] += s.stance_weight
                why[i].append(f"stance cue {stance[0]!r}")
            if cue and cue.kind in ("summary", "conclusion"):
                score[i] += s.summary_weight if cue.kind == "summary" else s.stance_weight
                why[i].append(f"{cue.kind} cue {cue.phrase!r}")
            if cue and cue.kind in _SUBORDINATE:
                score[i] -= s.subordinate_penalty
            if cue and cue.kind == "addition" and cue.phrase != "and":
                score[i] -= s.addition_penalty
            judging = evaluative_cues(text)
            if judging and not stance:
                score[i] += s.evaluative_weight
                why[i].append(f"judges ({judging[0]!r})")
            inner = inner_conclusion(text)
            if inner and not (cue and cue.kind in ("summary", "conclusion")):
                score[i] += s.inner_conclusion_weight
                why[i].append(f"conclusion cue {inner!r} inside it")
            if i == 0:
                score[i] += s.first_weight
                why[i].append("first unit")
            if i == n - 1:
                score[i] += s.last_weight
                why[i].append("last unit")
            if several_paragraphs and i == last_para_0 and i not in (0, n - 1):
                score[i] += s.intro_end_weight
                why[i].append("end of the introduction")
        if self.question:
            vectors = np.asarray(self.embedder.encode([self.question, *self.texts]), dtype=float)
            similarity = vectors[1:] @ vectors[0]
            score += s.question_weight * similarity
            for i in range(n):
                why[i].insert(0, f"answers the question (similarity {similarity[i]:.2f})")
        return score, why

    def _pairs(self, candidates: Sequence[int]) -> list[tuple[int, int]]:
        pairs: set[tuple[int, int]] = set()
        for i in range(self.n):
            for j in (*candidates, i - 1, i + 1):
                if 0 <= j < self.n and j != i:
                    pairs.add((i, j))
        return sorted(pairs)

    def prepare(self) -> list[tuple[str, str]]:
        """The main-claim prior and the (unit, candidate target) pairs the NLI pass must score."""
        self.prior, self.prior_why = self._prior()
        self.top = [int(j) for j in np.argsort(-self.prior, kind="stable")[:3]]
        self.pairs = self._pairs(self.top)
        return [(self.texts[i], self.texts[j]) for i, j in self.pairs]

    def take_scores(self, rows: np.ndarray | None, problem: str | None = None) -> None:
        """This text's rows of the NLI pass; ``None`` (the model failed) leaves cues and position to draft."""
        self.nli_problem = problem
        if rows is not None:
            self.scores = {pair: row for pair, row in zip(self.pairs, rows)}

    def entail(self, i: int, j: int) -> float:
        row = self.scores.get((i, j))
        return float(row[0]) if row is not None else 0.0

    def contra(self, i: int, j: int) -> float:
        row = self.scores.get((i, j))
        return float(row[2]) if row is not None else 0.0

    def nli_note(self, i: int, j: int) -> dict[str, float]:
        row = self.scores.get((i, j))
        if row is None:
            return {}
        return {"nli_entail": round(float(row[0]), 3), "nli_contradict": round(float(row[2]), 3)}

    # ----- the main claim --------------------------------------------------------
    def main_claim(self) -> tuple[int, str, dict[str, Any]]:
        prior, why, top = self.prior, self.prior_why, self.top
        support = np.array([sum(self.entail(i, j) for i in range(self.n) if i != j) for j in range(self.n)])
        total = prior + self.s.support_weight * support
        main = int(np.argmax(np.where(np.isin(np.arange(self.n), top), total, -np.inf)))
        reasons = why[main] + ([f"{support[main]:.1f} units' worth of NLI support"] if support[main] >= 0.5 else [])
        meta = {"main_score": round(float(total[main]), 3),
                "runner_up": next((self.texts[int(j)] for j in top if int(j) != main), None)}
        return main, "main claim: " + ("; ".join(reasons) or "the best-scoring unit"), meta

    # ----- relations ---------------------------------------------------------------
    def _default(self, i: int, main: int) -> _Plan:
        """No marker: support the main claim, or the unit before when NLI says it fits better."""
        prev = i - 1
        cue = self.cues[i]
        lead = f"cue {cue.phrase!r} ({cue.kind})" if cue else "no marker"
        if prev >= 0 and prev != main and self.entail(i, prev) > self.entail(i, main) + self.s.previous_margin:
            return _Plan(prev, why=f"{lead}; NLI: it backs the unit before ({self.entail(i, prev):.2f}) more than "
                                   f"the main claim ({self.entail(i, main):.2f})")
        para_first = next(k for k, u in enumerate(self.units) if u.paragraph == self.units[i].paragraph)
        if self.units[main].paragraph != self.units[i].paragraph and para_first not in (i, main):
            return _Plan(para_first, why=f"{lead}; supports its paragraph's first unit")
        return _Plan(None, why=f"{lead}; supports the main claim")

    def plan(self, main: int) -> dict[int, _Plan]:
        plans: dict[int, _Plan] = {}
        conceded: set[int] = set()       # units that put the other side's point
        for i in range(self.n):
            if i == main:
                continue
            cue, unit = self.cues[i], self.units[i]
            prev = i - 1
            same_sentence_prev = prev >= 0 and self.units[prev].sentence == unit.sentence
            same_paragraph_prev = prev >= 0 and self.units[prev].paragraph == unit.paragraph
            nxt = i + 1 if i + 1 < self.n and self.units[i + 1].sentence == unit.sentence else None
            following = i + 1 if i + 1 < self.n and self.units[i + 1].paragraph == unit.paragraph else None
            next_turns = following is not None and self.cues[following] is not None \
                and self.cues[following].kind == "contrast"
            kind = cue.kind if cue else None
            if kind == "reason":
                if unit.clause == 0 and nxt is not None:
                    plans[i] = _Plan(nxt, why=f"cue {cue.phrase!r}: a reason for the clause after it")
                elif prev >= 0:
                    plans[i] = _Plan(prev, why=f"cue {cue.phrase!r}: a reason for the unit before")
            elif kind == "example" and prev >= 0:
                plans[i] = _Plan(prev, why=f"cue {cue.phrase!r}: an example for the unit before")
            elif kind == "concession":
                target = nxt if (unit.clause == 0 and nxt is not None and nxt != main and not next_turns) else None
                if unit.clause == 0 and nxt is not None and nxt == main:
                    target = main
                against = "the clause after it" if target is not None and target != main else "the main claim"
                plans[i] = _Plan(target, "attack", "rebut",
                                 why=f"cue {cue.phrase!r}: concedes a point against {against}")
                conceded.add(i)
            elif kind == "contrast" and prev >= 0:
                target, note = prev, "the unit before"
                if prev in plans and plans[prev].kind == "support" and plans[prev].target in conceded:
                    target, note = plans[prev].target, "the objection the unit before goes on with"
                plans[i] = _Plan(target, "attack", "rebut", why=f"cue {cue.phrase!r}: turns against {note}")
            elif kind == "addition" and cue.phrase != "and":
                starts = [k for k in range(i) if self.units[k].sentence_in_paragraph == 0
                          and self.units[k].clause == 0 and self.units[k].paragraph < unit.paragraph]
                if unit.sentence_in_paragraph == 0 and unit.clause == 0 and starts and starts[-1] in plans:
                    earlier = starts[-1]     # "Second, ..." opening a paragraph: beside the paragraph before
                else:
                    earlier = next((k for k in range(i - 1, -1, -1) if k in plans and plans[k].kind == "support"
                                    and plans[k].target not in conceded), None)
                if earlier is not None and (plans[earlier].kind != "support" or plans[earlier].target in conceded):
                    earlier = None
                target = plans[earlier].target if earlier is not None else None
                plans[i] = _Plan(target, why=f"cue {cue.phrase!r}: a further argument"
                                             + (f" beside unit c{earlier + 1}" if earlier is not None else ""))
            elif cue and cue.phrase == "and" and same_sentence_prev and prev in plans:
                plans[i] = _Plan(plans[prev].target, plans[prev].kind, plans[prev].attack_type,
                                 why="cue 'and': joins the unit before in what it does")
                if prev in conceded:
                    conceded.add(i)
            defaulted = prev in plans and self.cues[prev] is None and plans[prev].why.startswith("no marker")
            if kind in ("conclusion", "summary") and prev >= 0 and prev != main and (
                    prev not in plans or (same_sentence_prev and defaulted)):
                plans[prev] = _Plan(i, why=f"the unit after it draws a conclusion from it ({cue.phrase!r})")
            if i in plans:
                continue
            if cue is None and same_paragraph_prev and prev in conceded:
                plans[i] = _Plan(prev, why=f"no marker; goes on with the objection before it (c{prev + 1})")
            elif cue is None and next_turns:
                plans[i] = _Plan(None, "attack", "rebut",
                                 why=f"no marker, but the unit after it turns against it "
                                     f"({self.cues[following].phrase!r}): a point conceded to the other side")
                conceded.add(i)
            else:
                plans[i] = self._default(i, main)
                back = plans[i].target
                if back is not None and back in plans and plans[back].target == i:   # "X, so Y": not back to X
                    plans[i] = _Plan(None, why=plans[i].why.split(";")[0] + "; supports the main claim")
        return plans

    def finish(self, plans: dict[int, _Plan], main: int) -> dict[int, _Plan]:
        """Resolve targets, let NLI turn supports into attacks, keep the graph a tree towards the main claim."""
        for i, plan in plans.items():
            if plan.target is None or plan.target == i:
                plan.target = main
        # no cycles: follow each unit's chain; a unit that comes back to itself argues with the main claim
        for i in plans:
            seen, k = {i}, plans[i].target
            while k != main and k in plans:
                if k in seen:
                    plans[i].target = main
                    plans[i].why += "; retargeted to the main claim (the chain came back to itself)"
                    break
                seen.add(k)
                k = plans[k].target
        for i, plan in plans.items():
            j = plan.target
            plan.nli = self.nli_note(i, j)
            entail, contra = self.entail(i, j), self.contra(i, j)
            if plan.kind == "support" and self.cues[i] is None and contra > max(entail, self.s.attack_threshold):
                plan.kind, plan.attack_type = "attack", "rebut"
                plan.why += f"; NLI says it contradicts its target ({contra:.2f}): an attack"
            elif plan.kind == "attack" and j in plans and plans[j].kind == "attack" and plan.attack_type == "rebut":
                # a turn against an objection: undercut the objection's inference unless it denies its content
                if contra < self.s.rebut_threshold:
                    plan.attack_type = "undercut"
                    plan.why += (f"; the unit before is an objection whose content it does not deny "
                                 f"(NLI contradiction {contra:.2f}): an undercut of that objection's relation")
        return plans


def _roles(plans: dict[int, _Plan], main: int) -> dict[int, str]:
    """Proponent for the main claim and what supports it; an attack changes sides."""
    roles = {main: "proponent"}

    def role(i: int, depth: int = 0) -> str:
        if i in roles:
            return roles[i]
        plan = plans[i]
        anchor = plan.target if plan.target is not None else main
        base = role(anchor, depth + 1) if depth < len(plans) + 1 else "proponent"
        roles[i] = base if plan.kind == "support" else ("opponent" if base == "proponent" else "proponent")
        return roles[i]

    for i in plans:
        role(i)
    return roles


def _evidence(sources: Sequence[SourceText], limits: TextLimits, notes: list[str]) -> list[dict[str, Any]]:
    if not sources:
        notes.append("no sources given: the SNO has no evidence, so grounding scores 0")
        return []
    passages, dropped = source_passages(sources, limits.passage_sentences, limits.max_passages)
    if dropped:
        notes.append(f"{dropped:,} source passages beyond the limit of {limits.max_passages:,} were left out "
                     "(config/sno.yaml max_passages)")
    if not passages:
        notes.append("the sources hold no sentences: the SNO has no evidence")
    return [{"id": f"e{k + 1}", "text": p.text, "source": p.source,
             "metadata": {"source": p.source, "start": p.start, "end": p.end}}
            for k, p in enumerate(passages)]


def _one_claim(sno_id: str, title: str, text: str, evidence: list[dict[str, Any]], why: str,
               meta: dict[str, Any]) -> SNO:
    claim = {"id": "c1", "text": _clean(text), "role": "proponent",
             "metadata": {"why": why, "start": 0, "end": len(text)}}
    return SNO.model_validate({"id": sno_id, "title": title, "hypothesis": "c1", "claims": [claim],
                               "relations": [], "evidence": evidence, "metadata": meta})


@dataclass
class _Pending:
    """A text segmented and scored by position and cues, waiting for its share of the NLI pass."""

    drafter: _Drafter     # holds the units and the question
    headings: list
    title: str
    sno_id: str
    evidence: list[dict[str, Any]]
    meta: dict[str, Any]
    notes: list[str]


def _prepare(text: Any, sno_id: str | None, question: str | None, evidence: list[dict[str, Any]],
             evidence_notes: list[str], nli: Any, embedder: Any, settings: DraftSettings,
             limits: TextLimits) -> Draft | _Pending:
    """Everything before the NLI pass; a text that needs no pass comes back as its finished one-claim draft."""
    text = check_text(text, limits)
    question = question.strip() if isinstance(question, str) and question.strip() else None
    notes: list[str] = []
    units, headings = segment_units(text)
    title = _clean(headings[0].text.lstrip("# ")) if headings else ""
    if question is None and title.endswith("?"):
        question = title
        notes.append(f"no question given: the title's question ({title!r}) picks the main claim")
    sno_id = _sno_id(text, sno_id)
    notes.extend(evidence_notes)
    meta: dict[str, Any] = {"drafted_from": "text", "method": f"cues+position+nli, rules {settings.rules}"}
    if question:
        meta["question"] = question
    if not units:   # headings only
        notes.append("the text holds only heading lines: drafted as one claim")
        return Draft(_one_claim(sno_id, title, text, evidence, "the whole text (headings only)", meta), notes)
    if len(units) > limits.max_units:
        notes.append(f"only the first {limits.max_units:,} of {len(units):,} units became claims "
                     "(config/sno.yaml max_units)")
        units = units[:limits.max_units]
    texts = [_clean(u.text) for u in units]
    if len(units) == 1 or not has_argument_marker(texts):
        why = "one unit" if len(units) == 1 else "no argumentative marker (because, therefore, but, should, ...)"
        notes.append(f"{why}: drafted as a one-claim SNO")
        body = units[0].text if len(units) == 1 else text[units[0].span.start:units[-1].span.end]
        return Draft(_one_claim(sno_id, title or _title(body), body, evidence, why, meta), notes)
    if embedder is None and question:
        from cns_core.models import get_embedder
        embedder = get_embedder()
    meta["nli"] = nli_identity(nli)
    drafter = _Drafter(units, texts, _weak_concessions_checked([leading_cue(t) for t in texts]), embedder,
                       question, settings)
    return _Pending(drafter, headings, title, sno_id, evidence, meta, notes)


_WEAK_CONCESSIONS = frozenset({"yes,", "sure,", "true,", "of course"})


def _weak_concessions_checked(cues: list[Cue | None]) -> list[Cue | None]:
    """"Yes, ..." concedes only when a turn ("but", "however") follows within two units; else it affirms."""
    out = list(cues)
    for i, cue in enumerate(cues):
        if cue and cue.kind == "concession" and cue.phrase in _WEAK_CONCESSIONS:
            if not any(c and c.kind == "contrast" for c in cues[i + 1:i + 3]):
                out[i] = None
    return out


def _finish(p: _Pending) -> Draft:
    """Main claim, relations, roles and the SNO, once the NLI pass has given its rows."""
    drafter, units, notes, meta = p.drafter, p.drafter.units, p.notes, p.meta
    texts, cues = drafter.texts, drafter.cues
    main, main_why, main_meta = drafter.main_claim()
    plans = drafter.finish(drafter.plan(main), main)
    roles = _roles(plans, main)
    if drafter.nli_problem:
        meta["nli_problem"] = drafter.nli_problem
        notes.append(f"the NLI model failed ({drafter.nli_problem}): relations come from cues and position only")
    ids = [f"c{i + 1}" for i in range(len(units))]
    claims = []
    for i, (unit, t) in enumerate(zip(units, texts)):
        why = main_why if i == main else _claim_why(cues[i], unit)
        extra = main_meta if i == main else {}
        claims.append({"id": ids[i], "text": t, "role": roles.get(i, "proponent"),
                       "metadata": {"why": why, "start": unit.span.start, "end": unit.span.end,
                                    "paragraph": unit.paragraph, "sentence": unit.sentence,
                                    **({"cue": cues[i].phrase} if cues[i] else {}), **extra}})
    title = p.title if (drafter.question or p.headings) and p.title else _title(texts[main])
    return Draft(SNO.model_validate({"id": p.sno_id, "title": title, "hypothesis": ids[main], "claims": claims,
                                     "relations": _relations(plans, ids, main), "evidence": p.evidence,
                                     "metadata": meta}), notes)


def _nli_pass(pending: list[_Pending], nli: Any) -> None:
    """One NLI call over every pending text's pairs; each text takes its own rows back."""
    pairs = [p.drafter.prepare() for p in pending]
    flat = [pair for chunk in pairs for pair in chunk]
    try:
        rows = _nli_rows(nli, flat)
    except Exception as exc:  # noqa: BLE001 - any model failure degrades the drafts, never stops them
        for p in pending:
            p.drafter.take_scores(None, f"{type(exc).__name__}: {exc}")
        return
    start = 0
    for p, chunk in zip(pending, pairs):
        p.drafter.take_scores(rows[start:start + len(chunk)])
        start += len(chunk)


def draft_snos(texts: Sequence[str], *, sources: Sequence[SourceText] = (), question: str | None = None,
               sno_ids: Sequence[str | None] | None = None, nli: Any = None, embedder: Any = None,
               settings: DraftSettings | None = None, limits: TextLimits | None = None) -> list[Draft]:
    """Draft many texts against the same sources and question, with **one** NLI pass for all of them.

    Raises :class:`TextInputError` for the first text that cannot be drafted from (check each
    first with :func:`check_text` to report them one by one).
    """
    limits = limits or TextLimits.from_config()
    settings = settings or DraftSettings()
    sno_ids = list(sno_ids) if sno_ids is not None else [None] * len(texts)
    if len(sno_ids) != len(texts):
        raise ValueError(f"sno_ids: {len(sno_ids)} ids for {len(texts)} texts")
    evidence_notes: list[str] = []
    evidence = _evidence(sources, limits, evidence_notes)
    if nli is None:
        from cns_core.models import get_nli_backend
        nli = get_nli_backend()
    prepared = [_prepare(t, i, question, evidence, evidence_notes, nli, embedder, settings, limits)
                for t, i in zip(texts, sno_ids)]
    pending = [p for p in prepared if isinstance(p, _Pending)]
    _nli_pass(pending, nli)
    return [p if isinstance(p, Draft) else _finish(p) for p in prepared]


def draft_sno(text: str, *, sources: Sequence[SourceText] = (), question: str | None = None,
              sno_id: str | None = None, nli: Any = None, embedder: Any = None,
              settings: DraftSettings | None = None, limits: TextLimits | None = None) -> Draft:
    """Draft a valid SNO from ``text`` (see the module's docstring for the method).

    ``nli`` and ``embedder`` default to the process-wide backends (loaded once). Raises
    :class:`TextInputError` for text that cannot be drafted from (empty, over the size
    limit, not English); text with no argumentative marker gives a one-claim SNO.
    """
    return draft_snos([text], sources=sources, question=question, sno_ids=[sno_id], nli=nli, embedder=embedder,
                      settings=settings, limits=limits)[0]


def _title(text: str, words: int = 10) -> str:
    parts = _clean(text).split()
    return " ".join(parts[:words]) + (" ..." if len(parts) > words else "")


def _claim_why(cue: Cue | None, unit: Unit) -> str:
    where = f"sentence {unit.sentence + 1}" + (f", clause {unit.clause + 1}" if unit.clause else "")
    return f"a unit of {where}" + (f", opening with {cue.kind} cue {cue.phrase!r}" if cue else "")


def _relations(plans: dict[int, _Plan], ids: list[str], main: int) -> list[dict[str, Any]]:
    """Relations in unit order; an undercut targets the relation of the unit it turns against."""
    rel_id = {i: f"r{i + 1}" for i in plans}
    out = []
    for i in sorted(plans):
        plan = plans[i]
        target = ids[plan.target]
        attack_type = plan.attack_type if plan.kind == "attack" else None
        if attack_type == "undercut":
            target = rel_id[plan.target]
        rel = {"id": rel_id[i], "source": ids[i], "target": target, "kind": plan.kind,
               "metadata": {"why": plan.why, **plan.nli}}
        if attack_type:
            rel["attack_type"] = attack_type
        out.append(rel)
    return out
