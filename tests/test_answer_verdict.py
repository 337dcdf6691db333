"""Each stored answer's verdict: no answer, correct, incorrect (by the answer or by a detail), unverified;
the Trust cap of a verified-wrong answer; the verdict on the engram and in the disagreement rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from cns_core.judging.answer_trust import AnswerItem, AnswerScorer, TrustOutcome
from cns_core.judging.answer_verdict import (AnswerVerdict, VerdictSettings, is_non_answer, judge_answers,
                                           reference_units)
from cns_core.config import ConfigError
from cns_core.engrams import DisagreementRule, EngramFilters
from cns_core.models.verifier import verifier_pair
from critic_doubles import TableEmbedder, TableNLI

Q = "What is the capital of Australia?"
REF = "Canberra is the capital of Australia."
SUPPORTS, CONTRADICTS, SILENT = (0.9, 0.05, 0.05), (0.05, 0.05, 0.9), (0.1, 0.8, 0.1)


@pytest.mark.parametrize("answer, declines", [
    ("I don't know.", True), ("I'm not sure, sorry.", True), ("As an AI language model, I cannot browse.", True),
    ("Sorry, I can't help with that.", True), ("I have no comment.", True),
    ("There is no definitive answer to this.", False), ("There is no single best diet; it depends.", False),
    ("Canberra.", False), ("I think it is Canberra.", False), ("Sorry seems to be the hardest word (Elton John).", False), ("Unknown.", True), ("No idea", True),
    ("Unknown Pleasures is a Joy Division album.", False),
])
def test_non_answers_are_recognised(answer, declines):
    assert is_non_answer(answer) is declines


LEAN = VerdictSettings(head=None)      # p(right) from the verifier's numbers alone (no learned head)


def right_probability(support: float, contradiction: float, plain_contradiction: float) -> float:
    """The fallback p(right): the best support, discounted by the strongest contradiction where support is weak."""
    return support * (1 - max(contradiction, plain_contradiction) * (1 - support))


def _pinned_grounding() -> dict:
    """The Grounding critic's settings with a pinned fusion and thresholds: these tests are of the verdict's logic,
    not of the fusion fitted last."""
    import yaml

    from cns_core.critics.common import critic_settings

    pinned = Path(__file__).parent / "fixtures" / "grounding_fusion_pinned.yaml"
    return {**critic_settings("grounding"), "fusion": yaml.safe_load(pinned.read_text(encoding="utf-8")),
            "verdict": {"supported": 0.5, "contradicted": 0.5}}


def _judge(items, table, settings=LEAN):
    """Judged with NLI rows from ``table``; every text embeds alike (similarity 1), so the fusion reads
    the NLI rows alone."""
    same = {text: [1.0] + [0.0] * 15 for pair in table for text in pair}
    same.update({t: [1.0] + [0.0] * 15 for item in items for t in [item.answer, item.reference or "", *item.sources]})
    return judge_answers(items, TableNLI(table), TableEmbedder(same), settings, _pinned_grounding())


def test_a_contradicted_answer_is_incorrect_and_says_why():
    answer = "Sydney is the capital of Australia."
    [v] = _judge([AnswerItem("a", Q, answer, REF)], {verifier_pair(REF, answer, Q): CONTRADICTS})
    assert (v.verdict, v.claim, v.passage, v.evidence) == ("incorrect", answer, REF, "reference")
    assert v.score == pytest.approx(right_probability(0.05, 0.9, 0.1))    # plain reading: the table's neutral row
    assert v.probability == pytest.approx(1 - v.score) and v.p_contradicted == 0.9
    assert v.score < 0.1 and "reference contradicts" in v.note


def test_one_unit_of_the_reference_that_supports_outvotes_one_that_contradicts():
    """A reference listing several answers: the best support decides "correct"; "incorrect" needs a
    contradiction and no support (before, the most confident passage either way decided)."""
    q, content, anxious = "When do cats purr?", "Cats purr when content.", "Cats also purr when anxious."
    answer = "Cats purr when they are content."
    table = {verifier_pair(content, answer, q): SUPPORTS, verifier_pair(anxious, answer, q): (0.02, 0.03, 0.95)}
    [v] = _judge([AnswerItem("a", q, answer, f"{content} {anxious}")], table)
    assert v.verdict == "correct" and v.passage == content and v.p_supported == 0.9
    # the same reference as a list of alternatives (" | " or ";"), each alternative its own unit
    assert reference_units(f"{content} | {anxious}", lambda t: [t]) == [content, anxious]
    assert reference_units("Paris; the city of Paris\nParis, France", lambda t: [t]) == [
        "Paris", "the city of Paris", "Paris, France"]
    [listed] = _judge([AnswerItem("a", q, answer, f"{content}; {anxious}")], table)
    assert listed.verdict == "correct"


def test_a_right_but_vague_answer_is_true_but_incomplete_never_wrong():
    """Truth and informativeness are judged apart (issue 67 item 4): the reference, read as the question's
    answer, must follow from a complete answer; from "An Australian city." it does not."""
    q, ref = "What is the capital of Australia?", "Canberra."
    full, vague = "Canberra is the capital.", "An Australian city."
    table = {verifier_pair(ref, full, q): SUPPORTS, verifier_pair(ref, vague, q): SUPPORTS,
             verifier_pair(full, ref, q): SUPPORTS, verifier_pair(vague, ref, q): SILENT}
    complete, incomplete = _judge([AnswerItem("a", q, full, ref), AnswerItem("b", q, vague, ref)], table)
    assert (complete.verdict, complete.complete, complete.label) == ("correct", True, "correct")
    assert (incomplete.verdict, incomplete.complete, incomplete.label) == ("correct", False, "true but incomplete")
    assert incomplete.score == complete.score          # as right as the full answer: p(right) does not move
    assert incomplete.note.startswith("True but incomplete") and incomplete.readings.covers == pytest.approx(0.1)
    assert incomplete.metadata()["trust_verdict_complete"] is False
    assert complete.metadata()["trust_verdict_complete"] is True
    stricter = _judge([AnswerItem("a", q, full, ref)], table, VerdictSettings(head=None, complete_at=0.95))[0]
    assert stricter.complete is False


def test_completeness_is_judged_only_for_a_correct_answer_against_a_reference():
    answer = "Sydney is the capital of Australia."
    [wrong] = _judge([AnswerItem("a", Q, answer, REF)], {verifier_pair(REF, answer, Q): CONTRADICTS})
    assert wrong.complete is None and "trust_verdict_complete" not in wrong.metadata()
    assert wrong.readings.covers == pytest.approx(0.1)     # read, and kept for a later re-decision
    source = "Canberra is the capital of Australia."
    [from_sources] = _judge([AnswerItem("a", Q, "Canberra.", None, (source,))],
                            {verifier_pair(source, "Canberra.", Q): SUPPORTS})
    assert from_sources.verdict == "correct" and from_sources.complete is None
    assert from_sources.readings.covers is None


def test_incorrect_needs_a_sure_contradiction_and_no_support():
    answer = "It is the largest city there."
    unsure = (0.1, 0.35, 0.55)
    [v] = _judge([AnswerItem("a", Q, answer, REF)], {verifier_pair(REF, answer, Q): unsure},
                 VerdictSettings(head=None, incorrect_at=0.8))
    assert v.verdict == "unverified" and v.p_contradicted == 0.55
    [sure] = _judge([AnswerItem("a", Q, answer, REF)], {verifier_pair(REF, answer, Q): unsure},
                    VerdictSettings(head=None, incorrect_at=0.5))
    assert sure.verdict == "incorrect"


def test_a_supported_answer_is_correct_and_open_details_do_not_sink_it():
    answer = "Canberra is the capital. It has many parks."
    table = {verifier_pair(REF, answer, Q): SUPPORTS, verifier_pair(REF, answer): SUPPORTS,
             verifier_pair(REF, "Canberra is the capital."): SUPPORTS}
    [v] = _judge([AnswerItem("a", Q, answer, REF)], table)
    assert v.verdict == "correct" and v.score == pytest.approx(right_probability(0.9, 0.05, 0.05))
    assert [(d.sentence, d.verdict) for d in v.details][1][0] == "It has many parks."
    assert "1 detail(s) the evidence does not mention stay unverified" in v.note


def test_a_detail_the_evidence_surely_contradicts_makes_an_unsupported_answer_incorrect():
    answer = "The capital moved there. It was founded by sailors."
    wrong = (0.01, 0.01, 0.98)
    table = {verifier_pair(REF, answer, Q): SILENT, verifier_pair(REF, "It was founded by sailors."): wrong}
    [v] = _judge([AnswerItem("a", Q, answer, REF)], table, VerdictSettings(head=None, detail_contradicted_at=0.9))
    assert (v.verdict, v.claim) == ("incorrect", "It was founded by sailors.")
    assert "contradicts a detail" in v.note
    # the same contradiction below the detail threshold leaves the answer unverified
    [lenient] = _judge([AnswerItem("a", Q, answer, REF)], table, VerdictSettings(head=None, detail_contradicted_at=0.99))
    assert lenient.verdict == "unverified"
    # a contradicted detail still matters when the answer itself is supported: its p(right) falls with it
    table[verifier_pair(REF, answer, Q)] = SUPPORTS
    [supported] = _judge([AnswerItem("a", Q, answer, REF)], table, VerdictSettings(head=None, detail_contradicted_at=0.9))
    assert supported.verdict == "incorrect" and supported.claim == "It was founded by sailors."
    assert supported.score <= 1 - 0.98 + 1e-9


def test_a_long_answer_is_read_through_the_sentences_that_answer_it():
    """Past ``whole_answer_words`` the whole answer is not one reading (it would not fit the verifier's
    window): its first sentence and the one most like the question are."""
    filler = "Australia is a large country with many cities and a long history of settlement. "
    answer = filler + "Canberra is the capital. " + "It has many parks and a lake in its centre."
    table = {verifier_pair(REF, "Canberra is the capital.", Q): SUPPORTS}
    embed = {Q: [1.0, 0.0], "Canberra is the capital.": [1.0, 0.0]}
    same = {t: [0.0, 1.0] for t in [answer, REF, filler.strip(), "It has many parks and a lake in its centre."]}
    items = [AnswerItem("a", Q, answer, REF)]
    [v] = judge_answers(items, TableNLI(table), TableEmbedder({**same, **embed}),
                        VerdictSettings(head=None, whole_answer_words=20, answer_sentences=2), _pinned_grounding())
    assert v.verdict == "correct" and v.claim == "Canberra is the capital."


def test_a_summary_is_backed_by_all_its_sentences_where_the_reference_says_as_much():
    """A long answer (read through its sentences) against a reference as long as it: one supported sentence
    does not make it right, its backing is the mean support of its sentences. Against a short gold answer, or
    read whole, the same answer keeps its best support (an aside the reference never mentions does not sink
    it)."""
    from cns_core.judging.answer_verdict import VerdictReadings

    q = "What happens to the crew?"
    first, second, third = "The crew lands on Mars.", "The captain dies in a storm.", "They return home in a year."
    answer = f"{first} {second} {third}"
    units = ("The crew lands on Mars after a long flight.", "A storm hits the base and the captain survives it.",
             "The survivors stay on Mars for good and never return.")
    long_ref = " ".join(units)
    doubted = (0.1, 0.3, 0.6)                     # a sentence the reference does not back (and half denies)
    table = {verifier_pair(units[0], answer, q): SUPPORTS, verifier_pair(units[0], first, q): SUPPORTS,
             verifier_pair(units[0], first): SUPPORTS,
             verifier_pair(units[1], second): doubted, verifier_pair(units[2], third): doubted}
    long_answer = VerdictSettings(head=None, whole_answer_words=5)
    [summary] = _judge([AnswerItem("a", q, answer, long_ref)], table, long_answer)
    backing = summary.readings.backing
    assert backing == pytest.approx((0.9 + 0.1 + 0.1) / 3)            # the mean of its 3 sentences
    assert summary.score == pytest.approx(right_probability(backing, 0.1, 0.1), abs=1e-6)
    assert summary.readings.support == 0.9 and summary.verdict == "unverified"
    short_ref = "They land on Mars."
    short_table = {verifier_pair(short_ref, answer, q): SUPPORTS, verifier_pair(short_ref, first, q): SUPPORTS,
                   verifier_pair(short_ref, first): SUPPORTS,
                   verifier_pair(short_ref, second): doubted, verifier_pair(short_ref, third): doubted}
    [answered] = _judge([AnswerItem("a", q, answer, short_ref)], short_table, long_answer)
    assert answered.readings.backing == 0.9 and answered.verdict == "correct" and answered.score > summary.score
    [read_whole] = _judge([AnswerItem("a", q, answer, long_ref)], table)         # 15 words: read whole
    assert read_whole.readings.read_whole and read_whole.readings.backing == 0.9 and read_whole.verdict == "correct"
    # readings stored before the backing existed are decided on the best support, as they were
    stored = VerdictReadings.from_json(summary.readings.to_json().replace(f'"backing":{backing}', '"backing":null'))
    assert stored.backing is None and stored.features == summary.readings.features


def test_a_long_answer_is_incorrect_only_through_a_detail_the_evidence_contradicts():
    """Past ``whole_answer_words`` the answer-level reasons for a red badge (made for an answer read whole) do
    not apply; a detail sentence the evidence surely contradicts while nothing supports it still does."""
    first, second = "Sydney is the capital.", "It has been the capital since 1850."
    answer = f"{first} {second}"
    settings = VerdictSettings(head=None, whole_answer_words=3, answer_sentences=2)
    denied = {verifier_pair(REF, first, Q): CONTRADICTS}      # as the answer to the question; plainly it is silent
    [long_read] = _judge([AnswerItem("a", Q, answer, REF)], denied, settings)
    [short_read] = _judge([AnswerItem("a", Q, answer, REF)], {**denied, verifier_pair(REF, answer, Q): CONTRADICTS,
                                                              verifier_pair(REF, answer): CONTRADICTS})
    assert not long_read.readings.read_whole and long_read.score <= 0.1 and long_read.verdict == "unverified"
    assert short_read.readings.read_whole and short_read.verdict == "incorrect"
    [with_detail] = _judge([AnswerItem("a", Q, answer, REF)],
                           {**denied, verifier_pair(REF, second): (0.01, 0.01, 0.98)}, settings)
    assert with_detail.verdict == "incorrect" and with_detail.claim == second
    assert with_detail.note == "The evidence contradicts a detail of the answer."


def test_a_short_answer_contradicted_only_when_read_plainly_is_not_called_wrong():
    """ "1945." against "The Second World War ended in 1945.": read plainly a bare year says little; read as
    the answer to its question the reference supports it, and the support wins."""
    answer = "Sydney."
    table = {verifier_pair(REF, answer, Q): (0.6, 0.3, 0.1), verifier_pair(REF, answer): (0.2, 0.0, 0.8)}
    [v] = _judge([AnswerItem("a", Q, answer, REF)], table)
    assert v.verdict != "incorrect" and v.score == pytest.approx(right_probability(0.6, 0.1, 0.8))
    [unsupported] = _judge([AnswerItem("a", Q, answer, REF)],
                           {**table, verifier_pair(REF, answer, Q): (0.2, 0.7, 0.1)})
    assert unsupported.verdict == "incorrect" and unsupported.p_contradicted == 0.8


def test_silence_is_unverified_and_no_evidence_or_a_refusal_decide_nothing():
    items = [AnswerItem("a", Q, "Canberra, probably.", REF), AnswerItem("b", Q, "Canberra.", None),
             AnswerItem("c", Q, "I do not know.", REF)]
    table = {verifier_pair(REF, "Canberra, probably.", Q): SILENT}
    silent, bare, refusal = _judge(items, table)
    assert (silent.verdict, bare.verdict, refusal.verdict) == ("unverified", "unverified", "no_answer")
    assert bare.probability is None and "No reference or sources" in bare.note
    assert refusal.score is None and refusal.label == "no answer"


def test_without_a_reference_the_sources_judge_the_answer():
    source = "The city of Canberra has been the capital since 1913."
    [v] = _judge([AnswerItem("a", Q, "Canberra.", None, (source,))], {verifier_pair(source, "Canberra.", Q): SUPPORTS})
    assert (v.verdict, v.evidence) == ("correct", "source 1")


def test_verdict_settings_name_bad_keys():
    with pytest.raises(ConfigError, match="memory.yaml: verdict.correct_at: must be between 0 and 1"):
        VerdictSettings.from_config({"correct_at": 2})
    with pytest.raises(ConfigError, match="unknown key"):
        VerdictSettings.from_config({"correct": 0.5})
    assert VerdictSettings.from_config() == VerdictSettings()


def test_the_verdict_is_stored_and_a_wrong_answer_is_capped_below_the_accepting_bands():
    verdict = AnswerVerdict("incorrect", 0.9, 0.05, 0.05, 0.9, 0.05, claim="Sydney.", passage=REF,
                            evidence="reference", note="The reference contradicts the answer.")
    outcome = TrustOutcome("q1", 0.49, "verification", "f", verdict=verdict, capped_from=0.82)
    meta = outcome.metadata()
    assert meta["trust_verdict"] == "incorrect" and meta["trust_verdict_p"] == 0.9
    assert meta["trust_verdict_passage"] == REF and meta["trust_uncapped"] == 0.82
    assert AnswerScorer.__new__(AnswerScorer).wrong_ceiling == 0.49     # the band above "poor" starts at 0.5


@pytest.mark.parametrize("grade, trust, answer, disagreement", [
    (5, 0.9, "incorrect", "judge higher"),     # the verdict decides, whatever the Trust
    (5, 0.2, "correct", None),                 # a right answer with a weak argument agrees with a high grade
    (1, 0.1, "correct", "critics higher"),
    (1, 0.9, "incorrect", None),
    (5, 0.2, "unverified", "judge higher"),    # no decided verdict: the Trust rule
    (5, 0.2, None, "judge higher"),
])
def test_the_disagreement_rule_reads_the_verdict_first(grade, trust, answer, disagreement):
    assert DisagreementRule().verdict(grade, trust, answer) == disagreement


def test_verdict_filters_are_checked():
    assert EngramFilters(answer_verdicts=("incorrect",)).answer_verdicts == ("incorrect",)
    with pytest.raises(ValueError, match="answer_verdicts: 'wrong' is not one of"):
        EngramFilters(answer_verdicts=("wrong",))


@pytest.mark.slow
def test_the_shipped_verifier_reads_the_moon_distance_as_wrong_and_the_right_answers_as_right():
    from cns_core.models import get_embedder, get_nli_backend

    items = [AnswerItem("m1", "How far is the Moon from Earth?", "About 40,000 kilometres.",
                        "On average about 384,400 kilometres."),
             AnswerItem("m2", "How far is the Moon from Earth?", "It is about 384,400 km away on average.",
                        "On average about 384,400 kilometres."),
             AnswerItem("c", Q, "Canberra is the capital of Australia.", REF),
             AnswerItem("r", "Who first demonstrated radio transmission?", "It was Tesla, in 1893.",
                        "Guglielmo Marconi")]
    moon_wrong, moon_right, canberra, tesla = judge_answers(items, get_nli_backend(), get_embedder())
    assert moon_wrong.verdict == "incorrect" and tesla.verdict == "incorrect"
    assert moon_right.verdict == "correct" and canberra.verdict == "correct"


@pytest.mark.slow
def test_in_the_memorys_path_a_year_reads_right_and_a_wrong_year_wrong():
    """The issue's short facts through :meth:`AnswerScorer.verdicts`, as the MemoryAgent scores a turn:
    "1945." against "The Second World War ended in 1945." was called incorrect (its plain reading), "1944."
    must stay incorrect (the passage states another year)."""
    q, ref = "When did the Second World War end?", "The Second World War ended in 1945."
    right, wrong = AnswerScorer().verdicts([AnswerItem("r", q, "1945.", ref), AnswerItem("w", q, "1944.", ref)])
    assert right.verdict == "correct" and right.score >= 0.5
    assert wrong.verdict == "incorrect" and "other figures" in wrong.note and wrong.score < 0.5



def test_the_verdict_rules_are_part_of_what_makes_a_verdict(monkeypatch):
    """A change of how verdicts are made from the readings changes the scorer's identity, so stored answers
    are judged again the new way (the same as every answer scored after it)."""
    import cns_core.judging.answer_verdict as answer_verdict

    before = LEAN.identity()
    assert before == VerdictSettings(head=None).identity()
    monkeypatch.setattr(answer_verdict, "VERDICT_RULES", answer_verdict.VERDICT_RULES + 1)
    assert LEAN.identity() != before
