"""The learned Logic critic: a tiny model built here exercises the real loading, inference,
attribution, fallback and training code; the shipped model is checked to be the default."""

from __future__ import annotations

import random

import pytest
import torch
from critic_doubles import TableEmbedder, TableNLI, build_sno

from cns_core.critics import default_critics
from cns_core.critics.base import CriticContext
from cns_core.critics.logic import HeuristicLogicCritic, LogicCritic, forget_models, load_model_cached
from cns_core.formats.cdcp import parse_cdcp
from cns_core.training.logic_data import (Example, flawed_copies, held_topics, make_flawed, mark_extremes,
                                         percentile_within, text_split)
from cns_core.models.logic_gnn import (LogicGNN, LogicGNNConfig, graph_input, load_logic_model,
                                       save_logic_model)
from cns_core.metrics import roc_auc
from cns_core.config import ConfigError
from cns_core.training.logic import (EmbeddingCache, LogicTrainSettings, TrainingData, held_out_report,
                                     _genre_weights, judged_figures, pairwise_agreement, spearman, train_logic)


@pytest.fixture(autouse=True)
def _fresh_models():
    forget_models()
    yield
    forget_models()


def _sno():
    return build_sno({"h": "We should tax sugar.", "a": "Sugar causes obesity.", "b": "Studies link sugar to weight.",
                      "c": "Taxes hurt the poor.", "d": "The revenue can fund health care."},
                     [("a", "h", "support", "r1"), ("b", "a", "support", "r2"), ("c", "h", "attack", "r3"),
                      ("d", "c", "attack", "r4")],
                     roles={"h": "proponent", "a": "proponent", "b": "proponent", "c": "opponent", "d": "proponent"})


@pytest.fixture
def tiny_model(tmp_path):
    torch.manual_seed(0)
    folder = tmp_path / "tiny-logic"
    save_logic_model(LogicGNN(LogicGNNConfig(emb_dim=16, hidden=8, layers=2, embedder="table-embedder")), folder)
    return folder


def _context():
    return CriticContext(nli=TableNLI(), embedder=TableEmbedder())


def test_learned_score_comes_from_the_model_with_heuristic_beside(tiny_model):
    sno = _sno()
    result = LogicCritic({"model": str(tiny_model)}).evaluate(sno, _context())
    model = load_logic_model(tiny_model)
    vectors = TableEmbedder().encode([c.text for c in sno.claims])
    expected = model.predict([graph_input(sno, vectors)])[0]
    assert result.score == pytest.approx(float(expected[0]), abs=1e-6)
    assert result.sub_scores["learned_sound"] == pytest.approx(float(expected[1]), abs=1e-6)
    heuristic = HeuristicLogicCritic().evaluate(sno, _context())
    assert result.sub_scores["heuristic_logic"] == pytest.approx(heuristic.score)
    assert result.sub_scores["orphan_score"] == heuristic.sub_scores["orphan_score"]
    assert result.evidence["learned"]["weights_sha256"] == model.digest
    assert "learned graph model" in result.explanation and "Not counted, for comparison only: the heuristic" in result.explanation


def test_leave_one_out_attribution_is_the_score_without_each_part(tiny_model):
    sno = _sno()
    result = LogicCritic({"model": str(tiny_model), "attribution_keep": 100}).evaluate(sno, _context())
    parts = result.evidence["attribution"]
    assert {p["id"] for p in parts if p["kind"] == "claim"} == {"a", "b", "c", "d"}      # never the hypothesis
    assert {p["id"] for p in parts if p["kind"] == "relation"} == {"r1", "r2", "r3", "r4"}
    model = load_logic_model(tiny_model)
    vectors = TableEmbedder().encode([c.text for c in sno.claims])
    # the same argument written without b (and so without b's relation r2)
    rest = build_sno({c.id: c.text for c in sno.claims if c.id != "b"},
                     [(r.source, r.target, r.kind, r.id) for r in sno.relations if "b" not in (r.source, r.target)],
                     roles={c.id: c.role for c in sno.claims})
    rest_vectors = TableEmbedder().encode([c.text for c in rest.claims])
    without_b = float(model.predict([graph_input(rest, rest_vectors)])[0, 0])
    assert without_b != pytest.approx(result.score, abs=1e-4)
    part_b = next(p for p in parts if p["id"] == "b")
    assert part_b["without"] == pytest.approx(without_b, abs=1e-6)
    assert part_b["delta"] == pytest.approx(without_b - result.score, abs=1e-6)
    assert [p["delta"] for p in parts] == sorted((p["delta"] for p in parts), reverse=True)


def test_costliest_parts_become_issues_with_their_nodes(tiny_model):
    sno = _sno()
    critic = LogicCritic({"model": str(tiny_model), "min_issue_delta": -1.0, "top_issues": 2})
    result = critic.evaluate(sno, _context())
    learned = [i for i in result.issues if i.code in {"superficial_support", "restated_premise", "weak_claim",
                                                      "weak_relation"}]
    assert len(learned) == 2
    top = result.evidence["attribution"][0]
    assert set(top["nodes"]) <= set(learned[0].nodes)
    assert "instead of" in learned[0].message
    # the table embedder gives unrelated texts orthogonal vectors: a support between them is superficial
    assert any(i.code == "superficial_support" for i in result.issues) or top["kind"] != "claim"


def test_restated_premise_is_named(tiny_model):
    sno = build_sno({"h": "We should tax sugar.", "a": "We should tax sugar."}, [("a", "h", "support", "r1")])
    result = LogicCritic({"model": str(tiny_model), "min_issue_delta": -1.0}).evaluate(sno, _context())
    assert result.issues[0].code == "restated_premise" and result.issues[0].nodes == ("a", "h")


def test_single_claim_is_a_bare_assertion_not_trivially_sound(tiny_model):
    sno = build_sno({"h": "We should tax sugar."})
    assert not LogicCritic({"model": str(tiny_model)}).evaluate(sno, _context()).applicable    # nothing to judge
    result = LogicCritic({"model": str(tiny_model), "lone_claim_with_evidence": "learned"}).evaluate(sno, _context())
    assert result.issues[0].code == "bare_assertion"
    assert result.score < 1.0 and not HeuristicLogicCritic().evaluate(sno, _context()).applicable


@pytest.mark.parametrize("damage", ["missing", "corrupt", "bad_config"])
def test_unloadable_model_falls_back_to_the_heuristic_with_a_note(tiny_model, damage):
    if damage == "missing":
        (tiny_model / "model.safetensors").unlink()
    elif damage == "corrupt":
        blob = (tiny_model / "model.safetensors").read_bytes()
        (tiny_model / "model.safetensors").write_bytes(blob[: len(blob) // 2])
    else:
        (tiny_model / "config.json").write_text('{"hidden": "many", "colour": 1}')
    sno = _sno()
    result = LogicCritic({"model": str(tiny_model)}).evaluate(sno, _context())
    heuristic = HeuristicLogicCritic().evaluate(sno, _context())
    assert result.ok and result.score == pytest.approx(heuristic.score)
    assert "the learned model is not used" in result.explanation
    assert str(tiny_model) in result.evidence["model_error"]
    assert "learned" not in result.evidence
    assert LogicCritic({"model": str(tiny_model)}).config_key().endswith("/heuristic")


def test_other_embedder_falls_back(tiny_model):
    sno = _sno()
    result = LogicCritic({"model": str(tiny_model)}).evaluate(sno, CriticContext(nli=TableNLI(),
                                                                                 embedder=TableEmbedder(dim=8)))
    assert "table-embedder embeddings (16 dims)" in result.explanation


def test_retrained_weights_change_the_cache_key(tiny_model):
    key = LogicCritic({"model": str(tiny_model)}).config_key()
    torch.manual_seed(1)
    save_logic_model(LogicGNN(LogicGNNConfig(emb_dim=16, hidden=8, embedder="table-embedder")), tiny_model)
    forget_models()
    assert LogicCritic({"model": str(tiny_model)}).config_key() != key


def test_default_critic_is_the_shipped_learned_model():
    critic = next(c for c in default_critics() if c.name == "logic")
    assert isinstance(critic, LogicCritic)
    model, why = load_model_cached(critic.settings["model"])
    assert why is None and model.cfg.embedder == "minilm"
    result = critic.evaluate(_sno(), CriticContext(nli=TableNLI()))     # the real MiniLM embedder
    assert "learned" in result.evidence and "model_error" not in result.evidence


# ----- training data and training ---------------------------------------------

def _example(i: int) -> Example:
    sno = build_sno({"h": f"claim {i} holds", "a": f"reason {i} one", "b": f"reason {i} two", "c": f"detail {i}"},
                    [("a", "h", "support", "r1"), ("b", "h", "support", "r2"), ("c", "a", "support", "r3")],
                    id=f"g{i}", roles={k: "proponent" for k in "habc"})
    return Example(sno, "toy", f"t{i}", sound=1.0, meta={"split": "train"})


def test_flaws_change_what_they_say():
    rng = random.Random(0)
    sno = _example(0).sno
    pool = ["an unrelated sentence"]
    relevance = make_flawed(sno, "relevance", rng, pool)
    assert any(c.text == "an unrelated sentence" for c in relevance.claims)
    circular = make_flawed(sno, "circular", rng, pool)
    changed = [c for c in circular.claims if c.text != sno.claims_by_id[c.id].text]
    assert len(changed) == 1 and "holds" in changed[0].text or "reason" in changed[0].text
    flip = make_flawed(sno, "flip", rng, pool)
    assert sum(r.kind == "attack" for r in flip.relations) >= 1
    unsupported = make_flawed(sno, "unsupported", random.Random(1), pool)
    target_supports = {r.target for r in unsupported.relations if r.kind == "support"}
    assert len(unsupported.claims) < len(sno.claims) and len(target_supports) < 2
    rewire = make_flawed(sno, "rewire", rng, pool)
    assert {(r.source, r.target) for r in rewire.relations} != {(r.source, r.target) for r in sno.relations}


def test_flawed_copies_stay_on_their_texts_side():
    sound = [_example(i) for i in range(12)]
    flawed = flawed_copies(sound, seed=3)
    assert {e.flaw for e in flawed} == {"relevance", "circular", "flip", "unsupported", "rewire"}
    for e in flawed:
        if e.flaw == "relevance":
            own = {c.text for c in next(s for s in sound if s.text_id == e.text_id).sno.claims}
            foreign = [c.text for c in e.sno.claims if c.text not in own]
            sides = {text_split("toy", s.text_id) for s in sound for c in s.sno.claims if c.text in foreign}
            assert sides == {text_split("toy", e.text_id)}


def test_training_learns_to_tell_sound_from_flawed(tmp_path):
    sound = [_example(i) for i in range(24)]
    flawed = [e for e in flawed_copies(sound, seed=1) if e.flaw == "unsupported"]
    for e in flawed:
        e.meta["split"] = "train"
    data = TrainingData(gold=sound + flawed)
    emb = EmbeddingCache(tmp_path / "emb.npz", TableEmbedder())
    emb.ensure(c.text for e in data.gold for c in e.sno.claims)
    settings = LogicTrainSettings(epochs=15, hidden=8, batch_size=8, learning_rate=0.01, threads=1, seed=0)
    model = train_logic(settings, data, emb, log=lambda _: None).model
    p = model.predict([graph_input(e.sno, emb.of(e.sno)) for e in data.gold])[:, 1]
    assert roc_auc(p, [True] * len(sound) + [False] * len(flawed)) > 0.9
    folder = save_logic_model(model.net, tmp_path / "m")
    assert load_logic_model(folder).predict([graph_input(sound[0].sno, emb.of(sound[0].sno))])[0, 1] == \
        pytest.approx(float(p[0]), abs=1e-6)


def _judged(i: int, quality: float, topic: str, corpus: str = "webis", split: str = "train") -> Example:
    """A judged argument whose length grows with its quality: more reasons, more words."""
    n = 1 + int(quality * 4)
    claims = {"h": f"topic {topic} claim {i}", **{f"r{k}": f"reason {k} of {i} on {topic}" for k in range(n)}}
    sno = build_sno(claims, [(f"r{k}", "h", "support", f"s{k}") for k in range(n)], id=f"j{i}")
    return Example(sno, corpus, f"{corpus}{i}", quality=quality, topic=topic,
                   meta={"raw": quality, "words": 4 * n, "split": split})


def test_extremes_of_a_topic_become_real_sound_and_unsound_arguments():
    examples = [_judged(i, q, "t") for i, q in enumerate([0.0, 0.2, 0.5, 0.8, 1.0])]
    assert mark_extremes(examples, 0.25) == 4
    assert [e.sound for e in examples] == [0.0, 0.0, None, 1.0, 1.0]
    assert [e.flaw for e in examples] == ["judged", "judged", "none", "none", "none"]


def test_held_topics_do_not_depend_on_order():
    topics = [f"topic {k}" for k in range(20)]
    held = held_topics(topics, 0.3)
    assert len(held) == 6 and held == held_topics(reversed(topics), 0.3) and held < set(topics)


def test_leave_out_names_known_genres_only():
    assert LogicTrainSettings(leave_out=["webis"]).leave_out == ("webis",)
    with pytest.raises(ConfigError, match="leave_out.*essays"):
        LogicTrainSettings(leave_out=["essays"])


def test_a_left_out_genre_is_not_trained_on_and_is_measured_on_its_test_part(tmp_path):
    """Judged arguments teach the quality head; leaving the genre out makes training refuse when nothing is left,
    and the report measures each judged genre on its test topics only."""
    train = [_judged(i, (i % 5) / 4, f"t{i % 3}") for i in range(30)]
    test = [_judged(100 + i, (i % 5) / 4, "held", split="test") for i in range(10)]
    data = TrainingData(judged=train + test)
    emb = EmbeddingCache(tmp_path / "emb.npz", TableEmbedder())
    emb.ensure(c.text for e in data.judged for c in e.sno.claims)
    settings = LogicTrainSettings(epochs=20, hidden=8, batch_size=8, learning_rate=0.01, threads=1, seed=0)
    with pytest.raises(ValueError, match="nothing to train on"):
        train_logic(LogicTrainSettings(leave_out=["webis"], threads=1), data, emb, log=lambda _: None)
    model = train_logic(settings, data, emb, log=lambda _: None).model
    report = held_out_report(model, data, emb)
    assert "ibm" not in report and report["webis"]["texts"] == 10
    assert report["webis"]["spearman"] > 0.5     # more reasons, higher quality: learned from the train topics


def test_each_judged_genre_weighs_the_same_in_the_quality_loss():
    examples = [_judged(i, 0.5, "t", "ibm") for i in range(3)] + [_judged(9, 0.5, "t", "webis"), _example(0)]
    weights = _genre_weights(examples).tolist()
    assert weights[:4] == pytest.approx([1 / 3, 1 / 3, 1 / 3, 1.0]) and weights[4] == 0.0   # gold: no quality


def test_pairwise_agreement_counts_within_topic_pairs_and_ties_half():
    agree, pairs = pairwise_agreement([1, 2, 3, 3], [1, 2, 3, 4], ["a", "a", "a", "a"])
    assert pairs == 6 and agree == pytest.approx(5.5 / 6)
    agree, pairs = pairwise_agreement([2, 1, 5], [1, 2, 0], ["a", "a", "b"])
    assert pairs == 1 and agree == 0.0
    figures = judged_figures([_judged(i, q, "t") for i, q in enumerate([0.1, 0.5, 0.9])], [0.2, 0.4, 0.6])
    assert figures["pairwise"] == 1.0 and figures["pearson"] == pytest.approx(1.0) and figures["pairs"] == 3


def test_spearman_and_percentiles():
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert percentile_within([3.0, 1.0, 2.0, 5.0], ["a", "a", "a", "b"]) == [1.0, 0.0, 0.5, 0.5]


def test_cdcp_reader_makes_supports_and_picks_the_main_claim():
    text = "Fees are unfair. I paid twice. They should stop."
    ann = ('{"prop_offsets": [[0, 16], [17, 30], [31, 48]], "prop_labels": ["value", "testimony", "policy"], '
           '"reasons": [[[0, 1], 2]], "evidences": []}')
    sno = parse_cdcp(ann, text, "x.ann.json", sno_id="x").sno
    assert sno.hypothesis == "p2" and [c.text for c in sno.claims][1] == "I paid twice."
    assert {(r.source, r.target, r.kind) for r in sno.relations} == {("p0", "p2", "support"), ("p1", "p2", "support")}
    assert sno.claims[2].metadata == {"type": "policy"}


def test_learned_score_does_not_read_the_nli(tiny_model):
    """The NLI is retrained elsewhere: the learned score must not move with it (the heuristic beside may)."""
    sno = _sno()
    critic = LogicCritic({"model": str(tiny_model)})
    calm = critic.evaluate(sno, CriticContext(nli=TableNLI(), embedder=TableEmbedder()))
    a, h = sno.claims_by_id["a"].text, sno.claims_by_id["h"].text
    hostile = TableNLI({(a, h): (0.0, 0.0, 1.0), (h, a): (0.0, 0.0, 1.0)})
    near = TableEmbedder({a: [1.0] + [0.0] * 15, h: [1.0, 0.05] + [0.0] * 14})     # a and h about the same thing
    sno = sno.model_copy(update={"relations": [r for r in sno.relations if {r.source, r.target} != {"a", "h"}]})
    calm = critic.evaluate(sno, CriticContext(nli=TableNLI(), embedder=near))
    shaken = critic.evaluate(sno, CriticContext(nli=hostile, embedder=near))
    assert shaken.score == calm.score
    assert shaken.sub_scores["heuristic_logic"] < calm.sub_scores["heuristic_logic"]


def test_support_cycles_multiply_the_learned_score_down(tiny_model):
    sno = build_sno({"h": "We should tax sugar.", "a": "Sugar causes obesity.", "b": "Obesity comes from sugar."},
                    [("a", "h", "support", "r1"), ("b", "a", "support", "r2"), ("a", "b", "support", "r3")])
    result = LogicCritic({"model": str(tiny_model)}).evaluate(sno, _context())
    assert result.evidence["learned"]["cycle_factor"] == pytest.approx(0.7)
    assert result.score == pytest.approx(0.7 * result.evidence["learned"]["score"])
    assert any(i.code == "circular_reasoning" for i in result.issues)


def test_one_claim_with_evidence_abstains_neither_rewarded_nor_punished(tiny_model):
    """A short answer and its reference is no argument to judge for structure: Logic abstains (the heuristic's
    1.0 rewarded it, a neutral 0.5 pulled it down); without evidence the same claim is a bare assertion."""
    grounded = build_sno({"h": "An adult human has 206 bones."}, evidence=[("e1", "Adults have 206 bones.")])
    result = LogicCritic({"model": str(tiny_model)}).evaluate(grounded, _context())
    assert result.status == "not_applicable" and result.score is None and "learned" not in result.evidence
    with pytest.raises(ValueError, match="lone_claim_with_evidence"):
        LogicCritic({"model": str(tiny_model), "lone_claim_with_evidence": "maybe"}).evaluate(grounded, _context())
    learned = LogicCritic({"model": str(tiny_model), "lone_claim_with_evidence": "learned"}).evaluate(grounded, _context())
    assert "learned" in learned.evidence and learned.issues[0].code == "bare_assertion"
