"""Agreement with the person, the verdict fitted to their verdicts (versioned, reversible), and the export."""

from __future__ import annotations

import csv
import json
import re

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from cns_core.judging import verdict_calibration as vc
from cns_core.judging.agreement import agreement
from cns_core.people.annotations import Annotation
from cns_core.cli import main as cns
from cns_core.config import ConfigError
from cns_core.engrams import DisagreementRule, Engram
from cns_core.memory import MemoryService
from cns_core.views.relabel_job import relabel_job
from judge_loop_helpers import lean_torch, wait_for  # noqa: F401  (lean_torch: a fixture)

pytestmark = pytest.mark.usefixtures("lean_torch")


def _engram(i: int, grade: int | None, verdict: str | None, p: float | None, trust: float | None,
            person: str | None) -> Engram:
    meta = {"trust_verdict": verdict, "trust_verdict_score": p, "trust_score": -1.0 if trust is None else trust}
    if person:
        meta["human_verdict"] = person
    return Engram(f"e{i}", f"question {i % 7}?", "answer", "s", 0.0, grade, "", {k: v for k, v in meta.items()
                                                                                if v is not None})


def test_agreement_scores_each_call_against_the_person():
    rows = [  # grade, verdict, p(right), trust, person
        (5, "correct", 0.9, 0.8, "correct"), (4, "incorrect", 0.1, 0.3, "incorrect"),
        (2, "correct", 0.7, 0.6, "correct"), (3, "unverified", 0.4, 0.2, "incorrect"),
        (1, "incorrect", 0.05, None, "incorrect"), (5, "correct", 0.8, 0.9, "unsure"), (None, None, None, None, None)]
    judge, verdict, trust = agreement([_engram(i, *r) for i, r in enumerate(rows)])
    assert (judge.marked, judge.n, verdict.n, trust.n) == (5, 4, 4, 4)      # unsure and unmarked left out
    assert judge.confusion == {"right/right": 1, "right/wrong": 1, "wrong/right": 1, "wrong/wrong": 1}
    assert judge.accuracy == 0.5 and verdict.accuracy == 1.0 and trust.accuracy == 1.0
    assert verdict.auc == 1.0 and verdict.auc_n == 5
    assert judge.too_few and "judge" in judge.name
    lo, hi = verdict.interval
    assert lo == hi == 1.0


def test_agreement_reads_from_twenty_calls_with_a_seeded_interval():
    rng = np.random.default_rng(0)
    rows = [(int(rng.integers(1, 6)), "correct" if p > 0.5 else "incorrect", float(p), float(p),
             "correct" if rng.random() < p else "incorrect") for p in rng.random(40)]
    engrams = [_engram(i, *r) for i, r in enumerate(rows)]
    first, again = agreement(engrams, seed=3), agreement(engrams, seed=3)
    assert [r.interval for r in first] == [r.interval for r in again]
    verdict = first[1]
    assert not verdict.too_few and verdict.n == 40
    assert verdict.interval[0] < verdict.accuracy < verdict.interval[1]


def _synthetic(n: int = 200, cut: float = 0.3, seed: int = 1):
    """p(right) whose true cut is at ``cut`` (right above it, 10% noise), 40 questions."""
    rng = np.random.default_rng(seed)
    score = rng.random(n)
    right = (score >= cut) ^ (rng.random(n) < 0.1)
    return score.tolist(), right.tolist(), [f"q{i % 40}" for i in range(n)]


def test_the_fit_moves_the_threshold_toward_the_persons_cut_and_says_by_how_much():
    cal = vc.fit_calibration(*_synthetic(), base_threshold=0.5)
    assert cal.adopted and abs(cal.raw_threshold - 0.3) < 0.08  # the person's cut, as the verifier's p(right)
    assert cal.threshold == round(cal.threshold, 2)              # on the recalibrated scale, in hundredths
    assert cal.cv_after > cal.cv_before
    assert cal.platt_a > 0                                      # a higher p(right) means more often right
    assert "p(right) recalibrated" in cal.describe() and f"{cal.threshold:.2f} on that scale" in cal.describe()
    kept = vc.fit_calibration(*_synthetic(cut=0.5), base_threshold=0.5)
    assert abs(kept.raw_threshold - 0.5) < 0.08                  # already right: stays about where it was
    with pytest.raises(ValueError, match="10 marked answers to 10 questions; at least 20"):
        vc.fit_calibration([0.1] * 10, [True, False] * 5, [f"q{i}" for i in range(10)], 0.5)
    with pytest.raises(ValueError, match="all correct; mark some of each"):
        vc.fit_calibration([0.1] * 30, [True] * 30, [f"q{i}" for i in range(30)], 0.5)


def test_calibrations_are_versioned_active_and_reversible(state_dir):
    from cns_core.judging.answer_verdict import VerdictSettings

    assert vc.active_calibration() is None and VerdictSettings.from_config().correct_at == 0.5
    first = vc.save_calibration(vc.fit_calibration(*_synthetic(), base_threshold=0.5))
    second = vc.save_calibration(vc.fit_calibration(*_synthetic(cut=0.7), base_threshold=0.5))
    assert (first.version, second.version) == (1, 2)
    assert VerdictSettings.from_config().correct_at == second.threshold         # the verdict reads it
    assert vc.revert_calibration().version == 1
    assert VerdictSettings.from_config().correct_at == first.threshold
    assert vc.revert_calibration() is None and VerdictSettings.from_config().correct_at == 0.5
    with pytest.raises(ValueError, match="no calibration is active"):
        vc.revert_calibration()
    assert sorted(p.name for p in vc.calibration_dir().glob("v*.json")) == ["v0001.json", "v0002.json"]  # kept
    (vc.calibration_dir() / "active.json").write_text("{broken", encoding="utf-8")
    with pytest.raises(ConfigError, match="unreadable calibration"):
        VerdictSettings.from_config()


def _filled(path, cut: float = 0.3) -> MemoryService:
    memory = MemoryService(path=path)
    score, right, _ = _synthetic(60, cut=cut)
    memory.write_episodic_many([{"query": f"Question {i % 15}?", "answer": f"=SUM(A{i})", "session_id": "s",
                                 "query_id": f"m{i:02d}", "timestamp": 1_700_000_000 + i,
                                 "metadata": {"reference": "the reference"}} for i in range(60)])
    memory.update_engram_score("m00", 4, "fine")
    memory.record_trust({f"m{i:02d}": {"trust_score": 0.6, "trust_verdict": "correct" if s >= 0.5 else "unverified",
                                       "trust_verdict_score": round(s, 4), "trust_settings": "fp1"}
                         for i, s in enumerate(score) if i < 50})
    memory.record_annotations([Annotation(f"m{i:02d}", "correct" if r else "incorrect", who="ana")
                               for i, r in enumerate(right)])
    return memory


def test_cli_calibrate_fits_from_the_memory_and_reverts(tmp_path, state_dir, capsys):
    _filled(tmp_path / "chroma")
    assert cns(["calibrate", "--path", str(tmp_path / "chroma")]) == 0
    out = capsys.readouterr().out
    assert re.search(r"version 1 is active: .*threshold 0\.500 -> 0\.\d+", out) and "50 marked answers" in out
    assert vc.active_calibration().version == 1
    # the stored verdicts are judged again at once under the fitted threshold (no trust-backfill needed): these
    # were stored without the verifier's readings, so the verifier judges them, once
    threshold = vc.active_calibration().threshold
    assert "50 stored without readings judged again by the verifier" in out
    assert "10 answer(s) without a Trust Score left as they are" in out
    engrams = MemoryService(path=tmp_path / "chroma").get([f"m{i:02d}" for i in range(60)])
    judged = [e for e in engrams[:50]]
    assert {e.metadata["trust_settings"] for e in judged} != {"fp1"}                 # re-judged, new fingerprint
    for e in judged:
        p_right = e.metadata["trust_verdict_score"]
        if e.answer_verdict != "incorrect":
            assert (e.answer_verdict == "correct") == (p_right >= threshold), (e.id, p_right, e.answer_verdict)
        assert e.trust_score == (0.49 if e.answer_verdict == "incorrect" else 0.6)   # the cap follows the verdict
    assert all(e.answer_verdict is None for e in engrams[50:])
    assert all(e.metadata["trust_verdict_calibration"] == 1 for e in judged)
    assert cns(["calibrate", "--revert", "--path", str(tmp_path / "chroma")]) == 0
    out = capsys.readouterr().out
    assert "the configured threshold 0.500" in out and vc.active_calibration() is None
    # now they carry their readings: decided again from them, without the verifier
    assert "50 stored verdict(s) decided again from their readings under threshold 0.500" in out
    assert "judged again by the verifier" not in out
    assert cns(["calibrate", "--revert"]) == 1
    assert "no calibration is active" in capsys.readouterr().err


def test_cli_calibrate_with_too_few_verdicts_says_so(tmp_path, state_dir, capsys):
    MemoryService(path=tmp_path / "chroma")
    assert cns(["calibrate", "--path", str(tmp_path / "chroma")]) == 1
    assert "0 marked answers to 0 questions; at least 20" in capsys.readouterr().err
    assert vc.active_calibration() is None


def test_export_has_every_column_and_the_settings_in_every_row(tmp_path, state_dir, capsys):
    _filled(tmp_path / "chroma")
    path = str(tmp_path / "chroma")
    assert cns(["export", "-o", str(tmp_path / "out.csv"), "--path", path]) == 0
    assert "export: 60 engram(s) as csv" in capsys.readouterr().out
    with open(tmp_path / "out.csv", encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 60 and rows[0]["id"] == "m00"                       # oldest first
    assert rows[0]["answer"] == "'=SUM(A0)"                                   # not run as a formula
    assert rows[0]["judge_grade"] == "4" and rows[0]["judge_feedback"] == "fine"      # named what they hold
    assert "critic_score" not in rows[0]
    assert rows[0]["reference"] == "the reference" and rows[0]["human_who"] == "ana"
    assert {r["trust_settings"] for r in rows[:50]} == {"fp1"} and {r["trust_settings"] for r in rows[50:]} == {""}
    assert cns(["export", "-o", str(tmp_path / "out.jsonl"), "--path", path]) == 0
    lines = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 60 and all("trust_settings" in r and "human_verdict" in r for r in lines)
    assert lines[0]["answer"] == "=SUM(A0)" and isinstance(lines[0]["answer_verdict_p_right"], float)
    assert "trust_verdict" not in lines[0] and lines[0]["answer_verdict"] in ("correct", "unverified")  # issue 70
    assert cns(["export", "-o", str(tmp_path), "--path", path]) == 1
    assert "is a folder" in capsys.readouterr().err


def _hostile_store(path) -> str:
    memory = MemoryService(path=path)
    memory.write_episodic_many([
        {"query": "Q1?", "answer": "\t=1+1", "session_id": "s", "query_id": "tab", "timestamp": 1_700_000_000},
        {"query": "Q2?", "answer": "\r=1+1", "session_id": "s", "query_id": "cr", "timestamp": 1_700_000_001},
        {"query": "Q3?\x1b]0;x\x07", "answer": "a\nb\tc\x9b", "session_id": "s", "query_id": "ctl\x1b[2J\x07",
         "timestamp": 1_700_000_002}])
    memory.record_annotations([Annotation("tab", "correct", who="ana")], at=1_700_000_100.5)
    return str(path)


def test_export_neutralises_formulas_and_control_characters_and_writes_iso_times(tmp_path, state_dir, capsys):
    """Issue 44, item 4: a leading tab or CR before `=1+1` was written unchanged, a query id of
    `ctl\x1b[2J\x07` raw (a terminal `cat`ing the file cleared its screen), times as epoch numbers."""
    path = _hostile_store(tmp_path / "chroma")
    assert cns(["export", "csv", "-o", str(tmp_path / "out.csv"), "--path", path]) == 0   # the format as a word
    raw = (tmp_path / "out.csv").read_text(encoding="utf-8")
    assert not any(c in raw for c in "\x1b\x07\x9b")
    with open(tmp_path / "out.csv", encoding="utf-8", newline="") as f:
        rows = {r["id"]: r for r in csv.DictReader(f)}
    assert rows["tab"]["answer"] == "'\t=1+1" and rows["cr"]["answer"] == "\\x0d=1+1"
    assert set(rows) == {"tab", "cr", "ctl\\x1b[2J\\x07"}
    ctl = rows["ctl\\x1b[2J\\x07"]
    assert ctl["query"] == "Q3?\\x1b]0;x\\x07" and ctl["answer"] == "a\nb\tc\\x9b"   # line break and tab kept
    assert rows["tab"]["timestamp"] == "2023-11-14T22:13:20.000+00:00"
    assert rows["tab"]["human_at"] == "2023-11-14T22:15:00.500+00:00"
    assert cns(["export", "jsonl", "-o", str(tmp_path / "out.jsonl"), "--path", path]) == 0
    text = (tmp_path / "out.jsonl").read_text(encoding="utf-8")
    assert "\x9b" not in text and "\\u001b" not in text        # escaped visibly, not as a JSON escape of ESC
    assert json.loads(text.splitlines()[2])["id"] == "ctl\\x1b[2J\\x07"
    assert cns(["export", "csv", "--path", path]) == 1
    assert "-o FILE: required, e.g. cns export csv -o answers.csv" in capsys.readouterr().err


def test_export_refuses_paths_it_should_not_write_and_says_why_in_words(tmp_path, state_dir, capsys):
    """Item 4: a missing folder was created (at /), a read-only file or a symlink replaced silently, and OS
    errors came as `[Errno 17] File exists: 'out.csv'`."""
    path = _hostile_store(tmp_path / "chroma")

    def export(target, *extra) -> str:
        assert cns(["export", "-o", str(target), "--path", path, *extra]) == 1
        err = capsys.readouterr().err
        assert "Errno" not in err and "Traceback" not in err
        return err

    missing = tmp_path / "nonexistent-root-dir" / "x.csv"
    assert f"the folder {missing.parent} does not exist (create it first" in export(missing)
    assert not missing.parent.exists()
    (tmp_path / "out.csv").write_text("old")
    assert f"{tmp_path / 'out.csv'} is a file, not a folder" in export(tmp_path / "out.csv" / "inner.csv")
    locked = tmp_path / "locked.csv"
    locked.write_text("keep me")
    locked.chmod(0o444)
    link = tmp_path / "link.csv"
    link.symlink_to(tmp_path / "out.csv")
    assert "the file is read-only; give --force to replace it" in export(locked)
    assert locked.read_text() == "keep me"
    assert "is a symbolic link (to " in export(link) and link.is_symlink()
    assert cns(["export", "-o", str(link), "--path", path, "--force"]) == 0
    assert not link.is_symlink() and (tmp_path / "out.csv").read_text() == "old"    # the target untouched
    assert cns(["export", "-o", str(locked), "--path", path, "--force"]) == 0 and "tab" in locked.read_text()


def test_export_os_errors_in_words():
    import errno

    from cns_core.cli.output import os_error_words

    assert os_error_words(PermissionError(errno.EACCES, "Permission denied", "/sys/.x.csv.tmp"), "/sys/x.csv") == \
        "-o /sys/x.csv: permission denied"
    assert os_error_words(OSError(errno.ENOSPC, "No space left"), "x.csv") == "-o x.csv: the disk is full"


def test_calibrate_says_marked_answers_lack_a_verdict_score(tmp_path, state_dir, capsys):
    """Item 4: two marked answers without p(answer right) were reported as "0 marked answers"."""
    memory = MemoryService(path=tmp_path / "chroma")
    memory.write_episodic_many([{"query": f"Q{i}?", "answer": "A.", "session_id": "s", "query_id": f"u{i}"}
                                for i in range(2)])
    memory.record_annotations([Annotation("u0", "correct"), Annotation("u1", "incorrect")])
    assert cns(["calibrate", "--path", str(tmp_path / "chroma")]) == 1
    assert "2 marked answer(s), 2 of them without a p(answer right) (the answer verdict has not scored them yet), " \
           "so 0 can be used; at least 20 answers to 4 questions are needed (cns trust-backfill scores them)" \
           in capsys.readouterr().err


def test_the_engrams_page_words_a_calibration_without_a_doubled_prefix_or_a_command(tmp_path, monkeypatch):
    """Issue 70 item 4: "Calibration: calibration: ... run cns trust-backfill" on a page."""
    monkeypatch.setenv("CNS_STATE_DIR", str(tmp_path))
    memory = MemoryService()
    memory.write_episodic_many([{"query": "Q?", "answer": "A.", "session_id": "s", "query_id": "u0"}])
    memory.record_annotations([Annotation("u0", "correct")])
    at = AppTest.from_file("../pages/engrams.py", default_timeout=90).run()
    at.button(key="cns_engrams_calibrate").click().run()
    assert not at.exception
    [error] = [e.value for e in at.error]
    assert error.startswith("Calibration: 1 marked answer(s), 1 of them without a p(answer right)"), error
    assert "calibration:" not in error.lower().replace("calibration: 1", "", 1) and "cns " not in error
    assert "**Score Trust** button" in error


def test_a_fit_that_is_not_adopted_is_not_called_active_nor_offered_to_revert(tmp_path, monkeypatch):
    """Issue 70 item 4: a green "Calibration version 1 is active: not adopted: ..." and a Revert button."""
    monkeypatch.setenv("CNS_STATE_DIR", str(tmp_path))
    _filled(None, cut=0.5)              # the person's cut is the configured one: nothing to gain
    at = AppTest.from_file("../pages/engrams.py", default_timeout=90).run()
    at.button(key="cns_engrams_calibrate").click().run()
    assert not at.exception and not at.success
    [info] = [i.value for i in at.info if "fit was not adopted" in i.value]
    assert "Nothing was stored; the answer verdict keeps the configured threshold 0.500." in info
    assert vc.active_calibration() is None
    assert not [b for b in at.button if b.key == "cns_engrams_revert"]
    assert any("Verdict threshold in use:** 0.500 (config/memory.yaml)" in m.value for m in at.markdown)


def test_engrams_page_agreement_panel_calibrates_and_reverts(tmp_path, monkeypatch):
    monkeypatch.setenv("CNS_STATE_DIR", str(tmp_path))
    _filled(None)
    at = AppTest.from_file("../pages/engrams.py", default_timeout=90).run()
    assert not at.exception
    assert any("On your 60 marked answers" in m.value for m in at.markdown)
    assert any("Verdict threshold in use:** 0.500 (config/memory.yaml)" in m.value for m in at.markdown)
    at.button(key="cns_engrams_calibrate").click().run()
    assert not at.exception
    assert any("Calibration version 1 is active" in s.value for s in at.success)
    assert vc.active_calibration().version == 1
    # the stored verdicts are judged again in the background; the page shows it, then what it did
    # stored without readings, they are judged by the verifier in the background, once; the page follows it
    job = relabel_job(MemoryService())
    assert job is not None and sorted(job.ids) == [f"m{i:02d}" for i in range(50)]
    wait_for(lambda: not job.running, 120, what="the stored verdicts judged again")
    at.run()
    assert not job.error and any("50 verdict(s) stored without readings judged again" in c.value for c in at.caption)
    at.button(key="cns_engrams_revert").click().run()
    assert any("set aside" in s.value for s in at.success) and vc.active_calibration() is None
    # with their readings kept, the revert re-decides all 50 before the page's next run: no job
    assert any("50 stored verdict(s) decided again from their readings" in s.value for s in at.success)
    assert relabel_job(MemoryService()) is job and not job.running


def test_a_true_but_incomplete_answer_reads_so_on_the_badge_in_recall_and_in_the_export():
    """Vague is not wrong (issue 67 item 4): a correct answer that says less than its reference keeps the
    correct answer's colour and says "true but incomplete" wherever the verdict is shown."""
    from cns_core.memory.recall import RecallSettings, judge_quality
    from cns_core.people.export import engram_row
    from cns_core.views.engram_view import trust_html

    e = _engram(1, 4, "correct", 0.93, 0.8, None)
    assert e.answer_complete is None and "true but incomplete" not in trust_html(e, DisagreementRule())
    e.metadata["trust_verdict_complete"] = False
    html = trust_html(e, DisagreementRule())
    assert "\u2713 true but incomplete \u00b7 p(right) 0.93" in html and 'data-complete="false"' in html
    assert engram_row(e)["answer_complete"] is False
    assert any(r.startswith("answer verdict true but incomplete, p(right) 0.93")
               for r in judge_quality(e, RecallSettings()).reasons)
    e.metadata["trust_verdict_complete"] = True
    assert "\u2713 correct \u00b7 p(right) 0.93" in trust_html(e, DisagreementRule())
    assert engram_row(e)["answer_complete"] is True


def test_the_badge_the_export_and_the_review_queue_show_one_number_named_p_right(tmp_path, state_dir):
    """ "✗ incorrect 0.84" showed the verdict's own probability while the export and the review queue used
    p(right) 0.06: one number, named, everywhere."""
    from cns_core.people.export import engram_row
    from cns_core.views.display import answer_verdict_html
    from cns_core.views.engram_view import trust_html
    from cns_core.views.review import review_queue

    e = _engram(1, 5, "incorrect", 0.06, 0.3, None)
    e.metadata.update(trust_verdict_p=0.84, trust_verdict_note="The reference contradicts the answer.")
    html = trust_html(e, DisagreementRule())
    assert "p(right) 0.06" in html and "0.84" not in html
    assert "p(right) 0.06: the probability that the answer is right, judged by the verifier" in html
    assert engram_row(e)["answer_verdict_p_right"] == 0.06
    assert "p(right)" not in answer_verdict_html("unverified")          # no number, no claim of one
    memory = MemoryService(path=tmp_path / "chroma")
    memory.write_episodic_many([{"query": f"Question {i}?", "answer": "An answer.", "session_id": "s",
                                 "query_id": f"q{i}", "timestamp": 1_700_000_000 + i} for i in range(4)])
    memory.record_trust({f"q{i}": {"trust_score": 0.4, "trust_verdict": "unverified", "trust_verdict_p": 0.7,
                                   "trust_verdict_score": p} for i, p in enumerate((0.45, 0.1, 0.52, 0.9))})
    queue = review_queue(memory, DisagreementRule(), 0.5, 4)
    assert [q.id for q in queue] == ["q2", "q0", "q1", "q3"]              # nearest p(right) to 0.5 first
    assert all(f"p(right) {q.metadata['trust_verdict_score']:.2f}" in trust_html(q, DisagreementRule())
               for q in queue)
