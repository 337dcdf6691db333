"""Training and evaluation pairs for the verifier: answers judged by people, claim verification, swaps.

The verifier is the project's cross-encoder (``models/nli-minilm-l6``) trained to say whether a
claim is supported, contradicted or left open by its evidence. Generic NLI data teaches it what
"entails" means between two sentences; it does not teach it that "It was Tesla, in 1893" is wrong
when the question asked who demonstrated radio first and the reference says Marconi. The readers
here turn the annotated corpora of ``shared/data`` into (premise, hypothesis, label) pairs in the
one input form the product uses (:func:`cns_core.models.verifier.verifier_pair`):

* ``answer_judgements/evouna.jsonl``: LLM answers judged right or wrong by people against the
  gold answer (right -> entailment, wrong -> contradiction);
* ``answer_judgements/saf_en``: exam answers graded against the teacher's reference (correct ->
  entailment, partially correct -> neutral, incorrect -> contradiction);
* ``answer_judgements/boolq_dev.jsonl``: a yes/no question with the passage that answers it
  (the right answer -> entailment, the other -> contradiction);
* ``fever_symmetric``: FEVER claims against minimally edited evidence (tokenized text put back);
* fact swaps made here from supported pairs (:func:`swap_pairs`): a changed number, date, name
  or quantity word -> contradiction, an added fact the evidence never states -> neutral.

Questions are held out *by question*, never by row (one question has one row per system): a
question's fold is a hash of its normalised text (:func:`question_fold`), so NQ301's questions,
and EVOUNA's held-out fold, never reach training whatever the row order.
"""

from __future__ import annotations

import hashlib
import json
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from cns_core.engrams import question_key
from cns_core.models.nli import CONTRADICTION, ENTAILMENT, NEUTRAL
from cns_core.training.nli_data import NLIPairs, RowProblem, detokenize, read_nli_tsv
from cns_core.models.verifier import verifier_pair

__all__ = ["JudgedAnswer", "question_key", "question_fold", "read_evouna", "read_nq301", "read_saf",
           "read_boolq", "read_fever_symmetric", "swap_pairs", "answers_against_a_good_answer", "plausible_swaps", "swap_name_from_premise", "answers_as_pairs", "nq301_questions",
           "SWAP_KINDS"]

_MAX_ROW_BYTES = 200_000          # a row longer than this is not a judged answer; skipped, reported


@dataclass(frozen=True)
class JudgedAnswer:
    """One answer a person judged against a reference: ``correct`` None means "partially"."""

    dataset: str
    question: str
    reference: str
    answer: str
    correct: bool | None
    system: str = ""


def question_fold(question: str, folds: int) -> int:
    """The fold of a question, a hash of :func:`question_key` (stable under reordering)."""
    digest = hashlib.blake2b(question_key(question).encode(), digest_size=8).hexdigest()
    return int(digest, 16) % folds


def _jsonl(path: Path) -> Iterable[tuple[int, dict | None, str | None]]:
    """(line, row, problem) for each non-blank line of a JSON-lines file."""
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    with path.open(encoding="utf-8") as handle:
        for line, text in enumerate(handle, 1):
            if not text.strip():
                continue
            if len(text) > _MAX_ROW_BYTES:
                yield line, None, f"row of {len(text)} bytes is over {_MAX_ROW_BYTES}"
                continue
            try:
                row = json.loads(text)
            except json.JSONDecodeError as exc:
                yield line, None, f"not JSON ({exc.msg})"
                continue
            yield line, row if isinstance(row, dict) else None, None if isinstance(row, dict) else "not an object"


def read_evouna(path: str | Path, *, exclude: Iterable[str] = (), folds: int = 10,
                held_folds: Sequence[int] = (0,), held: bool = False) -> tuple[list[JudgedAnswer], list[RowProblem]]:
    """EVOUNA's judged answers. Questions in ``exclude`` (question keys) are left out; those whose
    :func:`question_fold` is in ``held_folds`` are the held-out benchmark (``held=True`` reads only them)."""
    path = Path(path)
    excluded = set(exclude)
    out: list[JudgedAnswer] = []
    problems: list[RowProblem] = []
    for line, row, problem in _jsonl(path):
        if row is None:
            problems.append(RowProblem(path.name, line, problem or "unreadable"))
            continue
        try:
            question, reference, answer = (str(row[k]).strip() for k in ("question", "reference", "answer"))
            correct = row["correct"]
        except KeyError as exc:
            problems.append(RowProblem(path.name, line, f"missing field {exc}"))
            continue
        if not (question and reference and answer) or not isinstance(correct, bool):
            problems.append(RowProblem(path.name, line, "question, reference, answer or correct: empty or not boolean"))
            continue
        if row.get("dataset") == "TQ":
            reference = _aliases(reference)
        key = question_key(question)
        if key in excluded or (question_fold(question, folds) in held_folds) != held:
            continue
        out.append(JudgedAnswer(f"evouna-{row.get('dataset', '?')}", question, reference, answer, correct,
                                str(row.get("system", ""))))
    return out, problems


_MAX_ALIASES = 4


def _aliases(reference: str) -> str:
    """TriviaQA's gold answer is a ``/``-joined list of aliases, some URL-quoted and dozens long; keep the
    first few distinct ones, joined as NQ301 joins several golds (``" | "``)."""
    from urllib.parse import unquote

    seen: dict[str, str] = {}
    for alias in reference.split("/"):
        alias = unquote(alias).replace('"', '').strip()
        if alias and alias.lower() not in seen:
            seen[alias.lower()] = alias
    return " | ".join(list(seen.values())[:_MAX_ALIASES]) or reference


def _states_gold(answer: JudgedAnswer) -> bool:
    """Whether a right answer states (one of) its gold answers' words: people's verdicts are not perfect,
    and a refusal judged right must not become a reference."""
    from cns_core.training.answer_features import content_tokens

    said = set(content_tokens(answer.answer))
    return any(words and len(words & said) >= 0.5 * len(words)
               for words in (set(content_tokens(gold)) for gold in answer.reference.split("|")))


_SENTENCE_WORDS = 5           # an answer of fewer words is a short answer, not a sentence
_SWAP_SENTENCES = 3
_SWAP_SENTENCE_WORDS = 40


def _by_question(answers: Sequence[JudgedAnswer]) -> dict[str, list[JudgedAnswer]]:
    by_question: dict[str, list[JudgedAnswer]] = {}
    for a in answers:
        by_question.setdefault(question_key(a.question), []).append(a)
    return by_question


def _right_sentences(group: Sequence[JudgedAnswer]) -> list[JudgedAnswer]:
    """The answers of a question that are right, a sentence long, and state their gold answer."""
    return [a for a in group if a.correct and len(a.answer.split()) >= _SENTENCE_WORDS and _states_gold(a)]


def answers_against_a_good_answer(answers: Sequence[JudgedAnswer], seed: int) -> list[JudgedAnswer]:
    """Each question's other answers judged against one of its right answers as the reference.

    A memory's reference is often a whole sentence ("Canberra is the capital of Australia."), and a
    wrong answer can share nearly all of its words ("Sydney is the capital of Australia."). Gold
    answers are bare names, so the judged answers alone never show that case: here one right,
    sentence-long answer of a question (chosen by ``seed``) becomes the reference of the others,
    each keeping its people's verdict.
    """
    out = []
    for key, group in _by_question(answers).items():
        sentences = _right_sentences(group)
        if not sentences or len(group) < 2:
            continue
        pick = int(hashlib.blake2b(f"{seed}:{key}".encode(), digest_size=4).hexdigest(), 16) % len(sentences)
        reference = sentences[pick]
        out += [JudgedAnswer(a.dataset + "-sentence", a.question, reference.answer, a.answer, a.correct, a.system)
                for a in group if a is not reference]
    return out


def _gold_in(sentence: JudgedAnswer) -> tuple[str, int] | None:
    """(the longest of the sentence's gold answers that it states, where it starts), or None."""
    lowered = sentence.answer.lower()
    golds = [g.strip() for g in sentence.reference.split("|") if g.strip() and g.strip().lower() in lowered]
    if not golds:
        return None
    gold = max(golds, key=len)
    return gold, lowered.index(gold.lower())


_SOMEONE = ("someone", "a person", "a well-known figure")
_PERSON_NAME = re.compile(r"[A-Z][\w.'-]+(?: (?:de |van |von |da )?[A-Z][\w.'-]+)+")   # two or more capitalised words


def general_answers(answers: Sequence[JudgedAnswer], seed: int) -> list[JudgedAnswer]:
    """Each who-question's right, sentence-long answers with the gold person put in more general words ('Jane
    Austen wrote it' -> 'someone wrote it'), judged right against the sentence they came from; and the other
    way round, the sentence naming the person against the general one, judged neither (``correct`` None:
    not enough information).

    A vague but true answer is not a wrong one: the judged answers alone teach "does not state the gold" as
    "contradicted", and then every unspecific answer wears a red badge. The reverse pair keeps the direction:
    "someone wrote it" does not state who, so it neither supports "Jane Austen wrote it" (a green badge for
    any name against a vague reference) nor makes that answer complete. Only whole names standing alone are
    replaced (not "Polly" of "Polly Sherman", not a possessive), so every sentence stays English. At most one
    sentence a question (chosen by ``seed``)."""
    out = []
    for key, group in _by_question(answers).items():
        sentences = [a for a in _right_sentences(group) if len(a.answer.split()) <= _SWAP_SENTENCE_WORDS]
        if not sentences or not group[0].question.strip().lower().startswith("who "):
            continue
        sentence = sentences[int(hashlib.blake2b(f"{seed}:general:{key}".encode(), digest_size=4).hexdigest(), 16)
                             % len(sentences)]
        found = _gold_in(sentence)
        if found is None:
            continue
        gold, start = found
        end = start + len(gold)
        before, after = sentence.answer[:start], sentence.answer[end:]
        alone = not re.search(r"[A-Z][\w.]*\s*$", before) and not re.match(r"(?:'s|\w|\s+[A-Z])", after)
        if not _PERSON_NAME.fullmatch(gold.strip()) or not alone:
            continue
        general = _SOMEONE[int(hashlib.blake2b(f"{seed}:{key}".encode(), digest_size=4).hexdigest(), 16) % len(_SOMEONE)]
        if start == 0:
            general = general[0].upper() + general[1:]
        vague = before + general + after
        out.append(JudgedAnswer(sentence.dataset + "-general", sentence.question, sentence.answer, vague, True,
                                "general"))
        out.append(JudgedAnswer(sentence.dataset + "-general", sentence.question, vague, sentence.answer, None,
                                "general-reversed"))
    return out


def _bare(answer: str) -> str:
    return answer.strip().rstrip(".!").strip()


def plausible_swaps(answers: Sequence[JudgedAnswer], seed: int) -> list[JudgedAnswer]:
    """Each question's right, sentence-long answers with the gold name replaced by a short answer people judged
    wrong for the same question, judged wrong against the sentence they came from.

    The wrong name fits the question because a model gave it ("Sydney" to "What is the capital of
    Australia?"), so "Sydney is the capital of Australia." against "Canberra is the capital of Australia."
    differs in the one place the question asks about, unlike a random swap. (Right cases come from
    :func:`answers_against_a_good_answer`; TriviaQA's alias lists are too noisy to swap in as right names.)
    At most :data:`_SWAP_SENTENCES` sentences a question (chosen by ``seed``), each at most
    :data:`_SWAP_SENTENCE_WORDS` words.
    """
    out = []
    for key, group in _by_question(answers).items():
        sentences = [a for a in _right_sentences(group) if len(a.answer.split()) <= _SWAP_SENTENCE_WORDS]
        rng = np.random.default_rng(int(hashlib.blake2b(f"{seed}:swap:{key}".encode(), digest_size=4).hexdigest(), 16))
        wrong = sorted({_bare(a.answer) for a in group
                        if a.correct is False and 0 < len(a.answer.split()) < _SENTENCE_WORDS})
        for sentence in (sentences[i] for i in rng.permutation(len(sentences))[:_SWAP_SENTENCES]):
            found = _gold_in(sentence)
            if found is None:
                continue
            gold, start = found
            lowered = sentence.answer.lower()
            for name in wrong:
                if name.lower() in lowered or gold.lower() in name.lower():
                    continue
                swapped = sentence.answer[:start] + name + sentence.answer[start + len(gold):]
                out.append(JudgedAnswer(sentence.dataset + "-swap", sentence.question, sentence.answer, swapped,
                                        False, "swap"))
    return out


def _tsv_rows(path: Path) -> list[dict[str, str]]:
    import csv

    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


def read_nq301(human: str | Path, gold: str | Path) -> list[JudgedAnswer]:
    """NQ301: people's verdicts (``Acceptable?`` of ``nq301_human.tsv``) on answers to 301 NQ questions,
    with the gold answers of ``nq301_gold.tsv`` (same rows, same order; several golds joined by ``|``)."""
    people, golds = _tsv_rows(Path(human)), _tsv_rows(Path(gold))
    if len(people) != len(golds):
        raise ValueError(f"{human} and {gold}: {len(people)} vs {len(golds)} rows; they must align")
    out = []
    for person, gold in zip(people, golds):
        if person["Question"].strip() != gold["Question"].strip():
            raise ValueError(f"{human}: question {person['Question']!r} does not match {gold['Question']!r}")
        references = [g.strip() for g in gold["Gold answers"].split("|") if g.strip()]
        verdict = person["Acceptable?"].strip().lower()
        if verdict not in ("yes", "no") or not references:
            continue
        out.append(JudgedAnswer("nq301", person["Question"].strip(), " | ".join(references),
                                person["Model answer"].strip(), verdict == "yes"))
    return out


def nq301_questions(human: str | Path) -> set[str]:
    """The question keys of NQ301, kept out of training."""
    return {question_key(r["Question"]) for r in _tsv_rows(Path(human))}


_SAF_VERDICTS = {"correct": True, "incorrect": False, "partially correct": None}


def read_saf(folder: str | Path) -> tuple[list[JudgedAnswer], list[RowProblem]]:
    """SAF exam answers of one split folder (``training``, ``unseen_answers``, ``unseen_questions``)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"{folder}: no such folder")
    out: list[JudgedAnswer] = []
    problems: list[RowProblem] = []
    for path in sorted(folder.glob("*.xml")):
        try:
            root = ET.parse(path).getroot()   # the corpus's own files; no entities are declared in them
        except ET.ParseError as exc:
            problems.append(RowProblem(path.name, 0, f"not XML ({exc})"))
            continue
        question = " ".join((root.findtext("questionText") or "").split())
        reference = " ".join((root.findtext("referenceAnswers/referenceAnswer") or "").split())
        for student in root.iter("studentAnswer"):
            answer = " ".join((student.findtext("response") or "").split())
            verdict = (student.findtext("verification_feedback") or "").strip().lower()
            if not answer or verdict not in _SAF_VERDICTS:
                problems.append(RowProblem(path.name, 0, f"{student.get('id')}: no response or verdict {verdict!r}"))
                continue
            out.append(JudgedAnswer("saf", question, reference, answer, _SAF_VERDICTS[verdict]))
    return out, problems


def read_boolq(path: str | Path) -> tuple[list[JudgedAnswer], list[RowProblem]]:
    """BoolQ: each question twice, with its right answer (correct) and the other one (wrong)."""
    path = Path(path)
    out: list[JudgedAnswer] = []
    problems: list[RowProblem] = []
    for line, row, problem in _jsonl(path):
        if row is None or not isinstance(row.get("answer"), bool) or not row.get("question") or not row.get("passage"):
            problems.append(RowProblem(path.name, line, problem or "question, passage or answer missing"))
            continue
        question = str(row["question"]).strip().rstrip("?") + "?"
        for said in (True, False):
            out.append(JudgedAnswer("boolq", question, str(row["passage"]).strip(), "Yes." if said else "No.",
                                    said == row["answer"]))
    return out, problems


def answers_as_pairs(answers: Sequence[JudgedAnswer], source: str) -> NLIPairs:
    """Judged answers in the verifier's input form: right -> entailment, partial -> neutral, wrong -> contradiction."""
    out = NLIPairs()
    for a in answers:
        premise, hypothesis = verifier_pair(a.reference, a.answer, a.question)
        out.premises.append(premise)
        out.hypotheses.append(hypothesis)
        out.labels.append(ENTAILMENT if a.correct else NEUTRAL if a.correct is None else CONTRADICTION)
        out.sources.append(source)
    return out


# FEVER's tokenizer writes brackets as -LRB- and friends.
_PTB = {"-LRB-": "(", "-RRB-": ")", "-LSB-": "[", "-RSB-": "]", "-LCB-": "{", "-RCB-": "}", "``": '"', "''": '"',
        "--": "-"}
_PTB_RE = re.compile("|".join(re.escape(k) for k in _PTB))
_FEVER_LABELS = {"SUPPORTS": ENTAILMENT, "REFUTES": CONTRADICTION, "NOT ENOUGH INFO": NEUTRAL}


def _fever_text(text: str) -> str:
    return detokenize(_PTB_RE.sub(lambda m: _PTB[m.group(0)], text)).replace("( ", "(").replace(" )", ")")


def read_fever_symmetric(paths: Sequence[str | Path]) -> NLIPairs:
    """Symmetric FEVER rows (v0.1 ``evidence_sentence`` or v0.2 ``evidence``), tokenization undone."""
    out = NLIPairs()
    for path in map(Path, paths):
        for line, row, problem in _jsonl(path):
            evidence = (row or {}).get("evidence_sentence") or (row or {}).get("evidence")
            label = _FEVER_LABELS.get(str((row or {}).get("gold_label") or (row or {}).get("label") or ""))
            if row is None or not evidence or not row.get("claim") or label is None:
                out.problems.append(RowProblem(path.name, line, problem or "claim, evidence or label missing"))
                continue
            out.premises.append(_fever_text(str(evidence)))
            out.hypotheses.append(_fever_text(str(row["claim"])))
            out.labels.append(label)
            out.sources.append(path.name)
    return out


SWAP_KINDS = ("premise_name", "number", "date", "name", "quantity", "added_fact")
# A capitalised name anywhere in a sentence, its first word not a common sentence opener.
_ANY_NAME = re.compile(r"\b((?:[A-Z][a-z]+(?: (?:de |van |von |of )?[A-Z][a-z]+)+)|[A-Z][a-z]{3,})\b")


# Capitalised words that are mostly adjectives or verbs, not names: demonyms, -ing forms, ordinal words.
_NOT_A_NAME = re.compile(r"(?:an|ese|ish|ic|ian|ing|ed|ly|est|th)$")


def _names_anywhere(text: str) -> list[str]:
    from cns_core.training.fact_swaps import LOWER_START, MONTHS

    out = []
    for m in _ANY_NAME.finditer(text):
        name = m.group(1)
        words = name.split()
        if words[0].lower() in LOWER_START or any(w in MONTHS for w in words):
            continue
        if len(words) == 1 and _NOT_A_NAME.search(name):
            continue
        out.append(name)
    return out


def swap_name_from_premise(premise: str, hypothesis: str) -> str | None:
    """The hypothesis with its first name replaced by another name the premise mentions.

    The hard case for a cross-encoder: "Canberra is the capital city of Australia. Sydney is its
    largest city." against "Sydney is the capital of Australia." shares every word with the premise,
    yet the premise gives the role to someone else. Such a swap is labelled contradicted.
    """
    mine = _names_anywhere(hypothesis)
    if not mine:
        return None
    old = mine[0]
    theirs = [n for n in dict.fromkeys(_names_anywhere(premise))
              if n not in hypothesis and old not in n and n not in old]
    if not theirs:
        return None
    same_shape = [n for n in theirs if n.count(" ") == old.count(" ")]
    if not same_shape:
        return None
    pick = int(hashlib.blake2b(hypothesis.encode(), digest_size=4).hexdigest(), 16) % len(same_shape)
    return hypothesis.replace(old, same_shape[pick], 1)


def swap_pairs(supported: NLIPairs, limit: int, seed: int, source: str = "swaps") -> NLIPairs:
    """Fact swaps of supported pairs: the hypothesis with one number, date, name or quantity word
    changed, or its name swapped for another the premise mentions (-> contradiction), or a fact of
    another pair added (-> neutral), against the same premise.

    Only the entailment rows of ``supported`` are used; the kinds take turns so each is about as
    common as the pairs admit; at most ``limit`` swaps, chosen by ``seed``.
    """
    from cns_core.training.fact_swaps import inject_error

    rows = [i for i, label in enumerate(supported.labels) if label == ENTAILMENT]
    rng = np.random.default_rng(seed)
    rng.shuffle(rows)
    out = NLIPairs()
    turn = 0
    for n, i in enumerate(rows):
        if len(out) >= limit:
            break
        donor = supported.hypotheses[rows[(n + len(rows) // 2) % len(rows)]]
        for step in range(len(SWAP_KINDS)):
            kind = SWAP_KINDS[(turn + step) % len(SWAP_KINDS)]
            changed = (swap_name_from_premise(supported.premises[i], supported.hypotheses[i])
                       if kind == "premise_name" else inject_error(supported.hypotheses[i], kind, donor))
            if changed:
                out.premises.append(supported.premises[i])
                out.hypotheses.append(changed)
                out.labels.append(NEUTRAL if kind == "added_fact" else CONTRADICTION)
                out.sources.append(f"{source}:{kind}")
                turn = (turn + step + 1) % len(SWAP_KINDS)
                break
    return out


def read_tsv_pairs(path: str | Path) -> NLIPairs:
    """A project TSV of pairs (``premise, hypothesis, label, genre``): the NLI sets' own format."""
    return read_nli_tsv(path)
