"""Stage 4 of the verifier's data: same words with the opposite meaning (SummEdits, BUMP, negation NLI, CondaQA)
and plausible name swaps, read as pairs without ever touching the benchmark's held-out fold."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from cns_core.models.nli import CONTRADICTION, ENTAILMENT, NEUTRAL
from cns_core.training.long_answers import LongAnswer, as_pairs, as_sentence_pairs, read_negation_nli, trainable
from cns_core.text.segment import split_sentences
from cns_core.training.nli import TrainSettings, _training_data
from cns_core.training.verifier_data import JudgedAnswer, plausible_swaps

QUESTION = "What is the capital of Australia?"


def _row(answer: str, right: bool, kind: str = "", source: str | None = None, reference: str | None = None,
         group: str = "g") -> LongAnswer:
    return LongAnswer("summedits", group, "", answer, reference, source, right, kind)


def test_a_wrong_edit_contradicts_and_an_invented_fact_is_left_open():
    rows = [_row("Prices rose.", True, reference="Prices rose in May."),
            _row("Prices fell.", False, "antonym_swap", reference="Prices rose in May."),
            _row("Prices rose, said Ann.", False, "hallucinated_fact_insertion", reference="Prices rose in May."),
            _row("Prices rose in Paris.", False, "Extrinsic Circumstance Error", reference="Prices rose in May."),
            _row("Prices did not fall.", False, "antonym_swap,hallucinated_fact_insertion", reference="Prices rose.")]
    pairs = as_pairs(rows, "summedits")
    assert pairs.labels == [ENTAILMENT, CONTRADICTION, NEUTRAL, NEUTRAL, CONTRADICTION]
    assert pairs.sources[1] == "summedits:antonym_swap" and pairs.sources[0] == "summedits"


def test_a_long_source_is_cut_to_the_sentences_that_share_the_answers_words():
    filler = " ".join(f"Paragraph {i} is about gardening and soil." for i in range(30))
    source = f"{filler} The council approved the budget of 4 million on Monday. {filler}"
    pairs = as_pairs([_row("The council approved a 4 million budget.", True, source=source)], "bump")
    assert "The council approved the budget of 4 million on Monday." in pairs.premises[0]
    assert len(pairs.premises[0].split()) < 60


def test_summaries_read_sentence_by_sentence_contradict_only_the_edited_sentence():
    source = ("The mayor opened the bridge on Monday. It cost 4 million dollars. Gardens line the river. "
              "The council met in the town hall.")
    rows = [_row("The mayor opened the bridge on Monday. It cost 4 million dollars.", True, source=source),
            _row("The mayor opened the bridge on Monday. It cost 9 million dollars.", False, "entity_modification",
                 source=source),
            _row("The mayor opened the bridge on Monday. The river was painted green.", False,
                 "hallucinated_fact_insertion", source=source),
            _row("The council never met.", False, "antonym_swap", source=source, group="no right summary")]
    pairs = as_sentence_pairs(rows, "summedits_sentences")
    assert pairs.hypotheses == ["The mayor opened the bridge on Monday.", "It cost 4 million dollars.",
                                "It cost 9 million dollars.", "The river was painted green."]
    assert pairs.labels == [ENTAILMENT, ENTAILMENT, CONTRADICTION, NEUTRAL]
    assert pairs.sources[2] == "summedits_sentences:entity_modification"
    assert all(len(split_sentences(p)) <= 3 for p in pairs.premises)       # the closest source sentences only
    assert "It cost 4 million dollars." in pairs.premises[2]


def test_a_question_goes_into_the_hypothesis_as_the_product_writes_it():
    row = LongAnswer("condaqa", "p", "Did the tram run daily?", "No.", "The tram ran irregularly.", None, True)
    assert as_pairs([row], "condaqa").hypotheses == ["Question: Did the tram run daily? Answer: No."]


def test_training_never_sees_the_benchmarks_fold():
    rows = [_row(f"Answer {i}.", True, group=f"doc {i}", reference="x") for i in range(200)]
    kept = trainable(rows)
    assert kept and all(r.fold != 0 for r in kept) and len(kept) < len(rows)


def test_a_wrong_name_people_gave_is_swapped_into_a_right_sentence():
    answers = [
        JudgedAnswer("evouna-NQ", QUESTION, "Canberra", "Canberra is the capital city of Australia.", True, "gpt4"),
        JudgedAnswer("evouna-NQ", QUESTION, "Canberra", "Sydney.", False, "fid"),
        JudgedAnswer("evouna-NQ", QUESTION, "Canberra", "It is Canberra", True, "bing"),     # a right short one
        JudgedAnswer("evouna-NQ", QUESTION, "Canberra", "Canberra or Sydney", False, "x"),   # names the gold: not swapped
    ]
    swaps = plausible_swaps(answers, seed=1)
    assert [(s.reference, s.answer, s.correct) for s in swaps] == [
        ("Canberra is the capital city of Australia.", "Sydney is the capital city of Australia.", False)]
    assert plausible_swaps(answers[1:], seed=1) == []        # no right sentence: nothing to swap into


def _negation_folder(root: Path) -> None:
    folder = root / "long_answers" / "negation_nli"
    folder.mkdir(parents=True)
    for name in ("MNLI", "RTE", "SNLI"):
        lines = ["index\tText\tHypothesis\tgold_label"] + [
            f"{i}\tThe shop {name} {i} is open.\tThe shop {name} {i} is not open.\tcontradiction" for i in range(20)] + [
            f"{i}\tThe shop {name} {i} is open.\tA shop is open.\tentailment" for i in range(20, 40)] + [
            f"{i}\tThe shop is open.\tIt sells bread.\tneutral" for i in range(40, 45)]
        with gzip.open(folder / f"{name}.txt.gz", "wt", encoding="cp1252") as handle:
            handle.write("\n".join(lines) + "\n")


def test_the_stage_reads_a_long_answers_set_by_name_and_leaves_fold_0_out(tmp_path, monkeypatch):
    _negation_folder(tmp_path)
    monkeypatch.setenv("CNS_DATA_DIR", str(tmp_path))
    settings = TrainSettings(train_files=[{"file": "negation_nli", "folder": "long_answers", "reader": "negation_nli"}],
                             dev_fraction=0.0, output=str(tmp_path / "m"))
    train, _, _ = _training_data(settings)
    everything = read_negation_nli(tmp_path)
    assert len(train) == len(trainable(everything)) < len(everything) == 120
    held = {(r.reference, r.answer) for r in everything if r.fold == 0}
    assert held and not held & set(zip(train.premises, train.hypotheses))
    assert set(train.labels) == {ENTAILMENT, CONTRADICTION}
