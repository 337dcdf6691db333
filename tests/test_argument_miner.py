"""The argument miner: gold readers, labels, a tiny model trained here, its files, decoding, drafting with it."""

from __future__ import annotations

import json

import numpy as np
import pytest

from critic_doubles import TableEmbedder, TableNLI
from cns_core.text import draft_sno, draft_snos
from cns_core.text.annotated import GoldText, GraphScore, align, overlap, read_genre
from cns_core.text.miner import ArgumentMiner, MinerUnavailable, decode
from cns_core.text.miner_features import describe_texts
from cns_core.training.drafter import MinerTrainSettings, build_examples, fit_miner
from cns_core.text.draft import drafting_units

TEXTS = [
    GoldText("essays", "t1", "We should ban cars downtown. Cars pollute the air. Moreover, streets get safer. "
             "Admittedly, shops may lose customers.",
             ["We should ban cars downtown.", "Cars pollute the air.", "Moreover, streets get safer.",
              "Admittedly, shops may lose customers."], [(1, 0, "support"), (2, 0, "support"), (3, 0, "attack")],
             frozenset({0})),
    GoldText("essays", "t2", "Schools must start later. Teenagers sleep too little. Because of this, grades fall. "
             "Some say buses cost more.",
             ["Schools must start later.", "Teenagers sleep too little.", "Because of this, grades fall.",
              "Some say buses cost more."], [(1, 0, "support"), (2, 1, "support"), (3, 0, "attack")],
             frozenset({0})),
    GoldText("comments", "c1", "Hello everyone. Fees should be capped. They hurt poor families.",
             ["Fees should be capped.", "They hurt poor families."], [(1, 0, "support")]),
    GoldText("comments", "c2", "Thank you for reading. Debt collectors must stop calling at night. "
             "Calls at night wake children.",
             ["Debt collectors must stop calling at night.", "Calls at night wake children."], [(1, 0, "support")]),
]
SETTINGS = MinerTrainSettings(components=4, max_distance=4, unit_c=1.0, pair_c=1.0)


@pytest.fixture(scope="module")
def embedder():
    return TableEmbedder(dim=16)


@pytest.fixture(scope="module")
def tiny(embedder) -> ArgumentMiner:
    return fit_miner(build_examples(TEXTS, embedder, SETTINGS.max_distance), SETTINGS)


@pytest.mark.parametrize("a, b, share", [
    ("Cars pollute the air.", "cars pollute the air", 1.0),
    ("Cars pollute the air.", "Cars pollute the air and the water.", 4 / 7),
    ("Cars pollute.", "Buses are late.", 0.0),
    ("", "anything", 0.0),
])
def test_overlap_is_the_shared_share_of_the_longer_span(a, b, share):
    assert overlap(a, b) == pytest.approx(share)


def test_align_is_one_to_one_best_first_and_needs_half_the_words():
    drafted = ["Cars pollute the air", "the air", "Streets get safer."]
    gold = ["Cars pollute the air.", "Streets get much safer at night now."]
    assert align(drafted, gold) == {0: 0}          # "the air" loses to the better match; 3 of 7 words is too few
    assert align(drafted, gold, threshold=3 / 7) == {0: 0, 2: 1}


def test_labels_follow_the_annotation(embedder):
    examples = build_examples(TEXTS, embedder, SETTINGS.max_distance)
    roles = {e.gold.name: list(e.unit_labels) for e in examples}
    # main 0, root 1, attached 2, none 3
    assert roles["t1"] == [0, 2, 2, 2]
    assert roles["c1"] == [3, 1, 2]                 # the greeting is no argument; the capped fees stand alone
    t2 = next(e for e in examples if e.gold.name == "t2")
    labelled = {pair: int(y) for pair, y in zip(t2.pairs, t2.pair_labels) if y}
    assert labelled == {(1, 0): 1, (2, 1): 1, (3, 0): 2}     # support 1, attack 2


def test_a_saved_miner_loads_to_the_same_readings(tiny, embedder, tmp_path):
    tiny.save(tmp_path / "m")
    loaded = ArgumentMiner.load(tmp_path / "m")
    assert loaded.identity == tiny.identity and loaded.identity.startswith("argument-miner:")
    units, texts = drafting_units(TEXTS[0].text)
    [tu] = describe_texts([(units, texts, None)], embedder)
    a, b = tiny.read(tu), loaded.read(tu)
    np.testing.assert_allclose(a.role_probabilities, b.role_probabilities, atol=1e-5)   # float32 on disk
    assert [(r.source, r.target, r.kind) for r in a.relations] == [(r.source, r.target, r.kind) for r in b.relations]
    with np.load(tmp_path / "m" / "miner.npz", allow_pickle=False) as data:     # plain arrays, no pickle
        assert "unit_coef" in data.files


def test_a_broken_or_foreign_miner_is_refused_naming_the_folder(tiny, tmp_path):
    with pytest.raises(MinerUnavailable, match="missing-folder"):
        ArgumentMiner.load(tmp_path / "missing-folder")
    tiny.save(tmp_path / "foreign")
    settings = json.loads((tmp_path / "foreign" / "miner.json").read_text())
    settings["unit_features"] = settings["unit_features"][:-1]
    (tmp_path / "foreign" / "miner.json").write_text(json.dumps(settings))
    with pytest.raises(MinerUnavailable, match="trained on other features"):
        ArgumentMiner.load(tmp_path / "foreign")
    tiny.save(tmp_path / "corrupt")
    (tmp_path / "corrupt" / "miner.npz").write_bytes(b"not a zip file")
    with pytest.raises(MinerUnavailable, match="corrupt"):
        ArgumentMiner.load(tmp_path / "corrupt")


def test_decoding_gives_one_graph_without_cycles_and_leaves_questions_and_filler_out(embedder):
    text = "Is this right? Taxes should rise. Roads need money. Money needs taxes. Have a nice day."
    units, texts = drafting_units(text)
    assert texts[0] == "Taxes should rise."                 # the question line is not a unit
    texts = ["Is this right?", *texts]                      # a question in the body is still never a claim
    units = [units[0], *units]
    [tu] = describe_texts([(units, texts, None)], embedder)
    roles = np.array([[0.1, 0.1, 0.7, 0.1],    # a question: left out whatever its roles say
                      [0.9, 0.05, 0.04, 0.01],
                      [0.01, 0.1, 0.85, 0.04],
                      [0.01, 0.1, 0.85, 0.04],
                      [0.01, 0.01, 0.08, 0.9]])   # filler
    pairs = [(i, j) for i in range(5) for j in range(5) if i != j]
    links = np.array([[0.98, 0.01, 0.01]] * len(pairs))
    strong = {(2, 3): [0.05, 0.9, 0.05], (3, 2): [0.05, 0.9, 0.05],     # a cycle the scores would like
              (2, 1): [0.4, 0.5, 0.1], (3, 1): [0.5, 0.1, 0.4], (1, 2): [0.01, 0.98, 0.01]}
    for k, pair in enumerate(pairs):
        if pair in strong:
            links[k] = strong[pair]
    mined = decode(tu, roles, pairs, links, question_weight=3.0, attach_threshold=0.25)
    assert mined.main == 1
    assert set(mined.left_out) == {0, 4} and "question" in mined.left_out[0]
    parents = {r.source: r.target for r in mined.relations}
    assert 1 not in parents                                 # the main claim argues about nothing
    assert len(parents) == len(mined.relations)             # every unit attached at most once
    assert parents in ({2: 1, 3: 2}, {3: 1, 2: 3})          # the cycle is broken, one of the pair hangs from main
    assert mined.role(1) == "main claim" and mined.role(4) == "not argumentative"


def test_drafting_with_a_miner_keeps_the_question_out_and_says_why(tiny, embedder):
    text = ("Should cities ban cars downtown?\n\nHello everyone. We should ban cars downtown. Cars pollute the air. "
            "Moreover, streets get safer.")
    draft = draft_sno(text, miner=tiny, embedder=embedder, nli=TableNLI())
    sno = draft.sno
    assert sno.metadata["question"] == "Should cities ban cars downtown?"
    assert sno.title == "Should cities ban cars downtown?"
    assert all(not c.text.endswith("?") for c in sno.claims)
    left = {item["text"]: item["why"] for item in sno.metadata["left_out"]}
    assert "a question is never a claim" in left["Should cities ban cars downtown?"]
    for claim in sno.claims:
        assert claim.metadata["unit_role"] in ("main claim", "claim", "premise")
        assert "p(main claim)" in claim.metadata["why"]
        assert text[claim.metadata["start"]:claim.metadata["end"]].rstrip(" ,;") == claim.text
    for relation in sno.relations:
        assert relation.metadata["why"].startswith(relation.kind) and "p_none" in relation.metadata
    assert sno.metadata["method"] == "argument miner" and sno.metadata["drafter"] == tiny.identity


def test_a_missing_miner_leaves_drafting_to_the_rules(monkeypatch, tmp_path):
    monkeypatch.setattr("cns_core.text.miner.default_miner_path", lambda: tmp_path / "gone")
    text = "The city should tax sugary drinks. Sugar taxes cut consumption, because people buy less."
    draft = draft_sno(text, nli=TableNLI())
    assert draft.sno.metadata["method"].startswith("cues+position+nli")
    assert "gone" in draft.sno.metadata["drafter_problem"]
    assert any(note.startswith("drafted by the rules") for note in draft.notes)


def test_many_texts_take_one_embedding_call(tiny):
    embedder = TableEmbedder(dim=16)
    texts = [t.text for t in TEXTS]
    drafts = draft_snos(texts, miner=tiny, embedder=embedder)
    assert embedder.calls == 1 and len(drafts) == len(texts)


def test_graph_score_counts_main_units_and_relations(tiny, embedder):
    gold = TEXTS[0]
    sno = draft_sno(gold.text, miner=tiny, embedder=embedder).sno
    tally = GraphScore()
    tally.add(sno, gold)
    assert tally.texts == 1 and tally.main_texts == 1
    assert tally.unit_gold == 4 and tally.unit_pred == len(sno.claims)
    assert tally.rel_pred == len(sno.relations) and tally.rel_gold == 3
    assert tally.rel_tp <= tally.rel_tp_unlabelled <= min(tally.rel_pred, tally.rel_gold)


# ----- the real corpora and the shipped model -------------------------------------------------------------
def test_the_three_genres_are_read_with_their_annotations(shared_data):
    counts = {}
    for genre in ("microtexts", "cdcp", "abstrct"):
        texts = read_genre(genre, shared_data)
        relations = [k for t in texts for _, _, k in t.relations]
        counts[genre] = (len(texts), len(relations), relations.count("attack"), sum(bool(t.main) for t in texts))
    assert counts == {"microtexts": (112, 464, 174, 112), "cdcp": (581, 1099, 0, 0), "abstrct": (400, 1636, 238, 63)}


ESSAY = """Should students be taught to compete or to cooperate?

Schools prepare children for life. In my opinion, students should be taught to cooperate rather than to compete.
First, most work today is done in teams, so pupils who learn to share ideas are better prepared for their jobs.
Second, cooperation builds friendships, because children who help each other trust each other.

Admittedly, competition can push some students to work harder. However, it also leaves many pupils anxious and
discouraged.

In conclusion, cooperation should come first in our schools.
"""


def test_the_shipped_miner_finds_the_thesis_of_an_essay_with_a_title_question():
    sno = draft_sno(ESSAY).sno
    assert sno.metadata["method"] == "argument miner"
    assert sno.metadata["question"] == "Should students be taught to compete or to cooperate?"
    hypothesis = sno.hypothesis_text
    assert "cooperat" in hypothesis.lower() and not hypothesis.endswith("?")   # the thesis or its restatement
    assert len(sno.relations) >= 3


def test_the_readme_example_drafts_its_thesis():
    from conftest import EXAMPLES_DIR

    sno = draft_sno((EXAMPLES_DIR / "text" / "sugar_tax.md").read_text()).sno
    assert sno.hypothesis_text == "The city should tax sugary drinks."


def test_train_drafter_is_reproducible(shared_data, tmp_path, capsys):
    from cns_core.cli import main

    for name in ("a", "b"):
        assert main(["train-drafter", "--genres", "microtexts", "--data", str(shared_data),
                     "--output", str(tmp_path / name)]) == 0
    a, b = ArgumentMiner.load(tmp_path / "a"), ArgumentMiner.load(tmp_path / "b")
    assert a.identity == b.identity
    assert a.info["texts"] == {"microtexts": 112}
    assert "argument miner written to" in capsys.readouterr().out


def test_a_text_of_questions_only_is_one_claim_that_says_so(tiny, embedder):
    draft = draft_sno("Why do we tax? How do we spend it? Who decides?", miner=tiny, embedder=embedder)
    assert len(draft.sno.claims) == 1 and draft.sno.relations == []
    assert draft.sno.metadata["question"] == "Why do we tax?"
    assert "the text only asks questions: drafted as one claim, which states nothing to judge" in draft.notes


def test_bad_training_settings_are_named_by_field(tmp_path, capsys):
    from cns_core.cli import main

    bad = tmp_path / "drafter.yaml"
    bad.write_text("genres: [microtexts]\ncomponents: -1\nbogus: 1\n")
    assert main(["train-drafter", "--settings", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "cns train-drafter: error: drafter.yaml: components: Input should be greater than or equal to 0" in err
    assert "bogus: Extra inputs are not permitted" in err and "errors.pydantic.dev" not in err
