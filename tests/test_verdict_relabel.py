"""A calibration that is a calibration (issue 50 item 3): each answer keeps the verifier's readings, so fitting
or reverting re-decides every stored verdict from them without the model; p(right) goes through the fitted
Platt map and the threshold lies on that scale, so one p(right) reads one verdict on every card, in the export
and in the review queue. An answer stored without readings is judged by the verifier once."""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest
from critic_doubles import TableEmbedder, TableNLI
from judge_loop_helpers import lean_torch  # noqa: F401  (a fixture)
from streamlit.testing.v1 import AppTest

from cns_core.judging import verdict_calibration as vc
from cns_core.judging.answer_trust import AnswerItem, TrustOutcome, rejudge, relabel
from cns_core.judging.answer_verdict import (FEATURES, Evidence, VerdictReadings, VerdictSettings, decide,
                                           judge_answers)
from cns_core.critics.grounding_verdict import shown_probability
from cns_core.engrams import DisagreementRule
from cns_core.memory import MemoryService
from cns_core.models.verifier import verifier_pair
from cns_core.people.annotations import Annotation
from cns_core.people.calibrate import annotated_engrams, calibrate_message, revert_message

Q = "What is the capital of Australia?"
REF = "Canberra is the capital of Australia."
SUPPORTS, CONTRADICTS, SILENT = (0.9, 0.05, 0.05), (0.05, 0.05, 0.9), (0.1, 0.8, 0.1)
LEAN = VerdictSettings(head=None)
CALIBRATED = replace(LEAN, platt=(2.5, -1.2), correct_at=0.61, calibration=3, configured_correct_at=0.5)

# One answer of each kind of verdict, with the verifier's rows (as in test_answer_verdict).
CASES = [
    ("Canberra.", {verifier_pair(REF, "Canberra.", Q): SUPPORTS}),
    ("Sydney is the capital of Australia.", {verifier_pair(REF, "Sydney is the capital of Australia.", Q): CONTRADICTS}),
    ("Canberra, probably.", {verifier_pair(REF, "Canberra, probably.", Q): SILENT}),
    ("Canberra, maybe.", {verifier_pair(REF, "Canberra, maybe.", Q): (0.55, 0.35, 0.1)}),
    ("The capital moved there. It was founded by sailors.",
     {verifier_pair(REF, "The capital moved there. It was founded by sailors.", Q): SUPPORTS,
      verifier_pair(REF, "It was founded by sailors."): (0.01, 0.01, 0.98)}),
    ("Canberra is the capital. It has many parks.",
     {verifier_pair(REF, "Canberra is the capital. It has many parks.", Q): SUPPORTS,
      verifier_pair(REF, "Canberra is the capital."): SUPPORTS}),
    ("I do not know.", {}),
]


def _judge(answers_tables, settings):
    items = [AnswerItem(f"a{i}", Q, answer, REF) for i, (answer, _) in enumerate(answers_tables)]
    table = {pair: row for _, rows in answers_tables for pair, row in rows.items()}
    same = {text: [1.0] + [0.0] * 15 for pair in table for text in pair}
    same.update({t: [1.0] + [0.0] * 15 for item in items for t in (item.answer, REF)})
    return judge_answers(items, TableNLI(table), TableEmbedder(same), settings)


@pytest.mark.parametrize("settings", [LEAN, CALIBRATED], ids=["configured", "calibrated"])
def test_a_verdict_decided_again_from_its_stored_readings_is_the_one_the_verifier_gives(settings):
    judged = _judge(CASES, settings)
    assert {v.verdict for v in judged} == {"correct", "incorrect", "unverified", "no_answer"}
    for (answer, _), verdict in zip(CASES, judged):
        stored = VerdictReadings.from_json(verdict.readings.to_json())      # through the engram's metadata
        again = decide(stored, answer, settings)
        assert again == verdict and again.metadata() == verdict.metadata(), answer
        if verdict.score is not None:
            assert (verdict.verdict == "correct") == (verdict.score >= settings.correct_at)
    # the calibration's Platt map is what p(right) is: the verdict compares the number the pages show
    plain, calibrated = _judge(CASES[:1], LEAN)[0], _judge(CASES[:1], CALIBRATED)[0]
    assert calibrated.score == CALIBRATED.p_right(plain.score) != plain.score
    assert calibrated.metadata()["trust_verdict_calibration"] == 3


@pytest.mark.parametrize("text, problem", [
    (None, "no readings"), ("{", "damaged"), ('{"version": 2}', "version 2"), ("x" * 30_000, "more than"),
    ('{"version": 1, "kind": "judged", "features": [1], "support": 0, "against": 0}', "1 features"),
])
def test_damaged_readings_are_refused_naming_the_problem(text, problem):
    with pytest.raises(ValueError, match=problem):
        VerdictReadings.from_json(text)


def _readings(support: float, against: float, answer: str) -> VerdictReadings:
    features = np.zeros(len(FEATURES))
    features[FEATURES.index("support")] = features[FEATURES.index("plain_support")] = support
    features[FEATURES.index("contradiction")] = against
    return VerdictReadings(features=tuple(features), support=support, against=against,
                           supported=Evidence(answer, REF, "reference", 0.1),
                           contradicted=Evidence(answer, REF, "reference", 0.1), first_claim=answer)


N = 60


@pytest.fixture
def judged_memory(tmp_path, monkeypatch, lean_torch):
    """60 answers stored as the MemoryAgent stores them (verdict, Trust Score, readings) under the configured
    settings, 40 of them marked by a person whose cut lies near p(right) 0.3; the verifier is made unusable."""
    monkeypatch.setenv("CNS_STATE_DIR", str(tmp_path))
    monkeypatch.setattr("cns_core.models.get_nli_backend", _no_model)
    monkeypatch.setattr("cns_core.judging.answer_trust.AnswerScorer.verdicts", _no_model)
    rng = np.random.default_rng(5)
    memory = MemoryService()
    memory.write_episodic_many([{"query": f"Question {i % 12}?", "answer": f"Answer {i}.", "session_id": "s",
                                 "query_id": f"r{i:02d}", "timestamp": 1_700_000_000 + i} for i in range(N)])
    support = np.round(rng.random(N), 3)
    settings = VerdictSettings.from_config()
    trust = {}
    for i in range(N):
        verdict = decide(_readings(float(support[i]), float(rng.random() * 0.2), f"Answer {i}."), f"Answer {i}.",
                         settings, settings.verdict_head())
        trust[f"r{i:02d}"] = TrustOutcome(f"r{i:02d}", 0.7, "verification", "fp-stored", verdict=verdict).metadata()
    memory.record_trust(trust)
    right = (support >= 0.3) ^ (rng.random(N) < 0.08)
    memory.record_annotations([Annotation(f"r{i:02d}", "correct" if right[i] else "incorrect") for i in range(40)])
    return memory


def _no_model(*_args, **_kwargs):
    raise AssertionError("the verifier was called: a calibration must re-decide stored verdicts from their readings")


def _one_verdict_per_shown_p_right(engrams, threshold: float) -> None:
    seen: dict[float, bool] = {}
    for e in engrams:
        shown = shown_probability(e.metadata["trust_verdict_score"])
        correct = e.answer_verdict == "correct"
        assert correct == (e.metadata["trust_verdict_score"] >= threshold) == (shown >= threshold), e.id
        assert seen.setdefault(shown, correct) == correct, f"p(right) {shown:.2f} reads two verdicts"


def test_fitting_and_reverting_relabel_every_stored_verdict_from_its_readings(judged_memory):
    from cns_core.people.export import engram_row
    from cns_core.views.engram_view import trust_html
    from cns_core.views.review import review_queue

    memory = judged_memory
    ids = [f"r{i:02d}" for i in range(N)]
    before = {e.id: e.metadata for e in memory.get(ids)}
    said = calibrate_message(annotated_engrams(memory))
    calibration = vc.active_calibration()
    assert calibration.adopted and calibration.p_map is not None, said
    report = relabel(memory)
    assert (report.relabelled, report.needs_model) == (N, [])
    settings = VerdictSettings.from_config()
    assert settings.platt == calibration.p_map and settings.correct_at == calibration.threshold
    after = memory.get(ids)
    for e in after:
        readings = VerdictReadings.from_json(e.metadata["trust_readings"])
        expected = decide(readings, e.answer, settings).metadata()
        assert {k: e.metadata.get(k) for k in expected} == expected          # as a fresh judgement decides it
        assert e.metadata["trust_verdict_calibration"] == calibration.version
        assert e.metadata["trust_settings"] == "fp-stored"                  # the critics' score is kept
        assert engram_row(e)["answer_verdict_p_right"] == e.metadata["trust_verdict_score"]      # the export
        label = re.search(r'data-verdict="(\w+)"', trust_html(e, DisagreementRule())).group(1)
        assert label == e.answer_verdict                                     # the card
    assert sum(e.metadata["trust_verdict_score"] != before[e.id]["trust_verdict_score"] for e in after) > N // 2
    _one_verdict_per_shown_p_right(after, settings.correct_at)
    queue = review_queue(memory, DisagreementRule(), settings.correct_at, 10)     # the review queue: same numbers
    distances = [abs(q.metadata["trust_verdict_score"] - settings.correct_at) for q in queue]
    assert distances == sorted(distances)
    revert_message()
    assert relabel(memory).relabelled == N
    for e in memory.get(ids):
        assert {k: e.metadata.get(k) for k in ("trust_verdict", "trust_verdict_score", "trust_score")} == \
            {k: before[e.id].get(k) for k in ("trust_verdict", "trust_verdict_score", "trust_score")}
        assert e.metadata["trust_verdict_calibration"] == 0


def test_an_answer_stored_without_readings_is_judged_by_the_verifier_once(tmp_path, monkeypatch, lean_torch):
    monkeypatch.setenv("CNS_STATE_DIR", str(tmp_path))
    memory = MemoryService()
    memory.write_episodic_many([{"query": Q, "answer": answer, "session_id": "s", "query_id": f"old{i}",
                                 "metadata": {"reference": REF}} for i, (answer, _) in enumerate(CASES[:3])])
    memory.record_trust({f"old{i}": {"trust_score": 0.7, "trust_verdict": "unverified", "trust_verdict_score": 0.4,
                                     "trust_settings": "fp-old"} for i in range(3)})          # an older memory

    class TableScorer:      # the verifier's rows of CASES, as AnswerScorer.verdicts would give them
        wrong_ceiling, fingerprint = 0.49, "fp-table"

        def verdicts(self, items):
            return _judge([(item.answer, dict(CASES)[item.answer]) for item in items], VerdictSettings.from_config())

    first = relabel(memory)
    assert first.relabelled == 0 and sorted(first.needs_model) == ["old0", "old1", "old2"]
    assert rejudge(memory, TableScorer(), ids=first.needs_model).scored == 3
    stored = {e.id: e for e in memory.get(["old0", "old1", "old2"])}
    assert [stored[f"old{i}"].answer_verdict for i in range(3)] == ["correct", "incorrect", "unverified"]
    assert all("trust_readings" in e.metadata for e in stored.values())
    monkeypatch.setattr("cns_core.judging.answer_trust.AnswerScorer.verdicts", _no_model)
    again = relabel(memory)
    assert again.relabelled == 3 and again.needs_model == []


def test_the_engrams_page_shows_the_new_badges_on_the_rerun_after_fitting(judged_memory):
    from cns_core.views.relabel_job import relabel_job

    at = AppTest.from_file("../pages/engrams.py", default_timeout=90).run()
    assert not at.exception
    at.button(key="cns_engrams_calibrate").click().run()
    assert not at.exception and not at.error
    [success] = [s.value for s in at.success if "Calibration version 1 is active" in s.value]
    assert f"{N} stored verdict(s) decided again from their readings" in success
    assert relabel_job(judged_memory) is None              # nothing left for the verifier: no background job
    stored = {e.id: e.answer_verdict for e in judged_memory.get([f"r{i:02d}" for i in range(N)])}
    cards = re.findall(r'data-verdict="(\w+)".*?id (r\d\d)</div>', "".join(m.value for m in at.markdown), re.S)
    assert len(cards) == 25 and all(stored[i] == verdict for verdict, i in cards)
    assert any(f"threshold {vc.active_calibration().threshold:.2f} on p(right) recalibrated" in m.value
               for m in at.markdown)
