"""Batch evaluation of a folder of SNOs in this process: the table, resuming, bad files (Ray: test_batch_ray.py)."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from cns_core.engine.batch import evaluate_corpus, read_results
from cns_core.cli import main
from cns_core.meta.conflicts import detect_conflicts
from cns_core.scoring import load_profiles





def test_table_has_one_row_per_sno_with_scores_trust_and_conflicts(corpus, tmp_path):
    report = evaluate_corpus(corpus, tmp_path / "r.csv", progress=False)
    frame = report.frame
    assert (report.evaluated, report.skipped, report.bad_files) == (3, 0, [])
    assert 0 < report.first_row_s <= report.last_row_s <= report.elapsed_s and report.steady_rate > 0
    assert sorted(frame["sno_id"]) == ["debate", "essay01", "micro_t001"]
    assert (frame["error"] == "").all() and (frame["failures"] == "{}").all()
    profiles = load_profiles()
    assert {f"trust_{p}" for p in profiles} <= set(frame.columns)
    for row in frame.to_dict("records"):
        idle = set(filter(None, row["not_applicable"].split(",")))      # critics with nothing to judge
        assert idle <= {"causal", "logic"} and all(math.isnan(row[f"score_{c}"]) for c in idle)
        scores = {c: row[f"score_{c}"] for c in ("grounding", "logic", "novelty", "causal", "bias") if c not in idle}
        assert all(0.0 <= s <= 1.0 for s in scores.values())
        for name, weights in profiles.items():   # trust = weight-normalised sum of the scores of the critics that judged
            total = sum(weights[c] for c in scores)
            expected = sum(weights[c] * scores[c] for c in scores) / total
            assert row[f"trust_{name}"] == pytest.approx(expected, abs=1e-9)
        pairs = {(c["higher"], c["lower"]) for c in json.loads(row["conflicts"])}
        assert pairs == {(c.higher, c.lower) for c in detect_conflicts(scores)}
        assert row["n_conflicts"] == len(pairs)
    written = read_results(tmp_path / "r.csv")
    pd.testing.assert_frame_equal(written[frame.columns], frame, check_dtype=False)


def test_resume_skips_same_content_and_configuration(corpus, tmp_path):
    out = tmp_path / "r.parquet"
    first = evaluate_corpus(corpus, out, progress=False)
    again = evaluate_corpus(corpus, out, progress=False)
    assert (again.evaluated, again.skipped) == (0, 3)
    pd.testing.assert_frame_equal(again.frame, first.frame)
    # an edited claim (same hypothesis, so the novelty population is unchanged): only that SNO again
    path = corpus / "essay01.json"
    data = json.loads(path.read_text())
    data["claims"][2]["text"] = "Pontevedra closed its centre to cars in 1999."
    path.write_text(json.dumps(data))
    edited = evaluate_corpus(corpus, out, progress=False)
    assert (edited.evaluated, edited.skipped) == (1, 2)
    assert len(edited.frame) == 3
    old = first.frame.set_index("sno_id").loc["essay01", "content_hash"]
    assert edited.frame.set_index("sno_id").loc["essay01", "content_hash"] != old
    # another profile set is another configuration
    other = evaluate_corpus(corpus, out, profiles=["scientific"], progress=False)
    assert other.evaluated == 3 and other.fingerprint != edited.fingerprint
    assert "trust_scientific" in other.frame and "trust_default" not in read_results(out).dropna(axis=1,
                                                                                                  how="all")


def test_bad_file_gets_an_error_row_and_others_are_evaluated(corpus, tmp_path, capsys):
    (corpus / "broken.yaml").write_text("id: x\nclaims: []\n")
    out = tmp_path / "r.csv"
    code = main(["evaluate", str(corpus), "--out", str(out), "--population", "none"])
    captured = capsys.readouterr()
    assert code == 1
    frame = read_results(out)
    bad = frame[frame["file"].str.endswith("broken.yaml")]
    assert len(bad) == 1 and "hypothesis: is required" in bad["error"].iloc[0]
    assert (frame[frame["sno_id"] != ""]["error"] == "").sum() == 3
    assert "evaluated 3 SNO(s), skipped 0 already evaluated, 1 bad file(s)" in captured.out
    assert "broken.yaml: " in captured.err and "Traceback" not in captured.err


def test_unreadable_results_file_is_named_and_left_alone(corpus, tmp_path):
    out = tmp_path / "r.parquet"
    out.write_bytes(b"not parquet at all")
    with pytest.raises(ValueError, match=r"r\.parquet: not a readable results table"):
        evaluate_corpus(corpus, out, progress=False)
    assert out.read_bytes() == b"not parquet at all"
    other = tmp_path / "r.csv"
    other.write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="missing column"):
        evaluate_corpus(corpus, other, progress=False)
    with pytest.raises(ValueError, match=r"use a \.parquet or \.csv file"):
        evaluate_corpus(corpus, tmp_path / "r.xlsx", progress=False)
    with pytest.raises(ValueError, match="--workers must be at least 1"):
        evaluate_corpus(corpus, workers=0)

