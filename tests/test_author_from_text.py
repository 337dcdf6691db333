"""The Author page's "From text": the view that turns a draft into editable tables and back
(cns_core.views.text_draft), and the page under AppTest: paste, draft, edit, evaluate."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from cns_core.text import SourceText, TextInputError
from cns_core.views import text_draft, ui_state
from judge_loop_helpers import lean_torch  # noqa: F401  (fixture)

pytestmark = pytest.mark.usefixtures("lean_torch")

ROOT = Path(__file__).resolve().parent.parent
TEXT = ("Cities should limit cars in their centres. Because traffic kills thousands of people every year, "
        "streets must become safer. However, some people need a car for their work.")
SOURCE = SourceText("notes.md", "Road traffic kills about 1.2 million people a year worldwide. "
                                "Streets with fewer cars have fewer deaths.")


@pytest.fixture(scope="module")
def drafted() -> text_draft.DraftTables:
    return text_draft.draft_tables(TEXT, [SOURCE], None)


def test_a_draft_becomes_tables_with_a_reason_on_every_row(drafted):
    assert [c["id"] for c in drafted.claims] == [f"c{k + 1}" for k in range(len(drafted.claims))]
    assert len(drafted.claims) >= 3 and drafted.method == "argument miner"
    assert drafted.claims[0]["text"] == "Cities should limit cars in their centres."
    assert all(row["why"] for table in (drafted.claims, drafted.relations, drafted.evidence) for row in table)
    assert all(re.fullmatch(r"(main claim|claim|premise) \d\.\d\d", c["drafted_as"]) for c in drafted.claims)
    main = next(c for c in drafted.claims if c["id"] == drafted.hypothesis)
    assert main["drafted_as"].startswith("main claim")
    assert all(re.match(r"(support|attack) p \d\.\d\d \(none \d\.\d\d\)", r["why"]) for r in drafted.relations)
    assert drafted.evidence[0]["why"].startswith("notes.md, characters 0-")             # provenance
    assert drafted.evidence[0]["validity"] == 0.5 and "nobody stated how far" in drafted.evidence[0]["why"]
    assert set(drafted.claims[0]) == set(text_draft.CLAIM_COLUMNS)


def _rows(drafted: text_draft.DraftTables) -> tuple[list, list, list]:
    return ([dict(r) for r in drafted.claims], [dict(r) for r in drafted.relations],
            [dict(r) for r in drafted.evidence])


def test_unedited_rows_keep_their_metadata_and_edited_rows_say_so(drafted):
    claims, relations, evidence = _rows(drafted)
    sno = text_draft.sno_from_draft(drafted, drafted.sno_id, drafted.title, drafted.hypothesis,
                                    claims, relations, evidence).sno
    assert sno is not None
    assert sno.claims[1].metadata == drafted.drafted["claims"]["c2"]["metadata"]          # cue, offsets, why
    first = sno.relations[0]
    assert first.metadata["p_support"] == drafted.drafted["relations"][first.id]["metadata"]["p_support"]
    assert sno.evidence[0].metadata["source"] == "notes.md" and sno.metadata["drafted_from"] == "text"

    claims[3]["text"] = "Some people need a car for work."                              # edit a claim
    flipped = "support" if relations[-1]["kind"] == "attack" else "attack"               # turn a relation round
    relations[-1]["kind"], relations[-1]["attack_type"] = flipped, ("rebut" if flipped == "attack" else None)
    claims.append({"id": "c5", "text": "Buses can replace many trips.", "role": "proponent", "why": None})
    relations.append({"id": None, "source": "c5", "target": "c1", "kind": "support", "attack_type": None,
                      "why": None})
    sno = text_draft.sno_from_draft(drafted, "mine", "Mine", "c1", claims, relations, evidence).sno
    by_id = {c.id: c for c in sno.claims}
    assert by_id["c4"].metadata == {"why": text_draft.EDITED} and by_id["c5"].metadata == {"why": text_draft.EDITED}
    assert by_id["c2"].metadata == drafted.drafted["claims"]["c2"]["metadata"]         # unedited: as drafted
    assert [r.metadata.get("why") == text_draft.EDITED for r in sno.relations] == [False, False, True, True]
    assert (sno.id, sno.title, len(sno.claims)) == ("mine", "Mine", 5)


def test_bad_edits_are_named_by_field(drafted):
    claims, relations, evidence = _rows(drafted)
    claims[1]["text"] = " "
    relations[0]["target"] = "c9"
    evidence[0]["validity"] = 1.5
    result = text_draft.sno_from_draft(drafted, drafted.sno_id, "", "c1", claims, relations, evidence)
    assert result.sno is None
    joined = "\n".join(result.problems)
    for field in ("claims[1].text", "relations[0].target", "evidence[0].validity"):
        assert field in joined, joined


@pytest.mark.parametrize("pasted, upload, sources, message", [
    ("  ", None, [], "text: paste the text to judge or upload a .txt or .md file"),
    ("", ("essay.md", b"\x89PNG\r\n\x1a\n\x00\x00binary"), [], "essay.md: is a binary file, not text"),
    ("", ("essay.txt", "caf\u00e9".encode("latin-1")), [], "essay.txt: not UTF-8 text"),
    ("", ("essay.txt", b"   \n"), [], "essay.txt: is empty"),
    (TEXT, None, [("scan.pdf", b"%PDF-1.4 not really a pdf")], "scan.pdf: not a readable PDF"),
])
def test_bad_input_is_refused_naming_it(pasted, upload, sources, message):
    with pytest.raises(TextInputError, match=re.escape(message)):
        text_draft.read_inputs(pasted, upload, sources)


def test_an_upload_wins_over_pasted_text_and_sources_are_read():
    text, sources = text_draft.read_inputs("pasted", ("essay.md", TEXT.encode()), [("notes.md", SOURCE.text.encode())])
    assert text == TEXT and sources == [SOURCE]


# ----- the page ----------------------------------------------------------------------
@pytest.fixture
def author(state_dir):
    at = AppTest.from_file(str(ROOT / "dashboard.py"), default_timeout=180)
    at.run()
    at.switch_page("pages/author.py")
    at.run()
    assert not at.exception
    return at


def test_author_drafts_from_pasted_text_then_evaluates(author):
    at = author
    at.button(key="cns_author_draft_button").click().run()            # nothing pasted yet
    assert not at.exception
    assert any(e.value == "Nothing was drafted: text: paste the text to judge or upload a .txt or .md file"
               for e in at.error)
    at.text_area(key="cns_author_text").input(TEXT)
    at.text_input(key="cns_author_question").input("Should cities limit cars?")
    at.button(key="cns_author_draft_button").click().run()
    assert not at.exception
    drafted = at.session_state["cns_author_draft"]
    main = next(c for c in drafted.claims if c["id"] == drafted.hypothesis)
    assert main["text"].startswith("Cities should limit cars")
    assert any("no sources given" in i.value for i in at.info)        # the draft's notes are shown
    assert any(s.value.startswith("Valid SNO: 4 claims, 3 relations, 0 evidence") for s in at.success)
    assert at.selectbox(key="cns_author_draft_h_1").value == drafted.hypothesis
    at.button(key="cns_author_evaluate").click().run()
    assert not at.exception
    current = at.session_state[ui_state.KEY_CURRENT]
    assert current.endswith("· drafted")
    sno = at.session_state[ui_state.KEY_LIBRARY][current]
    assert sno.claims[0].metadata["why"] and len(sno.relations) == 3
    trust = float(next(m.value for m in at.metric if m.label == "Trust Score"))
    assert 0.0 <= trust <= 1.0
    at.switch_page("pages/overview.py").run()                         # an ordinary SNO from now on
    assert not at.exception
    assert float(next(m.value for m in at.metric if m.label == "Trust Score")) == trust


def test_author_refuses_text_it_cannot_draft(author):
    at = author
    at.text_area(key="cns_author_text").input("Der Hund schläft im Garten und die Katze schläft auf dem Dach.")
    at.button(key="cns_author_draft_button").click().run()
    assert not at.exception
    assert any(e.value.startswith("Nothing was drafted: text: does not look like English") for e in at.error)
    assert "cns_author_draft" not in at.session_state


def test_a_pasted_source_becomes_evidence(author):
    """Issue 31 item 9: a source's text can be pasted, not only uploaded; its passages become evidence."""
    text, sources = text_draft.read_inputs(TEXT, None, [], SOURCE.text)
    assert sources == [SourceText(text_draft.PASTED_SOURCE, SOURCE.text)]
    assert text_draft.read_inputs(TEXT, None, [], "   ")[1] == []
    at = author
    at.text_area(key="cns_author_text").input(TEXT)
    at.text_area(key="cns_author_source_text").input(SOURCE.text)
    at.button(key="cns_author_draft_button").click().run()
    assert not at.exception
    drafted = at.session_state["cns_author_draft"]
    assert drafted.evidence and {e["source"] for e in drafted.evidence} == {text_draft.PASTED_SOURCE}
    assert not any("no sources given" in i.value for i in at.info)
