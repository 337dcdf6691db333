"""Importers and exporters of argument-map formats, on small files written for these tests."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cns_core.formats import (
    FORMATS,
    FormatError,
    import_file,
    import_path,
    parse_aif,
    parse_argdown,
    parse_brat,
    parse_microtext,
    to_aif,
    to_argdown,
)
from cns_core.sno import SNO

FIXTURES = Path(__file__).parent / "fixtures" / "formats"


def one(fmt: str, name: str, **kw) -> SNO:
    result = import_file(fmt, FIXTURES / name, **kw)
    assert result.error is None, result.error
    return result.sno


def edges(sno: SNO) -> set[tuple]:
    """Relations without their ids: an undercut is named by the relation it undercuts."""
    by_id = sno.relations_by_id

    def key(rel) -> tuple:
        target = key(by_id[rel.target]) if rel.attack_type == "undercut" else rel.target
        return (rel.source, target, rel.kind, rel.attack_type)

    return {key(r) for r in sno.relations}


# ----- arg-microtexts ---------------------------------------------------------

def test_microtexts_units_roles_and_relation_types():
    sno = one("microtexts", "micro_t001.xml")
    assert sno.id == "micro_t001" and sno.hypothesis == "a1"
    roles = {c.id: c.role for c in sno.claims}
    assert roles["a5"] == roles["a7"] == "opponent" and roles["a6"] == "proponent"
    rel = sno.relations_by_id
    assert (rel["c1"].kind, rel["c1"].target) == ("support", "a1")
    assert (rel["c3"].kind, sno.metadata["edge_types"]["c3"]) == ("support", "exa")
    assert (rel["c4"].attack_type, rel["c4"].target) == ("rebut", "a1")
    assert (rel["c5"].attack_type, rel["c5"].target) == ("undercut", "c4")
    assert sno.metadata["topic_id"] == "school_uniforms" and sno.metadata["stance"] == "pro"


def test_microtexts_linked_premise_is_a_relation_of_its_own_in_a_group():
    sno = one("microtexts", "micro_t001.xml")
    add = sno.relations_by_id["c2"]
    assert (add.source, add.target, add.kind) == ("a3", "a1", "support")
    assert sno.metadata["linked_premises"] == {"c1": ["c1", "c2"]}
    assert sno.metadata["edge_types"]["c2"] == "add"


def test_evidence_rule_leaf_premises_and_none():
    leafy = one("microtexts", "micro_t001.xml")
    # a2 and a4 support and nothing supports them; a3 is supported by a4; a5..a8 only attack
    assert [e.id for e in leafy.evidence] == ["ev-a2", "ev-a4"]
    assert leafy.evidence[0].text == leafy.claims_by_id["a2"].text
    assert leafy.metadata["evidence_rule"] == "leaf_premises"
    bare = one("microtexts", "micro_t001.xml", evidence_rule="none")
    assert bare.evidence == [] and bare.claims == leafy.claims
    with pytest.raises(ValueError, match="evidence_rule"):
        import_file("microtexts", FIXTURES / "micro_t001.xml", evidence_rule="all")


# ----- AIF --------------------------------------------------------------------

def test_aif_nodes_become_claims_and_relations():
    sno = one("aif", "debate.json")
    assert [c.id for c in sno.claims] == ["1", "2", "3", "5", "7", "9", "11"]  # L/YA/TA are dialogue
    assert sno.hypothesis == "1"
    assert edges(sno) == {
        ("2", "1", "support", None), ("3", "1", "support", None),        # one RA, two linked premises
        ("5", "1", "attack", "rebut"), ("11", "5", "attack", "rebut"),   # CA on I-nodes
        ("7", ("2", "1", "support", None), "attack", "undercut"),        # CA on the RA
    }
    assert sno.relations_by_id["8"].target == "4"
    assert sno.metadata["linked_premises"] == {"4": ["4", "4.2"]}
    assert sno.metadata["rephrases"] == [{"id": "10", "source": "9", "target": "1", "scheme": "Default Rephrase"}]
    assert sno.metadata["preferences"][0] | {} == {"id": "13", "preferred": "3", "over": "5",
                                                   "scheme": "Default Preference"}
    counts = {}
    for node in sno.metadata["s_nodes"].values():
        counts[node["type"]] = counts.get(node["type"], 0) + 1
    assert counts == {"RA": 1, "CA": 3, "MA": 1, "PA": 1}


def test_xaif_wrapper_reads_like_plain_aif():
    plain, wrapped = one("aif", "debate.json"), one("aif", "debate_xaif.json")
    assert wrapped.claims == plain.claims and wrapped.relations == plain.relations


def test_aif_locution_premise_is_resolved_or_promoted():
    doc = {"nodes": [
        {"nodeID": "c", "text": "We cannot visit them", "type": "I"},
        {"nodeID": "ra", "text": "Default Inference", "type": "RA"},
        {"nodeID": "l1", "text": "They live in London", "type": "L"},
        {"nodeID": "p", "text": "They live far away", "type": "I"},
        {"nodeID": "ya", "text": "Asserting", "type": "YA"},
        {"nodeID": "ra2", "text": "Default Inference", "type": "RA"},
        {"nodeID": "l2", "text": "Trains are full", "type": "L"}],
        "edges": [{"fromID": "l1", "toID": "ya"}, {"fromID": "ya", "toID": "p"}, {"fromID": "l1", "toID": "ra"},
                  {"fromID": "ra", "toID": "c"}, {"fromID": {"nodeID": "l2"}, "toID": {"nodeID": "ra2"}},
                  {"fromID": "ra2", "toID": "c"}]}
    result = parse_aif(json.dumps(doc), "loc.json")
    sno = result.sno
    assert sno.relations_by_id["ra"].source == "p"           # L -> YA -> I anchors the premise
    assert sno.relations_by_id["ra2"].source == "l2"         # anchors nothing: promoted
    assert sno.metadata["promoted_locutions"] == ["l2"]
    assert [(w.cause, w.location) for w in result.warnings] == [("promoted-locution", "L-node l2")]


def test_aif_hypothesis_is_the_root_most_argued_towards():
    doc = {"nodes": [{"nodeID": n, "text": f"claim {n}", "type": "I"} for n in "abcde"]
           + [{"nodeID": "r1", "text": "", "type": "RA"}, {"nodeID": "r2", "text": "", "type": "RA"},
              {"nodeID": "r3", "text": "", "type": "RA"}],
           "edges": [{"fromID": "a", "toID": "r1"}, {"fromID": "r1", "toID": "b"},       # root b: 1 behind it
                     {"fromID": "c", "toID": "r2"}, {"fromID": "r2", "toID": "e"},       # root e: c, d behind it
                     {"fromID": "d", "toID": "r3"}, {"fromID": "r3", "toID": "c"}]}
    sno = parse_aif(json.dumps(doc), "roots.json").sno
    assert sno.hypothesis == "e" and sno.metadata["roots"] == ["b", "e"]


# ----- brat -------------------------------------------------------------------

def test_brat_essay_units_stances_and_derived_roles():
    sno = one("brat", "essay01.ann")
    assert sno.title == "Should cities ban cars from their centres?"
    assert sno.hypothesis == "T1"
    assert edges(sno) == {("T3", "T2", "support", None), ("T5", "T4", "attack", "rebut"),
                          ("T7", "T6", "support", None), ("T2", "T1", "support", None),
                          ("T4", "T1", "attack", "rebut"), ("T6", "T1", "support", None)}
    roles = {c.id: c.role for c in sno.claims}
    assert roles == {"T1": "proponent", "T2": "proponent", "T3": "proponent", "T4": "opponent",
                     "T5": "proponent", "T6": "proponent", "T7": "proponent", "T8": "proponent"}
    assert sno.metadata["rephrases"][0]["source"] == "T8"
    assert sno.metadata["unit_types"]["T3"] == "Premise"


def test_brat_checks_spans_against_the_text(tmp_path):
    ann = (FIXTURES / "essay01.ann").read_text()
    text = (FIXTURES / "essay01.txt").read_text()
    result = parse_brat(ann, text.replace("Pontevedra", "Pontevedro"), "essay01.ann")
    assert result.ok and [(w.cause, w.location) for w in result.warnings] == [("span-mismatch", "line 3 (T3)")]
    assert str(result.warnings[0]).startswith("line 3 (T3): span text differs")
    assert result.sno.claims_by_id["T3"].text.startswith("In Pontevedra")   # the .ann text is kept
    shutil.copy(FIXTURES / "essay01.ann", tmp_path / "lonely.ann")
    alone = import_file("brat", tmp_path / "lonely.ann")
    assert alone.ok and alone.sno.title == "lonely"
    assert [(w.cause, w.location) for w in alone.warnings] == [("no-text-file", "file")]


def essay(name: str):
    """One essay of ``fixtures/formats/essays`` (written for these tests in the shape of the
    Argument Annotated Essays: MajorClaims, Claims with a Stance, Premises, R relations)."""
    result = import_file("brat", FIXTURES / "essays" / f"{name}.ann")
    assert result.ok, result.error
    return result


def test_brat_stance_and_relation_that_agree_make_one_relation():
    result = essay("essay_homework")
    assert result.warnings == ()
    sno = result.sno
    # A1 (T2 For) and R1 (T2 supports T1) say the same: one relation, the R line's
    assert edges(sno) == {("T2", "T1", "support", None), ("T3", "T2", "support", None),
                          ("T4", "T2", "support", None), ("T5", "T1", "support", None),
                          ("T6", "T5", "support", None), ("T7", "T1", "attack", "rebut"),
                          ("T8", "T7", "attack", "rebut")}
    assert [r.id for r in sno.relations] == ["R1", "R2", "R3", "R4", "R5", "R6", "R7"]
    assert {c.id: c.role for c in sno.claims if c.role != "proponent"} == {"T7": "opponent"}
    assert sno.metadata["stances"] == {"T2": "For", "T5": "For", "T7": "Against"}
    assert sno.metadata["rephrases"] == [{"id": "restates-T9", "source": "T9", "target": "T1",
                                          "scheme": "MajorClaim restatement"}]


def test_brat_component_spanning_a_tab_is_read_whole():
    result = essay("essay_homework")
    text = (FIXTURES / "essays" / "essay_homework.txt").read_text()
    line = (FIXTURES / "essays" / "essay_homework.ann").read_text().splitlines()[3]
    assert line.count("\t") == 3          # the span text itself holds a tab
    start, end = map(int, line.split("\t")[1].split()[1:])
    assert "\t" in text[start:end]
    assert result.sno.claims_by_id["T4"].text == " ".join(text[start:end].split()) == (
        "a long school day already leaves little free time in the evening")
    # without span text on the line, the .txt is sliced at the offsets
    cut = parse_brat(f"T1\tMajorClaim {start} {end}\n", text, "cut.ann")
    assert cut.ok and cut.sno.claims_by_id["T1"].text == result.sno.claims_by_id["T4"].text


def test_brat_stance_that_disagrees_keeps_the_relation_and_names_both_lines():
    result = essay("essay_remote_work")
    (warning,) = result.warnings
    assert (warning.cause, warning.location) == ("stance-conflict", "line 11 (A3)")
    assert "line 16 (R5)" in warning.message and "Against" in warning.message
    sno = result.sno
    assert ("T6", "T1", "support", None) in edges(sno) and "A3" not in sno.relations_by_id
    assert sno.claims_by_id["T6"].role == "proponent"      # the kept relation decides the role
    assert sno.claims_by_id["T4"].role == "opponent"


def test_brat_stance_alone_becomes_the_relation_to_the_major_claim():
    result = essay("essay_free_museums")
    assert result.warnings == ()
    sno = result.sno
    assert (sno.relations_by_id["A1"].source, sno.relations_by_id["A1"].target,
            sno.relations_by_id["A1"].kind) == ("T2", "T1", "support")
    assert (sno.relations_by_id["A2"].kind, sno.relations_by_id["A2"].attack_type) == ("attack", "rebut")
    roles = {c.id: c.role for c in sno.claims}
    assert roles["T4"] == "opponent" and roles["T5"] == "proponent" and roles["T6"] == "proponent"


def test_brat_two_major_claims_and_a_claim_with_no_stance_and_no_relation():
    result = essay("essay_public_transport")
    assert [(w.cause, w.location) for w in result.warnings] == [("unconnected-claim", "line 7 (T7)")]
    sno = result.sno
    assert sno.hypothesis == "T1" and sno.metadata["unit_types"]["T2"] == "MajorClaim"
    # A2 (T5 For) is already said by R3 (T5 supports the second major claim): no second relation
    assert "A2" not in sno.relations_by_id and ("T5", "T2", "support", None) in edges(sno)
    assert "A1" not in sno.relations_by_id           # and A1 by R1
    assert [r["source"] for r in sno.metadata["rephrases"]] == ["T2", "T8"]
    assert sno.claims_by_id["T7"].role == "none" and sno.claims_by_id["T2"].role == "proponent"


def test_brat_essays_keep_one_relation_per_stated_pair():
    """The corpus writes most stances twice (attribute and relation); each pair is one relation, never a refusal."""
    for name in ("essay_homework", "essay_remote_work", "essay_public_transport"):
        ann = (FIXTURES / "essays" / f"{name}.ann").read_text()
        pairs = {tuple(line.split("\t")[1].split()[1:3]) for line in ann.splitlines() if line.startswith("R")}
        stanced = [line.split()[2] for line in ann.splitlines() if line.startswith("A")]
        assert any((f"Arg1:{t}", f"Arg2:T1") in pairs for t in stanced), name
        assert len(essay(name).sno.relations) == len(pairs)


# ----- Argdown ----------------------------------------------------------------

def test_argdown_statements_arguments_relations_and_evidence():
    result = import_file("argdown", FIXTURES / "voting.argdown")
    assert result.warnings == ()
    sno = result.sno
    assert sno.title == "Votes at sixteen" and sno.hypothesis == "Votes at 16"
    assert sno.claims_by_id["Votes at 16"].text == "We should lower the voting age to 16."   # tag dropped
    assert sno.claims_by_id["No test"].text == "Maturity is not tested for any other voter."  # continued line
    assert sno.claims_by_id["Low earners"].role == "opponent"
    assert sno.metadata["arguments"] == ["Low earners"]
    immature = ("Immature", "Votes at 16", "attack", "rebut")
    assert edges(sno) == {("Taxes", "Votes at 16", "support", None), ("Say", "Votes at 16", "support", None),
                          ("Low earners", "Taxes", "attack", "rebut"), immature,
                          ("No test", immature, "attack", "undercut"),
                          ("Turnout", "Votes at 16", "support", None)}
    assert [(e.id, e.source, e.validity) for e in sno.evidence] == [("Study", "Austria 2020", 0.8)]
    assert sno.metadata["evidence_rule"] == "from_file"


def test_argdown_undercut_forms_and_duplicates():
    text = "[A]: a\n  + [B]: b\n[B]\n  +> [A]\n[C]: c\n  _> [B]\n[B]\n  <_ [D]: d\n"
    sno = parse_argdown(text, "u.argdown").sno
    support = ("B", "A", "support", None)
    assert edges(sno) == {support, ("C", support, "attack", "undercut"), ("D", support, "attack", "undercut")}
    assert len(sno.relations) == 3   # B +> A written twice is one relation


# ----- round trips ------------------------------------------------------------

ROUND_TRIP = [("microtexts", "micro_t001.xml"), ("aif", "debate.json"), ("brat", "essay01.ann"),
              ("argdown", "voting.argdown")]


@pytest.mark.parametrize(("fmt", "name"), ROUND_TRIP)
def test_round_trip_through_aif_keeps_everything(fmt, name):
    sno = one(fmt, name)
    back = parse_aif(json.dumps(to_aif(sno)), "rt.json").sno
    assert back.claims == sno.claims and back.relations == sno.relations
    assert back.hypothesis == sno.hypothesis and back.evidence == sno.evidence and back.id == sno.id
    assert back.content_hash() == sno.content_hash()


@pytest.mark.parametrize(("fmt", "name"), ROUND_TRIP)
def test_round_trip_through_argdown_keeps_claims_and_relations(fmt, name):
    sno = one(fmt, name)
    back = parse_argdown(to_argdown(sno), "rt.argdown").sno
    assert back.claims == sno.claims and back.evidence == sno.evidence
    assert edges(back) == edges(sno) and len(back.relations) == len(sno.relations)
    assert (back.hypothesis, back.id, back.title) == (sno.hypothesis, sno.id, sno.title)


def test_aif_export_without_extension_is_plain_aif():
    data = to_aif(one("microtexts", "micro_t001.xml"), extension=False)
    assert set(data) == {"nodes", "edges", "locutions"}
    types = [n["type"] for n in data["nodes"]]
    # c1+c2 linked -> one RA; c3 one RA; c4, c5, c6, c7 -> four CA
    assert (types.count("I"), types.count("RA"), types.count("CA")) == (8, 2, 4)
    plain = parse_aif(json.dumps(data), "plain.json").sno
    assert {c.text for c in plain.claims} == {c.text for c in one("microtexts", "micro_t001.xml").claims}
    assert plain.hypothesis == "a1"


_WORD = st.text(alphabet=st.sampled_from(list("abcXYZ019#{}[]<>/\\*:+-_(),.'\"é ")), min_size=1, max_size=8)
_TEXT = st.lists(_WORD, min_size=1, max_size=5).map(lambda ws: " ".join(" ".join(ws).split())).filter(bool)


@st.composite
def snos(draw) -> SNO:
    n = draw(st.integers(1, 6))
    texts = draw(st.lists(_TEXT, min_size=n, max_size=n))
    roles = draw(st.lists(st.sampled_from(["proponent", "opponent", "none"]), min_size=n, max_size=n))
    suffixes = draw(st.lists(st.sampled_from(["", "]", "\\", "> <", " #1", "{a}", ": x"]), min_size=n, max_size=n))
    ids = [f"c{i}{suffix}" for i, suffix in enumerate(suffixes)]   # titles that need escaping
    claims = [{"id": c, "text": t, "role": r} for c, t, r in zip(ids, texts, roles)]
    relations = []
    for i in range(1, n):
        target = ids[draw(st.integers(0, i - 1))]
        kind = draw(st.sampled_from(["support", "attack"]))
        relations.append({"id": f"r{i}", "source": ids[i], "target": target, "kind": kind})
    if relations and draw(st.booleans()):
        relations.append({"id": "u1", "source": ids[0], "target": relations[-1]["id"], "kind": "attack"})
    evidence = [{"id": "e1", "text": draw(_TEXT), "source": draw(_TEXT), "validity": 0.5}
                ] if draw(st.booleans()) else []
    return SNO(id="s", title=draw(_TEXT), hypothesis=ids[0], claims=claims, relations=relations, evidence=evidence)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snos())
def test_argdown_round_trip_survives_special_characters(sno):
    back = parse_argdown(to_argdown(sno), "prop.argdown", evidence_rule="none").sno
    assert back.claims == sno.claims and back.evidence == sno.evidence
    assert edges(back) == edges(sno) and back.title == sno.title


# ----- bad input --------------------------------------------------------------

def two_units(edges: str) -> str:
    """A microtext with ADUs a1 (pro) and a2 (pro), each with its text, plus ``edges``."""
    return ("<arggraph><edu id='e1'>t</edu><edu id='e2'>u</edu><adu id='a1' type='pro'/><adu id='a2' type='pro'/>"
            "<edge id='s1' src='e1' trg='a1' type='seg'/><edge id='s2' src='e2' trg='a2' type='seg'/>"
            f"{edges}</arggraph>")


BAD = [
    # refused: (format, file name, content, element, problem fragment, cause)
    ("aif", "a.json", '{"nodes": [', "line 1 column 12", "not valid JSON", "syntax"),
    ("aif", "a.json", '[1, 2]', "(root)", "expected a JSON object", "structure"),
    ("aif", "a.json", '{"edges": []}', "nodes", "missing", "structure"),
    ("aif", "a.json", '{"nodes": [{"nodeID": "r", "text": "", "type": "RA"}], "edges": []}', "document",
     "holds no claims", "no-claims"),
    ("microtexts", "m.xml", "<arggraph id='x'><edu id='e1'>t</edu>", "line 1 column 38", "not well-formed XML", "syntax"),
    ("microtexts", "m.xml", "<graph/>", "<graph>", "root element must be <arggraph>", "structure"),
    ("microtexts", "m.xml", '<!DOCTYPE a [<!ENTITY x "y">]><arggraph/>', "<!DOCTYPE>", "entity declarations", "syntax"),
    ("brat", "b.ann", "R1\tsupports Arg1:T1 Arg2:T2\t\n", "document", "holds no MajorClaim", "no-claims"),
    ("argdown", "d.argdown", "[A]: a\n(1) [B]: b\n----\n", "line 2", "premise-conclusion structures", "syntax"),
    ("argdown", "d.argdown", "+ [A]: a\n", "line 1", "has no element above it", "syntax"),
    ("argdown", "d.argdown", "[A: a\n", "line 1", "never closed", "syntax"),
    ("argdown", "d.argdown", "[A]: a\n  >< [B]: b\n", "line 2", "contradictions", "syntax"),
    ("argdown", "d.argdown", "===\nhypothesis: Q\n===\n[A]: a\n", "front matter", "hypothesis 'Q'", "structure"),
    ("argdown", "d.argdown", "[A]: a\n  + [E]: e #evidence\n", "line 2", "cannot take part in relations", "structure"),
    ("argdown", "d.argdown", "[A]: a {role: [}\n", "line 1", "not valid YAML", "syntax"),
    ("argdown", "d.argdown", "[A]: a {role: judge}\n", "line 1", "role must be one of", "structure"),
    ("argdown", "d.argdown", "[A] a\n", "line 1", "needs a colon", "syntax"),
    ("argdown", "d.argdown", "===\ntitle: x\n", "line 1", "never closed", "syntax"),
    ("argdown", "d.argdown", "  \n\n", "file", "is empty", "file"),
]


@pytest.mark.parametrize(("fmt", "name", "content", "element", "problem", "cause"), BAD,
                         ids=[f"{row[0]}-{i}" for i, row in enumerate(BAD)])
def test_refused_input_names_file_element_problem_and_cause(tmp_path, fmt, name, content, element, problem, cause):
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    result = import_file(fmt, path)
    assert result.sno is None and isinstance(result.error, FormatError)
    err = result.error
    assert (err.file, err.element) == (str(path), element), str(err)
    assert problem in err.problem, err.problem
    assert str(err).startswith(f"{path}: {element}: ")
    assert err.cause == cause


def aif_map(nodes: list, edges: list) -> str:
    return json.dumps({"nodes": nodes, "edges": edges})


I_NODES = [{"nodeID": "a", "text": "x", "type": "I"}, {"nodeID": "b", "text": "y", "type": "I"},
           {"nodeID": "r", "text": "", "type": "RA"}]
A_TO_B = [{"fromID": "a", "toID": "r"}, {"fromID": "r", "toID": "b"}]

REPAIRED = [
    # one faulty node or relation, the rest imported: (format, name, content, cause, location, message fragment,
    # (claims, relations) kept)
    ("aif", "a.json", aif_map(I_NODES + [{"text": "x", "type": "I"}], A_TO_B),
     "bad-unit", "nodes[3]", "missing 'nodeID'", (2, 1)),
    ("aif", "a.json", aif_map(I_NODES + [{"nodeID": 1, "text": "x"}], A_TO_B), "bad-unit", "node 1", "missing 'type'",
     (2, 1)),
    ("aif", "a.json", aif_map(I_NODES + [{"nodeID": "a", "text": "z", "type": "I"}], A_TO_B),
     "bad-unit", "node a", "duplicate nodeID", (2, 1)),
    ("aif", "a.json", aif_map(I_NODES, A_TO_B + [{"edgeID": 4, "fromID": "a"}]), "bad-relation", "edge 4",
     "missing 'toID'", (2, 1)),
    ("aif", "a.json", aif_map(I_NODES, A_TO_B + [{"edgeID": 7, "fromID": "r", "toID": "99"}]),
     "dangling-relation", "edge 7", "toID '99' is not a node", (2, 1)),
    ("aif", "a.json", aif_map(I_NODES, A_TO_B + [{"edgeID": 5, "fromID": "a", "toID": "r"}]),
     "duplicate-relation", "edge 5", "repeats the edge a -> r", (2, 1)),
    ("aif", "a.json", aif_map(I_NODES, A_TO_B + [{"fromID": "r", "toID": "a"}]), "bad-relation", "RA node r",
     "has 2 conclusions", (2, 0)),
    ("microtexts", "m.xml", "<arggraph><edu id='e1'>t</edu><adu id='a1'/>"
     "<edge id='s1' src='e1' trg='a1' type='seg'/></arggraph>", "bad-unit", '<adu id="a1">',
     "type must be 'pro' or 'opp'", (1, 0)),
    ("microtexts", "m.xml", two_units("<edge id='c2' src='a1' trg='a2' type='foo'/>"), "bad-relation",
     '<edge id="c2">', "type must be one of", (2, 0)),
    ("microtexts", "m.xml", "<arggraph><edu id='e1'>t</edu><adu id='a1' type='pro'/><adu id='a2' type='opp'/>"
     "<edge id='c1' src='e1' trg='a1' type='seg'/><edge id='c2' src='a2' trg='a1' type='reb'/></arggraph>",
     "bad-unit", '<adu id="a2">', "has no text", (1, 0)),
    ("microtexts", "m.xml", two_units("<edge id='c3' src='a2' trg='a1' type='und'/>"), "bad-relation",
     '<edge id="c3">', "an und edge must target an edge", (2, 0)),
    ("microtexts", "m.xml", two_units("<edge id='c1' src='a2' trg='a1' type='sup'/>"
                                      "<edge id='c2' src='a2' trg='a1' type='reb'/>"),
     "conflicting-relation", '<edge id="c2">', "'a2' already argues about 'a1' in <edge id=\"c1\"> (support)", (2, 1)),
    ("microtexts", "m.xml", two_units("<edge id='c1' src='a2' trg='a1' type='sup'/>"
                                      "<edge id='c2' src='a2' trg='a1' type='sup'/>"),
     "duplicate-relation", '<edge id="c2">', 'repeats <edge id="c1">', (2, 1)),
    ("microtexts", "m.xml", two_units("<edge id='c1' src='a2' trg='a1' type='sup'/>"
                                      "<edge id='c2' src='a1' trg='a1' type='sup'/>"),
     "self-loop", '<edge id="c2">', "relates 'a1' to itself", (2, 1)),
    ("brat", "b.ann", "T1\tClaim 0 4\tword\nT2\tClaim 0 x\tword\n", "bad-unit", "line 2 (T2)",
     "not 'START END' pairs", (1, 0)),
    ("brat", "b.ann", "T1\tClaim 0 4\tword\nR1\tsupports Arg1:T1 Arg2:T9\t\n", "dangling-relation", "line 2 (R1)",
     "'T9' is neither a claim nor a relation", (1, 0)),
    ("brat", "b.ann", "T1\tClaim 0 4\tword\nA1\tStance T1 Maybe\n", "bad-relation", "line 2 (A1)", "For|Against",
     (1, 0)),
    ("brat", "b.ann", "T1\tClaim 0 4\tword\nT2\tClaim 5 9\n", "bad-unit", "line 2 (T2)", "has no span text", (1, 0)),
    ("brat", "b.ann", "T1\tClaim 0 4\tword\nR1\tsupports Arg1:T1 Arg2:T1\n", "self-loop", "line 2 (R1)",
     "relates 'T1' to itself", (1, 0)),
    ("brat", "b.ann", "T1\tClaim 0 4\tword\nE1\tEvent:T1\n", "not-argument", "line 2 (E1)", "not used for arguments",
     (1, 0)),
    ("argdown", "d.argdown", "[A]: a\n[B]: b\n[X]: x\n  +> [A]\n  -> [B]\n[Z]: z\n  _> [X]\n", "bad-relation",
     "line 7", "ambiguous: it has 2 outgoing relations", (4, 2)),
    ("argdown", "d.argdown", "[A]: a\n  + [B]: b\n  - [B]\n", "conflicting-relation", "line 3",
     "'B' already argues about 'A' in line 2 (support)", (2, 1)),
    ("argdown", "d.argdown", "[A]: a\n  + [A]\n", "self-loop", "line 2", "relates 'A' to itself", (1, 0)),
]


@pytest.mark.parametrize(("fmt", "name", "content", "cause", "location", "message", "kept"), REPAIRED,
                         ids=[f"{row[0]}-{row[3]}-{i}" for i, row in enumerate(REPAIRED)])
def test_one_faulty_node_or_relation_is_left_out_with_a_warning(tmp_path, fmt, name, content, cause, location,
                                                                 message, kept):
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    result = import_file(fmt, path)
    assert result.ok, result.error
    found = [w for w in result.warnings if w.cause == cause]
    assert [w.location for w in found] == [location], result.warnings
    assert message in found[0].message and str(found[0]) == f"{location}: {found[0].message}"
    assert (len(result.sno.claims), len(result.sno.relations)) == kept


def test_an_undercut_of_a_merged_duplicate_moves_to_the_relation_kept():
    text = two_units("<edu id='e3'>v</edu><adu id='a3' type='opp'/><edge id='s3' src='e3' trg='a3' type='seg'/>"
                     "<edge id='c1' src='a2' trg='a1' type='sup'/><edge id='c2' src='a2' trg='a1' type='sup'/>"
                     "<edge id='c3' src='a3' trg='c2' type='und'/>")
    result = parse_microtext(text, "m.xml")
    assert [(w.cause, w.location) for w in result.warnings] == [("duplicate-relation", '<edge id="c2">')]
    assert [(r.id, r.target, r.attack_type) for r in result.sno.relations] == [
        ("c1", "a1", None), ("c3", "c1", "undercut")]


def test_bad_input_not_utf8_and_too_large(tmp_path, monkeypatch):
    path = tmp_path / "x.xml"
    path.write_bytes(b"<arggraph>\xff</arggraph>")
    assert "not UTF-8" in import_file("microtexts", path).error.problem
    monkeypatch.setenv("CNS_CONFIG_DIR", str(tmp_path))
    (tmp_path / "sno.yaml").write_text("max_file_bytes: 10\n")
    assert "exceed the limit" in import_file("microtexts", path).error.problem


def test_one_bad_file_in_a_folder_does_not_stop_the_others(tmp_path):
    for name in ("debate.json", "bad_edge.json", "bad_syntax.json"):
        shutil.copy(FIXTURES / name, tmp_path / name)
    (tmp_path / "notes.txt").write_text("not an AIF file, and not picked up")
    results = import_path("aif", tmp_path)
    assert [Path(r.file).name for r in results] == ["bad_edge.json", "bad_syntax.json", "debate.json"]
    assert [r.ok for r in results] == [True, False, True]   # a dangling edge is left out, bad JSON refused
    assert [(w.cause, w.location) for w in results[0].warnings] == [("dangling-relation", "edge 7")]
    assert results[1].error.cause == "syntax" and "not valid JSON" in results[1].error.problem


def test_unknown_format_and_missing_path(tmp_path):
    with pytest.raises(ValueError, match="unknown format 'csv'"):
        import_path("csv", tmp_path)
    (missing,) = import_path("brat", tmp_path / "nope.ann")
    assert missing.error.element == "file" and missing.error.problem == "does not exist"
    assert set(FORMATS) == {"aif", "microtexts", "brat", "argdown"}


def test_brat_reads_abstrct_relation_names():
    text = "Drug A is better than placebo. Survival rose by 20%. Side effects were common."
    ann = ("T1\tMajorClaim 0 30\tDrug A is better than placebo.\n"
           "T2\tPremise 31 52\tSurvival rose by 20%.\n"
           "T3\tPremise 53 80\tSide effects were common.\n"
           "R1\tSupport Arg1:T2 Arg2:T1\t\n"
           "R2\tPartial-Attack Arg1:T3 Arg2:T1\t\n")
    sno = parse_brat(ann, text, "abstract.ann", evidence_rule="none").sno
    assert {(r.source, r.target, r.kind, r.attack_type) for r in sno.relations} == {
        ("T2", "T1", "support", None), ("T3", "T1", "attack", "rebut")}
