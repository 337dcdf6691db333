"""Hard negatives mined from the verifier's own associations (issue 49).

The verifier read "The capital of Australia is Sydney." as entailed by "... is Canberra." (0.88) while it
contradicted "... is Hobart." (0.96): a name that often goes with the subject passes, an obscure one does
not. The model judges the hypothesis by how well it fits its subject, not by what the premise says. Swaps
drawn from other systems' wrong answers (stage 4) are not *this* model's confusions, so they moved some
names and not others. Here the confusions are mined from the model itself:

1. **Slot facts.** A premise and a hypothesis that state one fact, with the slot that holds its value:
   a right, sentence-long answer to a question and its gold name (EVOUNA), or a claim-verification pair
   whose claim names a person, place, title, year or count that its evidence also names.
2. **Candidates the model confuses.** For a name, the names nearest to it by the MiniLM embeddings the
   verifier was fine-tuned from (same number of words, never an alias of a right answer); for a year or a
   count, nearby values.
3. **Adversarial filtering.** Each candidate is swapped into the hypothesis and the model scores it against
   the premise. Kept are the candidates the model still entails: its own mistakes. Re-mining with the
   trained model is the next round.
4. **Pairs.** For each kept candidate, also swapped into the premise (a *counterfactual premise*: the
   popular answer stated as fact): the swap against the premise (contradiction where the slot holds
   one value, else not enough information), the truth against the counterfactual premise (the same
   label), and the swap against the counterfactual premise (entailment: the premise is followed
   wherever it disagrees with the model's prior); and once per fact the fact itself and the fact with its
   value written another right way (an alias, a person's name without middle names: entailment), so the
   model never learns that a shared sentence frame, or any other name, means contradiction.

Facts whose subject and value belong to the association probe (``benchmarks/data/association_probe.yaml``)
are left out, so the probe measures what the model learned, not what it saw.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np

from cns_core.models.nli import CONTRADICTION, ENTAILMENT, NEUTRAL
from cns_core.models.verifier import verifier_pair
from cns_core.training.nli_data import NLIPairs

__all__ = ["SlotFact", "MiningSettings", "value_kind", "evouna_facts", "claim_facts", "ProbeFilter",
           "NameNeighbours", "near_values", "mine_pairs", "other_names", "Scorer"]

# p(entailment, neutral, contradiction) rows for (premise, hypothesis) pairs.
Scorer = Callable[[Sequence[tuple[str, str]]], np.ndarray]

_YEAR = re.compile(r"^(1[0-9]{3}|20[0-9]{2})$")
_NUMBER = re.compile(r"^\d{1,3}(?:,\d{3})+$|^\d+(?:\.\d+)?$")
_NAME_WORD = re.compile(r"^(?:[A-Z][\w'’.-]*[a-z'’.-]|[A-Z]{2,4}|[A-Z])$")   # not "FinlanD"
_NAME_JOINERS = frozenset({"de", "da", "van", "von", "of", "the", "del", "la", "le", "du", "di", "y", "and", "bin"})
_MAX_NAME_WORDS = 5
_MAX_NAME_CHARS = 60
# Capitalised words that open sentences or questions rather than name things.
_NOT_NAMES = frozenset("""The A An In On At It He She They This These That There His Her Its Their Many Some About
After Before During For With By From As When While Although According Since Following Under Over One Two Three Most
All Both Each Every No Not Only Several Yes What Who Where Which How Why If Answer Question I We You Our My Your
January February March April May June July August September October November December Monday Tuesday Wednesday
Thursday Friday Saturday Sunday""".split())


def value_kind(value: str) -> str | None:
    """``year``, ``number`` or ``name`` for a slot value, None for anything else (a clause, a mixed string)."""
    value = value.strip()
    if _YEAR.match(value):
        return "year"
    if _NUMBER.match(value):
        return "number"
    words = value.split()
    if not words or len(words) > _MAX_NAME_WORDS or len(value) > _MAX_NAME_CHARS or any(c.isdigit() for c in value):
        return None
    if not _NAME_WORD.match(words[0]) or words[0] in _NOT_NAMES:
        return None
    if not all(_NAME_WORD.match(w) or w.lower() in _NAME_JOINERS for w in words):
        return None
    return "name" if len(value) >= 3 else None


@dataclass(frozen=True)
class SlotFact:
    """A premise and a hypothesis stating one fact; ``value`` is written in both (or only in the hypothesis)."""

    premise: str
    hypothesis: str
    value: str
    kind: str
    source: str
    question: str = ""                       # the question the hypothesis answers (judged answers)
    aliases: tuple[str, ...] = ()            # other right values: never swapped in
    single_valued: bool = True               # a swap contradicts (one capital, one author, one year)

    def texts(self) -> str:
        return f"{self.question} {self.premise} {self.hypothesis}"


def _replace_value(text: str, value: str, new: str) -> str | None:
    """``text`` with every whole-word ``value`` replaced by ``new`` (None when it holds none)."""
    pattern = re.compile(r"(?<![\w])" + re.escape(value) + r"(?![\w])")
    out, count = pattern.subn(new.replace("\\", "\\\\"), text)
    return out if count else None


_UNIT_WORDS = 40           # a sentence longer than this is not one unit of a reference


def _stating_sentence(text: str, value: str) -> str | None:
    """The first sentence of ``text`` that states ``value`` (whole word), at most :data:`_UNIT_WORDS` words."""
    from cns_core.text.segment import split_sentences

    pattern = re.compile(r"(?<![\w])" + re.escape(value.lower()) + r"(?![\w])")
    for sentence in split_sentences(text) or [text]:
        if pattern.search(sentence.lower()):
            return sentence.strip() if len(sentence.split()) <= _UNIT_WORDS else None
    return None


def evouna_facts(answers: Sequence, seed: int) -> list[SlotFact]:
    """Judged answers as slot facts, in the units the answer verdict reads: the sentence of a right answer
    that states its gold name or figure, against the sentence of another right answer to the same question
    that states it too (a paraphrase), or against itself (the memory's case of a sentence-long reference
    and an answer sharing its words)."""
    from cns_core.training.verifier_data import _by_question, _right_sentences

    out: list[SlotFact] = []
    for key, group in _by_question(answers).items():
        golds = tuple(dict.fromkeys(g.strip() for a in group for g in a.reference.split("|") if g.strip()))
        stating: list[tuple[str, str]] = []            # (sentence, the gold it states as written)
        for answer in _right_sentences(group):
            lowered = answer.answer.lower()
            stated = [g for g in golds if re.search(r"(?<![\w])" + re.escape(g.lower()) + r"(?![\w])", lowered)]
            if not stated:
                continue
            gold = max(stated, key=len)
            start = lowered.index(gold.lower())
            value = answer.answer[start:start + len(gold)]
            sentence = _stating_sentence(answer.answer, value)
            if sentence and value_kind(value) and sentence not in (s for s, _ in stating):
                stating.append((sentence, value))
        for n, (sentence, value) in enumerate(stating):
            others = [s for s, v in stating if s != sentence and v.lower() == value.lower() and value in s]
            pick = _choice(f"{seed}:{key}:{n}", len(others) + 1)
            premise = others[pick] if pick < len(others) else sentence
            out.append(SlotFact(premise, sentence, value, value_kind(value) or "name", "evouna",
                                question=group[0].question, aliases=golds))
    return out


# A name inside an enumeration ("A, B and C"): the slot holds several values, a swap is open, not wrong.
_LIST_AROUND = r"(?:[A-Z][\w'’.-]*(?: [A-Z][\w'’.-]*)*)"


def _in_enumeration(premise: str, value: str) -> bool:
    v = re.escape(value)
    return bool(re.search(rf"{_LIST_AROUND},\s+(?:and\s+)?{v}(?![\w])|(?<![\w]){v},\s+{_LIST_AROUND}"
                          rf"|{_LIST_AROUND}\s+and\s+{v}(?![\w])|(?<![\w]){v}\s+and\s+{_LIST_AROUND}", premise))


def claim_facts(pairs: NLIPairs, source: str) -> list[SlotFact]:
    """Supported claim-verification pairs as slot facts: the claim's first name (else year, else count) that
    its evidence also states. A name the evidence lists among others (``A, B and C``) holds one of several
    values: swapping it leaves the claim open (not enough information), not wrong."""
    from cns_core.training.verifier_data import _names_anywhere

    out: list[SlotFact] = []
    for premise, hypothesis, label in zip(pairs.premises, pairs.hypotheses, pairs.labels):
        if label != ENTAILMENT:
            continue
        slots = [(n, "name") for n in _names_anywhere(hypothesis) if value_kind(n) == "name"]
        slots += [(m.group(0), value_kind(m.group(0)) or "") for m in re.finditer(r"(?<![\w.,])\d[\d,.]*\d|\b\d\b",
                                                                                  hypothesis)]
        for value, kind in slots:
            if kind and _replace_value(premise, value, value) is not None:
                out.append(SlotFact(premise, hypothesis, value, kind, source,
                                    single_valued=kind != "name" or not _in_enumeration(premise, value)))
                break
    return out


@dataclass(frozen=True)
class ProbeFilter:
    """Leaves out every fact that names a probe fact's subject together with one of its values."""

    facts: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @classmethod
    def from_file(cls, path: str | Path | None) -> "ProbeFilter":
        if path is None:
            return cls()
        from cns_core.training.association_probe import load_probe

        return cls(tuple((f.subject.lower(), tuple(v.lower() for v in (f.truth, f.popular, f.obscure)))
                         for f in load_probe(path)))

    def keeps(self, text: str) -> bool:
        lowered = text.lower()
        return not any(subject in lowered and any(v in lowered for v in values) for subject, values in self.facts)


class NameNeighbours:
    """The names nearest to a name by an embedding (the product's MiniLM), with the same number of words.

    These are the names the verifier's base model places close to each other: the ones it may take for
    one another. Which of them it really confuses is then decided by scoring the swaps.
    """

    def __init__(self, names: Iterable[str], embed: Callable[[Sequence[str]], np.ndarray]):
        unique = sorted({n.strip() for n in names if value_kind(n) == "name"})
        self.names = unique
        self._index = {n: i for i, n in enumerate(unique)}
        self._words = np.asarray([len(n.split()) for n in unique])
        vectors = np.asarray(embed(unique), dtype=np.float32) if unique else np.zeros((0, 1), np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        self._vectors = vectors / np.maximum(norms, 1e-9)
        self._embed = embed

    def nearest(self, name: str, k: int, exclude: Iterable[str] = ()) -> list[str]:
        """Up to ``k`` names nearest to ``name``, none containing or contained in ``name`` or ``exclude``."""
        if not self.names:
            return []
        i = self._index.get(name)
        vector = self._vectors[i] if i is not None else self._unit(name)
        scores = self._vectors @ vector
        scores[self._words != len(name.split())] = -np.inf
        banned = [b.lower() for b in (name, *exclude) if b]
        out: list[str] = []
        for j in np.argsort(-scores, kind="stable"):
            if not np.isfinite(scores[j]) or len(out) >= k:
                break
            candidate = self.names[j]
            low = candidate.lower()
            if any(low in b or b in low for b in banned):
                continue
            out.append(candidate)
        return out

    def _unit(self, name: str) -> np.ndarray:
        v = np.asarray(self._embed([name]), dtype=np.float32)[0]
        return v / max(float(np.linalg.norm(v)), 1e-9)


def near_values(value: str, kind: str) -> list[str]:
    """Figures a model may take for ``value``: nearby years, or counts a little off, written the same way."""
    if kind == "year":
        year = int(value)
        return [str(year + d) for d in (1, -1, 2, -2, 5, -10) if 1000 <= year + d <= 2030]
    number = float(value.replace(",", ""))
    if number != int(number):
        return [f"{number * f:.{len(value.split('.')[1])}f}" for f in (1.5, 0.5, 2.0)]
    n = int(number)
    out = [n + 1, n - 1, n * 2, n // 2, round(n * 1.5), n * 10] if n > 1 else [n + 2, n + 3, 10]
    fmt = (lambda x: f"{x:,}") if "," in value else str
    return list(dict.fromkeys(fmt(x) for x in out if x > 0 and x != n))


@dataclass(frozen=True)
class MiningSettings:
    """How many candidates are tried and kept per fact, and what counts as the model still entailing."""

    candidates: int = 4               # candidates scored per fact
    keep: int = 2                     # at most this many kept per fact (the most entailed first)
    min_entailment: float = 0.3       # a swap the model entails at least this surely is its mistake
    question_form: float = 0.5        # share of a judged answer's pairs written with their question
    batch: int = 256                  # pairs per scoring call (progress is reported per call)


@dataclass
class _Plan:
    fact: SlotFact
    candidates: list[str]
    swapped: list[str] = field(default_factory=list)           # hypothesis with each candidate
    counter: list[str | None] = field(default_factory=list)    # premise with each candidate


def _choice(key: str, n: int) -> int:
    return int(hashlib.blake2b(key.encode(), digest_size=4).hexdigest(), 16) % max(n, 1)


def _candidates(fact: SlotFact, neighbours: NameNeighbours, k: int) -> list[str]:
    if fact.kind == "name":
        return [c for c in neighbours.nearest(fact.value, k * 2, fact.aliases)
                if c.lower() not in fact.premise.lower() and c.lower() not in fact.hypothesis.lower()][:k]
    return near_values(fact.value, fact.kind)[:k]


def mine_pairs(facts: Sequence[SlotFact], score: Scorer, neighbours: NameNeighbours,
               settings: MiningSettings = MiningSettings(), seed: int = 0, source: str = "associations",
               log: Callable[[str], None] = print) -> NLIPairs:
    """The pairs of every fact the model gets wrong (module docstring); ``score`` is the model being mined."""
    plans: list[_Plan] = []
    for fact in facts:
        candidates = _candidates(fact, neighbours, settings.candidates)
        plan = _Plan(fact, [])
        for c in candidates:
            swapped = _replace_value(fact.hypothesis, fact.value, c)
            if swapped is None:
                continue
            plan.candidates.append(c)
            plan.swapped.append(swapped)
            plan.counter.append(_replace_value(fact.premise, fact.value, c))
        if plan.candidates:
            plans.append(plan)
    # The model's reading of each swap against the premise (the counterfactual premises are built from the
    # same kept candidates: a model that entails the swap is the one that ignores what the premise says).
    asked: list[tuple[str, str]] = []
    where: list[tuple[int, int]] = []
    for p, plan in enumerate(plans):
        for c, swapped in enumerate(plan.swapped):
            asked.append(_form(plan.fact, plan.fact.premise, swapped, seed, f"s{c}", settings.question_form))
            where.append((p, c))
    log(f"{source}: scoring {len(asked)} swaps of {len(plans)} facts")
    entail = np.zeros(len(asked), dtype=np.float32)
    for start in range(0, len(asked), settings.batch):
        entail[start:start + settings.batch] = np.asarray(score(asked[start:start + settings.batch]))[:, ENTAILMENT]
        if (start // settings.batch) % 20 == 19:
            log(f"{source}: scored {min(start + settings.batch, len(asked))} of {len(asked)}")
    worst = {key: float(e) for key, e in zip(where, entail)}
    out = NLIPairs()
    fooled = 0
    for p, plan in enumerate(plans):
        ranked = sorted(range(len(plan.candidates)), key=lambda c: -worst.get((p, c), 0.0))
        kept = [c for c in ranked if worst.get((p, c), 0.0) >= settings.min_entailment][:settings.keep]
        if not kept:
            continue
        fooled += 1
        fact = plan.fact
        wrong = CONTRADICTION if fact.single_valued else NEUTRAL
        share = settings.question_form
        _add(out, _form(fact, fact.premise, fact.hypothesis, seed, "anchor", share), ENTAILMENT, f"{source}:fact")
        for c in kept:
            _add(out, _form(fact, fact.premise, plan.swapped[c], seed, f"S{c}", share), wrong, f"{source}:swap")
            counter = plan.counter[c]
            if counter is not None:
                _add(out, _form(fact, counter, fact.hypothesis, seed, f"T{c}", share), wrong,
                     f"{source}:counter_truth")
                _add(out, _form(fact, counter, plan.swapped[c], seed, f"F{c}", share), ENTAILMENT,
                     f"{source}:counter_follow")
        for a, alias in enumerate(other_names(fact)[:settings.keep]):
            named = _replace_value(fact.hypothesis, fact.value, alias)
            if named is not None:
                _add(out, _form(fact, fact.premise, named, seed, f"A{a}", share), ENTAILMENT, f"{source}:alias")
    log(f"{source}: the model was fooled on {fooled} of {len(plans)} facts; {len(out)} pairs")
    return out


_PERSON_QUESTION = re.compile(r"^\s*(?:who|whom|whose)\b", re.IGNORECASE)


def other_names(fact: SlotFact) -> list[str]:
    """Other right ways to write a fact's value: the reference's other answers (aliases), and for a person
    (the question asks who) the name without its middle names or by surname alone. A swap that only changes
    how a right answer is written must stay entailed ("Wilhelm Röntgen" for "Wilhelm Conrad Röntgen"), or
    the model would learn that any other name is wrong."""
    out = [a for a in fact.aliases if value_kind(a) == "name" and a.lower() != fact.value.lower()]
    words = fact.value.split()
    if fact.kind == "name" and _PERSON_QUESTION.match(fact.question) and len(words) >= 2:
        if len(words) >= 3:
            out.append(f"{words[0]} {words[-1]}")
        if len(words[-1]) >= 4 and words[-1][0].isupper():
            out.append(words[-1])
    return list(dict.fromkeys(o for o in out if o.lower() != fact.value.lower()))


def _form(fact: SlotFact, premise: str, hypothesis: str, seed: int, salt: str, share: float) -> tuple[str, str]:
    """The pair as the verifier reads it: with the question for a ``share`` of a judged answer's pairs."""
    with_question = fact.question and _choice(f"{seed}:{salt}:{fact.hypothesis}", 1000) < 1000 * share
    return verifier_pair(premise, hypothesis, fact.question if with_question else None)


def _add(out: NLIPairs, pair: tuple[str, str], label: int, source: str) -> None:
    out.premises.append(pair[0])
    out.hypotheses.append(pair[1])
    out.labels.append(label)
    out.sources.append(source)
