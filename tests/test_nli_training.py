"""Training the NLI cross-encoder: the TSV reader, the split, calibration maths, and the real
training loop on a tiny random BERT for a few CPU steps (checkpoint, resume, export, loading)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from cns_core.config import ConfigError
from cns_core.models.nli import NLI_LABELS, TransformersNLI, softmax_rows
from cns_core.training.nli_data import detokenize, read_nli_files, read_nli_tsv, stratified_split
from cns_core.training.nli_metrics import expected_calibration_error, fit_temperature
from cns_core.training.nli import (CALIBRATION_FILE, REPORT_FILE, TrainSettings, load_train_settings,
                                          train_nli)
from cns_core.models.tiny import build_tiny_nli_model

ROWS = [
    ("A man plays a guitar on stage.", "A man is playing music.", "entailment"),
    ("A man plays a guitar on stage.", "Nobody is playing an instrument.", "contradiction"),
    ("A man plays a guitar on stage.", "The man is famous.", "neutral"),
    ("Two dogs run in a park.", "Animals are outside.", "entailment"),
    ("Two dogs run in a park.", "The dogs are asleep indoors.", "contradiction"),
    ("Two dogs run in a park.", "The dogs belong to a child.", "neutral"),
]


def _write_tsv(path: Path, rows, header="premise\thypothesis\tlabel\tgenre") -> Path:
    lines = [header] + ["\t".join(r) if isinstance(r, tuple) and len(r) == 4 else "\t".join((*r, "test"))
                        if isinstance(r, tuple) else r for r in rows]
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    return path


def test_bad_rows_are_reported_by_line_and_the_rest_is_read(tmp_path):
    path = _write_tsv(tmp_path / "mix.tsv.gz", [
        ROWS[0], "only\ttwo", ("", "Empty premise.", "neutral"), ("P.", "H.", "maybe"), ROWS[1]])
    data = read_nli_tsv(path)
    assert len(data) == 2 and data.labels == [0, 2]
    assert [str(p) for p in data.problems] == [
        "mix.tsv.gz:3: expected 4 tab-separated columns, found 2",
        "mix.tsv.gz:4: premise: empty",
        "mix.tsv.gz:5: label: 'maybe' is not one of entailment, neutral, contradiction"]


def test_unusable_files_name_the_file(tmp_path):
    with pytest.raises(ValueError, match="no such file"):
        read_nli_tsv(tmp_path / "absent.tsv.gz")
    bad_header = _write_tsv(tmp_path / "h.tsv.gz", [ROWS[0]], header="a\tb\tc\td")
    with pytest.raises(ValueError, match="h.tsv.gz: header must name premise, hypothesis, label"):
        read_nli_tsv(bad_header)
    not_gzip = tmp_path / "x.tsv.gz"
    not_gzip.write_text("premise\thypothesis\tlabel\tgenre\n")
    with pytest.raises(ValueError, match="x.tsv.gz: cannot be read"):
        read_nli_tsv(not_gzip)


@pytest.mark.parametrize("tokenized, plain", [
    ("it 's raining , is n't it ?", "it's raining, isn't it?"),
    ("They ( the twins ) left at 5 % past .", "They (the twins) left at 5% past."),
    ("I ca n't say I 'd go", "I can't say I'd go"),
])
def test_detokenize(tokenized, plain):
    assert detokenize(tokenized) == plain


def test_tokenized_files_are_detokenized_on_reading(tmp_path):
    path = _write_tsv(tmp_path / "subset_tokenized.tsv.gz", [("He did n't go .", "He stayed .", "entailment")])
    assert read_nli_tsv(path).premises == ["He didn't go."]
    plain = _write_tsv(tmp_path / "plain.tsv.gz", [("He did n't go .", "He stayed .", "entailment")])
    assert read_nli_tsv(plain).premises == ["He did n't go ."]


def test_stratified_split_holds_the_same_share_of_each_label():
    labels = [0] * 100 + [1] * 60 + [2] * 40
    kept, held = stratified_split(labels, 0.1, seed=3)
    assert sorted(np.r_[kept, held].tolist()) == list(range(200))
    assert np.bincount(np.asarray(labels)[held]).tolist() == [10, 6, 4]
    again, _ = stratified_split(labels, 0.1, seed=3)
    assert np.array_equal(kept, again)


def test_fit_temperature_recovers_the_temperature_that_made_the_labels():
    rng = np.random.default_rng(0)
    logits = rng.normal(0, 3, size=(6000, 3))
    true_t = 2.5
    probs = softmax_rows(logits / true_t)
    labels = np.array([rng.choice(3, p=row) for row in probs])
    assert fit_temperature(logits, labels) == pytest.approx(true_t, rel=0.1)
    # calibrated probabilities have a small ECE; the over-confident raw ones do not
    assert expected_calibration_error(softmax_rows(logits / true_t), labels) < 0.03
    assert expected_calibration_error(softmax_rows(logits), labels) > 0.1


def test_ece_of_a_known_case():
    probs = np.array([[0.9, 0.05, 0.05], [0.9, 0.05, 0.05], [0.6, 0.2, 0.2], [0.6, 0.2, 0.2]])
    labels = np.array([0, 1, 0, 0])
    # bin 0.9: confidence 0.9, accuracy 0.5 -> 0.4 x 2; bin 0.6: confidence 0.6, accuracy 1 -> 0.4 x 2
    assert expected_calibration_error(probs, labels) == pytest.approx(0.4)


def test_held_out_files_are_refused_as_training_data(tmp_path):
    settings = TrainSettings(data_dir=str(tmp_path), train_files=["mnli_dev_mismatched.tsv.gz"],
                             held_out_files=["mnli_dev_mismatched.tsv.gz"], output=str(tmp_path / "out"))
    with pytest.raises(ConfigError, match="mnli_dev_mismatched.tsv.gz is held out"):
        train_nli(settings, progress=False, log=lambda _: None)


def test_bad_settings_name_the_field():
    with pytest.raises(ConfigError, match="verifier_train.yaml: epochs: Input should be greater than or equal to 1"):
        load_train_settings({"epochs": 0})


@pytest.fixture(scope="module")
def tiny_base(tmp_path_factory) -> Path:
    return build_tiny_nli_model(tmp_path_factory.mktemp("base") / "tiny", seed=5)


def _settings(tmp_path: Path, base: Path, **extra) -> TrainSettings:
    data = tmp_path / "data"
    data.mkdir(parents=True, exist_ok=True)
    _write_tsv(data / "train.tsv.gz", ROWS * 8 + ["bad\trow"])
    values = dict(base_model=str(base), data_dir=str(data), train_files=["train.tsv.gz"], dev_fraction=0.25,
                  epochs=2, batch_size=4, learning_rate=1e-3, max_length=32, checkpoint_every=2, threads=1,
                  device="cpu", output=str(tmp_path / "model"), eval_batch_size=8)
    values.update(extra)
    return TrainSettings(**values)


def test_training_writes_a_loadable_calibrated_model(tmp_path, tiny_base):
    logs: list[str] = []
    result = train_nli(_settings(tmp_path, tiny_base), progress=False, log=logs.append)
    assert result.finished and result.steps == 2 * 9          # 36 training pairs / 4, two epochs
    assert any("skipped train.tsv.gz:50: expected 4 tab-separated columns" in line for line in logs)
    assert [h["epoch"] for h in result.history] == [1, 2]
    assert result.history[0]["dev"]["pairs"] == 12
    out = result.output
    assert (out / "model.safetensors").is_file() and (out / "tokenizer.json").is_file()
    calibration = json.loads((out / CALIBRATION_FILE).read_text())
    report = json.loads((out / REPORT_FILE).read_text())
    assert report["train_pairs"] == 36 and report["skipped_rows"] == 1
    assert report["temperature"] == pytest.approx(calibration["temperature"], rel=1e-5)
    config = json.loads((out / "config.json").read_text())
    assert config["id2label"] == {"0": "entailment", "1": "neutral", "2": "contradiction"}
    assert config["dtype"] == "float16"                      # stored at half size ...
    nli = TransformersNLI(str(out), device="cpu")
    probs = nli.predict([(p, h) for p, h, _ in ROWS])
    assert nli.device.type == "cpu" and nli.temperature == pytest.approx(calibration["temperature"], rel=1e-5)
    assert probs.shape == (6, 3) and np.allclose(probs.sum(axis=1), 1.0)
    _, model, _, _ = nli._load()
    assert next(model.parameters()).dtype.is_floating_point and str(next(model.parameters()).dtype) == \
        "torch.float32"                                     # ... and computed in fp32


def test_a_split_run_resumes_to_the_same_model(tmp_path, tiny_base):
    whole = train_nli(_settings(tmp_path / "a", tiny_base), progress=False, log=lambda _: None)
    split_settings = _settings(tmp_path / "b", tiny_base)
    logs: list[str] = []
    first = train_nli(split_settings, stop_after_steps=5, progress=False, log=logs.append)
    assert not first.finished and first.steps == 5 and first.output is None
    assert (split_settings.checkpoint_path / "state.pt").is_file()
    second = train_nli(split_settings, progress=False, log=logs.append)
    assert any("resumed from" in line and "step 5" in line for line in logs)
    assert second.finished and second.steps == whole.steps
    a = TransformersNLI(str(whole.output), device="cpu").predict([(p, h) for p, h, _ in ROWS])
    b = TransformersNLI(str(second.output), device="cpu").predict([(p, h) for p, h, _ in ROWS])
    assert np.allclose(a, b, atol=2e-3)                    # fp16 storage rounds both the same way


def test_stop_at_step_writes_the_model_there_on_the_whole_runs_schedule(tmp_path, tiny_base):
    """A run a time limit stopped, repeated exactly: the model is written at that step, its learning rate
    still that of every step (max_steps would shorten the schedule and train another model)."""
    stopped = train_nli(_settings(tmp_path / "a", tiny_base, stop_at_step=5), progress=False, log=lambda _: None)
    shortened = train_nli(_settings(tmp_path / "b", tiny_base, max_steps=5), progress=False, log=lambda _: None)
    report = json.loads((stopped.output / REPORT_FILE).read_text())
    assert stopped.finished and stopped.steps == shortened.steps == 5 and report["time_limit_at_step"] == 5
    from safetensors.torch import load_file

    a, b = (load_file(str(run.output / "model.safetensors")) for run in (stopped, shortened))
    moved = [name for name in a if a[name].is_floating_point() and not a[name].float().allclose(b[name].float())]
    assert any(name.startswith("classifier") for name in moved)     # another learning rate, other weights


def test_a_checkpoint_from_other_settings_is_not_resumed(tmp_path, tiny_base):
    train_nli(_settings(tmp_path, tiny_base), stop_after_steps=2, progress=False, log=lambda _: None)
    with pytest.raises(ValueError, match="checkpoint was made with other settings"):
        train_nli(_settings(tmp_path, tiny_base, learning_rate=5e-4), progress=False, log=lambda _: None)


def test_cli_trains_with_overrides(tmp_path, tiny_base, monkeypatch, capsys):
    from cns_core.cli import main

    settings = _settings(tmp_path, tiny_base)
    config_dir = tmp_path / "config"
    config_dir.mkdir()
    import yaml

    (config_dir / "verifier_train.yaml").write_text(yaml.safe_dump(settings.model_dump()))
    monkeypatch.setenv("CNS_CONFIG_DIR", str(config_dir))
    out = tmp_path / "cli-model"
    assert main(["train-verifier", "--output", str(out), "--max-steps", "3", "--quiet"]) == 0
    assert f"model written to {out} after 3 steps" in capsys.readouterr().out
    assert (out / "model.safetensors").is_file()


def test_real_training_files_read_whole(shared_data):
    folder = shared_data / "nli_train"
    data = read_nli_files([folder / "cad_snli_train.tsv.gz", folder / "snli_dev.tsv.gz"])
    assert len(data) == 8330 + 9842 and not data.problems
    assert set(data.labels) == {0, 1, 2} and NLI_LABELS[data.labels[0]] in NLI_LABELS


def test_contradiction_threshold_has_the_best_f_half():
    contradiction = NLI_LABELS.index("contradiction")
    probs = np.zeros((6, 3))
    probs[:, contradiction] = [0.95, 0.8, 0.7, 0.45, 0.4, 0.1]
    labels = [contradiction, contradiction, 0, contradiction, 1, 1]
    # F0.5: >= 0.71 flags 2, both right (P 1, R 2/3: 0.909) beats >= 0.41 (P 3/4, R 1: 0.789)
    from cns_core.training.nli import fit_contradiction_threshold

    assert fit_contradiction_threshold(probs, labels) == pytest.approx(0.71)
    assert fit_contradiction_threshold(probs, labels, beta=1.0) == pytest.approx(0.41)   # F1: 6/7 at >= 0.41


def test_calibrate_only_redraws_the_dev_slice_and_rewrites_calibration(tmp_path, tiny_base):
    from cns_core.training.nli import calibrate_model

    settings = _settings(tmp_path, tiny_base)
    trained = train_nli(settings, progress=False, log=lambda _: None)
    first = json.loads((trained.output / CALIBRATION_FILE).read_text())
    (trained.output / CALIBRATION_FILE).unlink()
    again = calibrate_model(settings)
    assert again["dev_pairs"] == first["dev_pairs"] == 12
    assert again["temperature"] == pytest.approx(first["temperature"], rel=1e-3)
    assert 0.3 <= again["contradiction_threshold"] <= 0.95
    assert json.loads((trained.output / CALIBRATION_FILE).read_text())["temperature"] == again["temperature"]


@pytest.mark.parametrize("sentence, negated", [
    ("A man is playing a guitar.", "A man is not playing a guitar."),
    ("The dogs were not sleeping.", "The dogs were sleeping."),
    ("She didn't go home.", "She went home."),
    ("Supplements do reduce colds.", "Supplements do not reduce colds."),
    # no auxiliary: do-support, where the verb is unambiguous
    ("Vitamin C shortens colds.", "Vitamin C does not shorten colds."),
    ("Supplements did not prevent colds.", "Supplements prevented colds."),
    ("It did not shorten colds and did not ease them.", "It shortened colds and eased them."),   # every negation
    ("It shortens colds and eases them.", "It does not shorten colds and does not ease them."),
    ("Zinc does not ease the symptoms.", "Zinc eases the symptoms."),
    ("He went home.", "He did not go home."),
    ("Patients given zinc recovered faster.", "Patients given zinc did not recover faster."),
    ("Patients treated with zinc recovered faster.", None),   # "treated with" may be the verb, a passive
    ("If he wants to win, he needs luck.", None),             # negating the clause contradicts nothing
    ("People who smoke often develop cancer.", None),         # "often do not develop" is compatible
    ("The walls do not feature any carvings.", "The walls feature some carvings."),
    ("I 've gathered some recipes.", None),                  # a split contraction: an auxiliary it does not read
    ("Guidance significantly reduces errors.", "Guidance does not significantly reduce errors."),
    ("Two kids run outside.", None),                       # "kids" may be the verb: no safe single edit
    ("The player leaves her shoe untied.", None),          # "leaves" may be the verb, "untied" is not
    ("The study found no effect.", None),                  # already a denial: "did not find no effect"
])
def test_negate_inserts_or_removes_one_negation(sentence, negated):
    from cns_core.training.nli_augment import negate

    assert negate(sentence) == negated


def test_negation_pairs_come_in_threes_from_training_sentences():
    from cns_core.training.nli_augment import negation_pairs
    from cns_core.training.nli_data import NLIPairs

    source = NLIPairs(["p"] * 4, ["A cat is asleep.", "Dogs run.", "A cat is asleep.", "The bus was late."],
                      [0, 1, 2, 0], ["x"] * 4)
    pairs = negation_pairs(source, count=10, seed=0)
    assert len(pairs) == 6                                   # two usable distinct sentences, three pairs each
    rows = set(zip(pairs.premises, pairs.hypotheses, pairs.labels))
    assert ("A cat is asleep.", "A cat is asleep.", 0) in rows
    assert ("A cat is asleep.", "A cat is not asleep.", 2) in rows
    assert ("The bus was not late.", "The bus was late.", 2) in rows
    assert set(pairs.sources) == {"negation_augmentation"}


def test_negation_pairs_take_edits_of_several_negations_first():
    from cns_core.training.nli_augment import negation_pairs
    from cns_core.training.nli_data import NLIPairs

    singles = [f"The bus {n} was late." for n in range(12)]
    several = "The drug did not shorten colds and did not ease them."
    source = NLIPairs(["p"] * 13, [*singles, several], [0] * 13, ["x"] * 13)
    pairs = negation_pairs(source, count=4, seed=0)
    assert len(pairs) == 12                                  # four sentences, three pairs each
    assert (several, "The drug shortened colds and eased them.", 2) in set(zip(pairs.premises, pairs.hypotheses,
                                                                              pairs.labels))


def test_second_stage_settings_keep_the_dev_slice_and_add_negation_pairs(tmp_path, tiny_base):
    settings = _settings(tmp_path, tiny_base, train_fraction=0.5, augment_negation=3, epochs=1)
    from cns_core.training.nli import _training_data

    train, dev, _ = _training_data(settings)
    _, dev_first_stage, _ = _training_data(_settings(tmp_path, tiny_base))
    assert dev.pairs == dev_first_stage.pairs                 # the same slice stays held apart
    assert train.sources.count("negation_augmentation") == 9   # 3 sentences x 3 pairs
    assert len(train) - 9 == 18                               # half of the 36 first-stage pairs


# -- the claim-verification mix: SciFact rationales, files from several folders, per-file caps ---------------

SCIFACT_ROWS = [
    {"claim_id": cid, "claim": claim, "doc_id": 7, "title": "t", "label": label,
     "rationale_sentence_ids": ids, "rationale_sentences": [abstract[i] for i in ids], "rationale_sets": [ids],
     "abstract": abstract}
    for cid, claim, label, ids, abstract in [
        (1, "Aspirin lowers stroke risk.", "SUPPORT", [1],
         ["Background on cohorts.", "Aspirin reduced stroke incidence by 20%.", "Funding was public."]),
        (2, "Statins raise cholesterol.", "CONTRADICT", [0, 2],
         ["Statins lowered LDL cholesterol.", "Side effects were rare.", "Cholesterol fell in all arms."]),
        (3, "Coffee causes insomnia in children.", "NOT_ENOUGH_INFO", [],
         ["Adults drank tea.", "Coffee intake in children was recorded.", "Sleep in children was measured.",
          "Nothing else."]),
    ] + [(cid, f"Claim number {cid} holds.", "SUPPORT", [0], [f"Claim number {cid} holds in trials."])
         for cid in range(10, 40)]
]


def _write_scifact(path: Path, rows=SCIFACT_ROWS) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + "{broken\n", encoding="utf-8")
    return path


def test_scifact_rows_become_rationale_claim_pairs(tmp_path):
    from cns_core.training.nli_data import read_scifact_pairs

    path = _write_scifact(tmp_path / "train_claim_doc_pairs.jsonl")
    every = read_scifact_pairs(path, folds=2, held_folds=[])
    by_claim = dict(zip(every.hypotheses, zip(every.premises, every.labels)))
    assert by_claim["Aspirin lowers stroke risk."] == ("Aspirin reduced stroke incidence by 20%.", 0)
    assert by_claim["Statins raise cholesterol."] == ("Statins lowered LDL cholesterol. Cholesterol fell in all arms.",
                                                      2)
    # not enough info: the two abstract sentences sharing most words with the claim, in abstract order
    assert by_claim["Coffee causes insomnia in children."] == (
        "Coffee intake in children was recorded. Sleep in children was measured.", 1)
    assert [str(p) for p in every.problems] == [f"train_claim_doc_pairs.jsonl:{len(SCIFACT_ROWS) + 1}: not a SciFact "
                                                "row (JSONDecodeError: Expecting property name enclosed in double "
                                                "quotes: line 1 column 2 (char 1))"]


def test_scifact_held_folds_are_fixed_by_claim_id_and_never_trained_on(tmp_path):
    from cns_core.training.nli_data import read_scifact_pairs, scifact_fold

    path = _write_scifact(tmp_path / "train_claim_doc_pairs.jsonl")
    train = read_scifact_pairs(path, folds=5, held_folds=[0, 1])
    held = read_scifact_pairs(path, folds=5, held_folds=[0, 1], held=True)
    assert len(train) + len(held) == len(SCIFACT_ROWS) and len(train) and len(held)
    assert not set(train.hypotheses) & set(held.hypotheses)
    fold_of = {r["claim"]: scifact_fold(r["claim_id"], 5) for r in SCIFACT_ROWS}
    assert {fold_of[c] for c in held.hypotheses} <= {0, 1} and {fold_of[c] for c in train.hypotheses} <= {2, 3, 4}
    reordered = _write_scifact(tmp_path / "again" / "train_claim_doc_pairs.jsonl", SCIFACT_ROWS[::-1])
    assert sorted(read_scifact_pairs(reordered, held_folds=[0, 1], held=True).hypotheses) == sorted(held.hypotheses)
    with pytest.raises(ValueError, match=r"held_folds: \[5\] outside 0..4"):
        read_scifact_pairs(path, folds=5, held_folds=[5])


def _two_folder_settings(tmp_path: Path, base: Path, monkeypatch, **extra) -> TrainSettings:
    root = tmp_path / "shared"
    (root / "nli_train").mkdir(parents=True)
    (root / "nli_train_more").mkdir()
    _write_tsv(root / "nli_train" / "general.tsv.gz", ROWS * 4)
    _write_tsv(root / "nli_train_more" / "claims.tsv.gz", ROWS * 10)
    _write_scifact(root / "scifact_train" / "train_claim_doc_pairs.jsonl")
    monkeypatch.setenv("CNS_DATA_DIR", str(root))
    return _settings(tmp_path, base, data_dir=None, train_files=[
        "general.tsv.gz",
        {"file": "claims.tsv.gz", "folder": "nli_train_more", "pairs": 20},
        {"file": "train_claim_doc_pairs.jsonl", "folder": str(root / "scifact_train")}], dev_fraction=0.1, **extra)


def test_training_files_come_from_several_folders_with_caps(tmp_path, tiny_base, monkeypatch):
    from cns_core.training.nli import _training_data

    settings = _two_folder_settings(tmp_path, tiny_base, monkeypatch)
    train, dev, problems = _training_data(settings)
    sources = train.sources + dev.sources
    held_scifact = len(read_nli_scifact_held(tmp_path / "shared"))
    assert (sources.count("general.tsv.gz"), sources.count("claims.tsv.gz"),
            sources.count("train_claim_doc_pairs.jsonl")) == (24, 20, len(SCIFACT_ROWS) - held_scifact)
    assert problems == [f"train_claim_doc_pairs.jsonl:{len(SCIFACT_ROWS) + 1}: not a SciFact row (JSONDecodeError: "
                        "Expecting property name enclosed in double quotes: line 1 column 2 (char 1))"]
    again, _, _ = _training_data(settings)
    assert again.pairs == train.pairs                       # the capped sample is seeded
    result = train_nli(settings.model_copy(update={"max_steps": 2}), progress=False, log=lambda _: None)
    assert result.finished and json.loads((result.output / REPORT_FILE).read_text())["train_sources"][
        "claims.tsv.gz"] == train.sources.count("claims.tsv.gz")


def read_nli_scifact_held(root: Path):
    from cns_core.training.nli_data import read_scifact_pairs

    return read_scifact_pairs(root / "scifact_train" / "train_claim_doc_pairs.jsonl", held=True)


def test_a_held_out_file_is_refused_from_any_folder(tmp_path, tiny_base, monkeypatch):
    settings = _two_folder_settings(tmp_path, tiny_base, monkeypatch)
    values = settings.model_dump()
    bad = TrainSettings(**values | {"train_files": values["train_files"] + [
        {"file": "snli_dev.tsv.gz", "folder": "nli_train"}], "held_out_files": ["snli_dev.tsv.gz"]})
    with pytest.raises(ConfigError, match="snli_dev.tsv.gz is held out"):
        train_nli(bad, progress=False, log=lambda _: None)


def test_bad_source_entries_name_the_field(tmp_path):
    with pytest.raises(ConfigError, match=r"train_files.0.TrainSource.pairs: Input should be greater than or equal "
                                          "to 1"):
        load_train_settings({"train_files": [{"file": "x.tsv.gz", "pairs": 0}]})


def test_an_unfinished_run_exports_its_checkpoint_as_a_loadable_model(tmp_path, tiny_base):
    from cns_core.training.nli import export_checkpoint

    settings = _settings(tmp_path, tiny_base)
    with pytest.raises(ValueError, match="no checkpoint to export"):
        export_checkpoint(settings, log=lambda _: None)
    train_nli(settings, stop_after_steps=3, progress=False, log=lambda _: None)
    logs: list[str] = []
    result = export_checkpoint(settings, log=logs.append)
    assert result.steps == 3 and not result.finished
    assert logs == [f"exported {settings.output_path} from the checkpoint at step 3"]
    report = json.loads((settings.output_path / REPORT_FILE).read_text())
    assert report["exported_from_checkpoint_at_step"] == 3 and report["steps"] == 3
    assert (settings.output_path / CALIBRATION_FILE).is_file()
    probs = TransformersNLI(str(settings.output_path), device="cpu").predict([(p, h) for p, h, _ in ROWS])
    assert probs.shape == (6, 3)
    assert train_nli(settings, progress=False, log=lambda _: None).steps == 18    # the run still resumes


def _weights(folder: Path) -> dict:
    from safetensors.torch import load_file

    return {k: v.float() for k, v in load_file(str(folder / "model.safetensors")).items()}


def test_an_interpolated_model_is_the_weighted_mean_of_the_trained_and_the_earlier_weights(tmp_path, tiny_base):
    """WiSE-FT: exported from one checkpoint at weight 1 and at 0.25, each weight of the blend lies where the
    mean puts it (fp16 storage rounds), and the report says what was blended in."""
    from cns_core.training.nli import export_checkpoint

    plain = _settings(tmp_path, tiny_base)
    train_nli(plain, stop_after_steps=8, progress=False, log=lambda _: None)
    export_checkpoint(plain, log=lambda _: None)
    blended = _settings(tmp_path, tiny_base, output=str(tmp_path / "blend"), interpolate_with=str(tiny_base),
                        interpolation_weight=0.25, checkpoint_dir=str(plain.checkpoint_path))
    export_checkpoint(blended, log=lambda _: None)
    trained, base, blend = _weights(plain.output_path), _weights(tiny_base), _weights(blended.output_path)
    moved = [k for k in trained if float((trained[k] - base[k]).abs().max()) > 5e-3]
    assert moved                                            # training changed weights the blend must pull back
    for name in trained:
        expected = 0.25 * trained[name] + 0.75 * base[name]
        assert np.allclose(blend[name].numpy(), expected.numpy(), atol=2e-3), name
    report = json.loads((blended.output_path / REPORT_FILE).read_text())
    assert report["interpolated_with"] == str(tiny_base) and report["interpolation_weight"] == 0.25
    assert json.loads((plain.output_path / REPORT_FILE).read_text())["interpolated_with"] is None
    assert (blended.output_path / CALIBRATION_FILE).is_file()


def test_interpolating_with_a_folder_without_a_model_names_the_field(tmp_path, tiny_base):
    settings = _settings(tmp_path, tiny_base, interpolate_with=str(tmp_path / "missing"), interpolation_weight=0.5)
    with pytest.raises(ValueError, match="interpolate_with: .* is not a folder holding a transformers model"):
        train_nli(settings, progress=False, log=lambda _: None)
    assert not (settings.checkpoint_path / "state.pt").exists()      # refused before any training step


def test_a_repeated_source_is_trained_on_that_many_times_and_none_of_its_copies_reaches_the_dev_slice(
        tmp_path, tiny_base):
    from cns_core.training.nli import _training_data

    data = tmp_path / "data"
    data.mkdir()
    _write_tsv(data / "replay.tsv.gz", ROWS * 8)
    _write_tsv(data / "hard.tsv.gz", [(f"{p} Seen {n} times.", h, label) for p, h, label in ROWS for n in range(4)])
    settings = _settings(tmp_path, tiny_base, train_files=["replay.tsv.gz", {"file": "hard.tsv.gz", "repeat": 3}],
                         data_dir=str(data), dev_fraction=0.25)
    train, dev, _ = _training_data(settings)
    once = _settings(tmp_path, tiny_base, train_files=["replay.tsv.gz", "hard.tsv.gz"], data_dir=str(data),
                     dev_fraction=0.25)
    train_once, dev_once, _ = _training_data(once)
    assert dev.pairs == dev_once.pairs                       # the dev slice is drawn before any copy is made
    assert train.sources.count("hard.tsv.gz") == 3 * train_once.sources.count("hard.tsv.gz") > 0
    assert train.sources.count("replay.tsv.gz") == train_once.sources.count("replay.tsv.gz")
    hard_in_dev = {pair for pair, source in zip(dev.pairs, dev.sources) if source == "hard.tsv.gz"}
    assert hard_in_dev and not hard_in_dev & set(train.pairs)


def test_frozen_layers_stay_the_base_models_while_the_layers_above_learn(tmp_path, tiny_base):
    settings = _settings(tmp_path, tiny_base, freeze_layers=1, max_steps=6)
    result = train_nli(settings, progress=False, log=lambda _: None)
    trained, base = _weights(result.output), _weights(tiny_base)
    fixed = [k for k in trained if ".embeddings." in k or ".layer.0." in k]
    moving = [k for k in trained if ".layer.1." in k]
    assert fixed and moving
    assert all(np.array_equal(trained[k].half().numpy(), base[k].half().numpy()) for k in fixed)
    assert any(float((trained[k] - base[k]).abs().max()) > 1e-3 for k in moving)


def test_freezing_more_layers_than_the_model_has_names_the_setting(tmp_path, tiny_base):
    settings = _settings(tmp_path, tiny_base, freeze_layers=40, max_steps=1)
    with pytest.raises(ValueError, match="freeze_layers: 40 is more than the model's"):
        train_nli(settings, progress=False, log=lambda _: None)


def test_a_repeat_out_of_range_names_the_field():
    with pytest.raises(ConfigError, match=r"train_files.0.TrainSource.repeat: Input should be less than or equal "
                                          "to 10"):
        load_train_settings({"train_files": [{"file": "x.tsv.gz", "repeat": 11}]})


def test_frozen_word_embeddings_stay_the_base_models_while_the_encoder_learns(tmp_path, tiny_base):
    settings = _settings(tmp_path, tiny_base, freeze_word_embeddings=True, max_steps=6)
    result = train_nli(settings, progress=False, log=lambda _: None)
    trained, base = _weights(result.output), _weights(tiny_base)
    table = next(k for k in trained if k.endswith("word_embeddings.weight"))
    assert np.array_equal(trained[table].half().numpy(), base[table].half().numpy())
    assert any(float((trained[k] - base[k]).abs().max()) > 1e-3 for k in trained if k != table)


def _raw_probs(folder: Path) -> np.ndarray:
    """The model's own softmax on ROWS, no calibration: what distillation compares."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    model = AutoModelForSequenceClassification.from_pretrained(str(folder), local_files_only=True,
                                                               dtype=torch.float32).eval()
    with torch.inference_mode():
        logits = model(**tokenizer([p for p, _, _ in ROWS], [h for _, h, _ in ROWS], padding=True,
                                   return_tensors="pt")).logits
    return softmax_rows(logits.numpy())


def test_distilled_pairs_keep_the_base_models_reading_and_a_resumed_run_reuses_the_teacher(tmp_path, tiny_base):
    before = _raw_probs(tiny_base)
    on_labels = train_nli(_settings(tmp_path / "labels", tiny_base), progress=False, log=lambda _: None)
    distilled_settings = _settings(tmp_path / "distilled", tiny_base,
                                   train_files=[{"file": "train.tsv.gz", "distill": 1.0}])
    logs: list[str] = []
    first = train_nli(distilled_settings, stop_after_steps=3, progress=False, log=logs.append)
    teachers = list(distilled_settings.checkpoint_path.glob("teacher.*.npy"))
    assert not first.finished and len(teachers) == 1
    teacher = np.load(teachers[0])                   # the base model's probabilities on the 36 training pairs
    assert teacher.shape == (36, 3)
    assert np.abs(teacher[:, None, :] - before[None, :, :]).max(axis=2).min(axis=1).max() < 1e-4
    distilled = train_nli(distilled_settings, progress=False, log=logs.append)
    assert sum("distilling 36 pairs" in line for line in logs) == 1      # computed once, read back on resuming
    moved_by_labels = np.abs(_raw_probs(on_labels.output) - before).mean()
    moved_by_distilling = np.abs(_raw_probs(distilled.output) - before).mean()
    # the tiny random model starts near uniform, so the labels move it little, yet several times the distilled run
    assert moved_by_labels > 1e-3 and moved_by_distilling < moved_by_labels / 3
