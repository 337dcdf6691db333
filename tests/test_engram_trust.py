"""The critics' Trust Score beside the judge's grade: the disagreement rule, the memory's
``trust_*`` keys and filters, and the Engrams page showing both (AppTest)."""

from __future__ import annotations

import re
import time

import pytest
from streamlit.testing.v1 import AppTest

from cns_core.config import ConfigError
from cns_core.engrams import UNTRUSTED, DisagreementRule, EngramFilters
from cns_core.memory import MemoryService
from judge_loop_helpers import lean_torch  # noqa: F401  (fixture)

pytestmark = pytest.mark.usefixtures("lean_torch")

RULE = DisagreementRule()          # the rule: judge 4-5 with Trust < 0.5, judge 1-2 with Trust >= 0.7


@pytest.mark.parametrize("grade, trust, verdict", [
    (5, 0.49, "judge higher"),
    (4, 0.0, "judge higher"),
    (4, 0.5, None),                # at the threshold: not below it
    (3, 0.1, None),                # a middling grade never disagrees
    (3, 0.95, None),
    (2, 0.7, "critics higher"),    # 0.7 and up
    (1, 1.0, "critics higher"),
    (2, 0.69, None),
    (5, 0.9, None),
    (1, 0.2, None),
    (None, 0.1, None),             # ungraded
    (5, None, None),               # not scored by the critics
])
def test_the_disagreement_rule(grade, trust, verdict):
    assert RULE.verdict(grade, trust) == verdict


@pytest.mark.parametrize("cfg, message", [
    ({"judge_high": 6}, "disagree.judge_high: expected an integer 1-5, got 6"),
    ({"trust_low": 1.5}, "disagree.trust_low: expected a number between 0 and 1, got 1.5"),
    ({"judge_low": 4, "judge_high": 4}, "judge_low 4 must be below judge_high 4"),
    ({"trust_low": 0.8, "trust_high": 0.7}, "trust_low 0.8 is above trust_high 0.7"),
    ({"trust_hi": 0.7}, "unknown key(s) trust_hi"),
])
def test_a_bad_rule_is_refused_naming_the_key(cfg, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        DisagreementRule.from_config(cfg)


def test_trust_settings_read_memory_yaml_and_name_bad_keys():
    from cns_core.judging.answer_trust import TrustSettings

    settings = TrustSettings.from_config()
    assert settings.profile == "verification" and settings.rule == RULE and settings.enabled
    with pytest.raises(ConfigError, match=re.escape("memory.yaml: trust.profile: unknown weight profile 'nope'")):
        TrustSettings.from_config({"profile": "nope"})
    with pytest.raises(ConfigError, match=re.escape("memory.yaml: trust.disagree.trust_low")):
        TrustSettings.from_config({"disagree": {"trust_low": -1}})
    with pytest.raises(ConfigError, match=re.escape("memory.yaml: trust: unknown key(s) enable")):
        TrustSettings.from_config({"enable": False})


# grade, trust (None: not scored) of the 12 engrams below
ROWS = [(5, 0.9), (5, 0.3), (4, 0.45), (4, 0.6), (3, 0.2), (3, 0.8), (2, 0.75), (2, 0.4), (1, 0.95), (1, 0.1),
        (None, 0.8), (4, None)]


def _fill(memory: MemoryService) -> list[str]:
    now = time.time()
    ids = memory.write_episodic_many([
        {"query": f"Question {i}?", "answer": f"Answer {i} about <i>tides</i>.", "session_id": "s",
         "query_id": f"t{i:02d}", "timestamp": now - 60 * i} for i in range(len(ROWS))])
    for qid, (grade, _) in zip(ids, ROWS):
        if grade is not None:
            memory.update_engram_score(qid, grade, f"feedback {qid}")
    memory.record_trust({qid: ({"trust_score": trust, "trust_complete": qid != "t03", "trust_incomplete":
                                "grounding" if qid == "t03" else None, "trust_evidence": 1, "trust_claims": 2,
                                "trust_settings": "fp", "trust_profile": "verification"} if trust is not None else
                               {"trust_error": "drafting: the text is empty"})
                         for qid, (_, trust) in zip(ids, ROWS)})
    return ids


@pytest.fixture
def memory(tmp_path, state_dir):
    m = MemoryService(path=tmp_path / "chroma")
    _fill(m)
    return m


def _ids(memory: MemoryService, filters: EngramFilters) -> set[str]:
    return {e.id for e in memory.browse(filters, limit=100)}


def test_trust_is_stored_beside_the_grade_and_filtered(memory):
    (e,) = memory.get(["t01"])
    assert (e.critic_score, e.trust_score, e.trust_complete) == (5, 0.3, True)
    (e,) = memory.get(["t03"])
    assert e.trust_complete is False and e.metadata["trust_incomplete"] == "grounding"
    (e,) = memory.get(["t11"])
    assert e.trust_score is None and e.metadata["trust_score"] == UNTRUSTED
    assert e.metadata["trust_error"] == "drafting: the text is empty" and "trust_settings" not in e.metadata
    expected = {f"t{i:02d}" for i, (_, t) in enumerate(ROWS) if t is not None and 0.4 <= t <= 0.8}
    assert _ids(memory, EngramFilters(min_trust=0.4, max_trust=0.8)) == expected == {"t02", "t03", "t05", "t06",
                                                                                   "t07", "t10"}
    assert _ids(memory, EngramFilters(untrusted_only=True)) == {"t11"}
    disagreeing = {f"t{i:02d}" for i, (g, t) in enumerate(ROWS) if RULE.verdict(g, t)}
    assert disagreeing == {"t01", "t02", "t06", "t08"}
    assert _ids(memory, EngramFilters(disagreeing=RULE)) == disagreeing
    assert memory.count(EngramFilters(disagreeing=RULE)) == 4
    # with a score filter and the score order, the rule still holds
    assert _ids(memory, EngramFilters(min_score=4, disagreeing=RULE)) == {"t01", "t02"}
    assert [e.id for e in memory.browse(EngramFilters(disagreeing=RULE), order="score")] == ["t01", "t02", "t06",
                                                                                              "t08"]
    wider = DisagreementRule(trust_low=0.65)                       # t03 (4, 0.6) now too; t11 (4, none) never
    assert _ids(memory, EngramFilters(min_score=4, disagreeing=wider)) == {"t01", "t02", "t03"}


def test_a_rewrite_keeps_the_trust_score_and_the_grade_only_while_the_text_is_unchanged(memory):
    memory.write_episodic("Question 0?", "Answer 0 about <i>tides</i>.", "s", "t00")
    (same,) = memory.get(["t00"])
    assert same.trust_score == 0.9 and same.critic_score == 5            # same text: both still hold
    memory.write_episodic("Question 0?", "A different answer.", "s", "t00")
    (e,) = memory.get(["t00"])
    assert e.trust_score is None and "trust_settings" not in e.metadata   # new text: not scored yet
    assert e.critic_score is None and not e.graded    # the grade judged the other answer: graded again (issue 71)


def test_trust_keys_belong_to_the_memory(memory):
    with pytest.raises(ValueError, match=re.escape("turn 0: metadata: trust_score are set by the memory itself")):
        memory.write_episodic("Q?", "A.", "s", "x1", trust_score=0.9)
    with pytest.raises(ValueError, match=re.escape("trust[t00].trust_score: expected a number between 0 and 1")):
        memory.record_trust({"t00": {"trust_score": 1.5}})
    with pytest.raises(ValueError, match=re.escape("trust[t00]: unknown key(s) trust_mood")):
        memory.record_trust({"t00": {"trust_mood": "fine"}})
    assert memory.record_trust({"nobody": {"trust_score": 0.5}}) == []      # unknown ids are skipped
    assert memory.get(["t00"])[0].trust_score == 0.9                         # nothing was lost
    assert memory.trust_settings_of(["t00", "t11"]) == {"t00": "fp"}         # t11 holds no score


def test_filters_refuse_contradictions_naming_the_field():
    with pytest.raises(ValueError, match="min_trust 0.8 is above max_trust 0.2"):
        EngramFilters(min_trust=0.8, max_trust=0.2)
    with pytest.raises(ValueError, match="max_trust: expected a number between 0 and 1"):
        EngramFilters(max_trust=2)
    with pytest.raises(ValueError, match="untrusted_only cannot be combined"):
        EngramFilters(untrusted_only=True, disagreeing=RULE)


def test_build_filters_maps_the_trust_widgets():
    from cns_core.views.engram_view import FilterChoice, build_filters

    f = build_filters(FilterChoice())
    assert (f.min_trust, f.max_trust, f.untrusted_only, f.disagreeing) == (None, None, False, None)
    f = build_filters(FilterChoice(trust_range=(0.25, 1.0), disagree_only=True), RULE)
    assert (f.min_trust, f.max_trust, f.disagreeing) == (0.25, 1.0, RULE)
    assert build_filters(FilterChoice(disagree_only=True)).disagreeing == RULE      # the configured rule
    f = build_filters(FilterChoice(trust_range=(0.25, 0.5), untrusted_only=True))
    assert (f.min_trust, f.untrusted_only) == (None, True)                        # the range is disabled then
    with pytest.raises(ValueError, match="without a Trust Score cannot disagree"):
        build_filters(FilterChoice(untrusted_only=True, disagree_only=True))


# ----- the Engrams page ------------------------------------------------------------
TRUST = re.compile(r'class="cns-trust" data-trust="([^"]+)"')
MARK = re.compile(r'class="cns-disagree" data-verdict="([^"]+)"')


@pytest.fixture
def page_state(tmp_path, monkeypatch):
    monkeypatch.setenv("CNS_STATE_DIR", str(tmp_path))
    _fill(MemoryService())
    return tmp_path


def _html(at: AppTest) -> str:
    return "".join(m.value for m in at.markdown)


def test_engrams_page_shows_trust_beside_the_grade_and_marks_disagreements(page_state):
    at = AppTest.from_file("../pages/engrams.py", default_timeout=60).run()
    assert not at.exception
    html = _html(at)
    trust = TRUST.findall(html)
    assert len(trust) == len(ROWS) and trust.count("none") == 1
    assert sorted(float(t) for t in trust if t != "none") == sorted(t for _, t in ROWS if t is not None)
    assert sorted(MARK.findall(html)) == ["critics higher", "critics higher", "judge higher", "judge higher"]
    assert "Trust 0.60 (incomplete)" in html and "drafting: the text is empty" in html       # reasons on hover
    assert any("**4** where the judge and the critics disagree" in m.value for m in at.markdown)

    at.checkbox(key="cns_engrams_disagree").check().run()
    assert not at.exception
    assert any("**4** of **12** engrams match" in m.value for m in at.markdown)
    assert len(MARK.findall(_html(at))) == 4 and len(TRUST.findall(_html(at))) == 4
    at.checkbox(key="cns_engrams_disagree").uncheck().run()

    at.slider(key="cns_engrams_trust").set_value((0.7, 1.0)).run()
    values = sorted(float(t) for t in TRUST.findall(_html(at)))
    assert values == [0.75, 0.8, 0.8, 0.9, 0.95]
    at.checkbox(key="cns_engrams_untrusted").check().run()
    assert TRUST.findall(_html(at)) == ["none"]
    at.checkbox(key="cns_engrams_disagree").check().run()          # contradicts "no Trust Score only"
    assert not at.exception
    assert any("without a Trust Score cannot disagree" in e.value for e in at.error)
