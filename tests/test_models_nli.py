"""NLI backends through the real loading code: tiny random transformers models built here, and the
lexical proxy with its committed parameters; plus the shared metrics and the quality benchmark."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml

from cns_core.config import load_config
from cns_core.models import ModelUnavailableError, get_nli_backend
from cns_core.models.lexical_nli import FEATURES, LexicalNLI, LexicalParams, from_config, pair_features
from cns_core.models.nli import NLI_LABELS, TransformersNLI, label_columns, reset_backends
from cns_core.training.nli_metrics import format_report, nli_report, read_nli_pairs, red_badge_figures
from cns_core.models.tiny import build_tiny_nli_model, tiny_nli_config

PROJECT_ROOT = Path(__file__).resolve().parent.parent
PAIRS = [
    ("A man is playing a guitar.", "A man is not playing a guitar."),
    ("Two dogs are running through a field", "Some animals are outdoors"),
    ("The committee approved the budget after a long debate", "The budget was approved"),
    ("", "An empty premise still gets a row"),
]


@pytest.fixture(autouse=True)
def fresh_backends():
    reset_backends()
    yield
    reset_backends()


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory) -> dict[str, Path]:
    """One model in the cross-encoder order and one in an order no real model uses."""
    root = tmp_path_factory.mktemp("nli-models")
    models = {
        "default": build_tiny_nli_model(root / "default", seed=1),
        "shuffled": build_tiny_nli_model(root / "shuffled", ("neutral", "contradiction", "entailment"), seed=2),
    }
    # a classifier whose labels carry no meaning: same weights, id2label LABEL_0..2
    unlabelled = root / "unlabelled"
    shutil.copytree(models["default"], unlabelled)
    config = json.loads((unlabelled / "config.json").read_text())
    config["id2label"] = {str(i): f"LABEL_{i}" for i in range(3)}
    config["label2id"] = {f"LABEL_{i}": i for i in range(3)}
    (unlabelled / "config.json").write_text(json.dumps(config))
    models["unlabelled"] = unlabelled
    return models


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


# ----- transformers backend --------------------------------------------------

@pytest.mark.parametrize("which, order", [
    ("default", ("contradiction", "entailment", "neutral")),
    ("shuffled", ("neutral", "contradiction", "entailment")),
])
def test_transformers_backend_reorders_columns_by_id2label(tiny_models, monkeypatch, which, order):
    monkeypatch.setenv("CNS_NLI_MODEL", str(tiny_models[which]))
    backend = get_nli_backend("transformers")
    assert isinstance(backend, TransformersNLI) and backend.name == "transformers"
    probs = backend.predict(PAIRS)
    logits = backend.logits(PAIRS)
    assert probs.shape == (len(PAIRS), 3)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, atol=1e-5)
    # expected: softmax in the model's order, then pick columns by name
    expected = _softmax(logits.astype(np.float64))[:, [order.index(label) for label in NLI_LABELS]]
    np.testing.assert_allclose(probs, expected, atol=1e-6)
    # the check can fail: the unpermuted softmax is measurably different
    assert np.abs(_softmax(logits.astype(np.float64)) - expected).max() > 1e-4


def test_transformers_backend_batches_consistently(tiny_models, monkeypatch):
    monkeypatch.setenv("CNS_NLI_MODEL", str(tiny_models["shuffled"]))
    monkeypatch.setenv("CNS_NLI_BATCH_SIZE", "1")
    one_by_one = get_nli_backend("transformers").predict(PAIRS)
    together = TransformersNLI(str(tiny_models["shuffled"]), batch_size=8).predict(PAIRS)
    np.testing.assert_allclose(one_by_one, together, atol=1e-5)
    assert get_nli_backend("transformers").predict([]).shape == (0, 3)


def test_same_backend_instance_per_model(tiny_models, monkeypatch):
    monkeypatch.setenv("CNS_NLI_MODEL", str(tiny_models["default"]))
    first = get_nli_backend("transformers")
    assert get_nli_backend("transformers") is first
    monkeypatch.setenv("CNS_NLI_MODEL", str(tiny_models["shuffled"]))
    assert get_nli_backend("transformers") is not first


@pytest.mark.parametrize("model", ["{tmp}/no-such-model", "cns-test/no-such-hub-model"])
def test_bad_model_names_the_backend_and_the_setting_and_lexical_still_works(tmp_path, monkeypatch, model):
    monkeypatch.setenv("CNS_NLI_MODEL", model.format(tmp=tmp_path))
    backend = get_nli_backend("transformers")
    with pytest.raises(ModelUnavailableError) as info:
        backend.predict(PAIRS[:1])
    message = str(info.value)
    assert info.value.backend == "transformers"
    assert message.startswith("transformers backend: cannot load model")
    assert "nli.transformers.model" in message and "CNS_NLI_MODEL" in message
    assert not (tmp_path / "no-such-model").exists()  # nothing was created or downloaded
    lexical = get_nli_backend("lexical").predict(PAIRS[:1])
    assert lexical.shape == (1, 3) and lexical[0].argmax() == 2


def test_folder_without_weights_is_unavailable(tiny_models, tmp_path, monkeypatch):
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text((tiny_models["default"] / "config.json").read_text())
    monkeypatch.setenv("CNS_NLI_MODEL", str(broken))
    with pytest.raises(ModelUnavailableError, match="transformers backend: cannot load model"):
        get_nli_backend("transformers").predict(PAIRS[:1])


def test_model_without_nli_labels_is_refused(tiny_models, monkeypatch):
    monkeypatch.setenv("CNS_NLI_MODEL", str(tiny_models["unlabelled"]))
    with pytest.raises(ModelUnavailableError, match="is not an NLI model: id2label .* names no entailment"):
        get_nli_backend("transformers").predict(PAIRS[:1])


def test_unknown_backend_lists_the_known_ones(monkeypatch):
    monkeypatch.setenv("CNS_NLI_BACKEND", "magic")
    with pytest.raises(ModelUnavailableError, match="unknown backend 'magic'.*lexical"):
        get_nli_backend()


@pytest.mark.parametrize("id2label, columns", [
    ({0: "contradiction", 1: "entailment", 2: "neutral"}, [1, 2, 0]),
    ({0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"}, [2, 1, 0]),     # roberta-large-mnli
    ({"0": "entailment", "1": "neutral", "2": "contradiction"}, [0, 1, 2]),
])
def test_label_columns(id2label, columns):
    assert label_columns(id2label) == columns


def test_xsmall_config_has_the_shape_of_nli_deberta_v3_xsmall():
    config = tiny_nli_config("xsmall", 30522, ("contradiction", "entailment", "neutral"))
    assert config.model_type == "deberta-v2"
    assert (config.hidden_size, config.num_hidden_layers, config.num_attention_heads,
            config.intermediate_size) == (384, 12, 6, 1536)
    assert config.relative_attention and config.position_buckets == 256 and not config.position_biased_input
    assert config.id2label == {0: "contradiction", 1: "entailment", 2: "neutral"}
    with pytest.raises(ValueError, match="size: must be one of"):
        tiny_nli_config("huge", 10, ("a", "b", "c"))
    with pytest.raises(ValueError, match="label_order: must name three different labels"):
        build_tiny_nli_model("/nonexistent/never-created", ("entailment", "entailment", "neutral"))


# ----- lexical backend -------------------------------------------------------

@pytest.fixture(scope="module")
def lexical() -> LexicalNLI:
    return get_nli_backend("lexical")


@pytest.mark.parametrize("premise, hypothesis, expected", [
    ("A man is playing a guitar", "A man is not playing a guitar", "contradiction"),
    ("The woman is slicing an onion", "There is no woman slicing an onion", "contradiction"),
    ("Nobody is riding the bicycle", "A person is riding the bicycle", "contradiction"),
    ("All of the samples were contaminated", "None of the samples were contaminated", "contradiction"),
    ("A man is playing a guitar", "A person is playing a guitar", "entailment"),
    ("A young boy is running quickly across the park", "A boy is running", "entailment"),
    ("The vaccine cut hospital admissions by 90% in the trial", "The vaccine cut hospital admissions", "entailment"),
    ("A woman is riding a horse", "A dog is barking at the mailman", "neutral"),
    ("A man is cooking pasta", "A man is cooking pasta for his daughter's birthday", "neutral"),
])
def test_lexical_obvious_pairs(lexical, premise, hypothesis, expected):
    probs = lexical.predict([(premise, hypothesis)])[0]
    assert NLI_LABELS[int(probs.argmax())] == expected, dict(zip(NLI_LABELS, probs.round(3)))


def test_lexical_rows_are_probabilities_and_batched_equals_single(lexical):
    together = lexical.predict(PAIRS)
    assert together.shape == (len(PAIRS), 3) and together.dtype == np.float32
    np.testing.assert_allclose(together.sum(axis=1), 1.0, atol=1e-5)
    assert (together >= 0).all()
    single = np.vstack([lexical.predict([pair]) for pair in PAIRS])
    np.testing.assert_allclose(together, single, atol=1e-5)
    assert lexical.predict([]).shape == (0, 3)


def test_lexical_features_are_named_and_finite(lexical):
    features = lexical.features(PAIRS)
    assert features.shape == (len(PAIRS), len(FEATURES))
    assert np.isfinite(features).all()
    flip = features[:, FEATURES.index("negation_flip")]
    assert flip.tolist() == [1.0, 0.0, 0.0, 0.0]


def test_lexical_params_round_trip_through_yaml(lexical, tmp_path):
    data = yaml.safe_load(yaml.safe_dump(lexical.params.to_data()))
    again = LexicalParams.from_data(data)
    features = lexical.features(PAIRS)
    np.testing.assert_allclose(again.probabilities(features), lexical.params.probabilities(features), atol=1e-5)


def test_committed_lexical_params_record_their_fit():
    cfg = load_config("nli_lexical")
    assert set(cfg["weights"]["contradiction"]) == set(FEATURES)
    assert "SICK" in cfg["fit"]["data"]
    cv = cfg["fit"]["cv_5fold_grouped_by_sentence"]
    assert cv["entailment AUC"] >= 0.88 and cv["contradiction precision"] >= 0.90 and cv["contradiction recall"] >= 0.60
    assert cfg["fit"]["contradiction_threshold"] == load_config("models")["nli"]["lexical"]["contradiction_threshold"]


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["weights"]["neutral"].pop("jaccard"), r"weights\.neutral\.jaccard: missing or not a number"),
    (lambda d: d["intercept"].update(entailment="high"), r"intercept\.entailment: missing or not a number"),
    (lambda d: d["weights"]["entailment"].update(vibes=1.0), r"weights\.entailment: unknown feature\(s\) vibes"),
    (lambda d: d.update(numeric_delta=-1), r"numeric_delta: must be a number >= 0"),
])
def test_bad_lexical_params_are_unavailable_with_the_key(lexical, tmp_path, edit, message):
    data = lexical.params.to_data()
    edit(data)
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ModelUnavailableError, match=f"lexical backend: params.yaml: {message}"):
        from_config({"lexical": {"params_file": str(path)}})


def test_missing_lexical_params_file_says_how_to_make_it(tmp_path):
    with pytest.raises(ModelUnavailableError, match="cannot read lexical NLI parameters.*calibrate_lexical_nli"):
        from_config({"lexical": {"params_file": str(tmp_path / "absent.yaml")}})


def test_calibration_fit_matches_its_data(lexical):
    """The script's fit folds standardisation back into raw weights; probabilities must agree."""
    spec = importlib.util.spec_from_file_location("calibrate", PROJECT_ROOT / "scripts" / "calibrate_lexical_nli.py")
    calibrate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(calibrate)
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    features = rng.normal(size=(300, len(FEATURES))) * rng.uniform(0.1, 5, len(FEATURES)) + rng.normal(size=len(FEATURES))
    labels = (features[:, 0] + 0.3 * rng.normal(size=300) > np.quantile(features[:, 0], [0.33, 0.66])[:, None]).sum(0)
    params = calibrate.fit(features, labels, c=1.0, numeric_delta=0.1)
    mean, scale = features.mean(0), features.std(0)
    reference = LogisticRegression(C=1.0, max_iter=5000).fit((features - mean) / scale, labels)
    np.testing.assert_allclose(params.probabilities(features), reference.predict_proba((features - mean) / scale),
                               atol=1e-6)
    assert (params.probabilities(features).argmax(1) == labels).mean() > 0.8


def test_lexical_on_sick_meets_the_issue_targets(lexical, shared_data):
    """A regression check of the committed parameters on real data (first 300 SICK pairs)."""
    path = shared_data / "sick_test" / "SICK_test.tsv"
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    data = read_nli_pairs(path, limit=300)
    threshold = load_config("models")["nli"]["lexical"]["contradiction_threshold"]
    report = nli_report(lexical.predict(data.pairs), data.labels, threshold)
    assert report["entailment AUC"] >= 0.88
    assert report["contradiction precision"] >= 0.85 and report["contradiction recall"] >= 0.60
    assert report["accuracy"] >= 0.75


# ----- metrics, reader and benchmark ----------------------------------------------------

def test_report_figures_on_a_known_case():
    probs = np.array([[0.8, 0.1, 0.1], [0.6, 0.3, 0.1], [0.2, 0.7, 0.1], [0.1, 0.2, 0.7], [0.3, 0.2, 0.5]])
    labels = [0, 1, 1, 2, 0]
    report = nli_report(probs, labels, contradiction_threshold=0.6)
    assert report["accuracy"] == pytest.approx(3 / 5)
    assert report["precision[entailment]"] == pytest.approx(1 / 2)
    assert report["recall[entailment]"] == pytest.approx(1 / 2)
    assert report["precision[contradiction]"] == pytest.approx(1 / 2)   # argmax: rows 3 and 4
    assert report["contradiction precision"] == pytest.approx(1.0)      # threshold 0.6: row 3 only
    assert report["contradiction recall"] == pytest.approx(1.0)
    # entailment scores 0.8, 0.3 (pos) against 0.6, 0.2, 0.1 (neg): 5 of 6 pairs ranked right
    assert report["entailment AUC"] == pytest.approx(5 / 6)
    lines = format_report(report)
    assert "pairs: 5" in lines and "entailment AUC: 0.833" in lines and "contradiction precision: 1.000" in lines


def test_red_badge_share_counts_supported_pairs_flagged_contradicted():
    # two entailment pairs, one of them over the threshold: half the supported pairs get a wrong red badge
    probs = np.array([[0.2, 0.1, 0.7], [0.9, 0.05, 0.05], [0.1, 0.1, 0.8], [0.3, 0.6, 0.1]])
    report = nli_report(probs, [0, 0, 2, 1], contradiction_threshold=0.6)
    assert report["supported called contradicted"] == pytest.approx(0.5)
    assert report["contradiction precision"] == pytest.approx(0.5) and report["contradiction recall"] == 1.0
    assert np.isnan(red_badge_figures(np.array([True]), np.array([False]), np.array([True]))[
        "supported called contradicted"])


def test_auc_counts_ties_as_half():
    report = nli_report(np.full((4, 3), 1 / 3), [0, 0, 1, 2], 0.5)
    assert report["entailment AUC"] == pytest.approx(0.5)
    assert report["contradiction precision"] == 0.0 and report["contradiction recall"] == 0.0


def test_report_refuses_wrong_shapes():
    with pytest.raises(ValueError, match=r"probs: expected shape \(2, 3\)"):
        nli_report(np.zeros((2, 2)), [0, 1], 0.5)


def _write_snli(path: Path, rows: list[dict]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def test_read_snli_jsonl_skips_unlabelled_rows(tmp_path):
    path = _write_snli(tmp_path / "snli.jsonl", [
        {"sentence1": "A dog runs.", "sentence2": "An animal moves.", "gold_label": "entailment"},
        {"sentence1": "A dog runs.", "sentence2": "A cat sleeps.", "gold_label": "-"},
        {"sentence1": "A dog runs.", "sentence2": "The dog is asleep.", "gold_label": "contradiction"},
    ])
    data = read_nli_pairs(path)
    assert data.pairs == [("A dog runs.", "An animal moves."), ("A dog runs.", "The dog is asleep.")]
    assert data.labels.tolist() == [0, 2]


def test_read_sick_tsv(tmp_path):
    path = tmp_path / "mini.tsv"
    path.write_text("pair_ID\tsentence_A\tsentence_B\tentailment_label\n"
                    "1\tA man sings\tA man is singing\tENTAILMENT\n2\tA man sings\tNobody sings\tCONTRADICTION\n")
    data = read_nli_pairs(path)
    assert data.labels.tolist() == [0, 2] and data.pairs[1] == ("A man sings", "Nobody sings")


@pytest.mark.parametrize("content, suffix, message", [
    ('{"sentence1": "a", "sentence2": "b", "gold_label": "maybe"}\n', ".jsonl",
     r"x.jsonl:1: gold_label: unknown label 'maybe'"),
    ('{"sentence1": "a", "gold_label": "neutral"}\n', ".jsonl", r"x.jsonl:1: sentence2: missing or not a string"),
    ("{not json\n", ".jsonl", r"x.jsonl:1: not valid JSON"),
    ("a\tb\n1\t2\n", ".tsv", r"not a SICK file, no column entailment_label, sentence_A, sentence_B"),
    ("sentence_A\tsentence_B\tentailment_label\nx\ty\tSORT_OF\n", ".tsv", r"x.tsv:2: entailment_label: unknown label"),
    ("", ".jsonl", r"no labelled pairs"),
])
def test_bad_nli_files_name_line_and_field(tmp_path, content, suffix, message):
    path = tmp_path / f"x{suffix}"
    path.write_text(content)
    with pytest.raises(ValueError, match=message):
        read_nli_pairs(path)


def test_benchmark_prints_backends_side_by_side(lexical, tiny_models, tmp_path, capsys, monkeypatch):
    spec = importlib.util.spec_from_file_location("nli_quality", PROJECT_ROOT / "benchmarks" / "nli_quality.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    path = _write_snli(tmp_path / "snli.jsonl", [
        {"sentence1": "A man is playing a guitar", "sentence2": "A man is not playing a guitar",
         "gold_label": "contradiction"},
        {"sentence1": "A man is playing a guitar", "sentence2": "A person is playing a guitar",
         "gold_label": "entailment"},
        {"sentence1": "A woman is riding a horse", "sentence2": "A dog is barking", "gold_label": "neutral"},
    ])
    monkeypatch.setenv("CNS_NLI_MODEL", str(tiny_models["default"]))
    assert bench.main(["--backend", "lexical", "--backend", "transformers", str(path)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == "file: snli.jsonl"
    header = lines[1].split()
    assert header == ["figure", "lexical", "default", "(fp32)"]
    rows = {line[:30].strip(): line[30:].split() for line in lines[2:]}
    assert rows["pairs"] == ["3", "3"]
    assert float(rows["accuracy"][0]) == pytest.approx(1.0)          # the lexical proxy gets these three
    for name in ("precision[neutral]", "recall[contradiction]", "entailment AUC", "contradiction precision",
                 "contradiction recall", "ECE (top label)", "pairs per second"):
        assert all(0.0 <= float(v) for v in rows[name]) and len(rows[name]) == 2
    assert bench.main(["--backend", "lexical", str(tmp_path / "absent.jsonl")]) == 2
    assert "absent.jsonl: no such file" in capsys.readouterr().err


def test_climate_fever_rows_give_claim_level_auc(tmp_path):
    from cns_core.training.nli_metrics import claim_level_auc

    rows = [{"claim_id": str(i), "claim": f"Claim {i}.", "claim_label": label,
             "evidences": [{"evidence": f"Evidence {i}.{k}.", "evidence_label": ev} for k, ev in enumerate(evs)]}
            for i, (label, evs) in enumerate([("SUPPORTS", ["SUPPORTS", "NOT_ENOUGH_INFO"]),
                                              ("REFUTES", ["REFUTES", "NOT_ENOUGH_INFO"]),
                                              ("NOT_ENOUGH_INFO", ["NOT_ENOUGH_INFO", "NOT_ENOUGH_INFO"])])]
    path = _write_snli(tmp_path / "climate.jsonl", rows)
    data = read_nli_pairs(path)
    assert len(data) == 6 and data.labels.tolist() == [0, 1, 2, 1, 1, 1]
    assert data.groups == ("0", "0", "1", "1", "2", "2")
    probs = np.array([[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.3, 0.1, 0.6], [0.5, 0.4, 0.1],
                      [0.2, 0.6, 0.2], [0.2, 0.6, 0.2]])
    figures = claim_level_auc(probs, data)
    assert figures["claims (supports/refutes)"] == 2
    assert figures["claim AUC (max entailment)"] == 1.0          # 0.8 (supports) above 0.5 (refutes)
    assert figures["claim AUC (entailment - contradiction)"] == 1.0


def test_training_format_files_are_read_for_evaluation(tmp_path):
    import gzip

    path = tmp_path / "eval.tsv.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write("premise\thypothesis\tlabel\tgenre\nA b.\tC d.\tneutral\tx\n")
    data = read_nli_pairs(path)
    assert data.pairs == [("A b.", "C d.")] and data.labels.tolist() == [1]


def test_pair_features_of_nothing():
    assert pair_features([], embedder=None).shape == (0, len(FEATURES))


# ----- the backend around a trained model: fp32, temperature, int8, failures, fallback ---------------------
def _with_temperature(src: Path, dst: Path, temperature: float) -> Path:
    shutil.copytree(src, dst)
    (dst / "calibration.json").write_text(json.dumps({"temperature": temperature}))
    return dst


def test_temperature_beside_the_weights_softens_the_probabilities(tiny_models, tmp_path):
    plain = TransformersNLI(str(tiny_models["default"]), device="cpu")
    warm = TransformersNLI(str(_with_temperature(tiny_models["default"], tmp_path / "t", 4.0)), device="cpu")
    logits = plain.logits(PAIRS)
    expected = _softmax(logits / 4.0)[:, label_columns(json.loads(
        (tiny_models["default"] / "config.json").read_text())["id2label"])]
    probs = warm.predict(PAIRS)
    assert warm.temperature == 4.0 and plain.temperature == 1.0
    assert np.allclose(probs, expected, atol=1e-6)


@pytest.mark.parametrize("content, message", [
    ('{"temperature": "hot"}', "calibration.json: no valid temperature"),
    ('{"temperature": 0}', "calibration.json: temperature 0.0 is out of range"),
])
def test_a_bad_calibration_file_is_named(tiny_models, tmp_path, content, message):
    folder = tmp_path / "m"
    shutil.copytree(tiny_models["default"], folder)
    (folder / "calibration.json").write_text(content)
    with pytest.raises(ModelUnavailableError, match=message):
        TransformersNLI(str(folder), device="cpu").predict(PAIRS[:1])


def test_corrupt_weights_name_the_path_and_the_command_that_restores_them(tiny_models, tmp_path):
    folder = tmp_path / "corrupt"
    shutil.copytree(tiny_models["default"], folder)
    (folder / "model.safetensors").write_bytes(b"\x00" * 64)
    with pytest.raises(ModelUnavailableError) as info:
        TransformersNLI(str(folder), device="cpu").predict(PAIRS[:1])
    message = str(info.value)
    assert f"cannot load model {folder}" in message and "missing or corrupt" in message
    assert "git checkout -- models/nli-minilm-l6" in message and "cns train-verifier" in message


def test_int8_stays_close_to_fp32(tiny_models):
    fp32 = TransformersNLI(str(tiny_models["default"]), device="cpu").predict(PAIRS)
    int8_backend = TransformersNLI(str(tiny_models["default"]), device="cpu", precision="int8")
    int8 = int8_backend.predict(PAIRS)
    assert int8_backend.identity == "default (int8)"
    assert int8.shape == fp32.shape and np.allclose(int8.sum(axis=1), 1.0)
    assert np.abs(int8 - fp32).max() < 0.05


def test_unknown_precision_names_the_setting():
    with pytest.raises(ValueError, match="nli.transformers.precision: must be fp32 or int8"):
        TransformersNLI("x", precision="fp8")


def test_no_silent_fallback_unless_configured(tmp_path, monkeypatch):
    monkeypatch.setenv("CNS_NLI_MODEL", str(tmp_path / "gone"))
    backend = get_nli_backend("transformers")
    assert getattr(backend, "fallback_reason", None) is None
    with pytest.raises(ModelUnavailableError, match="no such folder"):
        backend.predict(PAIRS[:1])


def test_configured_fallback_is_used_and_says_why(tmp_path, monkeypatch):
    from cns_core.models.nli import nli_identity

    config = tmp_path / "config"
    shutil.copytree(PROJECT_ROOT / "config", config)
    models = yaml.safe_load((config / "models.yaml").read_text())
    models["nli"].update(backend="transformers", fallback="lexical")
    models["nli"]["transformers"]["model"] = str(tmp_path / "gone")
    (config / "models.yaml").write_text(yaml.safe_dump(models))
    monkeypatch.setenv("CNS_CONFIG_DIR", str(config))
    backend = get_nli_backend()
    assert backend.name == "lexical"
    assert nli_identity(backend).startswith("lexical (fallback: transformers unavailable: cannot load model")
    assert backend.predict(PAIRS[:1]).shape == (1, 3)


def test_relative_model_folders_are_found_from_the_project_root(tmp_path, monkeypatch):
    from cns_core.models.nli import SHIPPED_MODEL, resolve_model_path

    monkeypatch.chdir(tmp_path)
    assert resolve_model_path(SHIPPED_MODEL) == str(PROJECT_ROOT / SHIPPED_MODEL)
    assert resolve_model_path("cross-encoder/nli-deberta-v3-xsmall") == "cross-encoder/nli-deberta-v3-xsmall"


# ----- the shipped model -------------------------------------------------------------------------------
@pytest.mark.parametrize("premise, hypothesis, expected", [
    ("A man is playing a guitar on stage.", "A man is playing an instrument.", "entailment"),
    ("A man is playing a guitar on stage.", "Nobody is playing an instrument.", "contradiction"),
    ("A man is playing a guitar on stage.", "The man is a famous musician.", "neutral"),
    ("The trial found that the drug had no effect on blood pressure.", "The drug reduces blood pressure.",
     "contradiction"),
])
def test_shipped_model_is_the_default_and_gets_plain_pairs_right(premise, hypothesis, expected):
    from cns_core.models.nli import SHIPPED_MODEL, nli_identity

    backend = get_nli_backend()
    assert isinstance(backend, TransformersNLI) and backend.model_path == str(PROJECT_ROOT / SHIPPED_MODEL)
    assert nli_identity(backend) == "nli-minilm-l6 (fp32)"
    probs = backend.predict([(premise, hypothesis)])[0]
    assert NLI_LABELS[int(probs.argmax())] == expected
    assert probs.max() > 0.6


def test_shipped_model_card_and_calibration_are_there():
    folder = PROJECT_ROOT / "models" / "nli-minilm-l6"
    calibration = json.loads((folder / "calibration.json").read_text())
    assert 0.5 < calibration["temperature"] < 3.0 and 0.3 <= calibration["contradiction_threshold"] <= 0.95
    assert (folder / "model.safetensors").stat().st_size < 50 * 2 ** 20
    card = (folder / "MODEL_CARD.md").read_text().lower()
    for needed in ("cns train-verifier", "licence", "mnli_dev_mismatched", "learning rate", "multinli dev-mismatched"):
        assert needed in card


def test_weights_fingerprint_changes_with_the_weights_or_calibration(tiny_models, tmp_path):
    from cns_core.models.nli import weights_fingerprint

    folder = tmp_path / "m"
    shutil.copytree(tiny_models["default"], folder)
    first = weights_fingerprint(str(folder))
    assert first and weights_fingerprint(str(folder)) == first
    (folder / "calibration.json").write_text(json.dumps({"temperature": 2.0}))
    second = weights_fingerprint(str(folder))
    assert second != first
    data = bytearray((folder / "model.safetensors").read_bytes())
    data[-1] ^= 1
    (folder / "model.safetensors").write_bytes(bytes(data))
    assert weights_fingerprint(str(folder)) not in (first, second)
    assert weights_fingerprint("cross-encoder/some-hub-name") == ""


def test_nli_fingerprint_tells_a_retrained_model_in_the_same_folder_from_the_one_before(tiny_models, tmp_path):
    from cns_core.models.nli import TransformersNLI, nli_fingerprint, nli_identity

    folder = tmp_path / "nli-minilm-l6"
    shutil.copytree(tiny_models["default"], folder)
    before = nli_fingerprint(TransformersNLI(str(folder)))
    shutil.rmtree(folder)
    shutil.copytree(tiny_models["shuffled"], folder)           # retrained into the same folder
    after = TransformersNLI(str(folder))
    assert nli_identity(after) in before and nli_fingerprint(after) != before
    assert nli_fingerprint(after) == nli_fingerprint(TransformersNLI(str(folder)))

    class Lexical:                                              # no folder: its identity alone
        name = "lexical"
    assert nli_fingerprint(Lexical()) == "lexical"
