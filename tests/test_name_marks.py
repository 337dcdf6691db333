"""The marks on a hypothesis's names and numbers that its premise never states (issue 49), and a model trained
with them: it says so in its config.json and is read marked at use, exactly as it was at training."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from cns_core.models.name_marks import CONFIG_KEY, MARK, mark_unstated_names
from cns_core.models.nli import TransformersNLI
from cns_core.models.tiny import build_tiny_nli_model


ROWS = [
    ("Ankara is the capital of Turkey.", "The capital of Turkey is Ankara.", "entailment"),
    ("Ankara is the capital of Turkey.", "The capital of Turkey is Istanbul.", "contradiction"),
    ("Ankara is the capital of Turkey.", "Ankara was founded by the Phrygians.", "neutral"),
    ("Canberra is the capital city of Australia.", "Australia's capital is Canberra.", "entailment"),
    ("Canberra is the capital city of Australia.", "Australia's capital is Sydney.", "contradiction"),
    ("Canberra is the capital city of Australia.", "Canberra lies on Lake Burley Griffin.", "neutral"),
]


@pytest.mark.parametrize("premise, hypothesis, marked", [
    ("Ankara is the Turkish capital.", "The capital of Turkey is Istanbul.",
     f"The capital of {MARK} Turkey {MARK} is {MARK} Istanbul {MARK}."),
    # a name the premise states, in any case and with or without its accents, is left alone
    ("The capital of Brazil is Brasília.", "BRAZIL's capital is Brasilia.", "BRAZIL's capital is Brasilia."),
    # a run of names is one span; a capitalised function word is no name
    ("It stands in Rio.", "The statue stands in New York City.", f"The statue stands in {MARK} New York City {MARK}."),
    # numbers are compared without thousands separators
    ("About 1,000 people came in 1931.", "1000 people came in 1932.", f"1000 people came in {MARK} 1932 {MARK}."),
    ("Canberra is the capital city of Australia.", "Canberra is the capital city of Australia.",
     "Canberra is the capital city of Australia."),
])
def test_unstated_names_and_numbers_are_marked(premise, hypothesis, marked):
    assert mark_unstated_names(premise, hypothesis) == (premise, marked)


def test_in_the_verifiers_form_only_the_answers_names_are_marked_not_the_questions():
    from cns_core.models.verifier import verifier_pair

    pair = verifier_pair("Canberra is the capital city of Australia.", "Sydney is the capital of Australia.",
                         question="What is the capital of the Commonwealth of Australia?")
    assert mark_unstated_names(*pair)[1] == ("Question: What is the capital of the Commonwealth of Australia? "
                                             f"Answer: {MARK} Sydney {MARK} is the capital of Australia.")


def test_a_mark_in_the_text_itself_is_taken_out_so_it_cannot_pass_for_one():
    premise, hypothesis = mark_unstated_names(f"Paris {MARK} is big.", f"{MARK} Paris is big {MARK}.")
    assert MARK not in premise and MARK not in hypothesis


def test_a_model_trained_with_marks_says_so_and_reads_pairs_marked(tmp_path):
    from cns_core.training.nli import TrainSettings, train_nli

    base = build_tiny_nli_model(tmp_path / "base", seed=3)
    data = tmp_path / "data"
    data.mkdir()
    with gzip.open(data / "train.tsv.gz", "wt", encoding="utf-8") as handle:
        handle.write("premise\thypothesis\tlabel\tgenre\n"
                     + "".join(f"{p}\t{h}\t{label}\ttest\n" for p, h, label in ROWS * 4))
    common = dict(data_dir=str(data), train_files=["train.tsv.gz"], dev_fraction=0.25, epochs=1, batch_size=4,
                  learning_rate=1e-3, max_length=32, threads=1, device="cpu", eval_batch_size=8)
    marked = train_nli(TrainSettings(base_model=str(base), output=str(tmp_path / "marked"), mark_unstated_names=True,
                                     **common), progress=False, log=lambda _: None).output
    assert json.loads((marked / "config.json").read_text())[CONFIG_KEY] is True
    # a later round from a marked model keeps reading marks, whatever its own settings say
    again = train_nli(TrainSettings(base_model=str(marked), output=str(tmp_path / "again"), **common),
                      progress=False, log=lambda _: None).output
    assert json.loads((again / "config.json").read_text())[CONFIG_KEY] is True
    plain = train_nli(TrainSettings(base_model=str(base), output=str(tmp_path / "plain"), **common),
                      progress=False, log=lambda _: None).output
    assert CONFIG_KEY not in json.loads((plain / "config.json").read_text())

    pair = ("Ankara is the Turkish capital.", "The capital of Turkey is Istanbul.")
    nli = TransformersNLI(str(marked), device="cpu")
    read = nli.logits([pair])
    assert np.allclose(read, _raw_logits(marked, mark_unstated_names(*pair)), atol=1e-5)
    assert not np.allclose(read, _raw_logits(marked, pair), atol=1e-5)     # the marks reach the model


def _raw_logits(folder, pair) -> np.ndarray:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    model = AutoModelForSequenceClassification.from_pretrained(str(folder), local_files_only=True,
                                                               dtype=torch.float32).eval()
    with torch.inference_mode():
        return model(**tokenizer([pair[0]], [pair[1]], return_tensors="pt")).logits.numpy()
