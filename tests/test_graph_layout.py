"""The reasoning graph's layout in numbers (issue 51 item 1): no edge passes under a claim it does not join.

Each edge is sampled along the curve vis-network draws (:func:`cns_core.views.graph_layout.edge_points`, whose
formulas ``tests/test_browser_graph.py`` checks against Chromium's) and its distance to the box of every other
claim is measured. Graphs: every bundled example (with labels of each verdict, which change the boxes), the
import fixtures and drafted essays. The central-bank example is the one whose back edge h -> c5 ran under c1 and
c4, and c1 -> c3 under c4, in vis-network's own layout.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cns_core.critics.grounding_verdict import ClaimGrounding
from cns_core.sno import SNO, load_snos
from cns_core.views.graph_html import claim_levels, graph_layout
from cns_core.views.graph_layout import CLEARANCE, PAIR_APART_PX, EdgeShape, NodeBox, edge_points, layout_graph

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
FORMATS = Path(__file__).parent / "fixtures" / "formats"


def _verdicts(sno: SNO, verdict: str | None) -> dict[str, ClaimGrounding]:
    """Every claim with one verdict (not enough information has the longest labels; contradicted ellipses)."""
    if verdict is None:
        return {}
    return {c.id: ClaimGrounding(verdict=verdict, p_supported=0.31, p_contradicted=0.62, p_not_enough_info=0.07)
            for c in sno.claims}


def _assert_clear(sno: SNO, grounding=None) -> None:
    layout = graph_layout(sno, grounding)
    assert layout.crossings() == [], f"{sno.id}: (from, to, claim passed under): {layout.crossings()}"
    assert set(layout.positions) == {c.id for c in sno.claims}
    levels = claim_levels(sno)
    for a in layout.positions:          # layered: a lower level is drawn above a higher one
        for b in layout.positions:
            if levels[a] < levels[b]:
                assert layout.positions[a][1] < layout.positions[b][1], (a, b)


@pytest.mark.parametrize("verdict", [None, "supported", "contradicted", "not_enough_info"])
@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_no_edge_passes_under_a_claim_in_a_bundled_example(path, verdict):
    (sno,) = load_snos(path)
    _assert_clear(sno, _verdicts(sno, verdict))


def test_the_central_bank_cycles_are_drawn_clear_of_the_claims_between_their_ends():
    (sno,) = load_snos(ROOT / "examples" / "circular_forecasts.yaml")
    layout = graph_layout(sno)
    shapes = dict(zip(layout.edges, layout.shapes))
    # the back edges of both cycles, each checked on its own: at least CLEARANCE px from every other claim
    for edge in (("h", "c5"), ("c1", "c3")):
        points = edge_points(layout.positions[edge[0]], layout.positions[edge[1]], shapes[edge])
        for claim, (x, y) in layout.positions.items():
            if claim in edge:
                continue
            box = layout.boxes[claim]
            gaps = [max(abs(px - x) - box.width / 2, 0.0) ** 2 + max(abs(py - y) - box.height / 2, 0.0) ** 2
                    for px, py in points]
            assert min(gaps) ** 0.5 >= CLEARANCE, (edge, claim)


@pytest.mark.parametrize("fmt,name", [("brat", "essays/essay_homework.ann"), ("brat", "essay01.ann"),
                                      ("aif", "debate.json"), ("microtexts", "micro_t001.xml")])
def test_no_edge_passes_under_a_claim_in_an_imported_argument(fmt, name):
    from cns_core.formats import import_file

    _assert_clear(import_file(fmt, FORMATS / name).sno)


def test_no_edge_passes_under_a_claim_in_a_drafted_essay():
    from cns_core.text import draft_sno
    from cns_core.text.sources import read_source_bytes

    fixtures = Path(__file__).parent / "fixtures" / "text"
    essays = [((fixtures / "diesel_essay.md").read_text(encoding="utf-8"),
               read_source_bytes((fixtures / "diesel_source.txt").read_bytes(), "pasted source")),
              ((ROOT / "examples" / "text" / "sugar_tax.md").read_text(encoding="utf-8"),
               read_source_bytes((ROOT / "examples" / "text" / "sugar_tax_sources.txt").read_bytes(), "sources"))]
    for text, source in essays:
        sno = draft_sno(text, sources=[source]).sno
        assert len(sno.claims) >= 5
        _assert_clear(sno)
        _assert_clear(sno, _verdicts(sno, "not_enough_info"))


def test_a_long_edge_between_claims_of_one_column_bends_around_the_claims_between():
    """Four claims stacked in one column and an edge from the top to the bottom: drawn straight, it would run
    under the two claims between (what vis-network did to h -> c5)."""
    levels = {"a": 0, "b": 1, "c": 2, "d": 3}
    edges = [("b", "a"), ("c", "b"), ("d", "c"), ("a", "d")]
    boxes = dict.fromkeys(levels, NodeBox(200, 80))
    layout = layout_graph(levels, edges, boxes)
    assert layout.crossings() == []


def test_two_edges_between_the_same_claims_are_drawn_apart():
    levels = {"h": 0, "a": 1, "c": 2}
    edges = [("a", "h"), ("c", "a"), ("a", "c")]
    layout = layout_graph(levels, edges, dict.fromkeys(levels, NodeBox(200, 70)))
    there = edge_points(layout.positions["c"], layout.positions["a"], layout.shapes[1])
    back = edge_points(layout.positions["a"], layout.positions["c"], layout.shapes[2])[::-1]
    n = min(len(there), len(back))
    apart = np.linalg.norm(there[np.linspace(0, len(there) - 1, n).round().astype(int)]
                           - back[np.linspace(0, len(back) - 1, n).round().astype(int)], axis=1).max()
    assert apart >= PAIR_APART_PX


def test_the_curves_are_vis_networks():
    """Straight, vis-network's cubicBezier (vertical) and curvedCW / curvedCCW at their ends and middle."""
    start, end = (0.0, 0.0), (100.0, 200.0)
    for shape in (EdgeShape("straight"), EdgeShape("cubic", 0.6), EdgeShape("cw", 0.3), EdgeShape("ccw", 0.3)):
        points = edge_points(start, end, shape)
        assert tuple(points[0]) == start and tuple(points[-1]) == pytest.approx(end)
        assert max(((points[1:] - points[:-1]) ** 2).sum(axis=1) ** 0.5) <= 4.0 + 1e-9
    mid = lambda shape: edge_points(start, end, shape, spacing=1e6)[4]      # noqa: E731  (9 points: t = 0.5)
    assert tuple(mid(EdgeShape("straight"))) == pytest.approx((50.0, 100.0))
    assert tuple(mid(EdgeShape("cubic", 0.6))) == pytest.approx((50.0, 100.0))   # symmetric S
    cw, ccw = mid(EdgeShape("cw", 0.3)), mid(EdgeShape("ccw", 0.3))
    assert (cw[0] - 50) * (ccw[0] - 50) < 0      # the two arcs bow to opposite sides (Chromium checks the values)
    assert EdgeShape("cw", 0.3).vis_smooth() == {"enabled": True, "type": "curvedCW", "roundness": 0.3}
    assert EdgeShape("straight").vis_smooth() == {"enabled": False}
