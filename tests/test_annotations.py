"""People's verdicts on answers: stored on the engram, kept across restarts, rewrites and Trust
backfills, checked whole before writing (CLI and file), the review queue, the filters, and the page."""

from __future__ import annotations

import json
import re
import time

import pytest
from streamlit.testing.v1 import AppTest

from cns_core.people.annotations import MAX_NOTE_CHARS, Annotation, read_annotation_file
from cns_core.cli import main as cns
from cns_core.engrams import DisagreementRule, EngramFilters
from cns_core.memory import MemoryService, UnknownEngramError
from cns_core.views.review import review_queue
from judge_loop_helpers import lean_torch  # noqa: F401  (fixture)

pytestmark = pytest.mark.usefixtures("lean_torch")

RULE = DisagreementRule()
# grade, answer verdict, p(answer right) of the 8 engrams a00..a07
ROWS = [(5, "correct", 0.9), (5, "incorrect", 0.2), (1, "correct", 0.8), (3, "unverified", 0.45),
        (3, "correct", 0.52), (4, "correct", 0.97), (2, "incorrect", 0.05), (3, "unverified", 0.3)]


def _fill(memory: MemoryService) -> None:
    now = time.time()
    memory.write_episodic_many([{"query": f"Q{i}?", "answer": f"A{i}.", "session_id": "s", "query_id": f"a{i:02d}",
                                 "timestamp": now - 60 * i} for i in range(len(ROWS))])
    for i, (grade, _, _) in enumerate(ROWS):
        memory.update_engram_score(f"a{i:02d}", grade, "fb")
    memory.record_trust({f"a{i:02d}": {"trust_score": 0.6, "trust_verdict": v, "trust_verdict_score": p,
                                       "trust_settings": "fp"} for i, (_, v, p) in enumerate(ROWS)})


@pytest.fixture
def memory(tmp_path, state_dir):
    m = MemoryService(path=tmp_path / "chroma")
    _fill(m)
    return m


def _ids(memory: MemoryService, **filters) -> set[str]:
    return {e.id for e in memory.browse(EngramFilters(**filters), limit=100)}


def test_a_verdict_is_stored_and_survives_a_restart_a_backfill_and_an_unchanged_rewrite(memory, tmp_path):
    memory.record_annotations([Annotation("a00", "Incorrect", "  wrong year ", "ana")], at=1_700_000_000.0)
    (e,) = MemoryService(path=tmp_path / "chroma").get(["a00"])          # a new client: as after a restart
    assert e.human_verdict == "incorrect"
    assert {k: e.metadata[k] for k in ("human_note", "human_who", "human_at")} == {
        "human_note": "wrong year", "human_who": "ana", "human_at": 1_700_000_000.0}
    memory.record_trust({"a00": {"trust_score": 0.1, "trust_verdict": "incorrect"}})   # a backfill rescoring it
    (e,) = memory.get(["a00"])
    assert e.trust_score == 0.1 and e.human_verdict == "incorrect" and e.metadata["human_note"] == "wrong year"
    memory.write_episodic("Q0?", "A0.", "s", "a00")                       # same text: the verdict still holds
    assert memory.get(["a00"])[0].human_verdict == "incorrect"
    memory.write_episodic("Q0?", "Another answer.", "s", "a00")            # new text: nobody has read it
    assert memory.get(["a00"])[0].human_verdict is None


def test_a_later_verdict_replaces_the_earlier_one_whole(memory):
    memory.record_annotations([Annotation("a01", "incorrect", "a note", "ana")])
    memory.record_annotations([Annotation("a01", "unsure")])
    meta = memory.get(["a01"])[0].metadata
    assert (meta["human_verdict"], meta["human_note"], meta["human_who"]) == ("unsure", "", "")


def test_an_unknown_id_writes_nothing(memory):
    with pytest.raises(UnknownEngramError, match=re.escape("no engram has the id 'nope'; nothing was written")):
        memory.record_annotations([Annotation("a02", "correct"), Annotation("nope", "incorrect")])
    assert memory.get(["a02"])[0].human_verdict is None


@pytest.mark.parametrize("fields, message", [
    (("a01", "maybe"), "verdict: expected one of correct, incorrect, unsure, got 'maybe'"),
    (("", "correct"), "id: expected a non-empty engram id"),
    (("a01", "correct", "x" * (MAX_NOTE_CHARS + 1)), f"note: {MAX_NOTE_CHARS + 1:,} characters, at most"),
    (("a01", "correct", "", "w" * 101), "who: 101 characters, at most 100"),
    (("a01", "correct", 3), "note: expected text, got int"),
])
def test_a_bad_annotation_is_refused_naming_the_field(fields, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        Annotation(*fields)


def test_the_filters_find_marked_unmarked_agreeing_and_disagreeing(memory):
    memory.record_annotations([Annotation("a00", "correct"), Annotation("a01", "correct"),
                               Annotation("a06", "incorrect"), Annotation("a03", "unsure")])
    assert _ids(memory, annotated=True) == {"a00", "a01", "a03", "a06"}
    assert _ids(memory, annotated=False) == {"a02", "a04", "a05", "a07"}
    assert _ids(memory, person="agrees") == {"a00", "a06"}
    assert _ids(memory, person="disagrees") == {"a01"}                 # verifier incorrect, person correct
    assert _ids(memory, person="agrees", min_score=5) == {"a00"}        # with a score filter too
    assert memory.count(EngramFilters(annotated=False)) == 4
    with pytest.raises(ValueError, match="cannot agree or disagree"):
        EngramFilters(annotated=False, person="agrees")
    with pytest.raises(ValueError, match="person: expected one of agrees, disagrees"):
        EngramFilters(person="likes")


def test_the_review_queue_puts_disagreements_first_then_the_least_certain(memory):
    # disagreements: a01 (5, incorrect), a02 (1, correct); then |p - 0.5|: a04 .02, a03 .05, a07 .2, a00 .4, ...
    assert [e.id for e in review_queue(memory, RULE, 0.5, 5)] == ["a01", "a02", "a04", "a03", "a07"]
    memory.record_annotations([Annotation("a01", "incorrect"), Annotation("a04", "correct")])
    assert [e.id for e in review_queue(memory, RULE, 0.5, 3)] == ["a02", "a03", "a07"]     # marked ones leave
    assert [e.id for e in review_queue(memory, RULE, 0.95, 3)] == ["a02", "a05", "a00"]   # .02, .05 from 0.95
    with pytest.raises(ValueError, match="limit: expected an integer 1-500"):
        review_queue(memory, RULE, 0.5, 0)


# ----- files and the CLI --------------------------------------------------------------
def test_cli_annotates_one_id(memory, tmp_path, capsys):
    assert cns(["annotate", "a05", "--verdict", "correct", "--note", "checked", "--who", "bo",
                "--path", str(tmp_path / "chroma")]) == 0
    assert "1 verdict(s) stored (1 correct)" in capsys.readouterr().out
    meta = memory.get(["a05"])[0].metadata
    assert (meta["human_verdict"], meta["human_note"], meta["human_who"]) == ("correct", "checked", "bo")


def test_cli_file_is_checked_whole_before_anything_is_written(memory, tmp_path, capsys):
    path = str(tmp_path / "chroma")
    good = tmp_path / "v.csv"
    good.write_text('id,verdict,note\na00,correct,"fine, really"\na01,incorrect,\n', encoding="utf-8")
    assert cns(["annotate", "--file", str(good), "--who", "cy", "--path", path]) == 0
    assert [e.human_verdict for e in memory.get(["a00", "a01"])] == ["correct", "incorrect"]
    assert memory.get(["a00"])[0].metadata["human_note"] == "fine, really"

    cases = [("bad.jsonl", '{"id": "a02", "verdict": "correct"}\n{"id": "a03", "verdict": "wrongish"}\n',
              "line 2: verdict: expected one of correct, incorrect, unsure, got 'wrongish'"),
             ("unknown.jsonl", '{"id": "a02", "verdict": "correct"}\n{"id": "zz", "verdict": "correct"}\n',
              "line 2: no engram has the id 'zz'"),
             ("twice.csv", "id,verdict\na02,correct\na02,incorrect\n", "line 3: id 'a02' repeats line 2"),
             ("big.csv", "id,verdict,note\na02,correct," + "x" * 2001 + "\n", "note: 2,001 characters"),
             ("nohead.csv", "a02,correct\n", "the CSV header lacks id, verdict"),
             ("notes.txt", "a02 correct\n", "expected a .csv or .jsonl file"),
             ("broken.jsonl", '{"id": "a02",\n', "line 1: not JSON")]
    for name, text, message in cases:
        f = tmp_path / name
        f.write_text(text, encoding="utf-8")
        assert cns(["annotate", "--file", str(f), "--path", path]) == 1
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err, (name, err)
        assert "nothing was written" in err or "--file" in err, (name, err)
    assert memory.get(["a02"])[0].human_verdict is None                  # no bad file wrote anything
    assert cns(["annotate", "a02", "--path", path]) == 1
    assert "--verdict: required with an id" in capsys.readouterr().err


def test_every_problem_of_a_file_is_reported_at_once_naming_its_line(memory, tmp_path, capsys):
    """Issue 44, item 1: a bad verdict and an unknown id in one file used to need two runs to learn of."""
    f = tmp_path / "two.jsonl"
    f.write_text('{"id": "a02", "verdict": "wrongish"}\n{"id": "a03", "verdict": "correct"}\n'
                 '{"id": "zz", "verdict": "correct"}\n', encoding="utf-8")
    assert cns(["annotate", "--file", str(f), "--path", str(tmp_path / "chroma")]) == 1
    err = capsys.readouterr().err
    assert f"cns annotate: error: 2 problem(s); nothing was written:\n  {f} line 1: verdict: expected one of " \
           f"correct, incorrect, unsure, got 'wrongish'\n  {f} line 3: no engram has the id 'zz'" in err
    assert memory.get(["a03"])[0].human_verdict is None


def test_an_unterminated_csv_quote_is_an_error_at_its_line_not_a_swallowed_row(memory, tmp_path, capsys):
    """Item 1: `a02,correct,"unterminated` then `a03,wrong,x` stored a02 with the next row as its note."""
    f = tmp_path / "q.csv"
    f.write_text('id,verdict,note\na01,unsure,fine\na02,correct,"unterminated\na03,wrong,x\n', encoding="utf-8")
    assert cns(["annotate", "--file", str(f), "--path", str(tmp_path / "chroma")]) == 1
    assert f"{f} line 3: a quote opened on this line is never closed" in capsys.readouterr().err
    assert [e.human_verdict for e in memory.get(["a01", "a02", "a03"])] == [None, None, None]


def test_a_spreadsheet_csv_with_a_byte_order_mark_is_read(memory, tmp_path, capsys):
    f = tmp_path / "excel.csv"
    f.write_bytes("\ufeffid,verdict,note\r\na04,incorrect,wrong year\r\n".encode("utf-8"))
    assert cns(["annotate", "--file", str(f), "--path", str(tmp_path / "chroma")]) == 0
    assert memory.get(["a04"])[0].metadata["human_note"] == "wrong year"


@pytest.mark.parametrize("line, problem", [
    ('{"id": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested more than 8 levels deep"),
    ('{"id": "a01", "verdict": "correct", "note": ' + "9" * 5000 + "}", "a number of 5,000 digits (at most 1,000)"),
])
def test_a_hostile_jsonl_line_is_named_with_its_file_and_line(tmp_path, line, problem):
    from cns_core.people.annotations import AnnotationFileError

    f = tmp_path / "h.jsonl"
    f.write_text('{"id": "a00", "verdict": "correct"}\n' + line + "\n", encoding="utf-8")
    with pytest.raises(AnnotationFileError) as err:
        read_annotation_file(f)
    assert err.value.problems == [f"{f} line 2: {problem}"]


def test_reading_commands_never_create_a_store(tmp_path, monkeypatch, capsys):
    """Item 4: `--path /typo` created an empty Chroma store; `cns calibrate` on a missing state folder made
    `<state>/chroma`."""
    state = tmp_path / "absent-state"
    monkeypatch.setenv("CNS_STATE_DIR", str(state))
    for command in (["calibrate"], ["export", "-o", str(tmp_path / "x.csv")],
                    ["annotate", "a00", "--verdict", "correct"],
                    ["export", "-o", str(tmp_path / "y.csv"), "--path", str(tmp_path / "typo")]):
        assert cns(command) == 1, command
        assert "no memory at " in capsys.readouterr().err
    assert not state.exists() and not (tmp_path / "typo").exists() and not list(tmp_path.glob("*.csv"))


def test_an_oversize_file_is_refused_before_it_is_read(tmp_path, monkeypatch):
    import cns_core.people.annotations as annotations

    f = tmp_path / "v.jsonl"
    f.write_text(json.dumps({"id": "a00", "verdict": "correct"}) + "\n", encoding="utf-8")
    monkeypatch.setattr(annotations, "MAX_FILE_BYTES", 10)
    with pytest.raises(ValueError, match=r"bytes, at most 10 allowed"):
        read_annotation_file(f)


# ----- the Engrams page ----------------------------------------------------------------
@pytest.fixture
def page_state(tmp_path, monkeypatch):
    monkeypatch.setenv("CNS_STATE_DIR", str(tmp_path))
    m = MemoryService()
    _fill(m)
    m.record_annotations([Annotation("a00", "incorrect", "<b>not</b> so", "ana")])
    return m


def test_engrams_page_marks_an_answer_and_shows_the_persons_badge_escaped(page_state):
    at = AppTest.from_file("../pages/engrams.py", default_timeout=60).run()
    assert not at.exception
    html = "".join(m.value for m in at.markdown)
    assert html.count('class="cns-human"') == 1 and 'data-human="incorrect"' in html
    assert "&lt;b&gt;not&lt;/b&gt; so" in html and "<b>not</b>" not in html      # the note, escaped
    at.text_input(key="cns_engrams_who").input("dee").run()
    at.radio(key="cns_engrams_verdict_a05").set_value("unsure")          # a form: its values go with the submit
    at.text_area(key="cns_engrams_note_a05").input("source unclear")
    submit = next(b for b in at.button if b.proto.form_id == "cns_engrams_mark_a05")
    submit.click().run()
    assert not at.exception
    assert any("Marked a05 unsure by dee with a note." in s.value for s in at.success)
    meta = page_state.get(["a05"])[0].metadata
    assert (meta["human_verdict"], meta["human_who"], meta["human_note"]) == ("unsure", "dee", "source unclear")

    at.selectbox(key="cns_engrams_annotated").set_value("not annotated").run()
    assert any("**6** of **8** engrams match" in m.value for m in at.markdown)
    at.selectbox(key="cns_engrams_annotated").set_value("any").run()
    at.selectbox(key="cns_engrams_person").set_value("agrees").run()
    assert 'data-human="incorrect"' not in "".join(m.value for m in at.markdown)   # a00: verifier says correct
    at.selectbox(key="cns_engrams_person").set_value("any").run()
    at.checkbox(key="cns_engrams_queue").check().run()
    assert not at.exception
    assert any("Review queue: 6 unmarked answer(s)" in c.value for c in at.caption)
