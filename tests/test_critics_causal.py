"""Causal critic: causal claims judged by the kind of support they have."""

from __future__ import annotations

import pytest
from critic_doubles import BrokenBackend, TableEmbedder, build_sno

from cns_core.critics.base import CriticContext
from cns_core.critics.causal import CausalCritic, causal_claims
from cns_core.critics.cues import load_cues

GRAPH_ONLY = {"relevance": 2.0}     # cosine never reaches 2: only the graph's supports count


def _run(sno, config=GRAPH_ONLY, embedder=None):
    return CausalCritic(config).evaluate(sno, CriticContext(embedder=embedder or TableEmbedder()))


@pytest.mark.parametrize("text, causal", [
    ("Drinking coffee causes people to live longer.", True),
    ("Smoking increases the risk of lung cancer.", True),
    ("The bridge fell because the cables rusted.", True),
    ("Low sleep leads to poor memory.", True),
    ("Coffee drinkers are more likely to reach old age.", False),
    ("Longevity is correlated with coffee.", False),
])
def test_causal_wording(text, causal):
    sno = build_sno({"h": text})
    assert (causal_claims(sno, load_cues("causal_cues.yaml")) == ["h"]) is causal


def test_no_causal_claim_is_an_abstention_not_a_perfect_score():
    result = _run(build_sno({"h": "Coffee drinkers are more likely to reach old age."}))
    assert result.status == "not_applicable" and not result.ok and not result.applicable and not result.broke
    assert result.score is None and result.issues == ()
    assert result.abstention == "no causal claim to judge"


def test_correlation_only_support():
    sno = build_sno({"h": "Coffee causes long life.",
                     "a": "Long life is correlated with coffee in a survey of adults."}, [("a", "h", "support")])
    result = _run(sno)
    assert result.score == pytest.approx(1 - 0.35 - 0.2 - 0.15)
    assert set(result.issue_codes) == {"correlational_support", "missing_mechanism", "missing_temporal_order"}
    assert result.evidence["claims"]["h"]["support"] == ["a"]


def test_trial_with_mechanism_is_fully_backed():
    sno = build_sno({"h": "Drug X lowers blood pressure.",
                     "a": "In a randomized placebo-controlled trial, blood pressure fell on drug X.",
                     "m": "Drug X works by blocking angiotensin receptors."},
                    [("a", "h", "support"), ("m", "h", "support")])
    result = _run(sno)
    assert result.score == 1.0 and result.issues == ()
    assert result.evidence["claims"]["h"]["experimental"] is True


def test_support_through_a_chain_counts():
    sno = build_sno({"h": "Drug X lowers blood pressure.", "a": "Patients improved.",
                     "b": "A randomized trial assigned patients to drug X; pressure fell, mediated by lower renin."},
                    [("a", "h", "support"), ("b", "a", "support")])
    assert _run(sno).score == 1.0


def test_unsupported_causal_claim():
    result = _run(build_sno({"h": "Video games cause violence."}))
    assert result.score == pytest.approx(1 - 0.5 - 0.2 - 0.15)
    assert result.issue_codes[0] == "unsupported_causal_claim"


def test_hedged_support_of_a_firm_claim():
    sno = build_sno({"h": "Noise causes stress before sleep.",
                     "a": "Noise might raise cortisol through the adrenal pathway, a study suggests."},
                    [("a", "h", "support")])
    result = _run(sno)
    assert result.issue_codes == ("hedged_support",)
    assert result.score == pytest.approx(0.9)


def test_related_evidence_found_by_embedding():
    claim = "Fertiliser runoff causes algal blooms."
    trial = "After fertiliser was added to randomly assigned lakes, algae grew via nitrate uptake."
    unrelated = "Lake tourism is popular."
    embedder = TableEmbedder({claim: [1, 0, 0], trial: [0.9, 0.1, 0], unrelated: [0, 0, 1]}, dim=3)
    sno = build_sno({"h": claim}, evidence=[("e1", trial), ("e2", unrelated)])
    result = _run(sno, {"relevance": 0.5}, embedder)
    assert result.evidence["claims"]["h"]["support"] == ["e1"]
    assert result.score == 1.0


def test_broken_embedder_falls_back_to_the_graph():
    sno = build_sno({"h": "Coffee causes long life.", "a": "Coffee is associated with long life."},
                    [("a", "h", "support")])
    result = CausalCritic({"relevance": 0.5}).evaluate(sno, CriticContext(embedder=BrokenBackend()))
    assert result.ok and "embedder_error" in result.evidence
    assert "correlational_support" in result.issue_codes
    assert result.confidence == pytest.approx(0.7 * 0.8)


@pytest.mark.parametrize("seed", range(5))
def test_ancestor_bits_equal_networkx_ancestors_with_cycles(seed):
    import networkx as nx

    from cns_core.critics.causal import _indices, ancestor_bits

    graph = nx.gnp_random_graph(40, 0.06, seed=seed, directed=True)
    graph = nx.relabel_nodes(graph, {n: f"c{n}" for n in graph.nodes})
    order = sorted(graph.nodes, key=lambda n: int(n[1:]))
    bits = ancestor_bits(graph, order)
    assert any(len(c) > 1 for c in nx.strongly_connected_components(graph))    # cycles are exercised
    for node in graph.nodes:
        assert {order[i] for i in _indices(bits[node])} == nx.ancestors(graph, node)


def test_support_list_is_capped_and_counted():
    from cns_core.critics.causal import CausalCritic

    supporters = {f"s{i}": f"Smoking causes harm in study {i}, a randomized trial." for i in range(30)}
    claims = {"h": "Smoking causes lung cancer because tar damages cells.", **supporters}
    sno = build_sno(claims, [(k, "h", "support") for k in supporters])
    result = CausalCritic({"relevance": 2.0}).evaluate(sno, CriticContext(embedder=_OneAxis()))
    per_claim = result.evidence["claims"]["h"]
    assert per_claim["support_count"] == 30 and len(per_claim["support"]) == 20
    assert per_claim["support"] == sorted(supporters)[:20]


class _OneAxis:
    name, dim = "one-axis", 2

    def encode(self, texts):
        import numpy as np

        out = np.zeros((len(texts), 2), dtype=np.float32)
        out[:, 0] = 1.0
        return out
