"""What a reasoning graph looks like once vis-network has laid it out in Chromium (for the browser tests).

``GEOMETRY_JS`` runs in the graph's page: every edge is sampled along its drawn curve, and a sample inside
another node's box (its own two ends excepted) is a crossing, the edge reading as a link it is not. It also
returns the zoom and how high the smallest label is drawn (``label_px``), each node's box and position, and each
edge's points at t = k/20, to compare with what ``cns_core.views.graph_layout`` computed in Python.
"""

GEOMETRY_JS = """() => {
  const net = window.network;
  const ids = net.body.nodeIndices;
  const inset = 3;     // a curve grazing a box's corner is not through the node
  const boxes = {};
  for (const id of ids) boxes[id] = net.getBoundingBox(id);
  const crossings = [];
  const curves = [];
  for (const eid of net.body.edgeIndices) {
    const e = net.body.edges[eid];
    if (!e.connected) continue;
    let hit = null;
    for (let k = 1; k < 60 && !hit; k++) {
      const pt = e.edgeType.getPoint(k / 60);
      for (const id of ids) {
        if (id === e.fromId || id === e.toId) continue;
        const b = boxes[id];
        if (pt.x > b.left + inset && pt.x < b.right - inset && pt.y > b.top + inset && pt.y < b.bottom - inset) {
          hit = id; break;
        }
      }
    }
    if (hit) crossings.push([e.fromId, e.toId, hit]);
    const points = [];
    for (let k = 0; k <= 20; k++) { const pt = e.edgeType.getPoint(k / 20); points.push([pt.x, pt.y]); }
    curves.push({from: e.fromId, to: e.toId, points: points});
  }
  const sizes = {};
  for (const id of ids) { const b = boxes[id]; sizes[id] = [b.right - b.left, b.bottom - b.top]; }
  const fonts = ids.map((id) => net.body.nodes[id].options.font.size);
  return {crossings: crossings, scale: net.getScale(), label_px: net.getScale() * Math.min(...fonts),
          nodes: ids.length, sizes: sizes,
          positions: net.getPositions(), curves: curves};
}"""


def graph_frames(page) -> list:
    """The frames of the page that draw a reasoning graph (the dashboard shows each in an iframe), once each has
    applied its opening zoom (``window.cnsReady``)."""
    frames = [f for f in page.frames if f.evaluate("() => typeof window.network !== 'undefined' && !!window.network")]
    for frame in frames:
        frame.wait_for_function("() => window.cnsReady === true", timeout=30_000)
    return frames


def graph_scales(page) -> list[float]:
    """The zoom of every reasoning graph drawn in the page."""
    return [frame.evaluate("() => window.network.getScale()") for frame in graph_frames(page)]


LABEL_PX_JS = ("() => window.network.getScale() * Math.min(...window.network.body.nodeIndices.map("
               "(id) => window.network.body.nodes[id].options.font.size))")


def graph_label_px(page) -> list[float]:
    """How high the smallest label of every reasoning graph in the page is drawn, in screen pixels (zoom times
    font size: a wide graph opens fitted, with larger fonts)."""
    return [frame.evaluate(LABEL_PX_JS) for frame in graph_frames(page)]
