"""The reasoning graph of an SNO as one self-contained, offline HTML page (pyvis / vis-network).

Why a module of its own: the page must work with no network at all (a demo on
a train, an air-gapped lab), so vis-network's JavaScript and CSS are inlined
(pyvis ``cdn_resources="in_line"``) and the remote Bootstrap links that pyvis'
template adds anyway are removed; :func:`remote_resources` checks the result.

User text (claim and evidence text, ids) reaches the page in two ways, both
safe: as JSON inside the page's script, which pyvis writes with Jinja's
``tojson`` (``<``, ``>``, ``&`` and ``'`` become ``\\u003c``-style escapes, so no
text can close the script); and as
vis-network tooltips, which vis-network 9 sets with ``innerText`` (never parsed
as HTML). Labels are drawn on the canvas.

Colours and edge styles come from :mod:`cns_core.views.display`.
"""

from __future__ import annotations

import json
import math
import re
import textwrap
from dataclasses import dataclass, field
from typing import Any, Mapping


from cns_core.critics.grounding_verdict import (PASSAGE_SHOWS, ClaimGrounding, GroundingPassage, claim_grounding,
                                                shown_probability)
from cns_core.views.graph_layout import GraphLayout, NodeBox, layout_graph
from cns_core.views.display import (EDGE_STYLES, GREY, HIGHLIGHT_COLOURS, VERDICT_STYLES, verdict_fill,
                                    verdict_style)
from cns_core.sno import SNO

__all__ = ["ClaimGrounding", "GroundingPassage", "GraphFindings", "claim_grounding", "claim_verdict_rows",
           "passage_reading",
           "claim_passage_rows", "verdict_reading", "decided_note", "feature_words", "passage_part", "PASSAGES_NOTE", "passages_note", "verdict_probability", "claim_levels",
           "graph_findings",
           "restatements", "sno_graph_html", "remote_resources", "graph_height", "graph_layout", "node_box",
           "MIN_SCALE", "FLOOR_LABEL_PX", "READABLE_LABEL_PX", "FRAME_PX", "plan_graph", "PlannedGraph", "layout_width", "fitted_scale"]

_TOOLTIP_WIDTH = 64
LEGEND_PX = 58       # the legend's strip above the canvas, one row (it wraps; the canvas takes what is left)
MIN_SCALE = 0.8      # the least zoom of a 13 px label: about 10 px high (a graph too wide even so pans)
FLOOR_LABEL_PX = 13 * MIN_SCALE   # the least height a label is drawn at when a graph opens (10.4 px)
FRAME_PX = 900       # the width a graph's frame has on a page (the dashboard's 940 px column, less margins)
READABLE_LABEL_PX = 12.0   # how high a claim's label opens when the whole graph fits FRAME_PX
_MAX_FONT_FACTOR = 1.8     # labels grow at most this much for a wide graph (the boxes keep their width)
_LABEL_WIDTH = 26
_NODE_MAX_PX = 230   # vis-network's widthConstraint.maximum of a claim
_NODE_MARGIN = 8
_CHAR_EM = 0.6       # an upper bound of a sans-serif character's width, in font sizes


@dataclass(frozen=True)
class GraphFindings:
    """Structural problems to highlight, as the Logic critic defines them.

    ``cycles``: support cycles (circular reasoning), each a list of claim ids in edge
    order; ``orphans``: claims that argue for or against nothing; ``detached``: claims
    with no path of relations to the hypothesis at all.
    """

    cycles: list[list[str]] = field(default_factory=list)
    orphans: frozenset[str] = frozenset()
    detached: frozenset[str] = frozenset()

    @property
    def cycle_nodes(self) -> set[str]:
        return {n for cycle in self.cycles for n in cycle}

    @property
    def cycle_edges(self) -> set[tuple[str, str]]:
        return {(c[i], c[(i + 1) % len(c)]) for c in self.cycles for i in range(len(c))}

    @property
    def flagged(self) -> frozenset[str]:
        """Claims drawn with the orphan highlight (orphans and detached claims)."""
        return self.orphans | self.detached


def passage_reading(p: GroundingPassage) -> str:
    """What a passage shows, with the number that says so: ``contradicts 0.72``, ``entails 0.90``, or
    ``neither (entails 0.21, contradicts 0.05)``."""
    if p.shows == "contradicts":
        return f"contradicts {_fmt(p.contradiction)}"
    if p.shows == "entails":
        return f"entails {_fmt(p.entailment)}"
    return f"neither (entails {_fmt(p.entailment)}, contradicts {_fmt(p.contradiction)})"


# The fusion's probability features, entered as log-odds (cns_core.critics.grounding_verdict.FEATURES).
_LOG_ODDS_WORDS = {"entailment": "strongest entailment", "contradiction": "strongest contradiction",
                   "top_entailment": "closest passage's entailment",
                   "top_contradiction": "closest passage's contradiction"}


def feature_words(name: str, value: float) -> str:
    """One fusion feature and its value in a reader's words: ``how similar the closest passage is (0.83)``,
    ``the closest passage's low contradiction (0.02)`` (a probability feature says whether it is high or low,
    since a low one can push a verdict as much as a high one)."""
    if name in _LOG_ODDS_WORDS:
        p = 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, value))))
        owner, _, what = _LOG_ODDS_WORDS[name].rpartition(" ")
        return f"the {owner} {'high' if p >= 0.5 else 'low'} {what} ({p:.2f})"
    if name == "similarity":
        return f"how similar the closest passage is ({value:.2f})"
    if name == "bm25":
        return f"the words the claim shares with the evidence (BM25 {math.expm1(value):.1f})"
    if name == "bm25_per_token":
        return f"the share of its words the evidence holds ({value:.2f} per word)"
    return f"{name} ({value:.2f})"


def verdict_reading(g: ClaimGrounding, evidence_text: str | None) -> str:
    """The passage a verdict rests on and what it shows (``e3 · sentence 1 of 2 · contradicts 0.72``); where the
    passage alone does not show the verdict (``supported 0.51`` beside ``neither (entails 0.30, ...)``), what
    else decided it: the fusion's strongest features for it (:attr:`ClaimGrounding.decided_by`)."""
    read = g.read_passage
    if read is None:
        return ""
    said = f"{read.evidence} · {passage_part(evidence_text, read.text)} · {passage_reading(read)}"
    return f"{said} · {decided_note(g)}" if g.reading_differs else said


def decided_note(g: ClaimGrounding) -> str:
    """Where the passage a verdict rests on does not show it alone, what decided it, in words."""
    why = " and ".join(feature_words(f, v) for f, v in g.decided_by) or "the fusion's other features"
    return f"alone it does not say {g.label}: decided by {why}"


def claim_verdict_rows(sno: SNO, grounding: Mapping[str, ClaimGrounding]) -> list[dict[str, Any]]:
    """One table row per claim: its verdict, p(supported), p(contradicted) and the passage the verdict reads, by
    what it shows (``e3 · sentence 1 of 2 · contradicts 0.72``; the page's passages table quotes it in full). The
    Coherence page names the same passage's item: one computation (``ClaimGrounding.read_passage``)."""
    evidence_texts = {e.id: e.text for e in sno.evidence}
    rows = []
    for claim in sno.claims:
        g = grounding.get(claim.id, ClaimGrounding())
        rows.append({"Claim": claim.id, "Text": claim.text, "Role": claim.role,
                     "Verdict": g.label,
                     "p(supported)": shown_probability(g.support),
                     "p(contradicted)": shown_probability(g.p_contradicted),
                     "Verdict reads": verdict_reading(g, evidence_texts.get(g.reads_evidence or ""))})
    return rows


PASSAGES_NOTE = ("The Grounding critic judges a long evidence item by its passages: each sentence and each run "
                 "of up to three adjacent sentences, so one item appears once per passage, each with its own "
                 "numbers (the NLI model's, per passage). Shows: what the model reads in that passage alone "
                 "(entails or contradicts the claim when that is its most likely reading, else neither). The "
                 "verdict reads one passage (marked): for a contradicted claim the one that contradicts it most, "
                 "for a supported claim the one that entails it most, otherwise the most similar one. Its "
                 "probabilities are not the passage's: a fitted fusion (config/grounding_fusion.yaml) weighs the "
                 "strongest entailment and contradiction with how similar the closest passage is and how many of "
                 "the claim's words the evidence shares.")


def passages_note(claim_id: str, g: ClaimGrounding) -> str:
    """:data:`PASSAGES_NOTE` with this claim's own numbers: its verdict's probability beside what the passage it
    reads shows, and what decided the verdict where that passage alone does not show it."""
    read = g.read_passage
    if read is None or g.verdict is None:
        return PASSAGES_NOTE
    p = g.p_contradicted if g.verdict == "contradicted" else g.support
    name = "p(contradicted)" if g.verdict == "contradicted" else "p(supported)"
    said = (f"{PASSAGES_NOTE} Here {claim_id}'s verdict ({g.label}, {name} {_shown(p)}) reads {read.evidence}, "
            f"which on its own {'is ' + passage_reading(read) if read.shows == 'neither' else passage_reading(read)}")
    return f"{said}; {decided_note(g)}." if g.reading_differs else f"{said}."


def passage_part(evidence_text: str | None, passage: str) -> str:
    """Which part of its evidence item a passage is: ``whole item``, ``sentence 2 of 3``, ``sentences 1-2 of 3``."""
    from cns_core.text.segment import split_sentences

    if evidence_text is None:
        return "part"
    if " ".join(passage.split()) == " ".join(evidence_text.split()):
        return "whole item"
    sentences = [" ".join(x.split()) for x in split_sentences(evidence_text)]
    wanted = " ".join(passage.split())
    n = len(sentences)
    for start in range(n):
        for end in range(start + 1, n + 1):
            if " ".join(sentences[start:end]) == wanted:
                if end - start == n:
                    return "whole item"
                span = f"sentence {start + 1}" if end - start == 1 else f"sentences {start + 1}-{end}"
                return f"{span} of {n}"
    return "part"


def claim_passage_rows(g: ClaimGrounding, evidence_texts: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """The passages behind one claim's verdict, most similar first, each saying which part of its item it is,
    what it shows on its own, and whether it is the one the verdict reads."""
    texts = evidence_texts or {}
    rows = []
    for k, p in enumerate(g.passages):
        rows.append({"Evidence": p.evidence, "Part": passage_part(texts.get(p.evidence), p.text)
                     if texts else "part", "Passage": p.text, "Similarity": p.similarity,
                     "Entailment": p.entailment, "Contradiction": p.contradiction, "Shows": p.shows,
                     "Verdict reads": "this passage" if k == g.reads else ""})
    return rows


def graph_findings(sno: SNO, max_cycles: int = 20) -> GraphFindings:
    """Cycles, orphans and detached claims, from the Logic critic's own graph functions."""
    from cns_core.critics import structure

    return GraphFindings(
        cycles=[list(c) for c in structure.support_cycles(sno, max_cycles)],
        orphans=frozenset(structure.orphan_claims(sno)),
        detached=frozenset(n for comp in structure.detached_components(sno) for n in comp),
    )


@dataclass(frozen=True)
class _DrawnEdge:
    """One line of the drawing: a relation (an undercut drawn into the claim its target argues for) or a
    restatement's line to the hypothesis (``relation`` None)."""

    source: str
    target: str
    style: str                 # support | rebut | undercut | restates
    relation: Any = None


def _drawn_edges(sno: SNO) -> list[_DrawnEdge]:
    # Drawn from the relations, not from ``sno.graph``: the DiGraph keeps one edge per
    # pair, and a rebut and an undercut from the same claim may share one.
    edges = []
    for rel in sno.relations:
        undercut = rel.kind == "attack" and rel.attack_type == "undercut"
        target = sno._undercut_anchor(rel.target) if undercut else rel.target
        style = "support" if rel.kind == "support" else ("undercut" if undercut else "rebut")
        edges.append(_DrawnEdge(rel.source, target, style, rel))
    edges.extend(_DrawnEdge(source, sno.hypothesis, "restates") for source in restatements(sno))
    return edges


def _font_px(sno: SNO, claim_id: str, factor: float = 1.0) -> int:
    return round((16 if claim_id == sno.hypothesis else 13) * factor)


def node_box(label: str, font_px: float, shape: str) -> NodeBox:
    """An upper bound of the box vis-network draws a claim in (``box`` or ``ellipse``, margin 8, at most
    230 px wide with lines wrapped): the layout keeps edges off it, and the browser tests check that Chromium's
    boxes fit inside it."""
    char_px = _CHAR_EM * font_px
    room = _NODE_MAX_PX - 2 * _NODE_MARGIN
    widths = [len(line) * char_px for line in label.split("\n")]
    lines = sum(max(1, math.ceil(w / room)) for w in widths)
    text_w, text_h = min(room, max(widths, default=0.0)), lines * font_px
    if shape == "ellipse":           # vis-network: width = label width + label height, height = 2 x label height
        return NodeBox(text_w + text_h + 8, 2 * text_h + 8)
    return NodeBox(min(_NODE_MAX_PX, text_w + 2 * _NODE_MARGIN) + 8, text_h + 2 * _NODE_MARGIN + 16)


def _layout_at(sno: SNO, grounding: Mapping[str, ClaimGrounding], factor: float) -> GraphLayout:
    boxes = {}
    for claim in sno.claims:
        g = grounding.get(claim.id, ClaimGrounding())
        boxes[claim.id] = node_box(_label(claim.id, claim.text, g, factor), _font_px(sno, claim.id, factor),
                                   verdict_style(g.verdict).shape)
    return layout_graph(claim_levels(sno), [(e.source, e.target) for e in _drawn_edges(sno)], boxes)


def layout_width(layout: GraphLayout) -> float:
    """From the left edge of the leftmost claim's box to the right edge of the rightmost one."""
    if not layout.positions:
        return 0.0
    return (max(x + layout.boxes[n].width / 2 for n, (x, _) in layout.positions.items())
            - min(x - layout.boxes[n].width / 2 for n, (x, _) in layout.positions.items()))


def fitted_scale(layout: GraphLayout, frame_px: float = FRAME_PX) -> float:
    """The zoom at which the whole graph fits a frame ``frame_px`` wide (never above 1)."""
    width = layout_width(layout)
    return min(1.0, frame_px / width) if width > 0 else 1.0


@dataclass(frozen=True)
class PlannedGraph:
    """How a graph opens: the layout at its label size and the factor its fonts were grown by. A graph wider
    than the frame opens whole, fitted to the frame's width, so its labels are drawn larger (a claim's box
    keeps its width, its text wraps on more lines) to read about :data:`READABLE_LABEL_PX` once fitted."""

    layout: GraphLayout
    font_factor: float

    @property
    def scale(self) -> float:
        return fitted_scale(self.layout)

    @property
    def label_px(self) -> float:
        """How high a claim's label is drawn once the graph is fitted to a frame FRAME_PX wide."""
        return 13 * self.font_factor * self.scale


def plan_graph(sno: SNO, grounding: Mapping[str, ClaimGrounding] | None = None) -> PlannedGraph:
    """The layout and label size a graph opens with (see :class:`PlannedGraph`)."""
    grounding = grounding or {}
    factor, layout = 1.0, _layout_at(sno, grounding, 1.0)
    for _ in range(3):       # a larger font widens the boxes that were narrower than the most: fit again
        wanted = min(_MAX_FONT_FACTOR, max(1.0, READABLE_LABEL_PX / (13 * fitted_scale(layout))))
        if abs(wanted - factor) < 0.02:
            break
        factor, layout = wanted, _layout_at(sno, grounding, wanted)
    return PlannedGraph(layout, factor)


def graph_layout(sno: SNO, grounding: Mapping[str, ClaimGrounding] | None = None) -> GraphLayout:
    """Where each claim is drawn and how each edge bends (:mod:`cns_core.views.graph_layout`): layered as a
    reader lays an argument out (:func:`claim_levels`), no edge passing under a claim it does not join; at the
    label size the graph opens with (:func:`plan_graph`)."""
    return plan_graph(sno, grounding).layout


def sno_graph_html(
    sno: SNO,
    grounding: Mapping[str, ClaimGrounding] | None = None,
    *,
    findings: GraphFindings | None = None,
    height_px: int = 560,
) -> str:
    """One offline HTML document drawing ``sno``'s reasoning graph.

    Nodes show the Grounding critic's verdict: supported green with a tick in a box,
    contradicted red with a cross in an ellipse, not enough information slate with a question
    mark, not scored grey; the fill is paler the less sure the verdict (its probability is in
    the label too). Support edges are solid, rebuttals dashed, undercuts dotted
    with a bar end; claims on a cycle and orphan claims get a highlighted border.
    Hovering a node shows the claim, its best evidence and the scores.
    The layout is layered as a reader expects an argument (:func:`graph_layout`):
    the hypothesis and the claims restating it on top, the claims arguing about
    it below, their premises below those, and no edge runs under a claim it does not join.
    Restatements (``metadata["rephrases"]`` of the
    hypothesis: a brat essay's second major claim, an AIF MA node) are joined to
    it by a thin grey line without an arrow.
    """
    from pyvis.network import Network

    grounding = grounding or {}
    findings = findings if findings is not None else graph_findings(sno)
    evidence = {e.id: e for e in sno.evidence}
    cycle_nodes, cycle_edges = findings.cycle_nodes, findings.cycle_edges
    levels = claim_levels(sno)
    drawn = _drawn_edges(sno)
    plan = plan_graph(sno, grounding)
    layout = plan.layout

    net = Network(height=f"{height_px - LEGEND_PX}px", width="100%", directed=True, cdn_resources="in_line")
    for claim in sno.claims:
        g = grounding.get(claim.id, ClaimGrounding())
        style, p = verdict_style(g.verdict), verdict_probability(g)
        fill = verdict_fill(g.verdict, p)
        border, border_width, dashes = style.colour, 2.5 if g.verdict == "contradicted" else 1.5, False
        if claim.id == sno.hypothesis:
            border, border_width = HIGHLIGHT_COLOURS["hypothesis"], 3.5
        if claim.id in findings.flagged:
            border, border_width, dashes = HIGHLIGHT_COLOURS["orphan"], 4.0, [6, 4]
        if claim.id in cycle_nodes:
            border, border_width = HIGHLIGHT_COLOURS["cycle"], 4.0
        x, y = layout.positions[claim.id]
        net.add_node(
            claim.id,
            label=_label(claim.id, claim.text, g, plan.font_factor),
            title=_node_tooltip(sno, claim.id, g, evidence, findings),
            shape=style.shape,
            verdict=g.verdict or "not_scored",
            color={"background": fill, "border": border,
                   "highlight": {"background": _tint(fill, 0.3), "border": border},
                   "hover": {"background": _tint(fill, 0.3), "border": border}},
            borderWidth=border_width,
            shapeProperties={"borderDashes": dashes},
            font={"size": _font_px(sno, claim.id, plan.font_factor), "face": "sans-serif", "color": "#111827"},
            margin=_NODE_MARGIN,
            level=levels[claim.id], x=round(x), y=round(y),
        )
    for edge, shape in zip(drawn, layout.shapes):
        source, target = edge.source, edge.target
        if edge.relation is None:        # a restatement: a thin grey line, no arrow
            net.add_edge(source, target, title=f"{source} restates {target}", restates=source,
                         color=dict.fromkeys(("color", "highlight", "hover"), GREY), dashes=[2, 5], width=1.5,
                         arrows={"to": {"enabled": False}}, smooth=shape.vis_smooth())
            continue
        style = EDGE_STYLES[edge.style]
        on_cycle = (source, target) in cycle_edges
        title = f"{source} {style['label']} {edge.relation.target}"
        if edge.style == "undercut":
            title += f" (the link into {target})"
        if on_cycle:
            title += " · part of a cycle"
        net.add_edge(source, target, title=title,
                     color=dict.fromkeys(("color", "highlight", "hover"), style["color"]),
                     dashes=style["dashes"],
                     width=style["width"] + (1.0 if on_cycle else 0.0),
                     arrows={"to": {"enabled": True, "type": style["arrow"]}},
                     relation=edge.relation.id,
                     # an edge on a cycle keeps its kind's colour and gets a halo in the cycle colour
                     shadow={"enabled": on_cycle, "color": HIGHLIGHT_COLOURS["cycle"], "size": 9, "x": 0, "y": 0},
                     smooth=shape.vis_smooth())
    net.set_options(json.dumps(_options()))
    page = net.generate_html(notebook=False)
    smallest = min((_font_px(sno, c.id, plan.font_factor) for c in sno.claims), default=13)
    return _finish(page, findings, restates=any(e.relation is None for e in drawn), floor=FLOOR_LABEL_PX / smallest)


def restatements(sno: SNO) -> list[str]:
    """Claims that ``metadata["rephrases"]`` marks as restating the hypothesis (no relation joins them)."""
    items = (sno.metadata or {}).get("rephrases") or []
    found = [r.get("source") for r in items if isinstance(r, Mapping) and r.get("target") == sno.hypothesis]
    return [c for c in dict.fromkeys(found) if c in sno.claims_by_id and c != sno.hypothesis]


def claim_levels(sno: SNO) -> dict[str, int]:
    """A layer per claim, as a reader lays an argument out: 0 on top.

    The hypothesis and its restatements are level 0; a claim is one level below the
    deepest claim it argues about (an undercut counts at the claim it attacks), so an
    argument never points sideways within a layer. An edge that closes a cycle (found by
    a depth-first walk from the hypothesis to the claims arguing about it) does not count,
    so cycles still get layers. Claims with no path to the hypothesis are laid out the
    same way below an imagined top: their own end points (claims that argue about
    nothing) at level 1.
    """
    g = sno.graph
    levels: dict[str, int] = {}

    def spread(starts: list[str], level: int) -> None:
        starts = [c for c in starts if c not in levels]
        forward: dict[str, list[str]] = {}      # claim -> the claims arguing about it, cycle-closing edges left out
        state: dict[str, int] = {}              # 1 on the walk's path, 2 done
        order: list[str] = []                   # finished claims, deepest first
        for root in starts:
            if root in state:
                continue
            state[root] = 1
            stack = [(root, iter(sorted(g.predecessors(root))))]
            while stack:
                claim, arguers = stack[-1]
                arguer = next((a for a in arguers if a not in levels), None)
                if arguer is None:
                    state[claim] = 2
                    order.append(claim)
                    stack.pop()
                elif state.get(arguer) != 1:          # state 1: the edge closes a cycle
                    forward.setdefault(claim, []).append(arguer)
                    if arguer not in state:
                        state[arguer] = 1
                        stack.append((arguer, iter(sorted(g.predecessors(arguer)))))
        for c in starts:
            levels[c] = level
        for claim in reversed(order):            # topological: a claim after everything it argues about
            for arguer in forward.get(claim, ()):
                levels[arguer] = max(levels.get(arguer, 0), levels[claim] + 1)

    spread([sno.hypothesis, *restatements(sno)], 0)
    while len(levels) < len(sno.claims):
        rest = [c.id for c in sno.claims if c.id not in levels]
        ends = [c for c in rest if not any(t not in levels for t in g.successors(c))]   # argue about nothing left
        spread(ends or rest[:1], 1)
    return levels


# ----- offline check ------------------------------------------------------------
_REMOTE = re.compile(
    r"""(?:\b(?:src|href|action|poster|data)\s*=\s*["']?\s*(?:https?:)?//[^\s"'<>]+)"""
    r"""|(?:url\(\s*["']?\s*(?:https?:)?//[^)\s"']+)"""
    r"""|(?:@import\s+["']?\s*(?:https?:)?//[^\s"';]+)""",
    re.IGNORECASE,
)


def remote_resources(page: str) -> list[str]:
    """Every reference in ``page`` that a browser would fetch from the network.

    Looks at ``src``/``href`` attributes, CSS ``url(...)`` and ``@import``; URLs
    that only appear in licence comments or strings are not fetched and are ignored.
    """
    return [m.group(0) for m in _REMOTE.finditer(page)]


# ----- helpers --------------------------------------------------------------------
def _tint(colour: str, amount: float = 0.55) -> str:
    """Blend ``colour`` toward white so dark label text stays readable."""
    rgb = [int(colour[i:i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{round(c + (255 - c) * amount):02x}" for c in rgb)


def verdict_probability(g: ClaimGrounding) -> float | None:
    """The probability of the verdict the critic gave (p(supported) of a supported claim, ...)."""
    return {"supported": g.p_supported, "contradicted": g.p_contradicted,
            "not_enough_info": g.p_not_enough_info}.get(g.verdict or "")


def _label(claim_id: str, text: str, g: ClaimGrounding | None = None, factor: float = 1.0) -> str:
    """``✗ c3 · contradicted 0.80`` over the first lines of the text: the verdict readable without colour. Labels
    drawn ``factor`` times larger wrap at that many fewer characters, on that many more lines: the box keeps its
    width and the text its length (a wide graph opens fitted with larger labels, :func:`plan_graph`)."""
    width, most = max(12, round(_LABEL_WIDTH / factor)), max(3, round(3 * factor))
    lines = textwrap.wrap(text, width) or [""]
    shown = lines[:most]
    if len(lines) > most:
        shown[-1] = shown[-1][: width - 1] + "…"
    head = claim_id
    if g is not None:
        style, p = verdict_style(g.verdict), verdict_probability(g)
        head = f"{style.icon} {claim_id} · {style.word}"
        if g.verdict == "not_enough_info":     # neither side earned its label: show how near each came
            head += f"\nsupported {_shown(g.p_supported)} · contradicted {_shown(g.p_contradicted)}"
        elif p is not None:
            head += f" {_shown(p)}"
    return f"{head}\n" + "\n".join(shown)


def _wrap(text: str, indent: str = "") -> list[str]:
    return textwrap.wrap(text, _TOOLTIP_WIDTH, initial_indent=indent, subsequent_indent=indent) or [indent]


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _shown(value: float | None) -> str:
    """A verdict probability as every page shows it (cut, so 0.498 never reads 0.50 beside its label)."""
    return "n/a" if value is None else f"{shown_probability(value):.2f}"


def _node_tooltip(sno: SNO, claim_id: str, g: ClaimGrounding, evidence: Mapping[str, Any],
                  findings: GraphFindings) -> str:
    """Plain text (vis-network shows it with innerText): claim, best evidence, scores, findings."""
    claim = sno.claims_by_id[claim_id]
    unit_type = ((sno.metadata or {}).get("unit_types") or {}).get(claim_id)   # brat: MajorClaim, Claim, Premise
    kind = "Hypothesis" if claim_id == sno.hypothesis else "Claim"
    if isinstance(unit_type, str) and unit_type.strip():
        kind += f" ({unit_type.strip()})"
    role = "" if claim.role == "none" else f" · {claim.role}"
    lines = [f"{kind} {claim_id}{role}", *_wrap(claim.text, "  "), ""]
    if g.verdict:
        lines.append(f"Verdict: {g.label} · p(supported) {_shown(g.p_supported)} · "
                     f"p(contradicted) {_shown(g.p_contradicted)}")
    strongest = (f" · strongest contradiction {_fmt(g.max_contradiction)}"
                 f"{f' ({g.contradicted_by})' if g.contradicted_by else ''}" if g.max_contradiction is not None
                 else f" · contradiction {_fmt(g.contradiction)}")
    lines.append(f"Passages (NLI): best entailment {_fmt(g.entailment)}{strongest}")
    read = g.read_passage
    if read is not None and read.evidence in evidence:
        ev = evidence[read.evidence]
        source = f" ({ev.source})" if ev.source else ""
        part = "" if read.text == ev.text else ", this passage of it"
        lines.append(f"The verdict reads {ev.id}{source}, validity {ev.validity:.2f}{part}; it "
                     f"{PASSAGE_SHOWS[read.shows]} ({passage_reading(read)}):")
        lines.extend(_wrap(_shorten(read.text, 320), "  "))
        if g.reading_differs:
            lines.extend(_wrap(decided_note(g)[0].upper() + decided_note(g)[1:] + ".", ""))
    elif g.entailment is None:
        lines.append("Not scored by the Grounding critic yet.")
    else:
        lines.append("No evidence supports this claim.")
    g_in = sno.graph.in_degree(claim_id)
    lines.append(f"Arguments into it: {g_in} · out of it: {sno.graph.out_degree(claim_id)}")
    for cycle in findings.cycles:
        if claim_id in cycle:
            lines.append("On a cycle: " + " → ".join([*cycle, cycle[0]]))
            break
    if claim_id in findings.detached:
        lines.append("Detached: no path of relations to the hypothesis")
    elif claim_id in findings.orphans:
        lines.append("Orphan: argues for or against nothing")
    return "\n".join(lines)


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _options() -> dict[str, Any]:
    # Positions and edge shapes come from graph_layout (fixed, so no edge runs under a claim); physics off, so a
    # claim dragged aside stays where it is put.
    return {
        "layout": {"randomSeed": 7, "hierarchical": {"enabled": False}},
        "physics": {"enabled": False},
        "interaction": {"hover": True, "tooltipDelay": 120, "navigationButtons": False, "zoomView": True},
        "edges": {"smooth": {"enabled": True, "type": "cubicBezier", "forceDirection": "vertical", "roundness": 0.6},
                  "color": {"inherit": False}},
        "nodes": {"widthConstraint": {"maximum": _NODE_MAX_PX}},
    }


_BOOTSTRAP = re.compile(r"<link[^>]*cdn\.jsdelivr[^>]*/>\s*|<script[^>]*cdn\.jsdelivr[^>]*>\s*</script>\s*", re.S)
_COMMENTED = re.compile(r"<!--.*?-->", re.S)
_EMPTY_HEADING = re.compile(r"<center>\s*<h1>\s*</h1>\s*</center>\s*", re.S)
def _legend(findings: GraphFindings, restates: bool = False) -> str:
    """A static legend (no user text) in a strip above the canvas."""
    items = [
        (f'<span style="display:inline-block;width:26px;border-top:3px solid {EDGE_STYLES["support"]["color"]}"></span>', "supports"),
        (f'<span style="display:inline-block;width:26px;border-top:3px dashed {EDGE_STYLES["rebut"]["color"]}"></span>', "rebuts"),
        (f'<span style="display:inline-block;width:26px;border-top:3px dotted {EDGE_STYLES["undercut"]["color"]}"></span>', "undercuts"),
    ]
    if restates:
        items.append((f'<span style="display:inline-block;width:26px;border-top:2px dotted {GREY}"></span>',
                      "restates the hypothesis"))
    rows = "".join(f"<div>{swatch} {text}</div>" for swatch, text in items)
    for verdict, style in [*VERDICT_STYLES.items(), ("", verdict_style(None))]:
        radius = "50%" if style.shape == "ellipse" else "3px"
        rows += (f'<div data-verdict="{verdict or "not_scored"}"><span style="display:inline-block;min-width:22px;'
                 f'text-align:center;border:2px solid {style.colour};border-radius:{radius};'
                 f'background:{verdict_fill(verdict or None, 0.8)}">{style.icon}</span> {style.word}</div>')
    rows += "<div>paler: less sure</div>"
    if findings.cycles:
        rows += (f'<div><span style="border:2px solid {HIGHLIGHT_COLOURS["cycle"]};padding:0 6px">&nbsp;</span> '
                 f'<span style="display:inline-block;width:26px;border-top:3px solid {HIGHLIGHT_COLOURS["cycle"]};'
                 f'box-shadow:0 0 5px {HIGHLIGHT_COLOURS["cycle"]}"></span> on a cycle</div>')
    if findings.flagged:
        rows += f'<div><span style="border:2px dashed {HIGHLIGHT_COLOURS["orphan"]};padding:0 6px">&nbsp;</span> orphan</div>'
    # Above the canvas, never over it: an overlay hid the top-left claims of a drafted graph.
    return ('<div id="cns-legend" style="display:flex;flex-wrap:wrap;gap:2px 16px;align-items:center;'
            'border-bottom:1px solid #e5e7eb;padding:4px 8px;font:12px sans-serif;color:#374151;'
            f'line-height:1.6;min-height:{LEGEND_PX - 9}px;box-sizing:border-box">{rows}</div>')


# After the layout the graph is fitted to its frame, whole: a graph wider than FRAME_PX was given larger labels
# (plan_graph), so fitted they read about READABLE_LABEL_PX. Only in a frame much narrower than planned would the
# fit draw a label under about 10 px (MIN_SCALE of a 13 px one): then it opens at that floor with the top of the
# hypothesis in view, and the reader drags or scrolls to the rest. It runs in pyvis's own script, right after
# drawGraph(): the first drawing comes in an animation frame, which a later <script> could miss (the parser may
# yield between scripts), leaving the graph at scale 1 until the reader moved the mouse. vis-network scales the
# zoom with the canvas when the frame is resized (Streamlit sizes its iframe after the first drawing: the drafted
# essay opened at 0.58), so until the reader zooms or drags, a resize applies the rule again.
def _readable_zoom(floor: float) -> str:
    return ("(function(){if(typeof network==='undefined'||!network){return;}var moved=false;"
            "function readable(){network.fit({animation:false});var s=network.getScale();"
            f"if(s<{floor:.4f}){{var ids=network.body.nodeIndices;var top=ids.map(function(i){{"
            "return network.getBoundingBox(i);}).reduce(function(a,b){return a.top<=b.top?a:b;});"
            f"network.moveTo({{scale:{floor:.4f},position:{{x:(top.left+top.right)/2,y:top.top-16/{floor:.4f}"
            f"+network.canvas.frame.clientHeight/(2*{floor:.4f})}},animation:false}});}}window.cnsReady=true;}}"
            "network.once('afterDrawing',readable);"
            "network.on('resize',function(){if(!moved){network.once('afterDrawing',readable);}});"
            "network.on('zoom',function(){moved=true;});network.on('dragStart',function(){moved=true;});"
            "})();")


def graph_height(sno: SNO, grounding: Mapping[str, ClaimGrounding] | None = None) -> int:
    """A frame height (legend included) that shows the whole graph fitted to the frame's width: the height of its
    layout at the planned zoom, so the frame has no empty half under a wide graph."""
    plan = plan_graph(sno, grounding)
    return max(420, min(1200, round(2 * LEGEND_PX + plan.layout.height * plan.scale + 60)))


def _finish(page: str, findings: GraphFindings, *, restates: bool = False, floor: float = MIN_SCALE) -> str:
    """The page as the dashboard shows it; ``floor``: the least zoom it opens at (its smallest label then reads
    FLOOR_LABEL_PX)."""
    page = _BOOTSTRAP.sub("", page)
    page = _COMMENTED.sub("", page)
    page = _EMPTY_HEADING.sub("", page)
    zoom = _readable_zoom(floor)
    head, call, tail = page.rpartition("drawGraph();")
    page = (head + call + zoom + tail if call
            else page.replace("</body>", f"<script>{zoom}</script></body>", 1))
    # The legend above, the canvas in all the height left (a legend that wraps to two rows never pushes the canvas
    # past the frame's bottom, nor hides the top of the hypothesis).
    style = ("<style>.vis-tooltip{white-space:pre-wrap !important;max-width:480px;font:12px/1.45 sans-serif !important;"
             "padding:8px 10px !important}html,body{height:100%;margin:0}#mynetwork{border:none !important;"
             "flex:1 1 auto;height:auto !important;min-height:0;float:none !important}"
             ".card{border:none;height:100%;display:flex;flex-direction:column}#cns-legend{flex:0 0 auto}</style>")
    page = page.replace("</head>", style + "</head>", 1)
    page = page.replace('<div id="mynetwork"', _legend(findings, restates) + '<div id="mynetwork"', 1)
    return page
