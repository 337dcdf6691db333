"""The learned p(right) of the answer verdict: its cues, its training (resumed from kept features), its file,
and the verdict it drives."""

from __future__ import annotations

import json

import numpy as np
import pytest

from cns_core.judging.answer_trust import AnswerItem
from cns_core.judging.answer_verdict import VerdictSettings, judge_answers
from cns_core.judging.verdict_head import FEATURES, VerdictHead, is_hedge, load_head, names_in
from cns_core.cli import main as cns
from cns_core.config import ConfigError
from cns_core.models.verifier import verifier_pair
from cns_core.training.verdict_head import (FeatureSet, fit_head, leave_one_set_out, load_head_settings,
                                            write_feature_set)
from critic_doubles import TableEmbedder, TableNLI

Q = "What is the capital of Australia?"
REF = "Canberra is the capital city of Australia."


def test_figures_that_differ_and_figures_that_are_hedged():
    from cns_core.judging.verdict_head import figures_differ

    assert figures_differ("1944.", "The Second World War ended in 1945.")
    assert not figures_differ("1945.", "The Second World War ended in 1945.")
    assert figures_differ("It boils at 90 degrees Celsius.", "100 degrees Celsius (212 degrees Fahrenheit).")
    assert figures_differ("About 40,000 kilometres.", "On average about 384,400 kilometres.")   # hedged, far off
    assert not figures_differ("More than five.", "Six.")                                          # hedged, near
    assert not figures_differ("A few hundred thousand km.", "On average about 384,400 kilometres.")
    assert not figures_differ("It is about 384,000 km away.", "On average about 384,400 kilometres.")


def test_names_and_hedges():
    assert names_in("Sydney is the capital of Australia, since 1913.") == {"sydney", "australia", "1913"}
    assert names_in("The answer is it.") == set()
    assert is_hedge("There is no single best diet; it depends on the person.")
    assert is_hedge("Experts disagree about the best diet.")
    assert not is_hedge("Canberra is the capital.")


def _synthetic(name: str, n: int, seed: int) -> FeatureSet:
    """Right answers have high support and no name mismatch; wrong ones the reverse (with noise)."""
    rng = np.random.default_rng(seed)
    right = rng.random(n) < 0.5
    x = rng.random((n, len(FEATURES))) * 0.3
    x[:, 0] += np.where(right, 0.6, 0.1)
    x[:, FEATURES.index("name_mismatch")] = np.where(right, 0.0, rng.random(n))
    return FeatureSet(name, x, right, tuple(f"{name}-{i}" for i in range(n)))


def test_the_head_learns_the_direction_of_each_cue_and_scores_sets_it_never_saw():
    sets = [_synthetic("a_train", 200, 1), _synthetic("b_train", 150, 2), _synthetic("c_train", 100, 3)]
    head = VerdictHead.from_json(fit_head(sets, FEATURES), "test")
    weights = dict(zip(FEATURES, head.weights))
    assert weights["support"] > 0 > weights["name_mismatch"]
    right, wrong = sets[0].features[sets[0].right][0], sets[0].features[~sets[0].right][0]
    assert head.probability(right) > 0.5 > head.probability(wrong)
    figures = leave_one_set_out(sets, FEATURES)
    assert set(figures) == {"a_train", "b_train", "c_train"} and all(f["auc_head"] > 0.9 for f in figures.values())


def test_a_damaged_or_foreign_head_file_is_named(tmp_path):
    assert load_head(None) is None and load_head(tmp_path) is None           # no file: the fallback
    (tmp_path / "head.json").write_text("{broken", encoding="utf-8")
    with pytest.raises(ValueError, match="head.json: unreadable"):
        load_head(tmp_path)
    (tmp_path / "head.json").write_text(json.dumps({"features": ["support"], "weights": [1.0]}), encoding="utf-8")
    with pytest.raises(ValueError, match="are not this code's"):
        load_head(tmp_path)
    with pytest.raises(ConfigError, match="verdict.head"):
        VerdictSettings(head=str(tmp_path)).verdict_head()


def test_training_resumes_from_kept_features_and_the_verdict_reads_the_head(tmp_path, capsys):
    cache, out = tmp_path / "cache", tmp_path / "head"
    cache.mkdir()
    sets = {"evouna_train": 120, "negation_train": 80}
    for i, (name, n) in enumerate(sets.items()):
        write_feature_set(cache / f"{name}-{n}-41.json", _synthetic(name, n, i))
    settings = tmp_path / "settings.yaml"
    settings.write_text(f"output: {out}\ncache_dir: {cache}\nseed: 41\nsets: {json.dumps(sets)}\n", encoding="utf-8")
    assert cns(["train-verdict-head", "--settings", str(settings)]) == 0
    printed = capsys.readouterr().out
    assert "head.json written" in printed and "evouna_train" in printed and "negation_train" in printed
    report = json.loads((out / "training_report.json").read_text(encoding="utf-8"))
    assert report["counts"] == sets and set(report["weights"]) == set(FEATURES)

    # the verdict follows the head: the same verifier rows; the answer naming what the reference does not
    # reads lower than the one naming what it does, where the verifier alone cannot tell them apart
    wrong, right = "Sydney is the capital of Australia.", "Canberra is the capital of Australia."
    table = {verifier_pair(REF, a, Q): (0.6, 0.3, 0.1) for a in (wrong, right)}
    same = {t: [1.0] + [0.0] * 15 for t in (wrong, right, REF)}
    items = [AnswerItem("w", Q, wrong, REF), AnswerItem("r", Q, right, REF)]
    lean = judge_answers(items, TableNLI(table), TableEmbedder(same), VerdictSettings(head=None))
    learned = judge_answers(items, TableNLI(table), TableEmbedder(same), VerdictSettings(head=str(out)))
    assert lean[0].score == lean[1].score
    assert [v.features for v in learned] == [v.features for v in lean]
    assert learned[0].features[FEATURES.index("name_mismatch")] == 0.5 and learned[1].features[6] == 0.0
    assert learned[0].score < learned[1].score


def test_settings_refuse_a_set_the_benchmark_scores(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("sets: {evouna_held: 100}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="never a set the benchmark scores"):
        load_head_settings(bad)
    assert set(load_head_settings().sets) <= {"evouna_train", "saf_train", "negation_train", "condaqa_train",
                                              "bump_train", "summedits_train"}
