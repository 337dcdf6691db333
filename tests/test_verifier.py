"""The verifier: its one input form, the readers of judged answers and claim verification, fact swaps,
questions held out by question, and ``cns train-verifier`` end to end on a tiny random BERT."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from cns_core.config import ConfigError
from cns_core.models.nli import CONTRADICTION, ENTAILMENT, NEUTRAL, TransformersNLI
from cns_core.training.nli_data import NLIPairs
from cns_core.training.nli import TrainSettings, _training_data, load_train_settings, train_nli
from cns_core.models.tiny import build_tiny_nli_model
from cns_core.models.verifier import verifier_pair
from cns_core.training.verifier_data import (answers_against_a_good_answer, answers_as_pairs, question_fold,
                                           question_key, read_boolq, read_evouna, read_fever_symmetric, read_nq301,
                                           read_saf, swap_name_from_premise, swap_pairs)

EVOUNA = [
    {"dataset": "NQ", "question": "Who got the first Nobel prize in physics?", "reference": "Wilhelm Conrad Röntgen",
     "system": "gpt4", "answer": "It went to Wilhelm Röntgen in 1901.", "correct": True},
    {"dataset": "NQ", "question": "who got the first nobel prize in physics", "reference": "Wilhelm Conrad Röntgen",
     "system": "fid", "answer": "Marie Curie", "correct": False},
    {"dataset": "TQ", "question": "Which company is the largest private employer?",
     "reference": "Walmart/Wal-Mart/%22Wal Mart%22/Walmart Inc./WMT/Walmart Stores", "system": "gpt35",
     "answer": "Walmart", "correct": True},
    {"dataset": "NQ", "question": "Bad row", "reference": "x", "system": "s", "answer": "y", "correct": "maybe"},
]


def _jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + "{not json\n", encoding="utf-8")
    return path


def test_the_question_goes_into_the_hypothesis_and_whitespace_is_one_space():
    assert verifier_pair("Guglielmo  Marconi", "It was Tesla,\n in 1893.", "Who first demonstrated radio?") == (
        "Guglielmo Marconi", "Question: Who first demonstrated radio? Answer: It was Tesla, in 1893.")
    assert verifier_pair("A cat sat.", "A cat sat.") == ("A cat sat.", "A cat sat.")
    assert verifier_pair("e", "c", "  ") == ("e", "c")


def test_questions_are_held_out_by_question_not_by_row():
    assert question_key("Who got the first Nobel prize in physics?") == question_key(
        "who got the first nobel prize in physics")
    assert question_fold("Who got the first Nobel prize in physics?", 10) == question_fold(
        "who got the first NOBEL prize in physics", 10)


def test_evouna_rows_keep_the_question_and_leave_held_questions_and_bad_rows_out(tmp_path):
    path = _jsonl(tmp_path / "evouna.jsonl", EVOUNA)
    answers, problems = read_evouna(path, folds=10, held_folds=())
    assert [a.correct for a in answers] == [True, False, True]
    assert answers[2].reference == "Walmart | Wal-Mart | Wal Mart | Walmart Inc."    # four aliases, unquoted
    assert {p.line for p in problems} == {4, 5} and "not JSON" in str(problems[-1])
    nobel = question_key(EVOUNA[0]["question"])
    kept, _ = read_evouna(path, exclude={nobel}, folds=10, held_folds=())
    assert [a.answer for a in kept] == ["Walmart"]
    fold = question_fold(EVOUNA[0]["question"], 10)
    held, _ = read_evouna(path, folds=10, held_folds=(fold,), held=True)
    trained, _ = read_evouna(path, folds=10, held_folds=(fold,))
    assert {a.question.lower() for a in held} >= {EVOUNA[1]["question"]}
    assert not {question_key(a.question) for a in held} & {question_key(a.question) for a in trained}


def test_judged_answers_become_question_aware_pairs(tmp_path):
    answers, _ = read_evouna(_jsonl(tmp_path / "e.jsonl", EVOUNA[:2]), folds=10, held_folds=())
    pairs = answers_as_pairs(answers, "evouna")
    assert pairs.labels == [ENTAILMENT, CONTRADICTION]
    assert pairs.premises[0] == "Wilhelm Conrad Röntgen"
    assert pairs.hypotheses[1] == "Question: who got the first nobel prize in physics Answer: Marie Curie"


def test_a_right_sentence_long_answer_becomes_the_reference_of_the_others(tmp_path):
    answers, _ = read_evouna(_jsonl(tmp_path / "e.jsonl", EVOUNA), folds=10, held_folds=())
    rows = answers_against_a_good_answer(answers, seed=1)
    assert [(r.reference, r.answer, r.correct) for r in rows] == [
        ("It went to Wilhelm Röntgen in 1901.", "Marie Curie", False)]


def test_saf_boolq_and_nq301_readers(tmp_path):
    (tmp_path / "saf").mkdir()
    (tmp_path / "saf" / "q.xml").write_text(
        "<question id='1'><questionText>What does TCP add?</questionText><referenceAnswers><referenceAnswer>"
        "Reliable delivery.</referenceAnswer></referenceAnswers><studentAnswers>"
        "<studentAnswer id='a'><response>Ordering and retransmission.</response>"
        "<verification_feedback>Correct</verification_feedback></studentAnswer>"
        "<studentAnswer id='b'><response>Colour.</response>"
        "<verification_feedback>Partially correct</verification_feedback></studentAnswer>"
        "<studentAnswer id='c'><response> </response><verification_feedback>Incorrect</verification_feedback>"
        "</studentAnswer></studentAnswers></question>", encoding="utf-8")
    saf, problems = read_saf(tmp_path / "saf")
    assert [(a.answer, a.correct) for a in saf] == [("Ordering and retransmission.", True), ("Colour.", None)]
    assert len(problems) == 1 and "no response" in problems[0].problem
    assert answers_as_pairs(saf, "saf").labels == [ENTAILMENT, NEUTRAL]
    boolq, _ = read_boolq(_jsonl(tmp_path / "b.jsonl", [{"question": "is the sky blue", "passage": "It is blue.",
                                                          "answer": True}]))
    assert [(a.question, a.answer, a.correct) for a in boolq] == [("is the sky blue?", "Yes.", True),
                                                                   ("is the sky blue?", "No.", False)]
    header = "id\tQuestion\tModel answer\tAcceptable?\tannotator1\tannotator2\tannotator3\n"
    (tmp_path / "h.tsv").write_text(header + "1\twho wrote it\tAusten\tYes\tYes\tYes\t\n", encoding="utf-8")
    (tmp_path / "g.tsv").write_text("id\tQuestion\tGold answers\tModel answer\tAcceptable?\tBEM\n"
                                    "1\twho wrote it\tJane Austen | Austen\tAusten\tNo\t[]\n", encoding="utf-8")
    [nq] = read_nq301(tmp_path / "h.tsv", tmp_path / "g.tsv")
    assert (nq.reference, nq.correct) == ("Jane Austen | Austen", True)      # people's verdict, not BEM's


def test_symmetric_fever_text_is_put_back_into_plain_spelling(tmp_path):
    path = _jsonl(tmp_path / "f.jsonl", [
        {"claim": "Telemundo is a English-language network .", "label": "REFUTES",
         "evidence_sentence": "Telemundo -LRB- teleˈmundo -RRB- is a Spanish-language network ."},
        {"claim": "Colombiana is a French film .", "gold_label": "SUPPORTS", "evidence": "Colombiana is a French film ."}])
    data = read_fever_symmetric([path])
    assert data.labels == [CONTRADICTION, ENTAILMENT]
    assert data.premises[0] == "Telemundo (teleˈmundo) is a Spanish-language network."
    assert len(data.problems) == 1


def test_swaps_change_one_fact_and_label_it():
    supported = NLIPairs(
        ["Canberra is the capital city of Australia. Sydney is its largest city.",
         "The Moon is about 384,400 kilometres from Earth.", "The treaty was signed in 1648 in Westphalia."],
        ["Canberra is the capital of Australia.", "The Moon is about 384,400 kilometres away.",
         "The treaty was signed in 1648."], [ENTAILMENT] * 3, ["x"] * 3)
    swaps = swap_pairs(supported, limit=10, seed=3)
    assert len(swaps) == 3 and set(swaps.premises) == set(supported.premises)
    for hypothesis, label, source in zip(swaps.hypotheses, swaps.labels, swaps.sources):
        assert hypothesis not in supported.hypotheses
        assert label == (NEUTRAL if source.endswith("added_fact") else CONTRADICTION)
    assert swap_name_from_premise(supported.premises[0], supported.hypotheses[0]) == \
        "Sydney is the capital of Australia."
    assert swap_name_from_premise("The cat sat.", "Brazilian food is good.") is None


def test_the_committed_recipe_keeps_every_evaluation_set_out():
    settings = load_train_settings(path=Path(__file__).resolve().parents[1] / "config" / "verifier_train.yaml")
    trained = {Path(s.file).name for s in settings.sources}
    assert not trained & set(settings.held_out_files)
    assert {"nq301_human.tsv", "claim_dev.jsonl", "snli_dev.tsv.gz", "mnli_dev_mismatched.tsv.gz",
            "symmetric_v0.2_fever_symmetric_test.jsonl", "unseen_questions"} <= set(settings.held_out_files)
    assert settings.exclude_questions == ["answer_judgements/nq301_human.tsv"] and settings.question_held_folds == [0]
    assert not {"anli_dev.tsv.gz", "lingnli_train.tsv.gz", "healthver_dev_test.tsv.gz"} & trained   # licences


def test_an_unknown_reader_is_refused_naming_the_field():
    with pytest.raises(ConfigError, match=re.escape("train_files.0.TrainSource.reader")):
        from cns_core.config import settings_error
        from pydantic import ValidationError

        try:
            TrainSettings(train_files=[{"file": "x", "reader": "csv"}])
        except ValidationError as exc:
            raise settings_error("verifier_train.yaml", exc) from exc


@pytest.fixture(scope="module")
def tiny_base(tmp_path_factory) -> Path:
    return build_tiny_nli_model(tmp_path_factory.mktemp("verifier-base") / "tiny", seed=7)


def test_train_verifier_reads_every_kind_of_source_and_stops_at_its_time_limit(tmp_path, tiny_base, monkeypatch):
    data = tmp_path / "data"
    (data / "answer_judgements").mkdir(parents=True)
    (data / "nli").mkdir()
    _jsonl(data / "answer_judgements" / "evouna.jsonl", EVOUNA * 6)
    header = "id\tQuestion\tModel answer\tAcceptable?\tannotator1\tannotator2\tannotator3\n"
    (data / "answer_judgements" / "nq301_human.tsv").write_text(
        header + "1\twhich company is the largest private employer\tWalmart\tYes\t\t\t\n", encoding="utf-8")
    rows = ["premise\thypothesis\tlabel\tgenre"] + [
        "The Moon is 384,400 km from Earth.\tThe Moon is 384,400 km away.\tentailment\tx",
        "A man plays a guitar.\tA woman sleeps.\tcontradiction\tx", "A dog runs.\tAn animal moves.\tneutral\tx"] * 6
    (data / "nli" / "pairs.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    monkeypatch.setenv("CNS_DATA_DIR", str(data))
    settings = TrainSettings(
        base_model=str(tiny_base), train_files=[
            {"file": "evouna.jsonl", "folder": "answer_judgements", "reader": "evouna"},
            {"file": "evouna.jsonl", "folder": "answer_judgements", "reader": "evouna_sentences"},
            {"file": "pairs.tsv", "folder": "nli"}, {"file": "pairs.tsv", "folder": "nli", "reader": "swaps"}],
        exclude_questions=["answer_judgements/nq301_human.tsv"], question_held_folds=[], dev_fraction=0.2,
        epochs=50, batch_size=4, learning_rate=1e-3, max_length=48, threads=1, device="cpu",
        output=str(tmp_path / "model"), checkpoint_every=1000, max_train_seconds=0.5, seed=3)
    train, _, _ = _training_data(settings)
    assert not any("Walmart" in h for h in train.hypotheses)          # NQ301's question never trains
    assert any(h.startswith("Question: ") for h in train.hypotheses)
    assert any(s.startswith("swaps:pairs.tsv:") for s in train.sources)
    result = train_nli(settings, progress=False, log=lambda _: None)
    report = json.loads((result.output / "training_report.json").read_text())
    assert result.finished and report["time_limit_at_step"] == result.steps < 50 * (len(train) // 4)
    probs = TransformersNLI(str(result.output), device="cpu").predict([verifier_pair("Marconi", "Tesla", "Who?")])
    assert probs.shape == (1, 3) and np.isclose(probs.sum(), 1.0)


def test_real_judged_answers_read_whole(shared_data):
    folder = shared_data / "answer_judgements"
    answers, problems = read_evouna(folder / "evouna.jsonl", folds=10, held_folds=())
    assert len(answers) == 24_784 and not problems
    nq = read_nq301(folder / "nq301_human.tsv", folder / "nq301_gold.tsv")
    assert len(nq) == 1490 and sum(a.correct for a in nq) == 816
