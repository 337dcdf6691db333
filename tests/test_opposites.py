"""The ``opposites`` reader (issue 67): one-word opposites mined from revisions, taught as contradicted beside
their entailed originals."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from cns_core.training.nli import TrainSettings, _read_source, load_train_settings
from cns_core.training.nli_data import NLIPairs
from cns_core.training.opposites import OppositeFinder, context_of, mine_opposites, one_word_change, opposite_pairs
from cns_core.training.wordnet_antonyms import WORDNET_DIR_ENV, read_antonyms
from test_nli_training import _write_tsv

ENTAILMENT, NEUTRAL, CONTRADICTION = 0, 1, 2


def _pairs(rows: list[tuple[str, str, int]]) -> NLIPairs:
    return NLIPairs([p for p, _, _ in rows], [h for _, h, _ in rows], [l for _, _, l in rows], ["t"] * len(rows))


def _wordnet(folder: Path) -> Path:
    """A WordNet database of three synset pairs in its own format: cold/warm (adjectives), win/lose (verbs)."""
    folder.mkdir(parents=True, exist_ok=True)
    header = "  1 This software and database is being provided to you, the LICENSEE, by Princeton University\n"
    (folder / "data.adj").write_text(header + "00000010 00 a 01 cold 0 001 ! 00000020 a 0101 | low temperature\n"
                                     "00000020 00 a 01 warm 0 001 ! 00000010 a 0101 | some heat\n", encoding="utf-8")
    (folder / "data.adv").write_text(header, encoding="utf-8")
    (folder / "data.verb").write_text(header + "00000030 40 v 01 win 0 001 ! 00000040 v 0101 00 | be the winner\n"
                                      "00000040 40 v 01 lose 0 001 ! 00000030 v 0101 00 | fail to win\n",
                                      encoding="utf-8")
    return folder


def _revisions(times: int = 3) -> NLIPairs:
    """Each change seen ``times`` times each way, in other sentences; 'person' -> 'woman' only one way."""
    rows = []
    for n in range(times):
        team = f"Team {n}"
        rows += [(f"{team} won the final .", f"{team} won the final .", ENTAILMENT),
                 (f"{team} won the final .", f"{team} lost the final .", CONTRADICTION),
                 (f"{team} lost the cup .", f"{team} lost the cup .", ENTAILMENT),
                 (f"{team} lost the cup .", f"{team} won the cup .", CONTRADICTION),
                 (f"It opened in {2000 + n} .", f"It opened in {2000 + n} .", ENTAILMENT),
                 (f"It opened in {2000 + n} .", f"It opened before {2000 + n} .", CONTRADICTION),
                 (f"It opened before {1990 + n} .", f"It opened before {1990 + n} .", ENTAILMENT),
                 (f"It opened before {1990 + n} .", f"It opened in {1990 + n} .", CONTRADICTION),
                 (f"A man {n} walks .", f"A person {n} walks .", ENTAILMENT),
                 (f"A man {n} walks .", f"A woman {n} walks .", CONTRADICTION)]
    return _pairs(rows)


def test_a_one_word_change_names_the_word_its_opposite_and_what_follows():
    assert one_word_change("They won the final .", "They lost the final .") == ("won", "lost", "the")
    assert one_word_change("It opened in 2001 .", "It opened before 2001 .") == ("in", "before", "#")
    assert one_word_change("It was in Paris .", "It was near Rome .") is None          # two words changed
    assert one_word_change("It cost 5 dollars .", "It cost 6 dollars .") is None      # a number, not a word
    assert context_of(["in", "Paris"], 0) == "A" and context_of(["in"], 0) == ""


def test_mined_opposites_are_changes_seen_often_and_both_ways():
    lexicon = mine_opposites([_revisions(times=3)], min_count=4, frequent_words=0)
    assert lexicon.counts[("won", "lost")] == 3 and lexicon.counts[("lost", "won")] == 3
    assert ("person", "woman") not in lexicon.counts        # a more general word, entailed the one way only
    assert "won" in lexicon.opposites("the") and "won" not in lexicon.opposites("A")
    assert lexicon.opposites("#")["in"] == ("before",)     # "in 2016" -> "before 2016", only before a number
    assert not mine_opposites([_revisions(times=1)], min_count=4).counts     # seen too rarely
    # a common word changed in few places keeps only the places before a number
    common = mine_opposites([_revisions(times=3)], min_count=4, frequent_words=100)
    assert "won" not in common.opposites("the") and common.opposites("#")["in"] == ("before",)


def test_opposite_pairs_change_a_grounded_word_and_keep_the_original_as_its_twin():
    finder = OppositeFinder(mine_opposites([_revisions(times=3)], min_count=4, frequent_words=0))
    data = _pairs([("The Lions won the final in May .", "The Lions won the final .", ENTAILMENT),
                   ("The Lions won the final in May .", "The Lions lost the final .", CONTRADICTION),
                   ("The hall opened in 1998 after years of work .", "The hall opened in 1998 .", ENTAILMENT),
                   ("They won it all .", "A team won the title .", ENTAILMENT),   # the premise writes 'won' elsewhere
                   ("The shop opened in the town .", "The shop opened in the town .", ENTAILMENT)])
    out = opposite_pairs(data, finder, limit=40, seed=1, source="opposites:t")
    made = set(zip(out.premises, out.hypotheses, out.labels))
    assert made == {
        # half: an entailed pair's hypothesis with a word the premise writes in the same place made its opposite,
        # beside the original ('won' in "A team won the title" is not where the premise writes it)
        ("The Lions won the final in May .", "The Lions lost the final .", CONTRADICTION),
        ("The Lions won the final in May .", "The Lions won the final .", ENTAILMENT),
        ("The hall opened in 1998 after years of work .", "The hall opened before 1998 .", CONTRADICTION),
        ("The hall opened in 1998 after years of work .", "The hall opened in 1998 .", ENTAILMENT),
        # half: a premise sentence against itself with one word made its opposite
        ("The Lions won the final in May .", "The Lions lost the final in May .", CONTRADICTION),
        ("The hall opened in 1998 after years of work .", "The hall opened before 1998 after years of work .",
         CONTRADICTION)}
    assert set(out.sources) == {"opposites:t"}
    assert len(opposite_pairs(data, finder, limit=2, seed=1, source="s")) <= 2


def test_wordnet_antonyms_change_the_words_the_revisions_never_did(tmp_path):
    antonyms = read_antonyms(_wordnet(tmp_path))
    assert antonyms.opposite("cold") == "warm" and antonyms.opposite("warm") == "cold"
    assert antonyms.opposite("won") == "lost" and antonyms.opposite("wins") == "loses"   # verbs inflected
    assert antonyms.opposite("table") is None
    lexicon = mine_opposites([_revisions(times=3)], min_count=4, frequent_words=0)
    known = OppositeFinder(replace(lexicon, known=frozenset({"warm"})), antonyms)
    assert known.choices(["The", "lake", "is", "cold", "."], 3) == ("warm",)
    unknown = OppositeFinder(replace(lexicon, known=frozenset()), antonyms)
    assert unknown.choices(["The", "lake", "is", "cold", "."], 3) == ()   # a word people do not write is not used


def test_a_missing_wordnet_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.delenv(WORDNET_DIR_ENV, raising=False)
    with pytest.raises(ValueError, match="opposites.wordnet: no WordNet database in .* apt-get install wordnet-base"):
        read_antonyms(tmp_path)
    folder = _wordnet(tmp_path / "wn")
    monkeypatch.setenv(WORDNET_DIR_ENV, str(folder))
    assert read_antonyms(tmp_path / "nowhere").opposite("cold") == "warm"
    (folder / "data.adj").write_text("00001 00 a 01 cold\n", encoding="utf-8")
    with pytest.raises(ValueError, match="data.adj:1: not a WordNet data line"):
        read_antonyms(folder)


def test_the_reader_mines_the_settings_files(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    label = {ENTAILMENT: "entailment", NEUTRAL: "neutral", CONTRADICTION: "contradiction"}
    revisions = _revisions(times=3)
    _write_tsv(data / "revisions.tsv.gz", [(p, h, label[l]) for p, h, l in
                                           zip(revisions.premises, revisions.hypotheses, revisions.labels)])
    _write_tsv(data / "train.tsv.gz", [("The Reds won the final at home .", "The Reds won the final .", "entailment")])
    settings = TrainSettings(data_dir=str(data), train_files=[{"file": "train.tsv.gz", "reader": "opposites"}],
                             opposites={"mined_from": [{"file": "revisions.tsv.gz", "folder": str(data)}],
                                        "frequent_words": 0, "wordnet": None})
    source = settings.sources[0]
    out = _read_source(settings, source, settings.source_path(source))
    assert ("The Reds won the final at home .", "The Reds lost the final .") in out.pairs
    assert ("The Reds won the final at home .", "The Reds won the final .") in out.pairs


def test_the_recipe_reads_opposites_from_its_own_revisions():
    settings = load_train_settings(path="config/verifier_train.yaml")
    assert any(s.reader == "opposites" for s in settings.sources)
    mined = {s.file for s in settings.opposites.mined_from}
    assert {"vitaminc_real_test.tsv.gz", "cad_snli_train.tsv.gz"} <= mined
