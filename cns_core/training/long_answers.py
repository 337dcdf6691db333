"""Readers for ``long_answers/`` (``CNS_DATA_DIR``): answers that repeat the evidence's words but say the
opposite, and long answers rated by people against several references.

Each reader returns :class:`JudgedAnswer` rows (question, reference or source, answer, right or wrong)
so the answer verdict's benchmark and the verifier's training read every set alike. Every row carries
the fold of its document or passage (hashed, so a document's edits never sit on both sides of a split):
:func:`held_out` keeps fold 0 of :data:`FOLDS` for the project's own figures.

* SummEdits: a document and a summary, the original or a minimal edit (antonym, negation, entity,
  invented fact), checked by people; the document is the source.
* BUMP: a CNN/DailyMail article, its reference summary (right) and a minimally edited copy (wrong).
* Negation NLI: text and hypothesis, one of them negated; entailment is right, contradiction wrong
  (neutral and RTE's not_entailment are left out: they are neither).
* CondaQA: a passage edited around a negation and a yes/no question; the answer "Yes." or "No." is
  right when it is the label (DON'T KNOW questions left out).
* SQuALITY: long answers to questions about a story, each rated 0-100 by three people against four
  references (a rating of 50 or more counts as right); a person's answer is never its own reference.
"""

from __future__ import annotations

import ast
import gzip
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

from cns_core.config import data_dir
from cns_core.models.nli import CONTRADICTION, ENTAILMENT, NEUTRAL
from cns_core.training.nli_data import NLIPairs

__all__ = ["FOLDS", "LongAnswer", "read_summedits", "read_bump", "read_negation_nli", "read_condaqa",
           "read_squality", "held_out", "trainable", "as_pairs", "as_sentence_pairs", "TRAIN_READERS",
           "SENTENCE_READERS", "OPEN_KINDS"]

FOLDS = 5
_MAX_GZIP_BYTES = 200_000_000      # one released file, unpacked


@dataclass(frozen=True)
class LongAnswer:
    """One judged answer: right or wrong against its evidence (a reference, or a source document)."""

    dataset: str
    group: str                   # the document or passage: rows sharing it share a fold
    question: str
    answer: str
    reference: str | None
    source: str | None
    right: bool
    kind: str = ""               # the edit or error type, where the set names one
    rating: float | None = None  # SQuALITY: people's mean correctness rating (0-100)

    @property
    def fold(self) -> int:
        return int(hashlib.blake2b(f"{self.dataset}:{self.group}".encode(), digest_size=8).hexdigest(), 16) % FOLDS


def held_out(rows: Iterable[LongAnswer], fold: int = 0) -> list[LongAnswer]:
    """The rows of one fold (fold 0: the project's held-out part; the others may be trained on)."""
    return [r for r in rows if r.fold == fold]


def _root(root: Path | None) -> Path:
    folder = (root or data_dir()) / "long_answers"
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: not found (set CNS_DATA_DIR to the shared data folder)")
    return folder


def _read_gzip(path: Path, encoding: str = "utf-8") -> str:
    with gzip.open(path, "rb") as handle:
        raw = handle.read(_MAX_GZIP_BYTES + 1)
    if len(raw) > _MAX_GZIP_BYTES:
        raise ValueError(f"{path}: more than {_MAX_GZIP_BYTES:,} bytes unpacked")
    return raw.decode(encoding, errors="replace")


def _literal(value: Any) -> Any:
    """SQuALITY and SummEdits keep some fields as Python literals in strings."""
    return ast.literal_eval(value) if isinstance(value, str) else value


def read_summedits(root: Path | None = None) -> list[LongAnswer]:
    out = []
    for path in sorted((_root(root) / "summedits").glob("summedits_*.json.gz")):
        domain = path.name[len("summedits_"):-len(".json.gz")]
        for row in json.loads(_read_gzip(path)):
            edits = _literal(row.get("edit_types") or "[]")
            out.append(LongAnswer("summedits", f"{domain}:{row['doc'][:200]}", "", row["summary"].strip(), None,
                                  row["doc"].strip(), str(row["label"]) == "1", ",".join(map(str, edits))))
    return out


def read_bump(root: Path | None = None) -> list[LongAnswer]:
    out = []
    for task in ("task1", "task2"):
        for row in json.loads(_read_gzip(_root(root) / "bump" / f"{task}_dataset.json.gz")):
            group = str(row.get("article_id") or row["article"][:200])
            article = row["article"].strip()
            out.append(LongAnswer("bump", group, "", row["reference_summary"].strip(), None, article, True, "original"))
            out.append(LongAnswer("bump", group, "", row["edited_summary"].strip(), None, article, False,
                                  str(row.get("error_type") or "")))
    return out


def read_negation_nli(root: Path | None = None) -> list[LongAnswer]:
    out = []
    for name in ("MNLI", "RTE", "SNLI"):
        text = _read_gzip(_root(root) / "negation_nli" / f"{name}.txt.gz", "cp1252")    # some bytes are Windows-1252
        for line in text.splitlines()[1:]:
            parts = line.split("\t")
            if len(parts) < 4:
                continue
            label = parts[3].strip().lower()
            if label not in ("entailment", "contradiction"):
                continue
            out.append(LongAnswer("negation_nli", f"{name}:{parts[1][:200]}", "", parts[2].strip(), parts[1].strip(),
                                  None, label == "entailment", name))
    return out


def read_condaqa(root: Path | None = None, file: str = "condaqa_dev.json.gz") -> list[LongAnswer]:
    """CondaQA's dev split (the benchmark's), or ``condaqa_test_union.jsonl.gz`` (the verifier's training)."""
    out = []
    for line in _read_gzip(_root(root) / "condaqa" / file).splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        label = str(row.get("label", "")).upper()
        if label not in ("YES", "NO"):
            continue
        group = str(row.get("original passage") or row["sentence1"])[:200]
        for answer in ("Yes.", "No."):
            out.append(LongAnswer("condaqa", group, row["sentence2"].strip(), answer, row["sentence1"].strip(), None,
                                  answer[:-1].upper() == label, str(row.get("original cue", ""))))
    return out


def read_squality(root: Path | None = None, right_at: float = 50.0) -> list[LongAnswer]:
    folder = _root(root) / "squality"
    references: dict[tuple[str, int], tuple[str, list[str]]] = {}
    for split in ("train", "dev", "test"):
        for line in _read_gzip(folder / f"squality_v1-3_{split}.jsonl.gz").splitlines():
            row = json.loads(line)
            meta = _literal(row["metadata"])
            for q in _literal(row["questions"]):
                references[(str(meta["passage_id"]), int(q["question_number"]))] = (
                    q["question_text"], [r["response_text"].strip() for r in q["responses"]])
    out = []
    for line in _read_gzip(folder / "human_eval_all_responses.jsonl.gz").splitlines():
        row = json.loads(line)
        for number, systems in _literal(row["questions"]).items():
            key = (str(row["passage-id"]), int(number) + 1)
            if key not in references:
                continue
            question, refs = references[key]
            for system, response in systems.items():
                ratings = [r["correctness-rating"] for r in response.get("reviews", []) if "correctness-rating" in r]
                if not ratings:
                    continue
                answer = response["response"].strip()
                others = [r for r in refs if r != answer]
                rating = sum(ratings) / len(ratings)
                out.append(LongAnswer("squality", key[0], question, answer, "\n".join(others), None,
                                      rating >= right_at, system, rating))
    return out


def trainable(rows: Iterable[LongAnswer]) -> list[LongAnswer]:
    """The rows outside the held-out fold 0: what the verifier may be trained on."""
    return [r for r in rows if r.fold != 0]


# Edits that add a fact the source never states: the source leaves such a summary open, it does not
# contradict it. SummEdits names them; BUMP's are its "Extrinsic ..." errors (facts from outside the article).
OPEN_KINDS = frozenset({"hallucinated_fact_insertion"})
OPEN_KIND_PREFIX = "Extrinsic"
_SOURCE_SENTENCES = 5


def _adds_an_unstated_fact(kind: str) -> bool:
    """Whether every edit of a wrong answer only adds an unstated fact (:data:`OPEN_KINDS`, BUMP's extrinsic ones)."""
    kinds = {k.strip() for k in kind.split(",") if k.strip()}
    return bool(kinds) and all(k in OPEN_KINDS or k.startswith(OPEN_KIND_PREFIX) for k in kinds)


def as_pairs(rows: Sequence[LongAnswer], source: str) -> NLIPairs:
    """Judged answers as verifier pairs: right -> entailment; wrong -> contradiction, or neutral where the only
    edit adds a fact the source never states (:func:`_adds_an_unstated_fact`).

    A long source is cut to the sentences sharing the most words with the answer, in the source's order, so
    the edited fact is inside the model's window; the grounding critic reads long evidence by passages too.
    """
    from cns_core.models.verifier import verifier_pair
    from cns_core.text.segment import split_sentences
    from cns_core.training.nli_data import closest_sentences

    out = NLIPairs()
    for r in rows:
        evidence = r.reference or ""
        if r.source:
            evidence = " ".join(closest_sentences(r.answer, split_sentences(r.source), _SOURCE_SENTENCES))
        if not evidence or not r.answer:
            continue
        _add_pair(out, verifier_pair(evidence, r.answer, r.question or None), r, source)
    return out


def _add_pair(out: NLIPairs, pair: tuple[str, str], row: LongAnswer, source: str) -> None:
    """One (premise, hypothesis) of ``row``, labelled by its verdict and edit: right -> entailment; wrong ->
    contradiction, or neutral where the only edit adds a fact the source never states."""
    out.premises.append(pair[0])
    out.hypotheses.append(pair[1])
    out.labels.append(ENTAILMENT if row.right else NEUTRAL if _adds_an_unstated_fact(row.kind) else CONTRADICTION)
    out.sources.append(f"{source}:{row.kind}" if row.kind and not row.right else source)


_UNIT_SOURCE_SENTENCES = 3


def _normalized(sentence: str) -> str:
    return " ".join(sentence.lower().split())


def as_sentence_pairs(rows: Sequence[LongAnswer], source: str) -> NLIPairs:
    """Judged summaries in the units the answer verdict reads: one sentence of the summary against the few
    source sentences closest to it, not a whole summary against five.

    A right summary's sentences are entailed. A wrong summary differs from the right ones of its document by
    its edit: the sentences no right summary of the document contains are the edited ones (contradiction, or
    neutral where the only edit adds an unstated fact); its other sentences are the right ones again and are
    not repeated. A wrong summary whose document has no right one is left out: its edit cannot be placed.
    """
    from cns_core.models.verifier import verifier_pair
    from cns_core.text.segment import split_sentences
    from cns_core.training.nli_data import closest_sentences

    right_sentences: dict[str, set[str]] = {}
    for r in rows:
        if r.right:
            right_sentences.setdefault(r.group, set()).update(_normalized(s) for s in split_sentences(r.answer))
    out = NLIPairs()
    seen: set[tuple[str, str]] = set()
    source_sentences: dict[str, list[str]] = {}   # each document split once
    for r in rows:
        evidence_of = r.source or r.reference or ""
        if not evidence_of or not r.answer or (not r.right and r.group not in right_sentences):
            continue
        if evidence_of not in source_sentences:
            source_sentences[evidence_of] = split_sentences(evidence_of)
        for sentence in split_sentences(r.answer):
            if not r.right and _normalized(sentence) in right_sentences[r.group]:
                continue
            evidence = " ".join(closest_sentences(sentence, source_sentences[evidence_of], _UNIT_SOURCE_SENTENCES))
            pair = verifier_pair(evidence, sentence, r.question or None)
            if pair not in seen:
                seen.add(pair)
                _add_pair(out, pair, r, source)
    return out


TRAIN_READERS = {
    "summedits": read_summedits,
    "bump": read_bump,
    "negation_nli": read_negation_nli,
    "condaqa": lambda root: read_condaqa(root, "condaqa_test_union.jsonl.gz"),   # the dev split is the benchmark's
}
# The same sets read sentence by sentence (:func:`as_sentence_pairs`).
SENTENCE_READERS = {"summedits_sentences": "summedits", "bump_sentences": "bump"}
