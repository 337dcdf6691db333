"""Where each claim of a reasoning graph sits and how each edge bends, so that no edge passes under a claim it
does not join.

vis-network's own hierarchical layout drew a cycle's back edge (the hypothesis supporting a premise three
layers down) straight through the claims between its ends, and an edge between far-apart claims of adjacent
layers under a neighbour: the reader saw a double arrowhead and had to drag nodes to find the edge. So the
layout is computed here and handed to vis-network as fixed positions, each edge with one of the curves
vis-network draws (its formulas are copied in :func:`edge_points`). The property is then a matter of numbers:
every point of every edge keeps :data:`CLEARANCE` pixels away from the box of every claim that is not one of
its ends (:func:`crossings`), and the browser tests check that Chromium draws the same curves.

The steps, a small Sugiyama layout:

1. layers from :func:`cns_core.views.graph_html.claim_levels` (0 on top);
2. the order inside each layer by barycentre sweeps, an edge that spans layers held by a placeholder in
   each layer it crosses, keeping the order with the fewest crossings between layers;
3. x by least squares: each item as near the mean of its neighbours as the minimum spacing allows
   (isotonic regression, so the order is kept);
4. per edge, the first shape of a short list that passes under no claim; where none does, the claim in the
   way moves aside (with the rest of its layer on that side) and the shapes are chosen again.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

import numpy as np

__all__ = ["NodeBox", "EdgeShape", "GraphLayout", "layout_graph", "edge_points", "crossings", "CLEARANCE",
           "LAYER_GAP", "NODE_GAP", "SAMPLE_PX", "PAIR_APART_PX"]

CLEARANCE = 8.0        # px an edge keeps from a claim it does not join
NODE_GAP = 48.0        # px between two claims of a layer
PLACEHOLDER_PX = 28.0  # the width an edge crossing a layer reserves in it
LAYER_GAP = 90.0       # px between the bottom of one layer's tallest claim and the top of the next one's
_SWEEPS = 8
_MAX_MOVES = 40
SAMPLE_PX = 4.0        # px between two sampled points of an edge
PAIR_APART_PX = 30.0   # how far apart, at their widest, two edges between the same claims are drawn
_ROUNDNESS = (0.2, 0.3, 0.45, 0.6, 0.8, 1.0)
_FINE_ROUNDNESS = tuple(round(0.05 * k, 2) for k in range(1, 21))   # for an edge the usual shapes do not clear


@dataclass(frozen=True)
class NodeBox:
    """A claim's drawn size in px (its bounding box, centred on its position)."""

    width: float
    height: float


@dataclass(frozen=True)
class EdgeShape:
    """One of the curves vis-network draws: ``cubic`` (cubicBezier, leaving each end vertically),
    ``straight``, or ``cw`` / ``ccw`` (a quadratic arc bent clockwise or counter-clockwise)."""

    kind: str
    roundness: float = 0.0

    def vis_smooth(self) -> dict:
        """The edge's ``smooth`` option for vis-network."""
        if self.kind == "straight":
            return {"enabled": False}
        if self.kind == "cubic":
            return {"enabled": True, "type": "cubicBezier", "forceDirection": "vertical", "roundness": self.roundness}
        return {"enabled": True, "type": "curvedCW" if self.kind == "cw" else "curvedCCW", "roundness": self.roundness}


@dataclass
class GraphLayout:
    """Positions (centres, px, y down) and one shape per edge (in the order the edges were given)."""

    positions: dict[str, tuple[float, float]]
    shapes: list[EdgeShape]
    boxes: Mapping[str, NodeBox]
    edges: list[tuple[str, str]] = field(default_factory=list)

    @property
    def height(self) -> float:
        """From the top of the highest claim to the bottom of the lowest."""
        if not self.positions:
            return 0.0
        tops = [y - self.boxes[n].height / 2 for n, (_, y) in self.positions.items()]
        bottoms = [y + self.boxes[n].height / 2 for n, (_, y) in self.positions.items()]
        return max(bottoms) - min(tops)

    def crossings(self, clearance: float = CLEARANCE) -> list[tuple[str, str, str]]:
        """Every (from, to, claim it passes under); empty when the layout is clear."""
        return crossings(self.positions, self.boxes, self.edges, self.shapes, clearance)


# ----- the curves, as vis-network 9 computes them --------------------------------------------------
def _controls(start: tuple[float, float], end: tuple[float, float], shape: EdgeShape) -> list[tuple[float, float]]:
    """The Bezier control points of the edge from ``start`` to ``end`` (node centres), as vis-network 9 computes
    them (``BezierEdgeStatic._getViaCoordinates`` for curvedCW / curvedCCW, ``CubicBezierEdge`` with
    ``forceDirection: "vertical"``)."""
    (x0, y0), (x1, y1) = start, end
    if shape.kind == "straight":
        return [start, end]
    if shape.kind == "cubic":
        r, dy = shape.roundness, y0 - y1
        return [start, (x0, y0 - r * dy), (x1, y1 + r * dy), end]
    dx, dy = x1 - x0, y0 - y1
    radius, factor = math.hypot(dx, dy), 0.5 * shape.roundness + 0.5
    turn = factor if shape.kind == "cw" else 0.5 - 0.5 * shape.roundness
    angle = math.atan2(dy, dx) + turn * math.pi
    return [start, (x0 + factor * radius * math.sin(angle), y0 + factor * radius * math.cos(angle)), end]


def edge_points(start: tuple[float, float], end: tuple[float, float], shape: EdgeShape,
                spacing: float = SAMPLE_PX) -> np.ndarray:
    """``(n, 2)`` points along the edge as vis-network draws it, at most ``spacing`` px apart: a Bezier curve of
    degree d moves at most d times its longest control leg per unit of t."""
    controls = np.asarray(_controls(start, end, shape), dtype=np.float64)
    degree = len(controls) - 1
    fastest = degree * float(np.linalg.norm(np.diff(controls, axis=0), axis=1).max())
    t = np.linspace(0.0, 1.0, max(8, math.ceil(fastest / spacing)) + 1)[:, None]
    return sum(math.comb(degree, k) * t ** k * (1 - t) ** (degree - k) * controls[k] for k in range(degree + 1))


class _Boxes:
    """The claims' boxes as arrays, for distances from many points at once."""

    def __init__(self, positions: Mapping[str, tuple[float, float]], boxes: Mapping[str, NodeBox]):
        self.ids = list(positions)
        self.centres = np.array([positions[n] for n in self.ids], dtype=np.float64).reshape(-1, 2)
        self.half = np.array([(boxes[n].width / 2, boxes[n].height / 2) for n in self.ids],
                             dtype=np.float64).reshape(-1, 2)

    def near(self, points: np.ndarray, ends: tuple[str, str], clearance: float) -> list[str]:
        """The claims (not ``ends``) that some point comes nearer to than ``clearance`` px. Points at most
        ``SAMPLE_PX`` apart: the curve between two of them is then at least ``clearance - SAMPLE_PX / 2`` away."""
        low, high = points.min(axis=0) - clearance, points.max(axis=0) + clearance
        close = np.flatnonzero(((self.centres + self.half) > low).all(axis=1)
                               & ((self.centres - self.half) < high).all(axis=1))
        hit = []
        for k in close:
            node = self.ids[k]
            if node in ends:
                continue
            gap = np.maximum(np.abs(points - self.centres[k]) - self.half[k], 0.0)
            if float((gap ** 2).sum(axis=1).min()) < clearance ** 2:
                hit.append(node)
        return hit


def crossings(positions: Mapping[str, tuple[float, float]], boxes: Mapping[str, NodeBox],
              edges: Sequence[tuple[str, str]], shapes: Sequence[EdgeShape],
              clearance: float = CLEARANCE) -> list[tuple[str, str, str]]:
    """Every (from, to, claim) where an edge comes nearer than ``clearance`` px to a claim it does not join."""
    arrays = _Boxes(positions, boxes)
    return [(a, b, node) for (a, b), shape in zip(edges, shapes)
            for node in arrays.near(edge_points(positions[a], positions[b], shape), (a, b), clearance)]


# ----- 2. the order inside each layer -----------------------------------------------------------------
@dataclass
class _Layers:
    """Layers of items: claims and placeholders (``("edge", i, level)``) of edges that span layers."""

    rows: list[list[object]]
    links: list[tuple[object, object]]      # between items of adjacent layers
    level: dict[object, int]
    ends: dict[object, tuple[str, str]]     # placeholder -> its edge's (upper, lower) claims


def _layers(levels: Mapping[str, int], edges: Sequence[tuple[str, str]]) -> _Layers:
    depth = max(levels.values(), default=0) + 1
    rows: list[list[object]] = [[] for _ in range(depth)]
    level: dict[object, int] = {}
    for node, lv in levels.items():
        rows[lv].append(node)
        level[node] = lv
    links: list[tuple[object, object]] = []
    ends: dict[object, tuple[str, str]] = {}
    for i, (a, b) in enumerate(edges):
        top, bottom = (a, b) if levels[a] <= levels[b] else (b, a)
        chain: list[object] = [top]
        for lv in range(levels[top] + 1, levels[bottom]):
            holder = ("edge", i, lv)
            rows[lv].append(holder)
            level[holder] = lv
            ends[holder] = (top, bottom)
            chain.append(holder)
        chain.append(bottom)
        if levels[top] != levels[bottom]:
            links.extend(zip(chain, chain[1:]))
    return _Layers(rows, links, level, ends)


def _crossing_count(layers: _Layers) -> int:
    where = {item: k for row in layers.rows for k, item in enumerate(row)}
    by_gap: dict[int, list[tuple[int, int]]] = {}
    for a, b in layers.links:
        upper, lower = (a, b) if layers.level[a] < layers.level[b] else (b, a)
        by_gap.setdefault(layers.level[upper], []).append((where[upper], where[lower]))
    total = 0
    for pairs in by_gap.values():
        for i, (a1, b1) in enumerate(pairs):
            total += sum(1 for a2, b2 in pairs[i + 1:] if (a1 - a2) * (b1 - b2) < 0)
    return total


def _order(layers: _Layers) -> None:
    """Barycentre sweeps down and up; the rows end in the order with the fewest crossings seen."""
    neighbours: dict[object, list[object]] = {}
    for a, b in layers.links:
        neighbours.setdefault(a, []).append(b)
        neighbours.setdefault(b, []).append(a)
    best, best_count = [list(r) for r in layers.rows], _crossing_count(layers)
    for sweep in range(_SWEEPS):
        down = sweep % 2 == 0
        span = range(1, len(layers.rows)) if down else range(len(layers.rows) - 2, -1, -1)
        for lv in span:
            ref = lv - 1 if down else lv + 1
            where = {item: k for k, item in enumerate(layers.rows[ref])}
            row = layers.rows[lv]

            def centre(item: object, k: int) -> float:
                near = [where[n] for n in neighbours.get(item, ()) if n in where]
                return sum(near) / len(near) if near else float(k)

            keyed = [(centre(item, k), k, item) for k, item in enumerate(row)]
            layers.rows[lv] = [item for _, _, item in sorted(keyed, key=lambda x: (x[0], x[1]))]
        count = _crossing_count(layers)
        if count < best_count:
            best, best_count = [list(r) for r in layers.rows], count
    layers.rows = best


# ----- 3. x by least squares under the spacing -------------------------------------------------------
def _isotonic(values: Sequence[float], weights: Sequence[float]) -> list[float]:
    """The non-decreasing sequence nearest ``values`` in weighted least squares (pool adjacent violators)."""
    blocks: list[list[float]] = []      # [mean, weight, count]
    for v, w in zip(values, weights):
        blocks.append([v, w, 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            m2, w2, n2 = blocks.pop()
            m1, w1, n1 = blocks[-1]
            blocks[-1] = [(m1 * w1 + m2 * w2) / (w1 + w2), w1 + w2, n1 + n2]
    out: list[float] = []
    for mean, _, count in blocks:
        out.extend([mean] * int(count))
    return out


def _spacing(a: object, b: object, width: Mapping[object, float]) -> float:
    gap = NODE_GAP if isinstance(a, str) and isinstance(b, str) else NODE_GAP / 2
    return (width[a] + width[b]) / 2 + gap


def _place_row(row: Sequence[object], wanted: Sequence[float], width: Mapping[object, float],
               weights: Sequence[float] | None = None) -> list[float]:
    """The positions nearest ``wanted`` (weighted) that keep the row's order and spacing."""
    offsets = [0.0]
    for a, b in zip(row, row[1:]):
        offsets.append(offsets[-1] + _spacing(a, b, width))
    fitted = _isotonic([w - o for w, o in zip(wanted, offsets)], weights or [1.0] * len(row))
    return [f + o for f, o in zip(fitted, offsets)]


_HELD = 50.0     # how much more a placeholder keeps to its edge's straight line than a claim to its neighbours


def _assign_x(layers: _Layers, width: dict[object, float], ends: Mapping[object, tuple[str, str]],
              row_y: Sequence[float], row_height: Sequence[float], clearance: float) -> dict[object, float]:
    """x of every item: claims near the mean of their neighbours, each placeholder on the straight line between
    its edge's ends, and as wide as that line drifts across its layer's tallest claim (so a long edge can be
    drawn straight, between the claims its placeholders keep apart)."""
    x: dict[object, float] = {}
    for row in layers.rows:
        packed = _place_row(row, [0.0] * len(row), width)
        shift = (packed[0] + packed[-1]) / 2 if packed else 0.0
        x.update({item: p - shift for item, p in zip(row, packed)})
    neighbours: dict[object, list[object]] = {}
    for a, b in layers.links:
        neighbours.setdefault(a, []).append(b)
        neighbours.setdefault(b, []).append(a)
    depth = len(layers.rows)

    def on_line(holder: object) -> float:
        top, bottom = ends[holder]
        share = (layers.level[holder] - layers.level[top]) / (layers.level[bottom] - layers.level[top])
        return x[top] + share * (x[bottom] - x[top])

    for sweep in range(2 * _SWEEPS):
        down = sweep % 2 == 0
        for lv in (range(depth) if down else range(depth - 1, -1, -1)):
            row = layers.rows[lv]
            wanted, weights = [], []
            for item in row:
                if item in ends:
                    wanted.append(on_line(item))
                    weights.append(_HELD)
                    continue
                near = [x[n] for n in neighbours.get(item, ()) if layers.level[n] == (lv - 1 if down else lv + 1)]
                near = near or [x[n] for n in neighbours.get(item, ())]
                wanted.append(sum(near) / len(near) if near else x[item])
                weights.append(1.0)
            x.update(zip(row, _place_row(row, wanted, width, weights)))
        for holder, (top, bottom) in ends.items():      # as wide as the line drifts across the layer
            slope = abs(x[bottom] - x[top]) / (row_y[layers.level[bottom]] - row_y[layers.level[top]])
            width[holder] = 2 * clearance + 12 + slope * row_height[layers.level[holder]]
    return x


# ----- 4. shapes that pass under no claim -------------------------------------------------------------
def _candidates(span: int, fine: bool = False) -> list[EdgeShape]:
    """The shapes tried for an edge spanning ``span`` layers, most readable first; ``fine``: more of them."""
    arcs = [EdgeShape(kind, r) for r in (_FINE_ROUNDNESS if fine else _ROUNDNESS) for kind in ("cw", "ccw")]
    cubics = [EdgeShape("cubic", r) for r in ((0.6, 0.35, 0.8, 0.2) if fine else (0.6, 0.35))]
    if span == 0:
        return [EdgeShape("straight"), *arcs]
    if span == 1:
        return [*cubics, EdgeShape("straight"), *arcs]
    return [EdgeShape("straight"), *arcs, *cubics]


def _distinct(points: np.ndarray, drawn: Iterable[np.ndarray]) -> bool:
    """False when ``points`` runs along an edge already drawn between the same two claims (each oriented from
    the pair's first claim in sort order, so a -> b and b -> a compare; resampled to the same count)."""
    for other in drawn:
        n = min(len(points), len(other))
        mine = points[np.linspace(0, len(points) - 1, n).round().astype(int)]
        theirs = other[np.linspace(0, len(other) - 1, n).round().astype(int)]
        if np.linalg.norm(mine - theirs, axis=1).max() < PAIR_APART_PX:
            return False
    return True


def _choose_shapes(positions: Mapping[str, tuple[float, float]], boxes: Mapping[str, NodeBox],
                   edges: Sequence[tuple[str, str]], levels: Mapping[str, int], clearance: float,
                   before: Sequence[EdgeShape] = (), fine: bool = False
                   ) -> tuple[list[EdgeShape], dict[int, tuple[EdgeShape, list[str]]]]:
    """Per edge the first clear shape (the one it had ``before``, if still clear; ``fine``: of every shape);
    for an edge with none, its least blocked shape and what blocks it."""
    arrays = _Boxes(positions, boxes)
    shapes: list[EdgeShape] = []
    blocked: dict[int, tuple[EdgeShape, list[str]]] = {}
    drawn: dict[frozenset[str], list[np.ndarray]] = {}
    for i, (a, b) in enumerate(edges):
        pair = frozenset((a, b))
        fewest: tuple[EdgeShape, list[str]] | None = None
        chosen, chosen_points = None, None
        span = abs(levels[a] - levels[b])
        for shape in [*before[i:i + 1], *_candidates(span, fine)]:
            points = edge_points(positions[a], positions[b], shape)
            oriented = points if a < b else points[::-1]
            if not _distinct(oriented, drawn.get(pair, ())):
                continue
            hit = arrays.near(points, (a, b), clearance)
            if not hit:
                chosen, chosen_points = shape, oriented
                break
            if fewest is None or len(hit) < len(fewest[1]):
                fewest = (shape, hit)
        if chosen is None:
            assert fewest is not None
            chosen = fewest[0]
            blocked[i] = fewest
            points = edge_points(positions[a], positions[b], chosen)
            chosen_points = points if a < b else points[::-1]
        shapes.append(chosen)
        drawn.setdefault(pair, []).append(chosen_points)
    return shapes, blocked


def _move_aside(node: str, edge: tuple[str, str], shape: EdgeShape, positions: dict[str, tuple[float, float]],
                boxes: Mapping[str, NodeBox], rows: Sequence[Sequence[str]], clearance: float,
                sides: dict[str, bool]) -> None:
    """Shift ``node`` (and the claims of its layer beyond it) sideways, off the edge's path. A claim keeps the
    side it first moved to (``sides``: True rightwards), so two edges never push it to and fro."""
    points = edge_points(positions[edge[0]], positions[edge[1]], shape)
    nx, ny = positions[node]
    near = points[int(np.argmin(np.abs(points[:, 1] - ny) + 0.01 * np.abs(points[:, 0] - nx)))]
    row = next(r for r in rows if node in r)
    end = next((e for e in edge if e in row), None)
    if end is not None:          # in the row of one of the edge's ends: away from it, never pushing it along
        rightwards = nx >= positions[end][0]
    else:
        rightwards = sides.setdefault(node, nx >= near[0])
    step = boxes[node].width / 2 + clearance + 6 - (nx - near[0] if rightwards else near[0] - nx)
    step = math.ceil(max(step, 12.0)) * (1 if rightwards else -1)
    for other in row:
        ox, oy = positions[other]
        if (ox >= nx) if rightwards else (ox <= nx):
            positions[other] = (float(ox + step), oy)


def layout_graph(levels: Mapping[str, int], edges: Sequence[tuple[str, str]], boxes: Mapping[str, NodeBox],
                 *, clearance: float = CLEARANCE) -> GraphLayout:
    """Positions and edge shapes for claims at ``levels`` (0 on top) joined by ``edges`` (from, to).

    The result's :meth:`GraphLayout.crossings` is empty unless :data:`_MAX_MOVES` moves could not clear
    every edge (a test holds the bundled examples and drafted essays to it).
    """
    edges = [(a, b) for a, b in edges if a in levels and b in levels and a != b]
    layers = _layers(levels, edges)
    _order(layers)
    width: dict[object, float] = {item: (boxes[item].width if isinstance(item, str) else PLACEHOLDER_PX)
                                  for row in layers.rows for item in row}
    row_height = [max((boxes[n].height for n in row if isinstance(n, str)), default=0.0) for row in layers.rows]
    y, top = [], 0.0
    for tallest in row_height:
        y.append(top + tallest / 2)
        top += tallest + LAYER_GAP
    x = _assign_x(layers, width, layers.ends, y, row_height, clearance)
    # whole pixels: vis-network reports positions rounded, and the browser tests compare them
    positions = {n: (float(round(x[n])), float(round(y[levels[n]]))) for n in levels}
    claim_rows = [[n for n in row if isinstance(n, str)] for row in layers.rows]
    shapes, blocked = _choose_shapes(positions, boxes, edges, levels, clearance)
    sides: dict[str, bool] = {}
    for _ in range(_MAX_MOVES):
        if not blocked:
            break
        moved: set[str] = set()
        for i, (shape, hit) in blocked.items():     # each blocked edge's first claim in the way, once a round
            a, b = edges[i]
            if abs(levels[a] - levels[b]) >= 2:      # a long edge is opened a straight path
                shape = EdgeShape("straight")
                hit = _Boxes(positions, boxes).near(edge_points(positions[a], positions[b], shape), (a, b),
                                                    clearance) or hit
            if hit[0] not in moved:
                moved.add(hit[0])
                _move_aside(hit[0], edges[i], shape, positions, boxes, claim_rows, clearance, sides)
        shapes, blocked = _choose_shapes(positions, boxes, edges, levels, clearance, shapes)
    if blocked:       # the last resort: every roundness
        shapes, blocked = _choose_shapes(positions, boxes, edges, levels, clearance, shapes, fine=True)
    return GraphLayout(positions, shapes, boxes, list(edges))
