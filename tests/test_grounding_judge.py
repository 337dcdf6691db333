"""Judging many claim-vs-source problems together: one embedding call, one NLI call, one verdict each."""

from __future__ import annotations

import numpy as np
import pytest
from critic_doubles import TableEmbedder, TableNLI

from cns_core.critics.grounding_judge import GroundingProblem, RetrievalSettings, judge_problems
from cns_core.critics.grounding_verdict import fusion_from_mapping


def _fusion(second: str, weight: float = 0.0):
    """Entailment for or against support, plus ``second`` (weighted toward supported)."""
    return fusion_from_mapping({
        "features": ["entailment", second],
        "coef": {"supported": {"entailment": 1.0, second: weight},
                 "contradicted": {"entailment": -1.0, second: 0.0},
                 "not_enough_info": {"entailment": 0.0, second: 0.0}},
        "intercept": {"supported": 0.0, "contradicted": 0.0, "not_enough_info": 0.0}})


FUSION = _fusion("similarity")


class CountingEmbedder(TableEmbedder):
    def __init__(self):
        super().__init__()
        self.texts: list[str] = []

    def encode(self, texts):
        self.texts.extend(texts)
        return super().encode(texts)


def test_problems_are_judged_in_one_call_each_text_embedded_once():
    page = ("Sentence one.", "Sentence two.")
    problems = [GroundingProblem(("Claim A.",), (page,)), GroundingProblem(("Claim B.", "Claim A."), (page,))]
    nli = TableNLI({("Sentence one. Sentence two.", "Claim A."): (0.8, 0.1, 0.1)})
    embedder = CountingEmbedder()
    out = judge_problems(problems, nli, embedder, FUSION, RetrievalSettings(max_run=2, top_k=0, margin=5.0))
    assert embedder.calls == 1 and sorted(embedder.texts) == ["Claim A.", "Claim B.", "Sentence one.",
                                                               "Sentence two."]
    assert len(nli.calls) == 1 and len(nli.calls[0]) == 3 * 3          # 3 claims x 3 passages
    assert [len(v) for v in out] == [1, 2]
    a = out[0][0]
    z = np.array([np.log(0.8 / 0.2), -np.log(0.8 / 0.2), 0.0])
    assert a.probabilities == pytest.approx(tuple(np.exp(z) / np.exp(z).sum()))
    assert a.verdict == "supported" and a.strongest("entailment").passage.text == "Sentence one. Sentence two."
    assert out[1][1].probabilities == pytest.approx(a.probabilities)   # the same claim and page: the same verdict
    # Claim B is neutral everywhere (entailment 0.1): this fusion reads low entailment as contradicted
    z = np.array([np.log(0.1 / 0.9), -np.log(0.1 / 0.9), 0.0])
    assert out[1][0].probabilities == pytest.approx(tuple(np.exp(z) / np.exp(z).sum()))
    sims = [p.similarity for p in a.passages]
    assert sims == sorted(sims, reverse=True)                          # most similar first


def test_a_problem_without_sources_gets_a_verdict_without_passages():
    out = judge_problems([GroundingProblem(("Alone.",), ())], TableNLI(), TableEmbedder(), FUSION)
    (verdict,) = out[0]
    assert verdict.passages == () and verdict.strongest("entailment") is None
    assert verdict.verdict == "contradicted"     # entailment log-odds at p=0: the fusion's own answer, finite
    assert np.isfinite(verdict.probabilities).all()


def test_a_large_problem_shares_a_pair_budget():
    s = RetrievalSettings(max_run=1, top_k=6, margin=5.0, max_pairs=10)
    assert s.top_k_for(1) == 6 and s.top_k_for(3) == 3 and s.top_k_for(50) == 1
    assert RetrievalSettings(top_k=6, max_pairs=0).top_k_for(5000) == 6
    assert RetrievalSettings(top_k=0, max_pairs=10).top_k_for(2) == 5
    page = tuple(f"Sentence {i}." for i in range(8))
    claims = tuple(f"Claim {i}." for i in range(4))
    nli = TableNLI()
    judge_problems([GroundingProblem(claims, (page,))], nli, TableEmbedder(), FUSION, s)
    assert len(nli.calls[0]) == 4 * 2            # 10 // 4 = 2 passages per claim


def test_the_bm25_prefilter_embeds_fewer_sentences_and_keeps_the_lexical_feature_over_every_run():
    lexical = _fusion("bm25", 0.5)
    page = ("The bridge was built in 1907.", "It spans the river.", "The town has a bakery.",
            "A fair is held each May.", "The mayor is elected.", "Roses grow by the church.")
    problem = GroundingProblem(("The bridge was built in 1907.",), (page,))
    every, some = CountingEmbedder(), CountingEmbedder()
    (full,), = judge_problems([problem], TableNLI(), every, lexical, RetrievalSettings(max_run=2, top_k=0, margin=5.0))
    (cut,), = judge_problems([problem], TableNLI(), some, lexical,
                             RetrievalSettings(max_run=2, top_k=0, margin=5.0, embed_top=1))
    assert sorted(some.texts) == sorted(["The bridge was built in 1907.", "It spans the river."])
    assert len(every.texts) == 6                      # the claim is also sentence 0: embedded once
    assert [p.passage.text for p in cut.passages][:1] == ["The bridge was built in 1907."]
    assert {(p.passage.start, p.passage.end) for p in cut.passages} == {(0, 1), (1, 2), (0, 2)}
    assert cut.features[1] == pytest.approx(full.features[1]) and cut.features[1] > 0   # BM25 over all 11 runs
    assert RetrievalSettings.from_settings({"max_run": 3, "top_k": 6, "margin": 0.1, "embed_top": 8}).embed_top == 8
