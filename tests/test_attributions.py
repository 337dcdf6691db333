"""Attributed evidence: the recipe's pairs whose premise names its source, the label kept."""

from __future__ import annotations

import gzip

from cns_core.models.nli import CONTRADICTION, ENTAILMENT, NEUTRAL
from cns_core.training.attributions import FRAMES, attribute, attributed_pairs
from cns_core.training.nli_data import NLIPairs


def test_a_premise_is_framed_with_its_first_word_lowered_only_when_it_is_not_a_name():
    framed = {attribute("The supplements did not prevent colds.", f"k{n}") for n in range(40)}
    assert len(framed) > 3                                    # the key picks among frames and sources
    assert all("the supplements did not prevent colds" in f.lower() for f in framed)
    assert any(f.startswith("According to ") and ", the supplements did not prevent colds." in f for f in framed)
    named = {attribute("Paris is the capital of France.", f"k{n}") for n in range(40)}
    assert all("Paris is the capital of France" in f for f in named)


def test_the_same_key_gives_the_same_frame_and_several_sentences_are_left_alone():
    assert attribute("Colds last a week.", "one") == attribute("Colds last a week.", "one")
    assert attribute("Colds last a week. Zinc shortens them.", "one") is None
    assert attribute(" ".join(["word"] * 80), "one") is None


def test_pairs_keep_their_labels_and_the_limit_holds():
    pairs = NLIPairs(["Zinc shortens colds.", "Zinc does not shorten colds. It is cheap.", "Colds last a week."],
                     ["Zinc shortens colds.", "Zinc shortens colds.", "Colds are caused by viruses."],
                     [ENTAILMENT, CONTRADICTION, NEUTRAL], ["x"] * 3)
    out = attributed_pairs(pairs, limit=10, seed=0)
    assert len(out) == 2                                      # the two-sentence premise is left out
    by_hypothesis = dict(zip(out.hypotheses, out.labels))
    assert by_hypothesis == {"Zinc shortens colds.": ENTAILMENT, "Colds are caused by viruses.": NEUTRAL}
    assert all(p not in pairs.premises for p in out.premises) and set(out.sources) == {"attributed"}
    assert len(attributed_pairs(pairs, limit=1, seed=0)) == 1
    assert len(FRAMES) >= 4


def test_the_recipe_reads_a_file_as_attributed_pairs(tmp_path):
    from cns_core.training.nli import TrainSettings, TrainSource, _read_source

    path = tmp_path / "claims.tsv.gz"
    rows = ["premise\thypothesis\tlabel", "Zinc shortens colds.\tZinc shortens colds.\tentailment",
            "The trial found no effect.\tThe trial found an effect.\tcontradiction"]
    with gzip.open(path, "wt") as f:
        f.write("\n".join(rows) + "\n")
    source = TrainSource(file=path.name, folder=str(tmp_path), reader="attributed")
    pairs = _read_source(TrainSettings(train_files=[source]), source, path)
    assert sorted(pairs.labels) == [ENTAILMENT, CONTRADICTION] and len(pairs) == 2
    assert all(p.endswith(".") and p not in {"Zinc shortens colds.", "The trial found no effect."}
               for p in pairs.premises)
