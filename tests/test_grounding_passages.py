"""Passages of long sources (runs of adjacent sentences) and the ones each claim is judged on."""

from __future__ import annotations

import numpy as np
import pytest

from cns_core.text.segment import split_sentences
from cns_core.critics.grounding_passages import build_passages, choose_passages, source_units


def _encode_table(table: dict[str, list[float]]):
    calls = []

    def encode(texts):
        calls.append(list(texts))
        return np.array([table[t] for t in texts], dtype=np.float32)

    return encode, calls


def test_a_short_source_is_one_unit_a_long_one_its_sentences():
    assert source_units("Short. Text.", 400, split_sentences) == ["Short. Text."]
    long = "The sky was grey. Drug X lowered blood pressure. Nobody noticed."
    assert source_units(long, 30, split_sentences) == ["The sky was grey.", "Drug X lowered blood pressure.",
                                                       "Nobody noticed."]


def test_runs_of_one_to_max_run_sentences_with_summed_unit_vectors():
    table = {"A.": [1, 0, 0], "B.": [0, 1, 0], "C.": [0, 0, 1], "Z.": [1, 1, 0]}
    encode, calls = _encode_table(table)
    found = build_passages([["A.", "B.", "C."], ["Z."]], encode, max_run=2)
    assert len(calls) == 1 and calls[0] == ["A.", "B.", "C.", "Z."]          # each unit embedded once, in one call
    assert [(p.source, p.start, p.end, p.text) for p in found.passages] == [
        (0, 0, 1, "A."), (0, 1, 2, "B."), (0, 2, 3, "C."), (0, 0, 2, "A. B."), (0, 1, 3, "B. C."), (1, 0, 1, "Z.")]
    s = 1 / np.sqrt(2)
    assert found.vectors[3] == pytest.approx([s, s, 0])                    # A. B.: normalised sum
    assert found.vectors[5] == pytest.approx([s, s, 0])
    assert np.linalg.norm(found.vectors, axis=1) == pytest.approx(np.ones(6))
    with pytest.raises(ValueError, match="max_run"):
        build_passages([["A."]], encode, max_run=0)


def test_each_claim_keeps_its_top_k_and_drops_passages_far_below_its_best():
    passages = np.eye(4, dtype=np.float32)
    claims = np.array([[0.9, 0.8, 0.3, 0.1],        # best 0.9; 0.8 within the margin, 0.3 not
                       [0.1, 0.2, 0.3, 0.95]], dtype=np.float32)
    chosen, best = choose_passages(claims, passages, top_k=3, margin=0.2)
    assert [c.tolist() for c in chosen] == [[0, 1], [3]]
    assert best == pytest.approx([0.9, 0.95])
    chosen, _ = choose_passages(claims, passages, top_k=2, margin=1.0)     # no margin cut: the cap decides
    assert [c.tolist() for c in chosen] == [[0, 1], [3, 2]]
    chosen, _ = choose_passages(claims, passages, top_k=0, margin=1.0)     # no cap: all, best first
    assert [c.tolist() for c in chosen] == [[0, 1, 2, 3], [3, 2, 1, 0]]
    chosen, best = choose_passages(claims, np.zeros((0, 4), np.float32), 3, 0.2)
    assert [c.tolist() for c in chosen] == [[], []] and best.tolist() == [0.0, 0.0]


def test_bm25_finds_the_passage_naming_the_claims_words():
    from cns_core.critics.grounding_passages import lexical_match

    passages = ["The museum opened in 1990 in Lyon.", "Tickets cost ten euros.", "The garden has roses."]
    out = lexical_match(passages, ["The museum opened in 1990.", "Roses grow in the garden.", "the of and"])
    assert out.shape == (3, 3)
    assert out[0, 0] > 0 and out[1, 0] > 0
    assert out[0, 2] == 1.0 and out[1, 2] == pytest.approx(2 / 3)     # "roses" and "garden", not "grow"
    # per claim token: "museum opened 1990" (3 tokens after stop words), "roses grow garden" (3)
    import bm25s

    tokens = bm25s.tokenize(["The museum opened in 1990."], stopwords="en", return_ids=False, show_progress=False)[0]
    assert out[0, 1] == pytest.approx(out[0, 0] / len(tokens))
    assert out[2].tolist() == [0.0, 0.0, 0.0]             # only stop words: nothing to match
    assert lexical_match([], ["x"]).tolist() == [[0.0, 0.0, 0.0]]


def test_coverage_does_not_shrink_with_the_evidence_as_bm25_does():
    """Against the two sentences a claim cites, BM25 (weighted by the passages themselves) scores a fraction of
    what the same sentence scores inside a page; the share of the claim's words a passage holds stays."""
    from cns_core.critics.grounding_passages import lexical_match

    cited = ["The museum opened in 1990 in Lyon."]
    page = cited + [f"Line {n} of the page is about the weather on day {n}." for n in range(40)]
    short, long = lexical_match(cited, ["The museum opened in 1990."])[0], lexical_match(page, ["The museum opened in 1990."])[0]
    assert short[0] < long[0] / 3
    assert short[2] == long[2] == 1.0


def test_only_each_claims_top_bm25_sentences_and_their_run_neighbours_are_embedded():
    from cns_core.critics.grounding_passages import units_worth_embedding

    page = ["The bridge was built in 1907.", "It spans the river.", "Trams crossed it until 1950.",
            "The town has a bakery.", "A fair is held each May.", "The mayor is elected.",
            "Roses grow by the church.", "The church bell was cast in 1820."]
    short = ["The bridge is made of iron."]                        # one unit: always kept
    claims = ["The bridge was built in 1907.", "The church bell dates from 1820."]
    keep = units_worth_embedding([page, short], claims, top_n=1, max_run=2)
    # claim 0's best sentence is 0 (neighbour 1); claim 1's is 7 (neighbour 6)
    assert keep[0].tolist() == [True, True, False, False, False, False, True, True]
    assert keep[1].tolist() == [True]
    keep = units_worth_embedding([page, short], claims[:1], top_n=1, max_run=3)   # runs of 3: two each side
    assert keep[0].tolist() == [True, True, True, False, False, False, False, False]
    assert all(m.all() for m in units_worth_embedding([page, short], claims, top_n=0, max_run=3))
    assert all(m.all() for m in units_worth_embedding([page], ["the of and"], top_n=1, max_run=3))  # nothing to rank by
    assert all(m.all() for m in units_worth_embedding([page[:3]], claims, top_n=3, max_run=1))      # all fit in top_n


def test_runs_are_built_only_from_kept_units_and_only_those_are_embedded():
    table = {"A.": [1, 0, 0], "B.": [0, 1, 0], "C.": [0, 0, 1], "D.": [1, 1, 1]}
    encode, calls = _encode_table(table)
    keep = [np.array([True, True, False, True])]
    found = build_passages([["A.", "B.", "C.", "D."]], encode, max_run=2, keep=keep)
    assert calls == [["A.", "B.", "D."]]
    assert [(p.start, p.end, p.text) for p in found.passages] == [(0, 1, "A."), (1, 2, "B."), (3, 4, "D."),
                                                                    (0, 2, "A. B.")]
    s = 1 / np.sqrt(2)
    assert found.vectors[3] == pytest.approx([s, s, 0])
    assert found.vectors[2] == pytest.approx(np.ones(3) / np.sqrt(3))


def test_sources_of_stop_words_only_match_nothing_instead_of_failing():
    """A reference such as "The" or "1" leaves BM25 no vocabulary (bm25s raised on an empty index)."""
    from cns_core.critics.grounding_passages import lexical_match

    assert lexical_match(["the", "of a"], ["the cat sat"]).tolist() == [[0.0, 0.0, 0.0]]
