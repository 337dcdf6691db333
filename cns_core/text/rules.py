"""The rule drafter: discourse cues, position and NLI decide the main claim and each unit's relation.

Developed on half the microtexts, it generalised poorly to other genres (see
``models/argument-miner/MODEL_CARD.md``), so it is no longer the drafter: its main-claim
score and its relation plan are *features* of the learned argument miner
(:mod:`cns_core.text.miner`), and it drafts on its own only when that model cannot load.

Relations: each other unit argues about one unit. Its leading discourse marker decides
where and how ("because" supports the clause before, "therefore" is supported by the unit
before, "admittedly"/"although" concede a point against the main claim, "but"/"however"
turn against the unit before). A unit with no marker supports the main claim, or the unit
before when NLI says that fits it better; NLI contradiction turns a support into an attack.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from cns_core.text.cues import Cue, evaluative_cues, inner_conclusion, stance_cues
from cns_core.text.segment import Unit

__all__ = ["DraftSettings", "Plan", "RuleDrafter", "side_roles", "weak_concessions_checked"]


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


@dataclass
class Plan:
    """A unit's relation while it is being drafted."""

    target: int | None = None         # unit index, or None for "the main claim"
    kind: str = "support"
    attack_type: str | None = None
    why: str = ""
    nli: dict[str, float] = field(default_factory=dict)


class RuleDrafter:
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
        last_para_0 = max(i for i, u in enumerate(self.units) if u.paragraph == self.units[0].paragraph)
        several_paragraphs = self.units[-1].paragraph > self.units[0].paragraph
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
    def _default(self, i: int, main: int) -> Plan:
        """No marker: support the main claim, or the unit before when NLI says it fits better."""
        prev = i - 1
        cue = self.cues[i]
        lead = f"cue {cue.phrase!r} ({cue.kind})" if cue else "no marker"
        if prev >= 0 and prev != main and self.entail(i, prev) > self.entail(i, main) + self.s.previous_margin:
            return Plan(prev, why=f"{lead}; NLI: it backs the unit before ({self.entail(i, prev):.2f}) more than "
                                   f"the main claim ({self.entail(i, main):.2f})")
        para_first = next(k for k, u in enumerate(self.units) if u.paragraph == self.units[i].paragraph)
        if self.units[main].paragraph != self.units[i].paragraph and para_first not in (i, main):
            return Plan(para_first, why=f"{lead}; supports its paragraph's first unit")
        return Plan(None, why=f"{lead}; supports the main claim")

    def plan(self, main: int) -> dict[int, Plan]:
        plans: dict[int, Plan] = {}
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
                    plans[i] = Plan(nxt, why=f"cue {cue.phrase!r}: a reason for the clause after it")
                elif prev >= 0:
                    plans[i] = Plan(prev, why=f"cue {cue.phrase!r}: a reason for the unit before")
            elif kind == "example" and prev >= 0:
                plans[i] = Plan(prev, why=f"cue {cue.phrase!r}: an example for the unit before")
            elif kind == "concession":
                target = nxt if (unit.clause == 0 and nxt is not None and nxt != main and not next_turns) else None
                if unit.clause == 0 and nxt is not None and nxt == main:
                    target = main
                against = "the clause after it" if target is not None and target != main else "the main claim"
                plans[i] = Plan(target, "attack", "rebut",
                                 why=f"cue {cue.phrase!r}: concedes a point against {against}")
                conceded.add(i)
            elif kind == "contrast" and prev >= 0:
                target, note = prev, "the unit before"
                if prev in plans and plans[prev].kind == "support" and plans[prev].target in conceded:
                    target, note = plans[prev].target, "the objection the unit before goes on with"
                plans[i] = Plan(target, "attack", "rebut", why=f"cue {cue.phrase!r}: turns against {note}")
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
                plans[i] = Plan(target, why=f"cue {cue.phrase!r}: a further argument"
                                             + (f" beside unit c{earlier + 1}" if earlier is not None else ""))
            elif cue and cue.phrase == "and" and same_sentence_prev and prev in plans:
                plans[i] = Plan(plans[prev].target, plans[prev].kind, plans[prev].attack_type,
                                 why="cue 'and': joins the unit before in what it does")
                if prev in conceded:
                    conceded.add(i)
            defaulted = prev in plans and self.cues[prev] is None and plans[prev].why.startswith("no marker")
            if kind in ("conclusion", "summary") and prev >= 0 and prev != main and (
                    prev not in plans or (same_sentence_prev and defaulted)):
                plans[prev] = Plan(i, why=f"the unit after it draws a conclusion from it ({cue.phrase!r})")
            if i in plans:
                continue
            if cue is None and same_paragraph_prev and prev in conceded:
                plans[i] = Plan(prev, why=f"no marker; goes on with the objection before it (c{prev + 1})")
            elif cue is None and next_turns:
                plans[i] = Plan(None, "attack", "rebut",
                                 why=f"no marker, but the unit after it turns against it "
                                     f"({self.cues[following].phrase!r}): a point conceded to the other side")
                conceded.add(i)
            else:
                plans[i] = self._default(i, main)
                back = plans[i].target
                if back is not None and back in plans and plans[back].target == i:   # "X, so Y": not back to X
                    plans[i] = Plan(None, why=plans[i].why.split(";")[0] + "; supports the main claim")
        return plans

    def finish(self, plans: dict[int, Plan], main: int) -> dict[int, Plan]:
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


def side_roles(plans: dict[int, Plan], main: int) -> dict[int, str]:
    """Proponent for the main claim and what supports it; an attack changes sides.

    A unit with no plan argues about nothing (a claim standing alone): the proponent's.
    """
    roles = {main: "proponent"}

    def role(i: int, depth: int = 0) -> str:
        if i in roles:
            return roles[i]
        if i not in plans:
            roles[i] = "proponent"
            return roles[i]
        plan = plans[i]
        anchor = plan.target if plan.target is not None else main
        base = role(anchor, depth + 1) if depth < len(plans) + 1 else "proponent"
        roles[i] = base if plan.kind == "support" else ("opponent" if base == "proponent" else "proponent")
        return roles[i]

    for i in plans:
        role(i)
    return roles



_WEAK_CONCESSIONS = frozenset({"yes,", "sure,", "true,", "of course"})


def weak_concessions_checked(cues: list[Cue | None]) -> list[Cue | None]:
    """"Yes, ..." concedes only when a turn ("but", "however") follows within two units; else it affirms."""
    out = list(cues)
    for i, cue in enumerate(cues):
        if cue and cue.kind == "concession" and cue.phrase in _WEAK_CONCESSIONS:
            if not any(c and c.kind == "contrast" for c in cues[i + 1:i + 3]):
                out[i] = None
    return out


