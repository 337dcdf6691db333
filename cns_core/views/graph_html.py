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
import re
import textwrap
from dataclasses import dataclass, field
from typing import Any, Mapping


from cns_core.critics.grounding_verdict import ClaimGrounding, GroundingPassage, claim_grounding, shown_probability
from cns_core.views.display import (EDGE_STYLES, GREY, HIGHLIGHT_COLOURS, VERDICT_STYLES, verdict_fill,
                                    verdict_style)
from cns_core.sno import SNO

__all__ = ["ClaimGrounding", "GroundingPassage", "GraphFindings", "claim_grounding", "claim_verdict_rows",
           "claim_passage_rows", "passage_part", "PASSAGES_NOTE", "verdict_probability", "claim_levels",
           "graph_findings",
           "restatements", "sno_graph_html", "remote_resources", "graph_height", "MIN_SCALE"]

_TOOLTIP_WIDTH = 64
LEGEND_PX = 58       # the legend's strip above the canvas (the canvas is this much shorter)
LEVEL_PX = 170       # between two layers of the hierarchical layout
MIN_SCALE = 0.8      # the least zoom a graph opens at: 13 px labels stay about 10 px high (wider graphs pan)
_LABEL_WIDTH = 26


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


def claim_verdict_rows(sno: SNO, grounding: Mapping[str, ClaimGrounding]) -> list[dict[str, Any]]:
    """One table row per claim: its verdict, p(supported), p(contradicted) and which passage entails it most
    (``e2 · sentence 1 of 3``; the page's passages table quotes it in full)."""
    evidence_texts = {e.id: e.text for e in sno.evidence}
    rows = []
    for claim in sno.claims:
        g = grounding.get(claim.id, ClaimGrounding())
        best = g.best_passage()
        rows.append({"Claim": claim.id, "Text": claim.text, "Role": claim.role,
                     "Verdict": g.label,
                     "p(supported)": shown_probability(g.support),
                     "p(contradicted)": shown_probability(g.p_contradicted),
                     "Best passage": f"{best.evidence} · {passage_part(evidence_texts.get(best.evidence), best.text)}"
                     if best else ""})
    return rows


PASSAGES_NOTE = ("The Grounding critic judges a long evidence item by its passages: each sentence and each run "
                 "of up to three adjacent sentences, so one item appears once per passage, each with its own "
                 "numbers (the NLI model's, per passage). The verdict reads the passage that entails the claim most "
                 "and the one that contradicts it most (marked), but its probabilities are not theirs: a fitted "
                 "fusion (config/grounding_fusion.yaml) weighs those two passages' numbers with how similar the "
                 "closest passage is and how many of the claim's words the evidence shares, so a verdict's "
                 "p(contradicted) 0.71 can sit beside a passage's contradiction 0.69.")


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
    """The passages behind one claim's verdict, most similar first, each saying which part of its item it is
    and whether it is the one that entails or contradicts the claim most (what the verdict reads)."""
    texts = evidence_texts or {}
    best = g.best_passage()
    worst = max(g.passages, key=lambda p: p.contradiction or 0.0, default=None)
    rows = []
    for p in g.passages:
        marks = [m for m, hit in (("entails most", p is best), ("contradicts most", p is worst)) if hit]
        rows.append({"Evidence": p.evidence, "Part": passage_part(texts.get(p.evidence), p.text)
                     if texts else "part", "Passage": p.text, "Similarity": p.similarity,
                     "Entailment": p.entailment, "Contradiction": p.contradiction, "Verdict reads": ", ".join(marks)})
    return rows


def graph_findings(sno: SNO, max_cycles: int = 20) -> GraphFindings:
    """Cycles, orphans and detached claims, from the Logic critic's own graph functions."""
    from cns_core.critics import structure

    return GraphFindings(
        cycles=[list(c) for c in structure.support_cycles(sno, max_cycles)],
        orphans=frozenset(structure.orphan_claims(sno)),
        detached=frozenset(n for comp in structure.detached_components(sno) for n in comp),
    )


def sno_graph_html(
    sno: SNO,
    grounding: Mapping[str, ClaimGrounding] | None = None,
    *,
    findings: GraphFindings | None = None,
    height_px: int = 560,
    hierarchical: bool = True,
) -> str:
    """One offline HTML document drawing ``sno``'s reasoning graph.

    Nodes show the Grounding critic's verdict: supported green with a tick in a box,
    contradicted red with a cross in an ellipse, not enough information slate with a question
    mark, not scored grey; the fill is paler the less sure the verdict (its probability is in
    the label too). Support edges are solid, rebuttals dashed, undercuts dotted
    with a bar end; claims on a cycle and orphan claims get a highlighted border.
    Hovering a node shows the claim, its best evidence and the scores.
    The layout is layered as a reader expects an argument (:func:`claim_levels`):
    the hypothesis and the claims restating it on top, the claims arguing about
    it below, their premises below those; ``hierarchical=False`` makes it
    force-directed instead. Restatements (``metadata["rephrases"]`` of the
    hypothesis: a brat essay's second major claim, an AIF MA node) are joined to
    it by a thin grey line without an arrow.
    """
    from pyvis.network import Network

    grounding = grounding or {}
    findings = findings if findings is not None else graph_findings(sno)
    evidence = {e.id: e for e in sno.evidence}
    cycle_nodes, cycle_edges = findings.cycle_nodes, findings.cycle_edges
    levels = claim_levels(sno) if hierarchical else {}
    restating = restatements(sno)

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
        net.add_node(
            claim.id,
            label=_label(claim.id, claim.text, g),
            title=_node_tooltip(sno, claim.id, g, evidence, findings),
            shape=style.shape,
            verdict=g.verdict or "not_scored",
            color={"background": fill, "border": border,
                   "highlight": {"background": _tint(fill, 0.3), "border": border},
                   "hover": {"background": _tint(fill, 0.3), "border": border}},
            borderWidth=border_width,
            shapeProperties={"borderDashes": dashes},
            font={"size": 16 if claim.id == sno.hypothesis else 13, "face": "sans-serif", "color": "#111827"},
            margin=8,
            **({"level": levels[claim.id]} if hierarchical else {}),
        )
    # Drawn from the relations, not from ``sno.graph``: the DiGraph keeps one edge per
    # pair, and a rebut and an undercut from the same claim may share one.
    pair_count: dict[tuple[str, str], int] = {}
    for rel in sno.relations:
        undercut = rel.kind == "attack" and rel.attack_type == "undercut"
        source, target = rel.source, (sno._undercut_anchor(rel.target) if undercut else rel.target)
        style_name = "support" if rel.kind == "support" else ("undercut" if undercut else "rebut")
        style = EDGE_STYLES[style_name]
        on_cycle = (source, target) in cycle_edges
        title = f"{source} {style['label']} {rel.target}"
        if undercut:
            title += f" (the link into {target})"
        if on_cycle:
            title += " · part of a cycle"
        pair = (min(source, target), max(source, target))  # a -> c and c -> a must not overlap either
        k = pair_count.get(pair, 0)
        pair_count[pair] = k + 1
        smooth = {"enabled": True, "type": "curvedCW", "roundness": 0.25 * k} if k else None
        edge: dict[str, Any] = dict(
            title=title,
            color=dict.fromkeys(("color", "highlight", "hover"), style["color"]),
            dashes=style["dashes"],
            width=style["width"] + (1.0 if on_cycle else 0.0),
            arrows={"to": {"enabled": True, "type": style["arrow"]}},
            relation=rel.id,
            # an edge on a cycle keeps its kind's colour and gets a halo in the cycle colour
            shadow={"enabled": on_cycle, "color": HIGHLIGHT_COLOURS["cycle"], "size": 9, "x": 0, "y": 0},
        )
        if smooth:
            edge["smooth"] = smooth
        net.add_edge(source, target, **edge)
    for k, source in enumerate(restating):   # arcs, so a line never runs behind a claim of the same level
        net.add_edge(source, sno.hypothesis, title=f"{source} restates {sno.hypothesis}", restates=source,
                     color=dict.fromkeys(("color", "highlight", "hover"), GREY), dashes=[2, 5], width=1.5,
                     arrows={"to": {"enabled": False}},
                     smooth={"enabled": True, "type": "curvedCCW", "roundness": 0.25 + 0.1 * k})
    net.set_options(json.dumps(_options(hierarchical)))
    page = net.generate_html(notebook=False)
    return _finish(page, findings, restates=bool(restating))


def restatements(sno: SNO) -> list[str]:
    """Claims that ``metadata["rephrases"]`` marks as restating the hypothesis (no relation joins them)."""
    items = (sno.metadata or {}).get("rephrases") or []
    found = [r.get("source") for r in items if isinstance(r, Mapping) and r.get("target") == sno.hypothesis]
    return [c for c in dict.fromkeys(found) if c in sno.claims_by_id and c != sno.hypothesis]


def claim_levels(sno: SNO) -> dict[str, int]:
    """A layer per claim, as a reader lays an argument out: 0 on top.

    The hypothesis and its restatements are level 0; a claim that argues about a
    claim of level ``n`` (an undercut counts at the claim it attacks) is at
    ``n + 1``, by its shortest path, so cycles still get layers. Claims with no
    path to the hypothesis are laid out the same way below an imagined top:
    their own end points (claims that argue about nothing) at level 1.
    """
    g = sno.graph
    levels: dict[str, int] = {}

    def spread(starts: list[str], level: int) -> None:
        frontier = [c for c in starts if c not in levels]
        for c in frontier:
            levels[c] = level
        while frontier:
            level += 1
            nxt = []
            for claim in frontier:
                for arguer in g.predecessors(claim):
                    if arguer not in levels:
                        levels[arguer] = level
                        nxt.append(arguer)
            frontier = nxt

    spread([sno.hypothesis, *restatements(sno)], 0)
    while len(levels) < len(sno.claims):
        rest = [c.id for c in sno.claims if c.id not in levels]
        ends = [c for c in rest if g.out_degree(c) == 0]   # all they argue about is left over too
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


def _label(claim_id: str, text: str, g: ClaimGrounding | None = None) -> str:
    """``✗ c3 · contradicted 0.80`` over the first lines of the text: the verdict readable without colour."""
    lines = textwrap.wrap(text, _LABEL_WIDTH) or [""]
    shown = lines[:3]
    if len(lines) > 3:
        shown[-1] = shown[-1][: _LABEL_WIDTH - 1] + "…"
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
    if g.best_evidence and g.best_evidence in evidence:
        ev = evidence[g.best_evidence]
        source = f" ({ev.source})" if ev.source else ""
        lines.append(f"Best evidence {ev.id}{source}, validity {ev.validity:.2f}:")
        best = g.best_passage(ev.id)
        if best is not None and best.text != ev.text:
            lines.append("Its best passage:")
        lines.extend(_wrap(_shorten(best.text if best is not None else ev.text, 320), "  "))
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


def _options(hierarchical: bool) -> dict[str, Any]:
    layout: dict[str, Any] = {"randomSeed": 7}
    if hierarchical:   # levels are given per node (claim_levels): level 0, the hypothesis, on top
        layout["hierarchical"] = {"enabled": True, "direction": "UD", "levelSeparation": LEVEL_PX, "nodeSpacing": 250,
                                  "treeSpacing": 260, "blockShifting": True, "edgeMinimization": True,
                                  "parentCentralization": True}
    return {
        "layout": layout,
        "physics": {"enabled": not hierarchical, "stabilization": {"iterations": 300},
                    "barnesHut": {"springLength": 160, "avoidOverlap": 0.4}},
        "interaction": {"hover": True, "tooltipDelay": 120, "navigationButtons": False, "zoomView": True},
        # Layered: each edge leaves its claim vertically and bends only between the layers, so it never runs
        # across a sibling of the same layer (a straight or diagonal line from an outer claim crossed them).
        "edges": {"smooth": {"enabled": True, "type": "cubicBezier", "forceDirection": "vertical", "roundness": 0.6}
                  if hierarchical else {"enabled": True, "type": "dynamic"},
                  "color": {"inherit": False}},
        "nodes": {"widthConstraint": {"maximum": 230}},
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


# After the layout, a graph too wide for the frame is not shrunk below MIN_SCALE (its labels would be a few pixels
# high): it opens at that zoom on the hypothesis, and the reader drags or scrolls to the rest. It runs in pyvis's
# own script, right after drawGraph(): the first drawing comes in an animation frame, which a later <script> could
# miss (the parser may yield between scripts), leaving the graph at scale 1 until the reader moved the mouse.
_READABLE_ZOOM = ("(function(){function readable(){if(typeof network==='undefined'||!network){return;}"
                  "network.fit({animation:false});var s=network.getScale();"
                  f"if(s<{MIN_SCALE}){{var top=network.body.nodeIndices.map(function(i){{return network.getPosition(i);}})"
                  ".reduce(function(a,b){return a.y<=b.y?a:b;});"
                  f"network.moveTo({{scale:{MIN_SCALE},position:{{x:top.x,y:top.y+network.canvas.frame.clientHeight"
                  f"/(2*{MIN_SCALE})-60}},animation:false}});}}window.cnsReady=true;}}"
                  "if(typeof network!=='undefined'&&network){network.once('afterDrawing',readable);}})();")


def graph_height(sno: SNO, hierarchical: bool = True) -> int:
    """A frame height (legend included) that shows every layer of the graph at a readable size."""
    layers = (max(claim_levels(sno).values(), default=0) + 1) if hierarchical else 3
    return max(420, min(1200, LEGEND_PX + layers * LEVEL_PX + 120))


def _finish(page: str, findings: GraphFindings, *, restates: bool = False) -> str:
    page = _BOOTSTRAP.sub("", page)
    page = _COMMENTED.sub("", page)
    page = _EMPTY_HEADING.sub("", page)
    head, call, tail = page.rpartition("drawGraph();")
    page = (head + call + _READABLE_ZOOM + tail if call
            else page.replace("</body>", f"<script>{_READABLE_ZOOM}</script></body>", 1))
    style = ("<style>.vis-tooltip{white-space:pre-wrap !important;max-width:480px;font:12px/1.45 sans-serif !important;"
             "padding:8px 10px !important}body{margin:0}#mynetwork{border:none !important}"
             ".card{border:none}</style>")
    page = page.replace("</head>", style + "</head>", 1)
    page = page.replace('<div id="mynetwork"', _legend(findings, restates) + '<div id="mynetwork"', 1)
    return page
