"""Table-driven tests of the shared text cues: each cue has rows that must fire and rows that must not."""

from __future__ import annotations

import pytest

from cns_core.models import textcues as tc


@pytest.mark.parametrize("text, tokens", [
    ("A man isn't playing", ["a", "man", "is", "not", "playing"]),
    ("They can't and won't", ["they", "can", "not", "and", "will", "not"]),
    ("It cannot be", ["it", "can", "not", "be"]),
    ("The man's dog", ["the", "man", "'s", "dog"]),
    ("Costs rose 2.5% to 1,200 units.", ["costs", "rose", "2.5%", "to", "1,200", "units"]),
    ("Don\u2019t", ["do", "not"]),
])
def test_tokenize(text, tokens):
    assert tc.tokenize(text) == tokens


@pytest.mark.parametrize("words", [
    ("sit", "sits", "sitting"), ("rise", "rises", "rising"), ("city", "cities"),
    ("dance", "dances", "dancing", "danced"), ("increase", "increased", "increasing"), ("glass", "glasses"),
])
def test_stem_joins_inflections(words):
    assert len({tc.stem(w) for w in words}) == 1


@pytest.mark.parametrize("a, b", [("sit", "stand"), ("full", "fall"), ("sing", "sign"), ("bus", "bush")])
def test_stem_keeps_different_words_apart(a, b):
    assert tc.stem(a) != tc.stem(b)


# ----- negation -------------------------------------------------------------

@pytest.mark.parametrize("a, b", [
    ("A man is playing a guitar", "A man is not playing a guitar"),
    ("A man is playing a guitar", "There is no man playing a guitar"),
    ("The snowboarder is leaping", "The snowboarder isn't leaping"),
    ("Somebody is slicing bread", "Nobody is slicing bread"),
    ("The drug works", "The drug never works"),
    ("Something was found", "Nothing was found"),
    ("Several were hurt", "None were hurt"),
    ("The plan can succeed", "The plan cannot succeed"),
])
def test_negation_flip_fires(a, b):
    assert tc.negation_flip(a, b)
    assert tc.negation_flip(b, a)


@pytest.mark.parametrize("a, b", [
    ("A man is playing a guitar", "A man is strumming a guitar"),
    ("A man is not playing", "There is no man playing"),
    ("There is no boy and there is no man", "Nobody is here"),
    ("A man plays without a shirt", "A man plays"),           # 'without' is not a denial
    ("Nottingham is a city", "Nottingham is a town"),        # 'not' inside a word
    ("Neither the boy nor the girl is here", "The boy is not here"),
])
def test_negation_flip_does_not_fire(a, b):
    assert not tc.negation_flip(a, b)


def test_negation_count_counts_each_denial():
    assert tc.negation_count(tc.tokenize("There is no boy and there is no man")) == 2
    assert tc.negation_count(tc.tokenize("A boy is here")) == 0


# ----- antonyms -------------------------------------------------------------

@pytest.mark.parametrize("a, b, pair", [
    ("A boy is sitting", "A boy is standing", ("sitting", "standing")),
    ("A classroom is full of students", "A classroom is empty", ("full", "empty")),
    ("The child is running outside", "The child is running inside", ("outside", "inside")),
    ("Prices increased last year", "Prices decreased last year", ("increased", "decreased")),
    ("The index rises", "The index falls", ("rises", "falls")),
    ("The bridge is safe", "The bridge is dangerous", ("safe", "dangerous")),
    ("A man is walking up the hill", "A man is walking down the hill", ("up", "down")),
    ("A man is filling a container", "A man is emptying a container", ("filling", "emptying")),
    ("A woman is riding a horse", "A man is riding a horse", ("woman", "man")),
])
def test_antonym_pairs_fire(a, b, pair):
    assert pair in tc.antonym_pairs(tc.tokenize(a), tc.tokenize(b))


@pytest.mark.parametrize("a, b", [
    ("A man and a woman are dancing", "A woman is dancing"),     # both words on one side
    ("A boy is sitting", "A boy is sitting on a bench"),
    ("The index rises", "The index climbs"),                      # synonyms
    ("A man is sitting and a man is standing", "A man is standing"),
    ("A dog is running", "A cat is running"),                     # different, not opposite
])
def test_antonym_pairs_do_not_fire(a, b):
    assert tc.antonym_pairs(tc.tokenize(a), tc.tokenize(b)) == []


def test_antonym_kinds_filter_particles_and_people():
    a, b = tc.tokenize("A man is walking up"), tc.tokenize("A woman is walking down")
    assert tc.antonym_pairs(a, b, kinds={"word"}) == []
    assert tc.antonym_pairs(a, b, kinds={"particle"}) == [("up", "down")]
    assert tc.antonym_pairs(a, b, kinds={"person"}) == [("man", "woman")]


def test_shipped_lexicon_is_large_and_symmetric():
    lexicon = tc.load_antonyms()
    assert 150 <= len(lexicon) <= 400
    assert lexicon.are_antonyms("sitting", "standing") and lexicon.are_antonyms("standing", "sits")
    assert lexicon.kind("up", "down") == "particle"
    assert not lexicon.are_antonyms("man", "dog")


@pytest.mark.parametrize("line, message", [
    ("onlyoneword", "expected 'word<TAB>antonym"),
    ("sit\tsitting", "same stem"),
])
def test_bad_lexicon_lines_name_the_line(tmp_path, line, message):
    path = tmp_path / "bad.tsv"
    path.write_text("# comment\nhot\tcold\n" + line + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=rf"bad.tsv:3: .*{message}"):
        tc.load_antonyms(path)


# ----- numbers --------------------------------------------------------------

@pytest.mark.parametrize("text, numbers", [
    ("Three dogs and 12 cats", [3, 12]),
    ("twenty five people", [25]),
    ("two hundred and five", [205]),
    ("one thousand two hundred and thirty four", [1234]),
    ("3 million people", [3_000_000]),
    ("1.5 billion dollars", [1_500_000_000]),
    ("1,200 units", [1200]),
    ("rose 2.5%", [2.5]),
    ("a dozen eggs", [12]),
    ("two dozen eggs", [24]),
    ("One man and two women", [1, 2]),
    ("one of the boys", []),
    ("no one is here", []),
    ("A man is running", []),
])
def test_extract_numbers(text, numbers):
    assert tc.extract_numbers(text) == pytest.approx(numbers)


@pytest.mark.parametrize("premise, hypothesis, delta, mismatch", [
    ("Three dogs", "30 dogs", 0.1, True),
    ("Sales fell 12%", "Sales fell 20%", 0.1, True),
    ("The study had 1,000 people", "The study had 1,050 people", 0.1, False),   # within 10 %
    ("The study had 1,000 people", "The study had 1,050 people", 0.01, True),
    ("Two men", "two men", 0.1, False),
    ("2 and 3 dogs", "3 dogs", 0.1, False),
    ("Dogs bark", "30 dogs bark", 0.1, False),                                   # nothing to compare
    ("0 cases", "1 case", 0.5, True),                                            # max(1, |b|) guard
])
def test_numeric_mismatch(premise, hypothesis, delta, mismatch):
    assert tc.numeric_mismatch(tc.extract_numbers(premise), tc.extract_numbers(hypothesis), delta) is mismatch


def test_relative_gap_uses_the_reference_scale():
    assert tc.relative_gap(110, 100) == pytest.approx(0.1)
    assert tc.relative_gap(0.5, 0.0) == pytest.approx(0.5)


# ----- temporal order and quantifiers --------------------------------------------

@pytest.mark.parametrize("a, b, conflict", [
    ("The rain started before the match began", "The match began before the rain started", True),
    ("The rain started before the match began", "The rain started after the match began", True),
    ("The rain started before the match began", "The match began after the rain started", False),
    ("The rain started before the match began", "The rain started before the match began", False),
    ("Prices rose after the election", "Wages fell before the holiday", False),
    ("He left", "He stayed", False),
])
def test_temporal_conflict(a, b, conflict):
    assert tc.temporal_conflict(tc.tokenize(a), tc.tokenize(b)) is conflict


@pytest.mark.parametrize("a, b, conflict", [
    ("All birds can fly", "No birds can fly", True),
    ("Some people agreed", "Nobody agreed", True),
    ("Every sample was clean", "None of the samples was clean", True),
    ("Some birds can fly", "All birds can fly", False),
    ("No birds can fly", "Nothing can fly", False),
    ("Birds fly", "Birds swim", False),
])
def test_quantifier_conflict(a, b, conflict):
    assert tc.quantifier_conflict(tc.tokenize(a), tc.tokenize(b)) is conflict


def test_quantifier_classes():
    assert tc.quantifier_classes(tc.tokenize("Only some of them, not all")) == {"only", "some", "all"}


# ----- overlap --------------------------------------------------------------

def test_coverage_is_asymmetric():
    premise = tc.tokenize("A young boy is playing football in a green park")
    hypothesis = tc.tokenize("A boy is playing")
    assert tc.coverage(premise, hypothesis) == 1.0
    assert tc.coverage(hypothesis, premise) == pytest.approx(2 / 6)
    assert tc.coverage(premise, tc.tokenize("the a is")) == 1.0


def test_stem_share_on_precomputed_sets():
    assert tc.stem_share({"boy", "play", "park"}, {"boy", "play"}) == 1.0
    assert tc.stem_share({"boy"}, {"boy", "girl"}) == 0.5
    assert tc.stem_share(set(), set()) == 1.0


def test_jaccard_ignores_stopwords_and_inflection():
    assert tc.jaccard(tc.tokenize("The dogs are running"), tc.tokenize("A dog runs")) == 1.0
    assert tc.jaccard(tc.tokenize("cats"), tc.tokenize("dogs")) == 0.0
    assert tc.jaccard([], []) == 0.0
