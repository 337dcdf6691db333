"""cns_core.engine.corpus: the Corpus page's data, on tables built from hand-made critic results."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from cns_core.engine import corpus
from cns_core.engine.batch import write_results
from cns_core.engine.rows import error_row, evaluation_row
from cns_core.critics.base import CRITIC_NAMES, CriticResult
from cns_core.sno import SNO, dump_snos

PROFILES = {"even": {c: 1.0 for c in CRITIC_NAMES}, "logic_only": {"logic": 1.0}}


def sno(ident: str, text: str = "Cities should ban cars.") -> SNO:
    return SNO(id=ident, title=f"Title {ident}", hypothesis="c0",
               claims=[{"id": "c0", "text": text}, {"id": "c1", "text": "Streets get safer."}],
               relations=[{"source": "c1", "target": "c0", "kind": "support"}])


def results(**scores: float | None) -> dict[str, CriticResult]:
    out = {}
    for name in CRITIC_NAMES:
        value = scores.get(name, 0.5)
        out[name] = (CriticResult.failed(name, "timed out after 30 s") if value is None else
                     CriticResult(critic=name, score=value, confidence=0.8, explanation="hand-made"))
    return out


@pytest.fixture
def table(tmp_path) -> pd.DataFrame:
    rows = []
    cases = {
        "a": results(grounding=0.95, logic=0.05),            # grounding > logic (0.9), grounding > others
        "b": results(grounding=0.9, logic=0.1, bias=1.0),   # grounding > logic again, bias > logic ...
        "c": results(),                                       # all 0.5: no conflict
        "d": results(novelty=None),                           # a failed critic
    }
    for ident, res in cases.items():
        s = sno(ident)
        path = dump_snos(s, tmp_path / f"{ident}.json")
        rows.append(evaluation_row(res, s, str(path), "fp", PROFILES))
    rows.append(error_row(str(tmp_path / "broken.json"), "claims: is required"))
    return pd.DataFrame(rows)


def test_summary_counts(table):
    assert corpus.summary(table) == {"snos": 4, "errors": 1, "incomplete": 1, "critic_failures": 1,
                                     "with_conflicts": 2}
    assert corpus.critics_in(table) == list(CRITIC_NAMES)
    assert corpus.profiles_in(table) == ["even", "logic_only"]


def test_score_histograms_use_fixed_bins_and_skip_failed_critics(table):
    hist = corpus.score_histograms(table, bins=4)
    grounding = hist[hist["critic"] == "grounding"]
    assert list(grounding["bin_start"]) == [0.0, 0.25, 0.5, 0.75]
    assert list(grounding["count"]) == [0, 0, 2, 2]        # 0.5, 0.5 | 0.95, 0.9
    assert list(hist[hist["critic"] == "logic"]["count"]) == [2, 0, 2, 0]
    assert hist[hist["critic"] == "novelty"]["count"].sum() == 3   # the failed run has no score
    assert list(hist[hist["critic"] == "bias"]["count"]) == [0, 0, 3, 1]   # 1.0 in the last bin
    with pytest.raises(ValueError, match="bins"):
        corpus.score_histograms(table, bins=0)


def test_trust_histograms_per_profile(table):
    trust = corpus.trust_histograms(table, bins=2)
    # logic_only: a 0.05, b 0.1, c 0.5, d 0.5 -> [0, 0.5): 2, [0.5, 1]: 2
    assert list(trust[trust["profile"] == "logic_only"]["count"]) == [2, 2]
    even = table.set_index("sno_id").loc["a", "trust_even"]
    assert even == pytest.approx((0.95 + 0.05 + 0.5 * 3) / 5)


def test_conflict_frequencies_count_ordered_pairs(table):
    freq = corpus.conflict_frequencies(table).set_index("pair")
    assert freq.loc["grounding > logic", "count"] == 2
    assert freq.loc["grounding > logic", "share"] == pytest.approx(2 / 4)
    assert freq.loc["grounding > logic", "mean_delta"] == pytest.approx((0.9 + 0.8) / 2)
    assert freq.loc["bias > logic", "count"] == 2       # 0.5 - 0.05 and 1.0 - 0.1
    assert freq.loc["bias > causal", "count"] == 1 and "logic > grounding" not in freq.index
    counts = list(corpus.conflict_frequencies(table)["count"])
    assert counts == sorted(counts, reverse=True)


def test_corpus_table_sorts_and_keeps_unreadable_files_last(table):
    by_logic = corpus.corpus_table(table, sort_by="score_logic", ascending=True)
    assert list(by_logic["sno_id"]) == ["a", "b", "c", "d", ""]
    assert corpus.corpus_table(table)["sno_id"].iloc[-1] == ""          # default: first Trust Score, desc
    assert by_logic.set_index("sno_id").loc["d", "failures"] == "novelty"
    with pytest.raises(ValueError, match="unknown column 'nope'"):
        corpus.corpus_table(table, sort_by="nope")


def test_sno_for_row_reopens_the_file_or_says_why_not(table, tmp_path):
    from cns_core.access import Root

    roots = [Root("test folder", tmp_path.resolve())]
    label, found = corpus.sno_for_row(table.iloc[1], roots)
    assert (label, found.id) == ("Title b · corpus", "b")
    with pytest.raises(LookupError, match="could not be read"):
        corpus.sno_for_row(table.iloc[4], roots)
    dump_snos(sno("other"), tmp_path / "a.json")
    with pytest.raises(LookupError, match="holds no SNO with id 'a'"):
        corpus.sno_for_row(table.iloc[0], roots)


def test_load_results_round_trip_and_folder_checks(table, tmp_path, state_dir):
    path = write_results(table, tmp_path / "r.csv")
    loaded = corpus.load_results(path)
    assert list(loaded["sno_id"]) == list(table["sno_id"])
    assert json.loads(loaded.loc[0, "conflicts"]) == json.loads(table.loc[0, "conflicts"])
    assert corpus.folder_results_path(tmp_path).parent == state_dir / "corpus"
    with pytest.raises(ValueError, match="not a folder"):
        corpus.evaluate_folder(tmp_path / "missing")
