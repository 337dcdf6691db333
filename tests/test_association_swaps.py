"""Hard negatives mined from the verifier's associations (issue 49): slot facts, candidates, the adversarial
filter, the pairs it writes, the probe kept out of training, and the reader end to end on a tiny model."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from cns_core.models.nli import CONTRADICTION, ENTAILMENT, NEUTRAL
from cns_core.models.tiny import build_tiny_nli_model
from cns_core.training.association_probe import load_probe, probe_figures, probe_pairs
from cns_core.training.association_swaps import (MiningSettings, NameNeighbours, ProbeFilter, SlotFact, claim_facts,
                                                 evouna_facts, mine_pairs, near_values, other_names, value_kind)
from cns_core.training.nli import TrainSettings, _training_data
from cns_core.training.nli_data import NLIPairs
from cns_core.training.verifier_data import JudgedAnswer


@pytest.mark.parametrize("value, kind", [
    ("Canberra", "name"), ("Rio de Janeiro", "name"), ("Mary Shelley", "name"), ("1945", "year"),
    ("384,400", "number"), ("12.5", "number"), ("FinlanD", None), ("The", None), ("in 1945", None),
    ("the Sahara desert and more words here", None), ("1,2,3", None)])
def test_value_kinds(value, kind):
    assert value_kind(value) == kind


def _answers() -> list[JudgedAnswer]:
    q = "What is the capital of Freedonia?"
    return [JudgedAnswer("evouna-NQ", q, "Fredville", "The capital of Freedonia is Fredville, on the river.", True),
            JudgedAnswer("evouna-NQ", q, "Fredville", "Fredville has been the capital of Freedonia since 1901.", True),
            JudgedAnswer("evouna-NQ", q, "Fredville", "Porto Fred", False),
            JudgedAnswer("evouna-NQ", q, "Fredville", "I think it might be Porto Fred or some other city.", False)]


def test_judged_answers_become_sentence_facts_against_another_right_sentence_or_themselves():
    right = {"The capital of Freedonia is Fredville, on the river.",
             "Fredville has been the capital of Freedonia since 1901."}
    facts = evouna_facts(_answers(), seed=1)
    assert {f.hypothesis for f in facts} == right and len(facts) == 2
    for fact in facts:
        assert fact.value == "Fredville" and fact.kind == "name" and fact.single_valued
        assert fact.premise in right and fact.question == "What is the capital of Freedonia?"
    # the premise is a paraphrase (the other right sentence) or the sentence itself, chosen by the seed
    shapes = {f.premise == f.hypothesis for seed in range(12) for f in evouna_facts(_answers(), seed=seed)}
    assert shapes == {True, False}


def test_a_claim_fact_in_an_enumeration_is_open_not_wrong():
    pairs = NLIPairs(["The film stars Anna Berg, Carl Dunn and Eva Fox.", "Tom Hale directed the film in 1994."],
                     ["Carl Dunn stars in the film.", "The film was directed by Tom Hale."],
                     [ENTAILMENT, ENTAILMENT], ["x", "x"])
    listed, single = claim_facts(pairs, "x")
    assert listed.value == "Carl Dunn" and not listed.single_valued
    assert single.value == "Tom Hale" and single.single_valued


def test_near_values_keep_the_kind_and_the_writing():
    assert near_values("1945", "year")[:2] == ["1946", "1944"]
    assert all("," in v for v in near_values("384,400", "number"))
    assert "384,400" not in near_values("384,400", "number")


def _trigram_embed(texts):
    """A deterministic character-trigram embedding: names that share letters lie close."""
    out = np.zeros((len(texts), 256), dtype=np.float32)
    for i, text in enumerate(texts):
        t = f"  {text.lower()} "
        for j in range(len(t) - 2):
            out[i, int(hashlib.md5(t[j:j + 3].encode()).hexdigest(), 16) % 256] += 1.0
    return out


def test_neighbours_are_near_names_with_the_same_word_count_never_an_alias():
    neighbours = NameNeighbours(["Fredville", "Fredtown", "Porto Fred", "Zanzibar", "Fredvilla", "Nowhere"],
                                _trigram_embed)
    near = neighbours.nearest("Fredville", 2, exclude=["Fredvilla"])
    assert near == ["Fredtown", "Zanzibar"] or near[0] == "Fredtown"
    assert "Porto Fred" not in near and "Fredvilla" not in near and "Fredville" not in near


def _fooled_by(popular: set[str]):
    """A scorer that entails a hypothesis naming a popular name, and follows the premise otherwise."""
    def score(pairs):
        rows = []
        for premise, hypothesis in pairs:
            entailed = any(p in hypothesis for p in popular) or hypothesis.split("Answer: ")[-1] == premise
            rows.append([0.9, 0.05, 0.05] if entailed else [0.05, 0.05, 0.9])
        return np.asarray(rows)
    return score


def test_only_the_swaps_the_model_entails_are_kept_with_counterfactual_premises():
    fact = SlotFact("The capital of Freedonia is Fredville.", "Fredville is the capital of Freedonia.", "Fredville",
                    "name", "evouna", question="What is the capital of Freedonia?", aliases=("Fredville",))
    neighbours = NameNeighbours(["Fredville", "Fredtown", "Fredburg", "Zanzibar"], _trigram_embed)
    pairs = mine_pairs([fact], _fooled_by({"Fredtown"}), neighbours, MiningSettings(candidates=3, question_form=0.0),
                       log=lambda _: None)
    rows = list(zip(pairs.premises, pairs.hypotheses, pairs.labels, pairs.sources))
    assert ("The capital of Freedonia is Fredville.", "Fredtown is the capital of Freedonia.", CONTRADICTION,
            "associations:swap") in rows
    assert ("The capital of Freedonia is Fredtown.", "Fredville is the capital of Freedonia.", CONTRADICTION,
            "associations:counter_truth") in rows
    assert ("The capital of Freedonia is Fredtown.", "Fredtown is the capital of Freedonia.", ENTAILMENT,
            "associations:counter_follow") in rows
    assert ("The capital of Freedonia is Fredville.", "Fredville is the capital of Freedonia.", ENTAILMENT,
            "associations:fact") in rows
    assert not any("Fredburg" in h or "Zanzibar" in h for h in pairs.hypotheses)   # the model was not fooled


def test_another_right_way_to_write_the_value_stays_entailed():
    fact = SlotFact("Wilhelm Conrad Röntgen won the first Nobel Prize in Physics.",
                    "The first Nobel Prize in Physics went to Wilhelm Conrad Röntgen.", "Wilhelm Conrad Röntgen", "name",
                    "evouna", question="who got the first nobel prize in physics",
                    aliases=("Wilhelm Conrad Röntgen", "W. C. Röntgen"))
    assert other_names(fact) == ["W. C. Röntgen", "Wilhelm Röntgen", "Röntgen"]
    place = SlotFact("It is in New York City.", "It is in New York City.", "New York City", "name", "evouna",
                     question="where is the statue of liberty")
    assert other_names(place) == []              # not a person: no shortened forms
    neighbours = NameNeighbours(["Wilhelm Conrad Röntgen", "Wilhelm Conrad Rontgen", "Marie Curie"], _trigram_embed)
    pairs = mine_pairs([fact], _fooled_by({"Rontgen"}), neighbours, MiningSettings(question_form=0.0),
                       log=lambda _: None)
    aliases = [(h, label) for h, label, s in zip(pairs.hypotheses, pairs.labels, pairs.sources) if s.endswith(":alias")]
    assert aliases == [("The first Nobel Prize in Physics went to W. C. Röntgen.", ENTAILMENT),
                       ("The first Nobel Prize in Physics went to Wilhelm Röntgen.", ENTAILMENT)]


def test_a_fact_the_model_is_never_fooled_on_gives_no_pairs_and_an_open_slot_is_neutral():
    open_fact = SlotFact("The film stars Anna Berg, Carl Dunn and Eva Fox.", "Carl Dunn stars in the film.",
                         "Carl Dunn", "name", "x", single_valued=False)
    neighbours = NameNeighbours(["Carl Dunn", "Carl Dune", "Eva Fox", "Max Payne"], _trigram_embed)
    none = mine_pairs([open_fact], _fooled_by(set()), neighbours, log=lambda _: None)
    assert len(none) == 0
    some = mine_pairs([open_fact], _fooled_by({"Carl Dune"}), neighbours, log=lambda _: None)
    assert {label for label, s in zip(some.labels, some.sources) if s.endswith(":swap")} == {NEUTRAL}


def test_the_question_form_is_used_for_a_share_of_judged_answers():
    fact = SlotFact("Fredville is the capital.", "The capital is Fredville.", "Fredville", "name", "evouna",
                    question="What is the capital?")
    neighbours = NameNeighbours(["Fredville", "Fredtown"], _trigram_embed)
    always = mine_pairs([fact], _fooled_by({"Fredtown"}), neighbours, MiningSettings(question_form=1.0),
                        log=lambda _: None)
    assert always.hypotheses and all(h.startswith("Question: What is the capital? Answer: ") for h in always.hypotheses)


def test_the_shipped_probe_reads_three_ways_and_keeps_its_facts_out_of_training():
    facts = load_probe()
    assert len(facts) >= 36
    pairs = probe_pairs(facts)
    australia = next(i for i, f in enumerate(facts) if f.subject == "Australia")
    assert pairs["popular"][australia] == ("The capital of Australia is Canberra.", "The capital of Australia is Sydney.")
    assert pairs["premise"][australia] == ("The capital of Australia is Sydney.", "The capital of Australia is Canberra.")
    keep = ProbeFilter.from_file(Path(__file__).resolve().parents[1] / "benchmarks/data/association_probe.yaml")
    assert not keep.keeps("Question: what is the capital of australia Answer: Sydney is the capital of Australia.")
    assert keep.keeps("Question: what is the capital of austria Answer: Vienna.")
    figures = probe_figures(_fooled_by({"Sydney"}), facts)
    assert figures["popular"]["entailed"] == 1 and figures["popular"]["entailed_facts"] == ["Australia"]
    assert figures["obscure"]["entailed"] == 0


def test_the_probe_is_also_read_as_the_memory_reads_an_answer_with_a_control():
    facts = load_probe()
    assert all(f.question for f in facts)
    pairs = probe_pairs(facts)
    australia = next(i for i, f in enumerate(facts) if f.subject == "Australia")
    assert pairs["asked"][australia] == ("The capital of Australia is Canberra.", "Question: What is the capital "
                                         "of Australia? Answer: The capital of Australia is Sydney.")
    assert pairs["asked_truth"][australia][1].endswith("Answer: The capital of Australia is Canberra.")
    # a model fooled by "Sydney" after any premise: the asked reading names Australia, the control misses nothing
    figures = probe_figures(_fooled_by({"Sydney"}), facts)
    assert figures["asked"]["entailed_facts"] == ["Australia"]
    assert figures["asked_truth"]["missed_facts"] == [] and figures["asked_truth"]["entailed"] == len(facts)
    # one that entails nothing passes every other reading and misses the whole control
    never = probe_figures(lambda pairs: np.asarray([[0.05, 0.05, 0.9]] * len(pairs)), facts)
    assert never["asked"]["entailed"] == 0 and never["asked_truth"]["missed_facts"] == [f.subject for f in facts]
    # and against the fact in other words, as the memory's references are worded
    assert pairs["reworded"][australia] == ("Canberra is the capital city of Australia.", "Question: What is the "
                                            "capital of Australia? Answer: The capital of Australia is Sydney.")
    assert figures["reworded"]["entailed_facts"] == ["Australia"]
    assert never["reworded_truth"]["missed_facts"] == [f.subject for f in facts]


def test_the_probe_as_answers_for_the_memorys_verdict():
    from cns_core.training.association_probe import probe_answers

    facts = load_probe()
    cases = probe_answers(facts)
    australia = next(i for i, f in enumerate(facts) if f.subject == "Australia")
    assert cases["popular"][australia] == ("What is the capital of Australia?", "The capital of Australia is Sydney.",
                                           "Canberra is the capital city of Australia.")
    assert cases["truth"][australia][1] == "The capital of Australia is Canberra."
    assert len(cases["popular"]) == len(cases["truth"]) == len(facts)


def test_a_probe_without_questions_reads_only_the_three_plain_ways(tmp_path):
    plain = tmp_path / "probe.yaml"
    plain.write_text("facts:\n  - {subject: X, statement: 'X is {value}.', truth: a, popular: b, obscure: c}\n")
    assert list(probe_pairs(load_probe(plain))) == ["popular", "obscure", "premise"]
    from cns_core.training.association_probe import probe_answers

    assert probe_answers(load_probe(plain)) == {}


def test_a_damaged_probe_names_the_fact_and_the_field(tmp_path):
    bad = tmp_path / "probe.yaml"
    bad.write_text("facts:\n  - {subject: X, statement: 'no slot', truth: a, popular: b, obscure: c}\n"
                   "  - {subject: Y, statement: '{value}', truth: a, popular: '', obscure: c}\n")
    with pytest.raises(ValueError, match="fact 1: statement"):
        load_probe(bad)
    bad.write_text("facts:\n  - {subject: Y, statement: '{value}', truth: a, popular: '', obscure: c}\n")
    with pytest.raises(ValueError, match="fact 1: popular"):
        load_probe(bad)
    bad.write_text("facts:\n  - {subject: Y, statement: '{value}', truth: a, popular: b, obscure: c, reworded: 'no slot'}\n")
    with pytest.raises(ValueError, match="fact 1: reworded"):
        load_probe(bad)


def test_the_associations_reader_mines_a_tiny_model_and_caches_what_it_mined(tmp_path, monkeypatch):
    data = tmp_path / "data" / "answer_judgements"
    data.mkdir(parents=True)
    rows = [{"dataset": "NQ", "question": a.question, "reference": a.reference, "system": f"s{i}",
             "answer": a.answer, "correct": a.correct} for i, a in enumerate(_answers())]
    rows += [{"dataset": "NQ", "question": "What is the capital of Australia?", "reference": "Canberra",
              "system": "s", "answer": "The capital of Australia is Canberra, not Sydney.", "correct": True}]
    (data / "evouna.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    monkeypatch.setenv("CNS_DATA_DIR", str(tmp_path / "data"))
    base = build_tiny_nli_model(tmp_path / "tiny", seed=5)
    settings = TrainSettings(base_model=str(base), train_files=[
        {"file": "evouna.jsonl", "folder": "answer_judgements", "reader": "associations"}],
        question_held_folds=[], dev_fraction=0.0, device="cpu", output=str(tmp_path / "out"),
        mining={"min_entailment": 0.0, "candidates": 2, "keep": 2})
    train, _, _ = _training_data(settings)
    assert len(train) > 0 and set(train.labels) <= {ENTAILMENT, CONTRADICTION}
    assert any(s.endswith(":counter_follow") for s in train.sources)
    assert not any("Australia" in h for h in train.hypotheses + train.premises)     # a probe fact
    cached = list((settings.checkpoint_path / "mined").glob("evouna.jsonl.*.jsonl.gz"))
    assert len(cached) == 1
    again, _, _ = _training_data(settings)
    assert again.hypotheses == train.hypotheses and again.labels == train.labels
