"""The association probe: does the verifier follow the evidence, or what it believes (issue 49)?

Each probe fact is one sentence form read three ways (``benchmarks/data/association_probe.yaml``): the
truth against the answer people commonly give instead (``popular``), the truth against a little-known
name of the same kind (``obscure``), and the popular answer stated as fact against the truth
(``premise``). None of the three hypotheses may be entailed. A model that judges by association passes
the popular name and the truth against a premise that denies it, and rejects only the obscure name.

With each fact's question, the popular and premise readings are read again as the memory reads an answer,
the hypothesis after its question (``asked``, ``asked_premise``), beside the control ``asked_truth`` (the
truth given to the question must be entailed); with the fact also in other words (``reworded``, as a
reference is worded otherwise than the answer), the popular answer against it (``reworded``) beside its
control (``reworded_truth``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from cns_core.config import load_data_yaml
from cns_core.models.nli import ENTAILMENT

__all__ = ["ProbeFact", "load_probe", "probe_pairs", "probe_figures", "probe_answers", "PROBE_READINGS",
           "MUST_ENTAIL", "DEFAULT_PROBE"]

DEFAULT_PROBE = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "association_probe.yaml"
PROBE_READINGS = ("popular", "obscure", "premise")
# The same facts read as the memory reads an answer (asked, asked_premise, reworded: the hypothesis after its
# question) have controls, the readings that must be entailed (a model that entails nothing after a question
# passes the rest).
MUST_ENTAIL = frozenset({"asked_truth", "reworded_truth"})
_OPTIONAL = ("question", "reworded")
_MAX_BYTES = 200_000
_MAX_FACTS = 1000


@dataclass(frozen=True)
class ProbeFact:
    subject: str
    statement: str        # the sentence, with {value} in the slot
    truth: str
    popular: str
    obscure: str
    question: str = ""    # the question the statement answers (the asked readings need it)
    reworded: str = ""    # the fact in other words, with {value} (as a reference words it otherwise)

    def say(self, value: str) -> str:
        return self.statement.replace("{value}", value)

    def reword(self, value: str) -> str:
        return self.reworded.replace("{value}", value)


def load_probe(path: str | Path = DEFAULT_PROBE) -> list[ProbeFact]:
    """The probe's facts; a damaged file is a ValueError naming the fact and the field."""
    data = load_data_yaml(path, _MAX_BYTES) or {}
    facts = data.get("facts") if isinstance(data, dict) else None
    if not isinstance(facts, list) or not facts or len(facts) > _MAX_FACTS:
        raise ValueError(f"{path}: facts: expected a list of 1 to {_MAX_FACTS} facts")
    out = []
    for n, row in enumerate(facts, 1):
        fields = {k: row.get(k) for k in ProbeFact.__dataclass_fields__ if k not in _OPTIONAL} \
            if isinstance(row, dict) else {}
        bad = [k for k, v in fields.items() if not isinstance(v, str) or not v.strip()] if fields else ["all"]
        optional = {k: row.get(k, "") for k in _OPTIONAL} if isinstance(row, dict) else {}
        bad += [k for k, v in optional.items() if not isinstance(v, str)]
        reworded = optional.get("reworded")
        if isinstance(reworded, str) and reworded and "{value}" not in reworded:
            bad.append("reworded")
        if bad or "{value}" not in fields["statement"]:
            raise ValueError(f"{path}: fact {n}: {', '.join(bad) or 'statement'}: missing, empty or without {{value}}")
        out.append(ProbeFact(**{k: v.strip() for k, v in (fields | optional).items()}))
    return out


def probe_pairs(facts: Sequence[ProbeFact]) -> dict[str, list[tuple[str, str]]]:
    """(premise, hypothesis) per reading, one per fact, in the facts' order; the asked readings only when
    every fact has its question."""
    from cns_core.models.verifier import verifier_pair

    pairs = {"popular": [(f.say(f.truth), f.say(f.popular)) for f in facts],
             "obscure": [(f.say(f.truth), f.say(f.obscure)) for f in facts],
             "premise": [(f.say(f.popular), f.say(f.truth)) for f in facts]}
    if facts and all(f.question for f in facts):
        pairs |= {"asked": [verifier_pair(f.say(f.truth), f.say(f.popular), f.question) for f in facts],
                  "asked_premise": [verifier_pair(f.say(f.popular), f.say(f.truth), f.question) for f in facts],
                  "asked_truth": [verifier_pair(f.say(f.truth), f.say(f.truth), f.question) for f in facts]}
        if all(f.reworded for f in facts):
            pairs |= {"reworded": [verifier_pair(f.reword(f.truth), f.say(f.popular), f.question) for f in facts],
                      "reworded_truth": [verifier_pair(f.reword(f.truth), f.say(f.truth), f.question)
                                         for f in facts]}
    return pairs


def probe_figures(score: Callable[[Sequence[tuple[str, str]]], np.ndarray], facts: Sequence[ProbeFact],
                  at: float = 0.5) -> dict[str, dict[str, object]]:
    """Per reading: how many hypotheses are entailed (p >= ``at``), the mean p(entailment), and which (for
    the control, :data:`MUST_ENTAIL`, the ones that are not)."""
    out: dict[str, dict[str, object]] = {}
    for reading, pairs in probe_pairs(facts).items():
        entail = np.asarray(score(pairs))[:, ENTAILMENT]
        out[reading] = {"facts": len(pairs), "entailed": int(np.sum(entail >= at)),
                        "mean_entailment": round(float(np.mean(entail)), 3),
                        "entailed_facts" if reading not in MUST_ENTAIL else "missed_facts":
                            [facts[i].subject for i in np.flatnonzero((entail >= at) != (reading in MUST_ENTAIL))]}
    return out


def probe_answers(facts: Sequence[ProbeFact]) -> dict[str, list[tuple[str, str, str]]]:
    """The probe as answers for the memory's verdict: (question, answer, reference) per fact, the reference the
    fact in other words; ``popular`` must not be called correct, ``truth`` (the control) must. Empty unless
    every fact has its question and its rewording."""
    if not facts or not all(f.question and f.reworded for f in facts):
        return {}
    return {"popular": [(f.question, f.say(f.popular), f.reword(f.truth)) for f in facts],
            "truth": [(f.question, f.say(f.truth), f.reword(f.truth)) for f in facts]}
