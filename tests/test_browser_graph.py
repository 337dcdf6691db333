"""The reasoning graph as Chromium draws it (issue 43 item 3): no edge runs through a node that is not one of
its ends, and a wide graph opens at a zoom where its labels can be read.

The graph page is self-contained (``sno_graph_html``), so it is loaded straight into Chromium, no server; the
geometry comes from vis-network itself (``graph_geometry.GEOMETRY_JS``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from graph_geometry import GEOMETRY_JS
from test_browser import ARTIFACTS, browser  # noqa: F401  (browser is a fixture)

from cns_core.formats import import_file
from cns_core.sno import SNO, load_snos
from cns_core.views.graph_html import MIN_SCALE, sno_graph_html

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).parent / "fixtures" / "formats"


def _wide() -> SNO:
    """14 claims: six arguing about the hypothesis, seven premises under them (wider than the frame)."""
    claims = [{"id": "h", "text": "The hypothesis that every other claim argues about, stated at some length."}]
    relations = []
    for i in range(1, 7):
        claims.append({"id": f"c{i}", "text": f"Claim {i} on the first layer, arguing about the hypothesis directly."})
        relations.append({"id": f"r{i}", "source": f"c{i}", "target": "h", "kind": "support" if i % 3 else "attack"})
    for i in range(7, 14):
        claims.append({"id": f"c{i}", "text": f"Premise {i}, backing one of the first layer's claims with detail."})
        relations.append({"id": f"r{i}", "source": f"c{i}", "target": f"c{i % 6 + 1}", "kind": "support"})
    return SNO.model_validate({"id": "wide", "title": "wide", "hypothesis": "h", "claims": claims,
                               "relations": relations})


GRAPHS = {
    "homework": lambda: load_snos(ROOT / "examples" / "loaded_homework.yaml")[0],     # c1 -> h ran through c2
    "essay": lambda: import_file("brat", FIXTURES / "essays" / "essay_homework.ann").sno,
    "wide": _wide,
}


@pytest.mark.parametrize("name", list(GRAPHS))
def test_no_edge_crosses_a_node_and_labels_stay_readable(browser, name):  # noqa: F811
    sno = GRAPHS[name]()
    page = browser.new_page(viewport={"width": 1100, "height": 900})
    try:
        page.set_content(sno_graph_html(sno))
        page.wait_for_function("() => window.cnsReady === true", timeout=30_000)
        drawn = page.evaluate(GEOMETRY_JS)
        page.screenshot(path=str(ARTIFACTS / f"graph-{name}.png"))
    finally:
        page.close()
    assert drawn["nodes"] == len(sno.claims)
    assert drawn["crossings"] == [], f"edges (from, to, through): {drawn['crossings']}"
    assert drawn["scale"] >= MIN_SCALE - 1e-6      # a 13 px label at least about 10 px high
