"""The verifier's one recipe (issue 67): restated claims stay supported, the pilot of the same recipe mines
the hard pairs, and the committed settings make the shipped model from the public base in one run."""

from __future__ import annotations

from pathlib import Path

import pytest

from cns_core.models.tiny import build_tiny_nli_model
from cns_core.training.nli import TrainSettings, _training_data, load_train_settings, train_nli
from cns_core.training.nli_data import NLIPairs
from cns_core.training.pilot import MINED_READERS, pilot_settings
from cns_core.training.restatements import acronym, in_words, restate, restated_pairs, rounded
from test_nli_training import ROWS, _write_tsv

ENTAILMENT, NEUTRAL, CONTRADICTION = 0, 1, 2


@pytest.mark.parametrize("premise, hypothesis, kind, restated", [
    ("The film runs 1,473 minutes in all.", "The film runs 1,473 minutes.", "rounded_number", True),
    ("The town had 12,500 people in 2010.", "The town had 12,500 people.", "reformatted_number", True),
    ("The World Health Organization declared a pandemic.", "The World Health Organization declared it.",
     "acronym", True),
    ("Tim Tebow was a quarterback. Tebow later played baseball.", "Tim Tebow played baseball.", "partial_name", True),
    # the evidence never calls the site "Tomatoes": no partial name is made of it
    ("Rotten Tomatoes gave it 80%.", "Rotten Tomatoes gave it a high score.", "partial_name", False),
    ("An adult skeleton has 206 bones.", "The skeleton has 206 bones.", "number_in_words", True),
    ("It sold 1,473 copies.", "It sold 1,473 copies.", "number_in_words", False),       # 1,000 is 32% off
    ("The treaty was signed in 1648 in Munster.", "The treaty was signed in 1648.", "period", True),
    ("The treaty was signed in 1648.", "The treaty was signed in 1649.", "period", False),   # not the premise's year
    ("The tower is 300 metres tall.", "The tower is 300 metres tall.", "rounded_number", False),   # nothing to round
    ("It was built in 1889.", "It was built in 1889.", "rounded_number", False),                    # a year stays
])
def test_a_restatement_keeps_the_value_in_other_words(premise, hypothesis, kind, restated):
    changed = restate(premise, hypothesis, kind)
    assert (changed is not None) == restated
    if restated:
        assert changed != hypothesis


def test_the_restated_forms():
    assert rounded(1473) == 1500 and rounded(206) == 210 and rounded(48.7) == 49
    assert acronym("World Health Organization") == "WHO" and acronym("Bank of England") is None
    assert acronym("The Beatles Band") is None
    assert (in_words(200), in_words(40_000), in_words(3_000_000), in_words(215)) == (
        "two hundred", "forty thousand", "three million", None)
    assert restate("It has 206 bones.", "It has 206 bones.", "number_in_words") in {
        f"It has {hedge} two hundred bones." for hedge in ("about", "around", "roughly", "nearly", "some",
                                                           "approximately", "close to")}
    assert restate("It sold 3,000 copies.", "It sold 3,000 copies.", "number_in_words") == "It sold three thousand copies."
    assert restate("Built in 1648.", "It was built in 1648.", "period") in {
        "It was built in the seventeenth century.", "It was built in the 1640s."}
    assert "1500" not in restate("It has 1,473 seats.", "It has 1,473 seats.", "rounded_number")
    assert "1,500" in restate("It has 1,473 seats.", "It has 1,473 seats.", "rounded_number")
    assert restate("A: 12,500.", "It had 12,500.", "reformatted_number") == "It had 12500."
    assert restate("A: 2,000,000.", "It had 2,000,000.", "reformatted_number") == "It had 2 million."
    with pytest.raises(ValueError, match="kind: 'colour'"):
        restate("a", "b", "colour")


def test_restated_pairs_are_entailed_and_no_kind_takes_more_than_its_share():
    supported = NLIPairs()
    for i in range(40):
        supported.premises.append(f"The World Health Organization counted {1000 + 37 * i:,} cases in town {i}.")
        supported.hypotheses.append(f"The World Health Organization counted {1000 + 37 * i:,} cases.")
        supported.labels.append(ENTAILMENT if i % 4 else CONTRADICTION)
        supported.sources.append("t")
    out = restated_pairs(supported, 8, seed=3)
    assert 0 < len(out) <= 8 and set(out.labels) == {ENTAILMENT}
    kinds = [s.split(":")[-1] for s in out.sources]
    assert max(kinds.count(k) for k in set(kinds)) <= 2          # a quarter of 8
    assert all(p in supported.premises[::1] for p in out.premises)
    contradicted = {supported.premises[i] for i in range(0, 40, 4)}
    assert not contradicted & set(out.premises)                  # only supported rows are restated
    assert restated_pairs(supported, 8, seed=3).hypotheses == out.hypotheses


def test_a_general_answer_keeps_the_sentence_and_is_judged_right_but_not_the_other_way_round():
    from cns_core.training.verifier_data import JudgedAnswer, general_answers

    def judged(question, answer, correct=True, reference="Jane Austen"):
        return JudgedAnswer("evouna-NQ", question, reference, answer, correct)

    answers = [judged("Who wrote Emma?", "The novel Emma was written by Jane Austen in 1815."),
               judged("Who wrote Emma?", "Charlotte Bronte.", correct=False),
               # a name inside a longer name, a possessive, a question that asks for no person: left alone
               judged("Who founded it?", "It was founded by Polly Sherman Smith and friends.", reference="Polly Sherman"),
               judged("Who owns the house?", "The house is Jane Austen's own, bought in 1809.", reference="Jane Austen"),
               judged("What did Jane Austen write first?", "Jane Austen wrote Sense and Sensibility first.")]
    out = general_answers(answers, seed=1)
    assert len(out) == 2
    made, reversed_ = out
    assert made.correct is True and made.reference == answers[0].answer
    assert made.answer.startswith("The novel Emma was written by ") and "Austen" not in made.answer
    assert made.answer.endswith(" in 1815.")
    # the other way round the general sentence does not state who: not enough information, in the same words
    assert (reversed_.reference, reversed_.answer, reversed_.correct) == (made.answer, made.reference, None)


def _recipe(tmp_path: Path, base: Path, **extra) -> TrainSettings:
    data = tmp_path / "data"
    data.mkdir(parents=True, exist_ok=True)
    _write_tsv(data / "train.tsv.gz", ROWS * 8)
    values = dict(base_model=str(base), data_dir=str(data), train_files=[
        "train.tsv.gz", {"file": "train.tsv.gz", "reader": "false_alarms", "repeat": 2}],
        dev_fraction=0.25, epochs=1, batch_size=4, learning_rate=1e-3, max_length=32, checkpoint_every=2,
        threads=1, device="cpu", output=str(tmp_path / "model"), eval_batch_size=8,
        mining={"model": "pilot", "pilot_fraction": 0.5})
    values.update(extra)
    return TrainSettings(**values)


@pytest.fixture(scope="module")
def tiny_base(tmp_path_factory) -> Path:
    return build_tiny_nli_model(tmp_path_factory.mktemp("base") / "tiny", seed=5)


def test_the_pilot_leaves_out_the_mined_sources_and_trains_on_a_share():
    settings = load_train_settings(path="config/verifier_train.yaml")
    pilot = pilot_settings(settings)
    assert {s.reader for s in settings.sources} & set(MINED_READERS)
    assert not {s.reader for s in pilot.sources} & set(MINED_READERS)
    assert pilot.train_fraction == settings.mining.pilot_fraction < 1
    assert pilot.output_path == settings.checkpoint_path / "pilot"
    assert pilot.interpolate_with is None and pilot.mining.model == "base"


def test_the_recipe_trains_its_pilot_mines_it_and_resumes_in_either_stage(tmp_path, tiny_base, capsys):
    settings = _recipe(tmp_path, tiny_base)
    logs: list[str] = []
    stopped = train_nli(settings, stop_after_steps=2, progress=False, log=logs.append)
    assert not stopped.finished and any("pilot: training the recipe's miner" in line for line in logs)
    pilot = pilot_settings(settings)
    assert not (pilot.output_path / "config.json").is_file()        # stopped inside the pilot
    logs.clear()
    done = train_nli(settings, progress=False, log=logs.append)
    assert done.finished and (pilot.output_path / "config.json").is_file()
    assert any("resumed from" in line for line in logs)             # the pilot went on where it stopped
    mined = list((settings.checkpoint_path / "mined").glob("false_alarms.train.tsv.gz.*.jsonl.gz"))
    assert len(mined) == 1
    flagged = [line for line in capsys.readouterr().out.splitlines() if "read as contradicted" in line]
    assert len(flagged) == 1                                         # mined once, then read from the cache
    train, _, _ = _training_data(settings)
    alarms = [i for i, s in enumerate(train.sources) if s.startswith("false_alarms:")]
    assert all(train.labels[i] != CONTRADICTION for i in alarms)     # gold labels kept, never a contradiction
    assert len(alarms) % 2 == 0                                      # repeat 2
    report = done.report
    assert report["interpolated_with"] is None and report["base_model"] == str(tiny_base)


def test_a_mined_reader_without_its_pilot_says_what_to_run(tmp_path, tiny_base):
    settings = _recipe(tmp_path, tiny_base)
    with pytest.raises(ValueError, match="mining.model: the pilot in .* is not trained yet"):
        _training_data(settings)


def test_the_committed_recipe_makes_the_shipped_model_from_the_public_base():
    settings = load_train_settings(path="config/verifier_train.yaml")
    assert settings.base_model == "bundled" and settings.interpolate_with is None
    assert settings.output == "models/nli-minilm-l6" and settings.mark_unstated_names
    assert settings.epochs >= 2 and settings.mining.model == "pilot"
    held = {Path(name).name for name in settings.held_out_files}
    assert not {Path(s.file).name for s in settings.sources} & held
    readers = {s.reader for s in settings.sources}
    assert {"restated", "swaps", "associations", "false_alarms", "evouna", "evouna_general", "scifact", "other_slots",
            "attributed"} <= readers
    # one recipe: no other verifier settings, no restore script
    config = Path(__file__).resolve().parents[1] / "config"
    assert sorted(p.name for p in config.glob("verifier_train*.yaml")) == ["verifier_train.yaml"]
    assert not (config.parent / "scripts" / "verifier_restore.sh").exists()
