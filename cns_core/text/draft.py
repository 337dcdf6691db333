"""Drafting an SNO from text: the learned argument miner gives roles and one graph per text.

The method, offline with the shipped models:

1. **Units**: the clauses of the text's sentences (:func:`segment_units`); headings are
   left out (the first becomes the title). A title or first line that is a question
   becomes the SNO's question: a question is never a claim.
2. **Roles and relations**: the argument miner (:mod:`cns_core.text.miner`, trained on
   annotated argument graphs of three genres) gives each unit a role (main claim, claim,
   premise, or not argumentative) and decodes one consistent graph: every argumentative
   unit attached at most once, no cycles, the main claim the one that best answers the
   question when there is one. Units it reads as not argumentative stay out of the graph
   and are listed in ``metadata["left_out"]`` with the reason.
3. **Fallback**: when the miner cannot load, the rule drafter (:mod:`cns_core.text.rules`:
   cues, position, one batched NLI pass) drafts instead, and the draft says so.
4. **Evidence**: the sources' passages with provenance.

Every claim and relation records why it is there in ``metadata["why"]`` (the role and link
probabilities, or the cue and NLI figures of the rules), so a person can see and correct it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from cns_core.models.nli import nli_identity
from cns_core.sno import SNO
from cns_core.text.context import context_reason, reader_text, states_fact
from cns_core.text.cues import Cue, has_argument_marker, leading_cue, looks_english
from cns_core.text.miner import (UNIT_ROLES, ArgumentMiner, MinedRelation, MinedText, MinerUnavailable,
                                 ReadingHints, load_default_miner)
from cns_core.text.miner_features import describe_texts, is_question
from cns_core.text.rules import DraftSettings, Plan, RuleDrafter, side_roles, weak_concessions_checked
from cns_core.text.segment import Unit, segment_units
from cns_core.text.stated import with_stating_evidence
from cns_core.text.sources import (UNSTATED_VALIDITY, UNSTATED_VALIDITY_WHY, SourceText, TextInputError, TextLimits,
                                   check_size, source_passages)

__all__ = ["Draft", "draft_sno", "draft_snos", "check_text", "DraftSettings", "drafter_identity", "drafting_units"]


@dataclass
class Draft:
    """A drafted SNO, ready for the critics, and remarks for the person who will check it."""

    sno: SNO
    notes: list[str] = field(default_factory=list)


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


def drafter_identity(miner: ArgumentMiner | None = None) -> str:
    """Which drafter drafts now: the miner's fingerprint, or the rules' version when it cannot load."""
    try:
        return (miner or load_default_miner()).identity
    except MinerUnavailable:
        return f"rules {DraftSettings().rules}"


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
    return [{"id": f"e{k + 1}", "text": p.text, "source": p.source, "validity": UNSTATED_VALIDITY,
             "metadata": {"source": p.source, "start": p.start, "end": p.end,
                          "validity_note": UNSTATED_VALIDITY_WHY}}
            for k, p in enumerate(passages)]


def _one_claim(sno_id: str, title: str, text: str, evidence: list[dict[str, Any]], why: str,
               meta: dict[str, Any]) -> SNO:
    claim = {"id": "c1", "text": _clean(text), "role": "proponent",
             "metadata": {"why": why, "start": 0, "end": len(text)}}
    return SNO.model_validate({"id": sno_id, "title": title, "hypothesis": "c1", "claims": [claim],
                               "relations": [], "evidence": evidence, "metadata": meta})


@dataclass
class _Pending:
    """A segmented text waiting for the miner (or the rules' NLI pass) to give it a graph."""

    units: list[Unit]
    texts: list[str]
    question: str | None
    title: str
    headed: bool                  # the title came from a heading or a question line
    sno_id: str
    evidence: list[dict[str, Any]]
    meta: dict[str, Any]
    notes: list[str]
    rules: RuleDrafter | None = None


def _question_line(units: list[Unit], title: str) -> tuple[str | None, Unit | None]:
    """A title, or a first line standing alone, that asks a question: the text's question."""
    if title and is_question(title):
        return title, None
    first = units[0] if units else None
    if first is not None and is_question(first.text) and (len(units) == 1 or units[1].sentence != first.sentence):
        return _clean(first.text), first
    return None, None


def _segment(text: str) -> tuple[list[Unit], list, str, str | None, Unit | None]:
    """Units (without the question line), headings, the title, and the question line with its unit."""
    units, headings = segment_units(text)
    title = _clean(headings[0].text.lstrip("# ")) if headings else ""
    asked_line, asked_unit = _question_line(units, title)
    return [u for u in units if u is not asked_unit], headings, title, asked_line, asked_unit


def drafting_units(text: str) -> tuple[list[Unit], list[str]]:
    """The units drafting turns into claims (headings and a question line left out) and their cleaned texts."""
    units = _segment(text)[0]
    return units, [_clean(u.text) for u in units]


def _prepare(text: Any, sno_id: str | None, question: str | None, evidence: list[dict[str, Any]],
             evidence_notes: list[str], limits: TextLimits) -> Draft | _Pending:
    """Everything before the model; a text that needs no model comes back as its finished one-claim draft."""
    text = check_text(text, limits)
    question = question.strip() if isinstance(question, str) and question.strip() else None
    notes: list[str] = []
    units, headings, title, asked_line, asked_unit = _segment(text)
    asked = None
    if asked_unit is not None:
        asked = {"text": asked_line, "start": asked_unit.span.start, "end": asked_unit.span.end,
                 "why": "the text's question: a question is never a claim"}
        title = title or asked_line
    if question is None and asked_line:
        question = asked_line
        notes.append(f"no question given: the text's question ({asked_line!r}) picks the main claim")
    sno_id = _sno_id(text, sno_id)
    notes.extend(evidence_notes)
    meta: dict[str, Any] = {"drafted_from": "text"}
    if question:
        meta["question"] = question
    if asked:
        meta["left_out"] = [asked]
    if not units:   # headings (or a question) only
        notes.append("the text holds only a heading or a question: drafted as one claim")
        return Draft(_one_claim(sno_id, title, text, evidence, "the whole text (no statement in it)", meta), notes)
    if len(units) > limits.max_units:
        notes.append(f"only the first {limits.max_units:,} of {len(units):,} units became claims "
                     "(config/sno.yaml max_units)")
        units = units[:limits.max_units]
    texts = [_clean(u.text) for u in units]
    if all(is_question(t) for t in texts):
        notes.append("the text only asks questions: drafted as one claim, which states nothing to judge")
        meta["method"] = "questions only"
        return Draft(_one_claim(sno_id, title or _title(texts[0]), " ".join(texts), evidence,
                                "the text only asks questions", meta), notes)
    if len(units) == 1:
        notes.append("one unit: drafted as a one-claim SNO")
        meta["method"] = "one unit"
        return Draft(_one_claim(sno_id, title or _title(units[0].text), units[0].text, evidence, "one unit", meta),
                     notes)
    return _Pending(units, texts, question, title, bool(headings) or asked is not None, sno_id, evidence, meta,
                    notes)


# ----- the learned path --------------------------------------------------------------------------------
def _mined(p: _Pending, mined: MinedText, miner: ArgumentMiner) -> Draft:
    """The SNO of a text the miner has read: its argumentative units as claims, the rest listed apart."""
    keep = [i for i in range(len(p.units)) if i not in mined.left_out]
    ids = {i: f"c{k + 1}" for k, i in enumerate(keep)}
    plans = {r.source: Plan(r.target, r.kind) for r in mined.relations}
    sides = side_roles(plans, mined.main)
    claims = []
    split = _split_sentences(p.units)
    for i in keep:
        probs = {role: round(float(v), 3) for role, v in zip(UNIT_ROLES, mined.role_probabilities[i])}
        label = mined.role(i)
        why = f"{label}: p(main claim) {probs['main']:.2f}, p(argues about another unit) {probs['attached']:.2f}, " \
              f"p(not argumentative) {probs['none']:.2f}"
        if i == mined.main and p.question:
            why += "; the unit that best answers the question"
        if i in mined.standalone:
            why += "; " + mined.standalone[i]
        unit = p.units[i]
        claims.append({"id": ids[i], "text": reader_text(p.texts[i], unit.sentence in split),
                       "role": sides.get(i, "proponent"),
                       "metadata": {"why": why, "unit_role": label, "role_p": probs, "start": unit.span.start,
                                    "end": unit.span.end, "paragraph": unit.paragraph, "sentence": unit.sentence}})
    relations = [{"id": f"r{k + 1}", "source": ids[r.source], "target": ids[r.target], "kind": r.kind,
                  **({"attack_type": "rebut"} if r.kind == "attack" else {}),
                  "metadata": {"why": _relation_why(r, ids, miner.weak_link),
                               **{f"p_{label}": v for label, v in r.probabilities.items()}}}
                 for k, r in enumerate(sorted(mined.relations, key=lambda r: r.source))]
    left_out = list(p.meta.get("left_out", []))
    for i, why in sorted(mined.left_out.items()):
        unit = p.units[i]
        left_out.append({"text": p.texts[i], "start": unit.span.start, "end": unit.span.end, "why": why})
    meta = {**p.meta, "method": "argument miner", "drafter": miner.identity}
    if left_out:
        meta["left_out"] = left_out
        p.notes.append(f"{len(left_out)} sentence(s) left out of the graph (context, not argumentative or a question); "
                       "see the left-out list")
    title = p.title if p.headed and p.title else _title(p.texts[mined.main])
    return Draft(SNO.model_validate({"id": p.sno_id, "title": title, "hypothesis": ids[mined.main],
                                     "claims": claims, "relations": relations, "evidence": p.evidence,
                                     "metadata": meta}), p.notes)


def _relation_why(r: MinedRelation, ids: dict[int, str], weak_below: float) -> str:
    """A drafted relation's reason: its probabilities, the target it was chosen over, the rule that set it."""
    if not r.probabilities:
        return r.rule or "support: no candidate target was scored; attached to the main claim"
    p = r.probabilities
    why = f"{r.kind} p {p['attack' if r.kind == 'attack' else 'support']:.2f} (none {p['none']:.2f})"
    if r.rule:
        why = f"{r.rule}; {why}"
    if r.runner_up is not None and r.runner_up in ids:
        why += f"; chosen over {ids[r.runner_up]} (link {r.runner_up_link:.2f})"
    if not r.rule and r.link < weak_below:
        why += "; a weak link, the best this unit has (every argumentative unit is attached once): check it"
    return why


def _split_sentences(units: list[Unit]) -> set[int]:
    """The sentences cut into more than one unit (their clauses read without the connective)."""
    return {u.sentence for u in units if u.clause > 0}


def reading_hints(units: list[Unit], texts: list[str]) -> ReadingHints:
    """Context, reason-tied and fact-stating units of one text (:mod:`cns_core.text.context`).

    A sentence is context as a whole when its first clause is ("Last summer ..., because ..."); a
    clause giving a reason ("..., because ...") ties itself and the clause it argues for into the graph.
    """
    context: dict[int, str] = {}
    first_of: dict[int, str | None] = {}
    argues: set[int] = set()
    for i, (unit, text) in enumerate(zip(units, texts)):
        if unit.clause == 0:
            first_of[unit.sentence] = context_reason(text)
        reason = first_of.get(unit.sentence) or context_reason(text)
        if reason:
            context[i] = reason
        cue = leading_cue(text)
        if cue and cue.kind == "reason" and unit.clause > 0 and i > 0 and units[i - 1].sentence == unit.sentence:
            argues.update((i, i - 1))
        if cue and cue.kind == "concession":      # an objection and the turn that answers it argue
            answer = next((k for k in range(i + 1, min(i + 3, len(texts)))
                           if units[k].paragraph == unit.paragraph and (c := leading_cue(texts[k])) is not None
                           and c.kind == "contrast"), None)
            if answer is not None:
                argues.update((i, answer))
    facts = frozenset(i for i, t in enumerate(texts) if states_fact(t))
    return ReadingHints(context, frozenset(argues - set(context)), facts)


def _draft_learned(pending: list[_Pending], miner: ArgumentMiner, embedder: Any) -> list[Draft]:
    """Every pending text through the miner, with one embedding call for all of them."""
    if embedder is None:
        from cns_core.models import get_embedder
        embedder = get_embedder()
    described = describe_texts([(p.units, p.texts, p.question) for p in pending], embedder)
    return [_mined(p, miner.read(tu, reading_hints(p.units, p.texts)), miner) for p, tu in zip(pending, described)]


# ----- the rule fallback ----------------------------------------------------------------------------------
def _draft_by_rules(pending: list[_Pending], nli: Any, embedder: Any, settings: DraftSettings,
                    problem: str) -> list[Draft]:
    """The rule drafter for every pending text (one NLI pass), when the miner cannot load."""
    if nli is None:
        from cns_core.models import get_nli_backend
        nli = get_nli_backend()
    out: list[Draft | None] = [None] * len(pending)
    needing = []
    for k, p in enumerate(pending):
        p.notes.append(f"drafted by the rules (cues, position, NLI): {problem}")
        p.meta["method"] = f"cues+position+nli, rules {settings.rules}"
        p.meta["drafter_problem"] = problem
        if not has_argument_marker(p.texts):
            why = "no argumentative marker (because, therefore, but, should, ...)"
            p.notes.append(f"{why}: drafted as a one-claim SNO")
            body = " ".join(p.texts)
            out[k] = Draft(_one_claim(p.sno_id, p.title or _title(body), body, p.evidence, why, p.meta), p.notes)
            continue
        if embedder is None and p.question:
            from cns_core.models import get_embedder
            embedder = get_embedder()
        p.meta["nli"] = nli_identity(nli)
        p.rules = RuleDrafter(p.units, p.texts, weak_concessions_checked([leading_cue(t) for t in p.texts]), embedder,
                              p.question, settings)
        needing.append(k)
    _nli_pass([pending[k] for k in needing], nli)
    for k in needing:
        out[k] = _finish_by_rules(pending[k])
    return [d for d in out if d is not None]


def _finish_by_rules(p: _Pending) -> Draft:
    """Main claim, relations, roles and the SNO, once the NLI pass has given its rows."""
    drafter, units, notes, meta = p.rules, p.units, p.notes, p.meta
    texts, cues = p.texts, drafter.cues
    main, main_why, main_meta = drafter.main_claim()
    plans = drafter.finish(drafter.plan(main), main)
    roles = side_roles(plans, main)
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
    title = p.title if p.headed and p.title else _title(texts[main])
    return Draft(SNO.model_validate({"id": p.sno_id, "title": title, "hypothesis": ids[main], "claims": claims,
                                     "relations": _relations(plans, ids, main), "evidence": p.evidence,
                                     "metadata": meta}), notes)


def _nli_pass(pending: list[_Pending], nli: Any) -> None:
    """One NLI call over every pending text's pairs; each text takes its own rows back."""
    pairs = [p.rules.prepare() for p in pending]
    flat = [pair for chunk in pairs for pair in chunk]
    try:
        rows = _nli_rows(nli, flat)
    except Exception as exc:  # noqa: BLE001 - any model failure degrades the drafts, never stops them
        for p in pending:
            p.rules.take_scores(None, f"{type(exc).__name__}: {exc}")
        return
    start = 0
    for p, chunk in zip(pending, pairs):
        p.rules.take_scores(rows[start:start + len(chunk)])
        start += len(chunk)


def _miner_or_problem(miner: ArgumentMiner | None) -> tuple[ArgumentMiner | None, str | None]:
    if miner is not None:
        return miner, None
    try:
        return load_default_miner(), None
    except MinerUnavailable as exc:
        return None, str(exc)


def draft_snos(texts: Sequence[str], *, sources: Sequence[SourceText] = (), question: str | None = None,
               sno_ids: Sequence[str | None] | None = None, nli: Any = None, embedder: Any = None,
               settings: DraftSettings | None = None, limits: TextLimits | None = None,
               miner: ArgumentMiner | None = None, rules: bool = False) -> list[Draft]:
    """Draft many texts against the same sources and question, with one model pass for all of them.

    ``miner`` defaults to the shipped argument miner; when it cannot load (or ``rules`` asks for
    it, to compare), the rule drafter (with ``nli``) drafts instead and each draft says so.
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
    prepared = [_prepare(t, i, question, evidence, evidence_notes, limits) for t, i in zip(texts, sno_ids)]
    pending = [p for p in prepared if isinstance(p, _Pending)]
    if pending:
        found, problem = (None, "the rule drafter was asked for") if rules else _miner_or_problem(miner)
        drafts = (_draft_learned(pending, found, embedder) if found is not None
                  else _draft_by_rules(pending, nli, embedder, settings, problem or "the argument miner did not load"))
        finished = iter(drafts)
        prepared = [next(finished) if isinstance(p, _Pending) else p for p in prepared]
    prepared = [_as_corrected(d, t) for d, t in zip(prepared, texts)]
    if sources:
        for d in prepared:
            _attach_stating(d, sources)
    return prepared


def _as_corrected(d: Draft, text: str) -> Draft:
    """A text the person corrected and kept (:func:`cns_core.text.corrections.kept_correction`) drafts as they
    corrected it: their claims, roles, relations and main claim; the evidence is this draft's (the sources given
    now)."""
    from cns_core.text.corrections import kept_correction

    kept = kept_correction(text) if isinstance(text, str) else None
    if kept is None:
        return d
    corrected, saved = kept
    data = corrected.model_dump(mode="json")
    data["id"], data["evidence"] = d.sno.id, [e.model_dump(mode="json") for e in d.sno.evidence]
    data["metadata"] = {**d.sno.metadata, "method": "your kept correction", "corrected": saved}
    note = (f"you corrected this text before (kept {saved}): it is drafted as you corrected it; "
            "a refit also learns from it for other texts")
    return Draft(SNO.model_validate(data), [note, *d.notes])


def _attach_stating(d: Draft, sources: Sequence[SourceText]) -> None:
    """Each claim's figures with the source sentence that states them, as evidence of its own."""
    before = len(d.sno.evidence)
    data = with_stating_evidence(d.sno.model_dump(), sources)
    added = len(data["evidence"]) - before
    if added:
        d.sno = SNO.model_validate(data)
        d.notes.append(f"{added} evidence item(s) are the source sentences that state the claims' figures")


def draft_sno(text: str, *, sources: Sequence[SourceText] = (), question: str | None = None,
              sno_id: str | None = None, nli: Any = None, embedder: Any = None,
              settings: DraftSettings | None = None, limits: TextLimits | None = None,
              miner: ArgumentMiner | None = None, rules: bool = False) -> Draft:
    """Draft a valid SNO from ``text`` (see the module's docstring for the method).

    The models default to the process-wide ones (loaded once). Raises :class:`TextInputError`
    for text that cannot be drafted from (empty, over the size limit, not English).
    """
    return draft_snos([text], sources=sources, question=question, sno_ids=[sno_id], nli=nli, embedder=embedder,
                      settings=settings, limits=limits, miner=miner, rules=rules)[0]


def _title(text: str, words: int = 10) -> str:
    parts = _clean(text).split()
    return " ".join(parts[:words]) + (" ..." if len(parts) > words else "")


def _claim_why(cue: Cue | None, unit: Unit) -> str:
    where = f"sentence {unit.sentence + 1}" + (f", clause {unit.clause + 1}" if unit.clause else "")
    return f"a unit of {where}" + (f", opening with {cue.kind} cue {cue.phrase!r}" if cue else "")


def _relations(plans: dict[int, Plan], ids: list[str], main: int) -> list[dict[str, Any]]:
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
