"""The SNO file schema: lossless round trips, a stable content hash, and one clear error per bad input."""

from __future__ import annotations

import copy
import json

import networkx as nx
import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from cns_core.sno import (SNO, SNOLimits, SNOValidationError, dump_snos, load_snos, parse_snos,
                          serialize_snos)

BASE = {
    "id": "sno-1",
    "title": "Exercise lowers blood pressure",
    "hypothesis": "c1",
    "claims": [
        {"id": "c1", "text": "Regular aerobic exercise lowers resting blood pressure.", "role": "proponent"},
        {"id": "c2", "text": "Meta-analyses of randomised trials show a 4-8 mmHg drop.", "role": "proponent"},
        {"id": "c3", "text": "Most trials were short.", "role": "opponent"},
        {"id": "c4", "text": "Short trials still show the effect.", "role": "proponent"},
    ],
    "relations": [
        {"id": "r1", "source": "c2", "target": "c1", "kind": "support"},
        {"id": "r2", "source": "c3", "target": "r1", "kind": "attack"},
        {"id": "r3", "source": "c4", "target": "c3", "kind": "attack", "attack_type": "rebut"},
    ],
    "evidence": [
        {"id": "e1", "text": "Cornelissen & Smart 2013 meta-analysis of 93 trials.", "source": "JAHA", "validity": 0.9},
    ],
    "metadata": {"domain": "medicine", "tags": ["cardio", "exercise"]},
}


def _problems(data, name="x.json", limits: SNOLimits | None = None, fmt=None) -> list[str]:
    text = data if isinstance(data, (str, bytes)) else json.dumps(data)
    with pytest.raises(SNOValidationError) as info:
        parse_snos(text, name, fmt=fmt, limits=limits or SNOLimits())
    assert str(info.value).startswith(f"{name}: {len(info.value.problems)} problem(s)")
    return info.value.problems


def _edited(edit) -> dict:
    data = copy.deepcopy(BASE)
    edit(data)
    return data


# ----- round trips -----------------------------------------------------------------

@pytest.mark.parametrize("suffix", [".json", ".yaml", ".yml"])
def test_save_then_load_loses_nothing(tmp_path, suffix):
    sno = parse_snos(json.dumps(BASE), limits=SNOLimits())[0]
    path = dump_snos([sno, sno.model_copy(update={"id": "sno-2"})], tmp_path / f"two{suffix}")
    again = load_snos(path, limits=SNOLimits())
    assert [s.id for s in again] == ["sno-1", "sno-2"]
    assert again[0] == sno and again[0].content_hash() == sno.content_hash()
    single = load_snos(dump_snos(sno, tmp_path / f"one{suffix}"), limits=SNOLimits())
    assert single == [sno]


def test_dump_refuses_unknown_suffix(tmp_path):
    sno = SNO.model_validate(BASE)
    with pytest.raises(ValueError, match=r"unknown suffix '\.txt'"):
        dump_snos(sno, tmp_path / "x.txt")
    with pytest.raises(ValueError, match="fmt: must be 'json' or 'yaml'"):
        serialize_snos(sno, "xml")


_ident = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_-", min_size=1, max_size=8)
_text = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40).filter(lambda s: s.strip())
_json_leaf = st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=False, allow_infinity=False) | _text
_metadata = st.dictionaries(_ident, st.recursive(_json_leaf, lambda inner: st.lists(inner, max_size=3)
                                                  | st.dictionaries(_ident, inner, max_size=3), max_leaves=6),
                            max_size=4)


@st.composite
def snos(draw) -> SNO:
    n = draw(st.integers(1, 6))
    claim_ids = [f"c{i}" for i in range(n)]
    claims = [{"id": cid, "text": draw(_text), "role": draw(st.sampled_from(["proponent", "opponent", "none"]))}
              for cid in claim_ids]
    # one relation per ordered pair of claims: the graph keeps one edge per pair
    edges = draw(st.lists(st.tuples(st.sampled_from(claim_ids), st.sampled_from(claim_ids)),
                          unique=True, max_size=6)) if n > 1 else []
    relations = [{"id": f"r{i}", "source": source, "target": target,
                  "kind": draw(st.sampled_from(["support", "attack"]))}
                 for i, (source, target) in enumerate(edges)]
    if relations and (claim_ids[-1], relations[0]["target"]) not in edges and draw(st.booleans()):
        relations.append({"id": "ru", "source": claim_ids[-1], "target": relations[0]["id"], "kind": "attack"})
    evidence = [{"id": f"e{i}", "text": draw(_text), "source": draw(st.text(max_size=10)),
                 "validity": draw(st.floats(0, 1))} for i in range(draw(st.integers(0, 3)))]
    data = {"id": draw(_ident), "title": draw(st.text(max_size=20)), "hypothesis": claim_ids[0],
            "claims": claims, "relations": relations, "evidence": evidence, "metadata": draw(_metadata)}
    if draw(st.booleans()):
        data["embedding"] = draw(st.lists(st.floats(-1, 1), min_size=1, max_size=4))
    if draw(st.booleans()):
        data["trust_score"] = draw(st.floats(0, 1))
    return SNO.model_validate(data)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sno=snos(), fmt=st.sampled_from(["json", "yaml"]))
@example(sno=SNO(id="0", title="\x85 \u2028", hypothesis="c0", claims=[{"id": "c0", "text": "a\u2029b"}]), fmt="yaml")
def test_round_trip_property(sno, fmt):
    text = serialize_snos(sno, fmt)
    (again,) = parse_snos(text, f"x.{fmt}", limits=SNOLimits())
    assert again == sno
    assert again.content_hash() == sno.content_hash()
    assert nx.utils.graphs_equal(again.graph, sno.graph)


# ----- content hash ---------------------------------------------------------------

def test_content_hash_is_stable_and_ignores_presentation():
    sno = SNO.model_validate(BASE)
    assert len(sno.content_hash()) == 64 and sno.content_hash() == SNO.model_validate(BASE).content_hash()
    same_content = _edited(lambda d: d.update(id="other", title="Retitled", metadata={"x": 1}, trust_score=0.4))
    assert SNO.model_validate(same_content).content_hash() == sno.content_hash()
    # key order in the file does not matter
    reordered = {k: BASE[k] for k in reversed(list(BASE))}
    assert parse_snos(yaml.safe_dump(reordered), "r.yaml", limits=SNOLimits())[0].content_hash() == sno.content_hash()


@pytest.mark.parametrize("edit", [
    lambda d: d["claims"][1].update(text="Meta-analyses show a 1 mmHg drop."),
    lambda d: d["relations"][0].update(kind="attack"),
    lambda d: d["evidence"][0].update(validity=0.2),
    lambda d: d.update(hypothesis="c2"),
    lambda d: d["claims"][2].update(role="none"),
])
def test_content_hash_changes_with_what_critics_judge(edit):
    assert SNO.model_validate(_edited(edit)).content_hash() != SNO.model_validate(BASE).content_hash()


# ----- graph --------------------------------------------------------------------

def test_graph_keeps_support_rebut_and_undercut_apart():
    sno = SNO.model_validate(BASE)
    g = sno.graph
    assert set(g.nodes) == {"c1", "c2", "c3", "c4"} and g.out_degree("c1") == 0
    assert g.edges["c2", "c1"] == {"kind": "support", "attack_type": None, "relation": "r1"}
    assert g.edges["c3", "c1"] == {"kind": "attack", "attack_type": "undercut", "relation": "r2", "undercuts": "r1"}
    assert g.edges["c4", "c3"]["attack_type"] == "rebut"
    assert g.nodes["c1"]["is_hypothesis"] and sno.hypothesis_text.startswith("Regular aerobic")


def test_unnamed_relations_get_ids_that_do_not_clash():
    data = _edited(lambda d: d.update(claims=d["claims"] + [{"id": "r1x", "text": "t"}]))
    for rel in data["relations"]:
        rel.pop("id")
    data["relations"][1]["target"] = "r1"  # the undercut names the first relation by its future id
    sno = SNO.model_validate(data)
    assert [r.id for r in sno.relations] == ["r1", "r2", "r3"]
    assert sno.relations[1].attack_type == "undercut"


# ----- bad input: one error, every problem, each with its path --------------------------

@pytest.mark.parametrize("text, name, expected", [
    ("key: [unclosed", "x.sno", "file: not valid JSON or YAML: a flow sequence that starts at line 1 column 6 is never "
                               "closed (the file ends first)"),
    ('hypothesis: "unclosed\nclaims: []\nevidence: []\n', "x.yaml", "file: not valid JSON or YAML: a quoted scalar "
     "that starts at line 1 column 13 is never closed (the file ends first)"),
    ("{not json", "x.json", "file: not valid JSON: Expecting property name enclosed in double quotes at line 1 column 2"),
    ("just some prose", "x.txt", "file: expected a mapping (one SNO) or a list of SNOs, got plain text"),
    ("", "x.yaml", "file: is empty"),
    ("[]", "x.json", "file: the list holds no SNO"),
    (b"\xff\xfe{}", "x.json", "file: not UTF-8 text (byte 0)"),
])
def test_files_that_are_not_snos(text, name, expected):
    assert _problems(text, name) == [expected]


def test_list_items_that_are_not_snos():
    assert _problems("- 1\n- [x]\n", "x.yaml") == ["[0]: expected a mapping describing one SNO, got int",
                                                    "[1]: expected a mapping describing one SNO, got list"]


@pytest.mark.parametrize("tag", ["!!python/object:os.system {}", "!!python/object/apply:os.system ['echo owned']",
                                 "!!python/name:os.system"])
def test_yaml_is_read_with_safe_load_only(tag, tmp_path):
    path = tmp_path / "evil.yaml"
    path.write_text(f"id: {tag}\n")
    with pytest.raises(SNOValidationError) as info:
        load_snos(path, limits=SNOLimits())
    (problem,) = info.value.problems
    assert problem.startswith("file: not valid JSON or YAML: could not determine a constructor for the tag "
                              "'tag:yaml.org,2002:python/")
    assert problem.endswith("at line 1 column 5")


@pytest.mark.parametrize("edit, expected", [
    (lambda d: d["claims"][0].pop("text"), "claims[0].text: is required"),
    (lambda d: d.pop("hypothesis"), "hypothesis: is required"),
    (lambda d: d["claims"][3].update(text="   "), "claims[3].text: must not be empty"),
    (lambda d: d.update(id=""), "id: must not be empty"),
    (lambda d: d["evidence"][0].update(text=""), "evidence[0].text: must not be empty"),
    (lambda d: d["relations"][2].update(target="c9"), "relations[2].target: unknown claim or relation 'c9'"),
    (lambda d: d["relations"][0].update(source="ghost"), "relations[0].source: unknown claim 'ghost'"),
    (lambda d: d.update(hypothesis="c99"), "hypothesis: unknown claim 'c99'"),
    (lambda d: d["claims"].append({"id": "c2", "text": "t"}), "claims[4].id: duplicate id 'c2' (first at claims[1])"),
    (lambda d: d["evidence"].append({"id": "e1", "text": "again"}), "evidence[1].id: duplicate id 'e1' (first at evidence[0])"),
    (lambda d: d["relations"][1].update(id="r1"), "relations[1].id: duplicate id 'r1' (first at relations[0])"),
    (lambda d: d["relations"].append({"source": "c3", "target": "c1", "kind": "support"}),
     "relations[3]: 'c3' already argues about 'c1' in relations[1]; the reasoning graph holds one "
     "relation per pair of claims (an undercut counts at the claim it attacks), keep one"),
    (lambda d: d["evidence"][0].update(validity=1.5), "evidence[0].validity: must be between 0 and 1 (got 1.5)"),
    (lambda d: d["evidence"][0].update(validity=-0.1), "evidence[0].validity: must be between 0 and 1 (got -0.1)"),
    (lambda d: d["evidence"][0].update(validity="high"), "evidence[0].validity: must be a number (got 'high')"),
    (lambda d: d.update(trust_score=2), "trust_score: must be between 0 and 1 (got 2)"),
    (lambda d: d["claims"][1].update(role="judge"),
     "claims[1].role: must be one of 'proponent', 'opponent' or 'none' (got 'judge')"),
    (lambda d: d["relations"][0].update(kind="supports"),
     "relations[0].kind: must be one of 'support' or 'attack' (got 'supports')"),
    (lambda d: d["relations"][0].update(target="r2"), "relations[0].target: a support must target a claim, 'r2' is a relation"),
    (lambda d: d["relations"][2].update(attack_type="undercut"),
     "relations[2].attack_type: an undercut must target a relation, 'c3' is a claim"),
    (lambda d: d.update(colour="red"), "colour: unknown field"),
    (lambda d: d.update(claims=[], relations=[], hypothesis="c1"), "claims: must hold at least 1 item(s)"),
    (lambda d: d.update(claims="c1, c2", relations=[]), "claims: must be a list"),
])
def test_each_bad_field_is_named(edit, expected):
    assert _problems(_edited(edit)) == [expected]


def test_every_problem_is_listed_in_one_error():
    def many(d):
        d["claims"][3]["text"] = ""
        d["relations"][2]["target"] = "c9"
        d["evidence"][0]["validity"] = 7
        d["hypothesis"] = "cX"

    problems = _problems(_edited(many))
    assert set(problems) == {"claims[3].text: must not be empty", "relations[2].target: unknown claim or relation 'c9'",
                             "evidence[0].validity: must be between 0 and 1 (got 7)", "hypothesis: unknown claim 'cX'"}


def test_problems_in_a_list_carry_the_item_index():
    bad = _edited(lambda d: d["claims"][0].update(text=""))
    assert _problems([BASE, bad]) == ["[1].claims[0].text: must not be empty"]


def test_size_limit_is_checked_before_parsing(tmp_path):
    text = json.dumps(BASE)
    limits = SNOLimits(max_file_bytes=100)
    assert _problems(text, limits=limits) == [f"file: {len(text):,} bytes exceed the limit of 100 bytes "
                                              "(config/sno.yaml max_file_bytes)"]
    path = tmp_path / "big.json"
    path.write_text(text)
    with pytest.raises(SNOValidationError, match=f"file: {len(text):,} bytes exceed the limit of 100 bytes"):
        load_snos(path, limits=limits)
    assert parse_snos(text, limits=SNOLimits(max_file_bytes=len(text)))[0].id == "sno-1"


def test_claim_limit():
    assert _problems(BASE, limits=SNOLimits(max_claims=3)) == [
        "claims: 4 claims exceed the limit of 3 (config/sno.yaml max_claims)"]
    assert _problems([BASE, BASE], limits=SNOLimits(max_claims=3))[0] == (
        "[0].claims: 4 claims exceed the limit of 3 (config/sno.yaml max_claims)")
    assert len(parse_snos(json.dumps(BASE), limits=SNOLimits(max_claims=4))[0].claims) == 4


def test_evidence_and_relation_limits_name_the_limit():
    n_evidence, n_relations = len(BASE["evidence"]), len(BASE["relations"])
    assert n_evidence >= 1 and n_relations >= 1
    limits = SNOLimits(max_evidence=n_evidence - 1, max_relations=n_relations - 1)
    assert _problems(BASE, limits=limits) == [
        f"evidence: {n_evidence} evidence exceed the limit of {n_evidence - 1} (config/sno.yaml max_evidence)",
        f"relations: {n_relations} relations exceed the limit of {n_relations - 1} (config/sno.yaml max_relations)"]
    assert SNOLimits.from_config() == SNOLimits(max_file_bytes=5_000_000, max_claims=5_000, max_evidence=5_000,
                                                max_relations=10_000)


def test_default_limits_come_from_config():
    limits = SNOLimits.from_config()
    assert limits.max_file_bytes == 5_000_000 and limits.max_claims == 5_000


def test_unreadable_path_is_a_validation_error(tmp_path):
    with pytest.raises(SNOValidationError, match="file: no such file"):
        load_snos(tmp_path / "absent.json")
    with pytest.raises(SNOValidationError, match="file: not a regular file \\(a folder\\)"):
        load_snos(tmp_path)


def test_format_override_beats_the_suffix():
    assert parse_snos(yaml.safe_dump(BASE), "upload.bin", fmt="yaml", limits=SNOLimits())[0].id == "sno-1"
    assert _problems(yaml.safe_dump(BASE), "upload.bin", fmt="json")[0].startswith("file: not valid JSON:")


def test_a_key_written_twice_is_refused_with_both_lines(tmp_path):
    """Issue 53, item 6: a second ``hypothesis:`` line (an opponent's claim) silently won, changing the Logic
    issues. Every mapping refuses a key written twice, in YAML with its lines and in JSON by name."""
    text = yaml.safe_dump(BASE, sort_keys=False) + "hypothesis: c3\n"
    second = text.count("\n")
    first = text.splitlines().index("hypothesis: c1") + 1
    path = tmp_path / "twice.yaml"
    path.write_text(text)
    with pytest.raises(SNOValidationError) as info:
        load_snos(path, limits=SNOLimits())
    assert info.value.problems == [f"file: not valid JSON or YAML: the key 'hypothesis' is written twice (first at "
                                   f"line {first}); keep one at line {second} column 1"]
    nested = path.with_name("nested.yaml")
    nested.write_text(yaml.safe_dump(BASE, sort_keys=False).replace("  role: proponent\n",
                                                                      "  role: proponent\n  role: opponent\n", 1))
    with pytest.raises(SNOValidationError, match="the key 'role' is written twice"):
        load_snos(nested, limits=SNOLimits())
    as_json = path.with_name("twice.json")
    as_json.write_text(json.dumps(BASE)[:-1] + ', "hypothesis": "c3"}')
    with pytest.raises(SNOValidationError) as info:
        load_snos(as_json, limits=SNOLimits())
    assert info.value.problems == ["file: the key 'hypothesis' is written twice in one object; keep one"]


def test_a_yaml_merge_may_still_override_the_keys_it_brings():
    from cns_core.config import load_yaml_text

    assert load_yaml_text("base: &b {kind: support, weight: 1}\nedge: {<<: *b, weight: 2}\n")["edge"] == {
        "kind": "support", "weight": 2}
