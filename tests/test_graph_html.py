"""The offline reasoning-graph page: inlined JavaScript, escaped text, highlighted problems."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cns_core.views import display
from cns_core.views.graph_html import (
    claim_grounding,
    claim_passage_rows,
    claim_verdict_rows,
    claim_levels,
    graph_findings,
    remote_resources,
    restatements,
    sno_graph_html,
)
from cns_core.sno import SNO

XSS = "<script>alert(1)</script>"


def _sno() -> SNO:
    return SNO.model_validate({
        "id": "g", "title": "graph test", "hypothesis": "h",
        "claims": [
            {"id": "h", "text": f"{XSS} hypothesis"},
            {"id": "a", "text": 'A & "B" support', "role": "proponent"},
            {"id": "b", "text": "B attacks", "role": "opponent"},
            {"id": "c", "text": "C on a cycle"},
            {"id": "o", "text": "an orphan claim"},
            {"id": "u", "text": "U undercuts the support of A", "role": "opponent"},
        ],
        "relations": [
            {"id": "r1", "source": "a", "target": "h", "kind": "support"},
            {"id": "r2", "source": "b", "target": "h", "kind": "attack"},
            {"id": "r3", "source": "c", "target": "a", "kind": "support"},
            {"id": "r4", "source": "a", "target": "c", "kind": "support"},
            {"id": "r5", "source": "u", "target": "r1", "kind": "attack"},
        ],
        "evidence": [{"id": "e1", "text": "</script><img src=x onerror=alert(2)>", "source": "lab"}],
    })


@pytest.fixture(scope="module")
def page() -> str:
    sno = _sno()
    grounding = claim_grounding({"h": {"best_evidence": "e1", "entailment": 0.9, "contradiction": 0.05,
                                       "verdict": "supported", "p_supported": 0.9, "p_contradicted": 0.05,
                                       "reads": 0, "passages": [{"evidence": "e1", "entailment": 0.9,
                                                                 "contradiction": 0.05,
                                                                 "text": "</script><img src=x onerror=alert(2)>"}]},
                                 "a": {"best_evidence": None, "entailment": 0.1, "contradiction": 0.7,
                                       "verdict": "not_enough_info", "p_supported": 0.1, "p_not_enough_info": 0.6}})
    return sno_graph_html(sno, grounding)


def _dataset(page: str, which: str) -> list[dict]:
    match = re.search(rf"{which} = new vis\.DataSet\((\[.*?\])\);\n", page, re.S)
    return json.loads(match.group(1))


def test_graph_page_is_offline(page):
    assert remote_resources(page) == []
    assert "cdn.jsdelivr" not in page and "bootstrap" not in page.lower()
    assert "vis.Network" in page and len(page) > 400_000  # vis-network is inlined, not linked


def test_remote_resources_finds_links():
    assert remote_resources('<script src="https://x.org/a.js"></script>') == ['src="https://x.org/a.js']
    assert remote_resources('<link href="//cdn.x/a.css">')
    assert remote_resources("<style>@import 'https://f.x/a.css';</style>")
    assert remote_resources("<style>a{background:url(http://x/y.png)}</style>")
    assert remote_resources("/* see https://github.com/visjs */") == []


def test_user_text_never_becomes_markup(page):
    assert XSS not in page
    assert "<img src=x" not in page
    # only the template's own script tags (inlined libraries + the drawing script)
    assert page.count("<script") == sno_graph_html(
        SNO.model_validate({"id": "p", "hypothesis": "h", "claims": [{"id": "h", "text": "plain"}]})).count("<script")
    nodes = {n["id"]: n for n in _dataset(page, "nodes")}
    assert XSS in nodes["h"]["title"]          # kept as text for innerText tooltips
    assert 'A & "B" support' in " ".join(nodes["a"]["label"].split())     # wrapped as the graph's labels are


def test_nodes_coloured_by_grounding_and_tooltips_explain(page):
    nodes = {n["id"]: n for n in _dataset(page, "nodes")}
    assert nodes["h"]["color"]["border"] == display.HIGHLIGHT_COLOURS["hypothesis"]
    # h: supported -> green-ish tint; o: never scored -> grey tint
    h_bg, o_bg = nodes["h"]["color"]["background"], nodes["o"]["color"]["background"]
    assert int(h_bg[3:5], 16) > int(h_bg[1:3], 16)      # more green than red
    assert o_bg != h_bg
    assert "The verdict reads e1 (lab), validity 1.00; it entails the claim (entails 0.90):" in nodes["h"]["title"]
    assert "entailment 0.90" in nodes["h"]["title"] and "contradiction 0.05" in nodes["h"]["title"]
    assert "No evidence supports this claim." in nodes["a"]["title"]
    assert "Not scored by the Grounding critic yet." in nodes["o"]["title"]


def test_support_rebut_undercut_drawn_differently(page):
    edges = {e["relation"]: e for e in _dataset(page, "edges")}
    assert set(edges) == {"r1", "r2", "r3", "r4", "r5"}
    support, rebut, undercut = edges["r1"], edges["r2"], edges["r5"]
    assert support["dashes"] is False
    assert rebut["dashes"] == display.EDGE_STYLES["rebut"]["dashes"]
    assert undercut["dashes"] == display.EDGE_STYLES["undercut"]["dashes"]
    assert len({support["color"]["color"], rebut["color"]["color"], undercut["color"]["color"]}) == 3
    assert (undercut["from"], undercut["to"]) == ("u", "h")  # drawn into the claim r1 argues for
    assert undercut["arrows"]["to"]["type"] == "bar" and rebut["arrows"]["to"]["type"] == "arrow"
    assert "u undercuts r1" in undercut["title"] and "b rebuts h" in rebut["title"]
    # c -> a and a -> c join the same two nodes: they are drawn apart (tests/test_graph_layout.py measures how far)
    assert edges["r3"]["smooth"] != edges["r4"]["smooth"]


def test_cycles_and_orphans_highlighted(page):
    findings = graph_findings(_sno())
    assert findings.orphans == {"o"} and findings.detached == {"o"}
    assert [sorted(c) for c in findings.cycles] == [["a", "c"]]
    nodes = {n["id"]: n for n in _dataset(page, "nodes")}
    assert nodes["c"]["color"]["border"] == display.HIGHLIGHT_COLOURS["cycle"]
    assert nodes["o"]["color"]["border"] == display.HIGHLIGHT_COLOURS["orphan"]
    assert nodes["o"]["shapeProperties"]["borderDashes"]
    assert "On a cycle:" in nodes["c"]["title"] and "Detached" in nodes["o"]["title"]
    edges = {e["relation"]: e for e in _dataset(page, "edges")}
    assert edges["r3"]["shadow"] == {"enabled": True, "color": display.HIGHLIGHT_COLOURS["cycle"], "size": 9,
                                     "x": 0, "y": 0}
    assert edges["r3"]["color"]["color"] == display.EDGE_STYLES["support"]["color"]  # still reads as support
    assert edges["r1"]["shadow"]["enabled"] is False
    assert 'id="cns-legend"' in page and "on a cycle" in page and "orphan" in page


def test_orphan_that_is_not_detached():
    sno = SNO.model_validate({"id": "o", "hypothesis": "h", "claims": [
        {"id": "h", "text": "h"}, {"id": "a", "text": "a"}, {"id": "x", "text": "x"}],
        "relations": [{"source": "a", "target": "h", "kind": "support"},
                      {"source": "x", "target": "a", "kind": "attack"},
                      {"source": "a", "target": "x", "kind": "attack"}]})
    findings = graph_findings(sno)
    assert findings.cycles == []  # mutual attacks are not circular reasoning
    assert findings.orphans == set() and findings.detached == set()
    lone = SNO.model_validate({"id": "l", "hypothesis": "h", "claims": [
        {"id": "h", "text": "h"}, {"id": "a", "text": "a"}, {"id": "b", "text": "b"}],
        "relations": [{"source": "a", "target": "h", "kind": "support"}]})
    f = graph_findings(lone)
    assert f.orphans == {"b"} and f.detached == {"b"}
    nodes = {n["id"]: n for n in _dataset(sno_graph_html(lone, findings=f), "nodes")}
    assert nodes["b"]["color"]["border"] == display.HIGHLIGHT_COLOURS["orphan"]
    assert nodes["a"]["color"]["border"] != display.HIGHLIGHT_COLOURS["orphan"]


def test_claim_grounding_tolerates_bad_rows():
    out = claim_grounding({"a": {"entailment": "0.5"}, "b": "junk", "c": {"entailment": None}})
    assert out["a"].entailment == 0.5 and "b" not in out and out["c"].entailment is None


def test_an_imported_essay_is_layered_major_claim_claims_premises():
    """The brat essay fixture: major claims on top, claims under them, premises under those."""
    from cns_core.formats import import_file

    essays = Path(__file__).parent / "fixtures" / "formats" / "essays"
    sno = import_file("brat", essays / "essay_homework.ann").sno
    types = sno.metadata["unit_types"]
    levels = claim_levels(sno)
    assert {t: sorted({levels[c] for c, k in types.items() if k == t}) for t in set(types.values())} == {
        "MajorClaim": [0], "Claim": [1], "Premise": [2]}
    assert restatements(sno) == ["T9"]
    page = sno_graph_html(sno)
    nodes = {n["id"]: n for n in _dataset(page, "nodes")}
    assert {c: n["level"] for c, n in nodes.items()} == levels
    tops = {lv: {n["y"] for n in nodes.values() if n["level"] == lv} for lv in set(levels.values())}
    assert all(len(ys) == 1 for ys in tops.values()) and sorted(tops, key=lambda lv: tops[lv].pop()) == sorted(tops)
    edges = _dataset(page, "edges")
    (restates,) = [e for e in edges if e.get("restates")]
    assert (restates["from"], restates["to"], restates["arrows"]["to"]["enabled"]) == ("T9", "T1", False)
    assert len(edges) == len(sno.relations) + 1 and "restates the hypothesis" in page
    options = json.loads(re.search(r"var options = (\{.*?\});\n", page, re.S).group(1))
    assert options["physics"]["enabled"] is False      # the layout's positions stay as computed


def test_levels_for_cycles_and_claims_with_no_path_to_the_hypothesis():
    levels = claim_levels(_sno())        # a <-> c is a cycle; o argues about nothing
    assert levels == {"h": 0, "a": 1, "b": 1, "u": 1, "c": 2, "o": 1}
    chain = SNO.model_validate({"id": "d", "hypothesis": "h", "claims": [
        {"id": "h", "text": "h"}, {"id": "x", "text": "x"}, {"id": "y", "text": "y"}],
        "relations": [{"source": "y", "target": "x", "kind": "support"}]})
    assert claim_levels(chain) == {"h": 0, "x": 1, "y": 2}   # a detached argument keeps its own shape
    assert restatements(chain) == [] and "restates the hypothesis" not in sno_graph_html(chain)


VERDICT_ROWS = {
    "h": {"verdict": "contradicted", "p_supported": 0.1, "p_contradicted": 0.8, "p_not_enough_info": 0.1,
          "best_evidence": "e1", "entailment": 0.2, "contradiction": 0.7, "reads": 0,
          "passages": [{"evidence": "e1", "text": "Lab result <b>one</b>.", "similarity": 0.7, "entailment": 0.2,
                        "contradiction": 0.7},
                       {"evidence": "e1", "text": "Other sentence.", "similarity": 0.4, "entailment": 0.05,
                        "contradiction": 0.1},
                       "junk"]},
    "a": {"verdict": "maybe", "entailment": 0.6},
}


def test_the_verdict_colours_the_node_and_its_passages_are_listed():
    sno = _sno()
    grounding = claim_grounding(VERDICT_ROWS)
    h = grounding["h"]
    assert h.verdict == "contradicted" and h.support == 0.1 and len(h.passages) == 2   # the junk row is skipped
    assert grounding["a"].verdict is None and grounding["a"].support == 0.6           # old rows: best entailment
    nodes = {n["id"]: n for n in _dataset(sno_graph_html(sno, grounding), "nodes")}
    h_bg = nodes["h"]["color"]["background"]
    assert int(h_bg[1:3], 16) > int(h_bg[3:5], 16)          # p(supported) 0.1: more red than green
    assert "Verdict: contradicted · p(supported) 0.10 · p(contradicted) 0.80" in nodes["h"]["title"]
    assert "The verdict reads e1 (lab), validity 1.00, this passage of it; it contradicts the claim " \
           "(contradicts 0.70):" in nodes["h"]["title"] and "Lab result <b>one</b>." in nodes["h"]["title"]
    rows = {r["Claim"]: r for r in claim_verdict_rows(sno, grounding)}
    assert rows["h"]["Verdict"] == "contradicted" and rows["h"]["p(supported)"] == 0.1
    assert rows["h"]["Verdict reads"] == "e1 · part · contradicts 0.70"   # which part of e1, what it shows
    assert rows["o"]["Verdict"] == "not scored" and rows["o"]["p(supported)"] is None
    assert [r["Similarity"] for r in claim_passage_rows(h)] == [0.7, 0.4]


# ----- issue 35 item 5: the verdict at a glance, the probability second ------------------------
def _node_of(verdict: str, **p: float) -> dict:
    sno = _sno()
    nodes = {n["id"]: n for n in _dataset(sno_graph_html(sno, claim_grounding({"a": {"verdict": verdict, **p}})),
                                          "nodes")}
    return nodes["a"]


def test_contradicted_supported_and_unrelated_claims_look_different_without_colour():
    weak_support = _node_of("supported", p_supported=0.50, p_contradicted=0.48)
    strong_support = _node_of("supported", p_supported=0.92, p_contradicted=0.05)
    contradicted = _node_of("contradicted", p_supported=0.30, p_contradicted=0.55)
    unrelated = _node_of("not_enough_info", p_supported=0.03, p_contradicted=0.03, p_not_enough_info=0.94)
    looks = {n["verdict"]: (n["shape"], n["label"].split()[0], n["color"]["background"])
             for n in (weak_support, contradicted, unrelated)}
    assert len({shape_icon[:2] for shape_icon in looks.values()}) == 3         # icon and shape tell them apart
    assert looks["supported"][1] == "✓" and looks["contradicted"][1] == "✗" and looks["not_enough_info"][1] == "?"
    assert looks["contradicted"][0] == "ellipse" and looks["supported"][0] == "box"
    red, green = (lambda c: int(c[1:3], 16)), (lambda c: int(c[3:5], 16))
    assert red(contradicted["color"]["background"]) > green(contradicted["color"]["background"])
    unrelated_bg = unrelated["color"]["background"]       # an unrelated claim is grey-blue, never deep red
    assert abs(red(unrelated_bg) - green(unrelated_bg)) < 40
    # the probability is the secondary cue: a verdict at 0.50 is paler than one at 0.92, and says so
    assert sum(int(weak_support["color"]["background"][i:i + 2], 16) for i in (1, 3, 5)) > sum(
        int(strong_support["color"]["background"][i:i + 2], 16) for i in (1, 3, 5))
    assert "supported 0.50" in weak_support["label"] and "contradicted 0.55" in contradicted["label"]
    assert "supported 0.03 · contradicted 0.03" in unrelated["label"]      # how near each side came


def test_the_legend_sits_above_the_canvas_and_names_every_verdict(page):
    legend = page[page.index('id="cns-legend"'):page.index('<div id="mynetwork"')]
    assert "position:absolute" not in legend
    for verdict in ("supported", "contradicted", "not_enough_info", "not_scored"):
        assert f'data-verdict="{verdict}"' in legend


# ----- issue 35 item 8: the passages of one evidence item say which part they are -------------
def test_passages_of_one_item_say_which_part_they_are_and_which_the_verdict_reads():
    from cns_core.views.graph_html import passage_part

    text = "Trials found no effect. A review agreed. Doses were high."
    g = claim_grounding({"h": {"verdict": "contradicted", "reads": 1, "passages": [
        {"evidence": "e1", "text": text, "entailment": 0.1, "contradiction": 0.6},
        {"evidence": "e1", "text": "Trials found no effect.", "entailment": 0.05, "contradiction": 0.8},
        {"evidence": "e1", "text": "A review agreed. Doses were high.", "entailment": 0.3, "contradiction": 0.1}]}})
    rows = claim_passage_rows(g["h"], {"e1": text})
    assert [r["Part"] for r in rows] == ["whole item", "sentence 1 of 3", "sentences 2-3 of 3"]
    assert [r["Verdict reads"] for r in rows] == ["", "this passage", ""]
    # issue 51 item 3: a passage at entailment 0.30 (neutral 0.60) is not one that "entails"
    assert [r["Shows"] for r in rows] == ["contradicts", "contradicts", "neither"]
    assert passage_part(text, "something else") == "part"


def test_the_graph_and_the_coherence_page_name_the_passage_the_verdict_reads():
    """Issue 51 item 3: Vitamin C's h was shown with e2 "entails most" (entailment 0.21) on the Graph while
    Coherence said it conflicts with e1. Both read the critic's one choice (``reads``)."""
    from cns_core.coherence import CoherenceHook
    from cns_core.critics.grounding_verdict import claim_verdicts
    from cns_core.pipeline import CriticPipeline
    from cns_core.sno import load_snos

    (sno,) = load_snos(Path(__file__).resolve().parent.parent / "examples" / "contradicted_vitamin_c.yaml")
    grounding = claim_verdicts(CriticPipeline().run_critics(sno))
    rows = {r["Claim"]: r for r in claim_verdict_rows(sno, grounding)}
    report = CoherenceHook(log=False).check_sno(sno, grounding=grounding)
    for claim_id, g in grounding.items():
        read = g.read_passage
        assert read is not None and rows[claim_id]["Verdict reads"].startswith(f"{read.evidence} · ")
        if g.verdict == "contradicted":     # the item it conflicts with on Coherence is the one the graph names
            assert read.evidence in report.partners(claim_id), claim_id
            assert read.contradiction == g.max_contradiction
        if g.verdict == "supported":
            assert read.entailment == g.entailment
