"""Colour, label and threshold policy of everything the dashboard displays.

One module so that a policy change (a colour, a cut-off, a label) is one edit
and every page, chart and badge stays consistent. Nothing here imports
Streamlit; pages and :mod:`cns_core.views.graph_html` call these functions.

Judge grades (1-5) follow the colour table of the critic-agent spec exactly:
5 and 4 green ``#22c55e``, 3 amber ``#f59e0b``, 2 and 1 red ``#ef4444``, and a
grey "ungraded" badge when there is no grade. Scores in [0, 1] (critic scores,
per-claim grounding) use a continuous red-amber-green ramp built from the same
three colours, so "green" means the same thing on every page.
"""

from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass
from typing import Any

__all__ = [
    "beside_threshold",
    "SERIES_COLOURS",
    "GREEN",
    "AMBER",
    "RED",
    "GREY",
    "CRITIC_COLOURS",
    "CRITIC_LABELS",
    "BAND_COLOURS",
    "EDGE_STYLES",
    "HIGHLIGHT_COLOURS",
    "HEATMAP_COLOURSCALE",
    "Badge",
    "critic_colour",
    "critic_label",
    "band_colour",
    "band_label",
    "costliest_parts",
    "grade_of",
    "score_badge",
    "score_badge_html",
    "trust_badge_html",
    "answer_verdict_html",
    "VERDICT_STYLE",
    "disagreement_html",
    "unit_colour",
    "grounding_colour",
    "VerdictStyle",
    "VERDICT_STYLES",
    "verdict_style",
    "verdict_fill",
    "percent",
    "escape",
    "progress_html",
    "WRAPPED_BUTTONS_CSS",
    "code_span",
    "unbroken_words",
    "fit_width",
    "fit_widths",
    "wrapped_row_height",
    "table_height",
    "message_html",
    "count_axis",
]

# ----- the three signal colours (critic-agent spec, score badge table) ------
GREEN = "#22c55e"
AMBER = "#f59e0b"
RED = "#ef4444"
GREY = "#9ca3af"

# ----- one identity colour per critic (never green/amber/red: those mean good/bad)
CRITIC_COLOURS: dict[str, str] = {
    "grounding": "#2563eb",
    "logic": "#7c3aed",
    "novelty": "#0891b2",
    "causal": "#db2777",
    "bias": "#64748b",
}
CRITIC_LABELS: dict[str, str] = {
    "grounding": "Grounding",
    "logic": "Logic",
    "novelty": "Novelty-Parsimony",
    "causal": "Causal",
    "bias": "Bias",
}

# ----- quality bands of the Meta-Critic (Appendix B); thresholds live in config/meta.yaml
BAND_COLOURS: dict[str, str] = {
    "excellent": "#15803d",
    "good": GREEN,
    "fair": AMBER,
    "poor": "#f97316",
    "unacceptable": RED,
}

# ----- the reasoning graph --------------------------------------------------
EDGE_STYLES: dict[str, dict[str, Any]] = {
    # support: solid green arrow; rebut: dashed red; undercut: dotted purple, flat end
    "support": {"color": "#16a34a", "dashes": False, "width": 2.0, "arrow": "arrow", "label": "supports"},
    "rebut": {"color": "#dc2626", "dashes": [8, 6], "width": 2.5, "arrow": "arrow", "label": "rebuts"},
    "undercut": {"color": "#9333ea", "dashes": [2, 5], "width": 2.5, "arrow": "bar", "label": "undercuts"},
}
HIGHLIGHT_COLOURS: dict[str, str] = {
    "cycle": "#0284c7",        # border of claims on a cycle, and the halo of the cycle's edges
    "orphan": "#f59e0b",       # border of claims cut off from the hypothesis
    "hypothesis": "#111827",   # border of the root claim
}

# Plotly colourscale for the conflict heatmap: 0 gap white, large gaps red.
HEATMAP_COLOURSCALE: list[list[Any]] = [[0.0, "#f8fafc"], [0.3, "#fde68a"], [0.6, "#f97316"], [1.0, RED]]


def critic_colour(name: str) -> str:
    return CRITIC_COLOURS.get(name, GREY)


def critic_label(name: str) -> str:
    return CRITIC_LABELS.get(name, name.replace("_", " ").title())


# ----- table columns ----------------------------------------------------------------
_COLUMN_LABELS = {"sno_id": "SNO", "title": "Title", "complete": "Complete", "n_conflicts": "Conflicts",
                  "failures": "Failed critics", "not_applicable": "Not applicable", "file": "File", "error": "Error", "pair": "Critics",
                  "count": "SNOs", "share": "Share of SNOs", "mean_delta": "Mean gap",
                  # the coherence hook's log
                  "chain_id": "Chain", "p_id": "Proposition", "types": "Contradiction types",
                  "coherence_chain": "Chain coherence", "latency_ms": "Time (ms)",
                  "evidence_pairs": "Pairs compared", "model_pairs": "Pairs the model judged"}
_COLUMN_WIDTHS = {"title": "large", "error": "large", "file": "medium", "failures": "medium", "pair": "medium",
                  "not_applicable": "medium"}


def column_label(name: str) -> str:
    """What a results column is called on the page (``trust_default`` -> "Trust (default)",
    ``score_logic`` -> "Logic"), never its raw name."""
    if name in _COLUMN_LABELS:
        return _COLUMN_LABELS[name]
    if name.startswith("trust_"):
        return f"Trust ({name[len('trust_'):].replace('_', ' ')})"
    if name.startswith("score_"):
        return critic_label(name[len("score_"):])
    return name.replace("_", " ").capitalize()


def column_width(name: str) -> str:
    """Streamlit column width for a results column: text gets room, numbers stay narrow unless their
    label would be cut ("Trust (defau", "Novelty-Parsim")."""
    return _COLUMN_WIDTHS.get(name) or ("small" if len(column_label(name)) <= 9 else "medium")


def band_colour(band: Any) -> str:
    """Colour of a quality band, given its name or an object with a ``name``."""
    name = getattr(band, "name", band)
    return BAND_COLOURS.get(str(name).lower(), GREY)


def band_label(band: Any) -> str:
    name = getattr(band, "name", band)
    return str(name).replace("_", " ").title()


def costliest_parts(result: Any, claim_texts: dict[str, str] | None = None, limit: int = 3,
                    width: int = 18) -> str:
    """The claims and relations that lower a critic's score most, from its leave-one-out
    ``evidence["attribution"]`` (the Logic critic's): ``c4 "Taxes hurt..." -0.12; c3 supports c1 -0.05``.
    ``width`` characters of a claim's text fit the Overview's table column. Empty when the critic reports no attribution or nothing costs anything."""
    parts = (getattr(result, "evidence", None) or {}).get("attribution") or []
    out = []
    for part in parts:
        if len(out) >= limit or round(float(part.get("delta", 0.0)), 2) <= 0.0:
            break          # sorted costliest first; "-0.00" costs nothing a reader can see
        label = str(part.get("label", part.get("id", "?")))
        if part.get("kind") == "claim" and claim_texts and label in claim_texts:
            text = " ".join(claim_texts[label].split())
            short = text[:width] + ("..." if len(text) > width else "")
            label += f' "{short}"'
        out.append(f"{label} -{float(part['delta']):.2f}")
    return "; ".join(out)


def count_axis(peak: float, title: str) -> dict[str, Any]:
    """A Plotly axis for counts: from 0, whole numbers only. Left to itself Plotly draws an empty
    result's axis from -1 with ticks at -1 and -0.5."""
    top = max(1.0, float(peak))
    return {"title": title, "range": [0, top * 1.15], "tickformat": ",d", "rangemode": "nonnegative",
            **({"dtick": 1} if top <= 5 else {})}


# ----- judge grades 1-5 ------------------------------------------------------
@dataclass(frozen=True)
class Badge:
    """How one judge grade is displayed: ``grade`` is None when ungraded."""

    grade: int | None
    colour: str
    label: str


def grade_of(score: Any) -> int | None:
    """The integer grade 1-5 in ``score`` (int, integral float or digit string), else None.

    Chroma returns stored ints as ints but JSON and older rows may carry ``4.0``
    or ``"4"``; anything else (0, 6, 2.5, text, NaN) is not a grade.
    """
    if isinstance(score, bool) or score is None:
        return None
    if isinstance(score, str):
        score = score.strip()
        if not score.isdigit():
            return None
        score = int(score)
    if isinstance(score, float):
        if not math.isfinite(score) or not score.is_integer():
            return None
        score = int(score)
    if isinstance(score, int) and 1 <= score <= 5:
        return score
    return None


def score_badge(score: Any) -> Badge:
    grade = grade_of(score)
    if grade is None:
        return Badge(None, GREY, "ungraded")
    colour = GREEN if grade >= 4 else AMBER if grade == 3 else RED
    return Badge(grade, colour, f"● {grade}/5")


def _pill(text: str, colour: str, title: str, attrs: str = "", outline: bool = False, spaced: bool = True) -> str:
    """The pill every badge is drawn as; ``title`` (escaped, left out when empty) shows on hover,
    ``spaced`` keeps it apart from the badge before it."""
    fill = (f"background:#ffffff;color:{colour};border:2px solid {colour}" if outline
            else f"background:{colour};color:#ffffff")
    tip = f' title="{escape(title)}"' if title else ""
    return (f'<span {attrs}{tip} style="display:inline-block;padding:1px 9px;'
            f'border-radius:999px;{fill};font-size:0.8em;font-weight:600;white-space:nowrap;cursor:help'
            f'{";margin-left:0.3rem" if spaced else ""}">{escape(text)}</span>')


def score_badge_html(score: Any, feedback: str | None = None) -> str:
    """A pill badge; the judge's feedback (escaped) shows on hover through ``title``."""
    badge = score_badge(score)
    return _pill(badge.label, badge.colour, feedback or ("no grade yet" if badge.grade is None else ""),
                 f'class="cns-badge" data-grade="{badge.grade if badge.grade is not None else "none"}"',
                 spaced=False)


def trust_badge_html(trust: float | None, *, complete: bool = True, note: str = "",
                     evidence: Any = None) -> str:
    """The critics' Trust Score of an answer as a pill on the red-amber-green ramp; grey with the
    reason on hover when there is none. ``note``: why it is missing, or the critics left out."""
    if trust is None:
        return _pill("no Trust", GREY, note or "the critics have not scored this answer yet",
                     'class="cns-trust" data-trust="none"')
    label = f"Trust {trust:.2f}" + ("" if complete else " (incomplete)")
    tip = f"critics' Trust Score {trust:.2f}"
    if not complete:
        tip += f"; left out (failed): {note}" if note else "; a critic failed"
    if evidence == 0:
        tip += "; no reference or sources: grounding had no evidence"
    return _pill(label, unit_colour(trust), tip, f'class="cns-trust" data-trust="{trust:.4f}"')


# The answer verdict's look: a word and a mark as well as a colour, so it reads without colour too.
VERDICT_STYLE: dict[str, tuple[str, str, bool]] = {     # verdict -> (mark, colour, outlined)
    "correct": ("\u2713", GREEN, False),
    "incorrect": ("\u2717", RED, False),
    "unverified": ("?", AMBER, True),
    "no_answer": ("\u2013", GREY, True),
}


def answer_verdict_html(verdict: str | None, *, p_right: Any = None, note: str = "", claim: str = "",
                        passage: str = "", complete: bool | None = None) -> str:
    """The answer's verdict as a pill with its one number, p(right) ("✗ incorrect · p(right) 0.06"); the
    same number is the export's ``answer_verdict_p_right`` and what the review queue orders by. Hover says
    what the number is and what the verdict rests on. A correct answer that says less than its reference
    reads "true but incomplete" in the correct answer's colour: vague is not wrong."""
    from cns_core.engrams import verdict_label

    if verdict not in VERDICT_STYLE:
        return _pill("no verdict", GREY, "this answer has not been judged yet (cns trust-backfill)",
                     'class="cns-verdict" data-verdict="none"', outline=True, spaced=False)
    mark, colour, outline = VERDICT_STYLE[verdict]
    label = f"{mark} {verdict_label(verdict, complete)}"
    number = ""
    if isinstance(p_right, (int, float)) and not isinstance(p_right, bool):
        from cns_core.critics.grounding_verdict import shown_probability

        shown = shown_probability(float(p_right))     # cut, not rounded: 0.969 never reads as a threshold of 0.97
        label += f" · p(right) {shown:.2f}"
        number = (f"p(right) {shown:.2f}: the probability that the answer is right, judged by the verifier "
                  "against the reference (else the sources) given the question, recalibrated to your verdicts "
                  "when a calibration is active; the export's answer_verdict_p_right column and the review queue's order.")
    tip = " ".join(part for part in (number, note, f"Claim: {claim}" if claim and claim != note else "",
                                     f"Evidence: {passage}" if passage else "") if part)
    complete_attr = "" if complete is None else f' data-complete="{str(bool(complete)).lower()}"'
    return _pill(label, colour, tip, f'class="cns-verdict" data-verdict="{escape(verdict)}"{complete_attr}',
                 outline=outline, spaced=False)


def outlined_cards_css(key_prefix: str) -> str:
    """A style that outlines, in the disagreement red, every card whose Streamlit key starts with
    ``key_prefix`` (the whole card, as the legend promises, not only its badge)."""
    return (f"<style>div[class*=\"st-key-{escape(key_prefix)}\"]{{border:2px solid {RED} !important;"
            f"box-shadow:0 0 0 1px {RED};border-radius:0.5rem}}</style>")


def human_verdict_html(verdict: str | None, *, who: str = "", note: str = "") -> str:
    """A person's verdict on the answer as an outlined pill ("person ✓ correct"); hover: who and the note.
    Nothing when nobody marked the answer."""
    if verdict not in ("correct", "incorrect", "unsure"):
        return ""
    mark, colour, _ = VERDICT_STYLE.get(verdict, ("?", GREY, True))
    tip = " ".join(p for p in (f"marked by {who}" if who else "marked by a person", f"Note: {note}" if note else "") if p)
    return _pill(f"person {mark} {verdict}", colour, tip, f'class="cns-human" data-human="{escape(verdict)}"',
                 outline=True)


def disagreement_html(verdict: str, rule: str) -> str:
    """A mark where the judge and the critics disagree (``verdict``: "judge higher" | "critics higher")."""
    return _pill(f"⚠ {verdict}", RED, f"the judge and the critics disagree ({rule})",
                 f'class="cns-disagree" data-verdict="{escape(verdict)}"', outline=True)


# ----- scores in [0, 1] --------------------------------------------------------
def _mix(a: str, b: str, t: float) -> str:
    ca = [int(a[i:i + 2], 16) for i in (1, 3, 5)]
    cb = [int(b[i:i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{round(x + (y - x) * t):02x}" for x, y in zip(ca, cb))


def unit_colour(value: float | None) -> str:
    """Red (0) through amber (0.5) to green (1); grey for a missing or invalid value."""
    if value is None or not isinstance(value, (int, float)) or not math.isfinite(value):
        return GREY
    v = min(1.0, max(0.0, float(value)))
    return _mix(RED, AMBER, v / 0.5) if v <= 0.5 else _mix(AMBER, GREEN, (v - 0.5) / 0.5)


def grounding_colour(entailment: float | None) -> str:
    """A probability in [0, 1] on the red-amber-green ramp (grey when missing)."""
    return unit_colour(entailment)


# ----- a claim's grounding verdict -----------------------------------------------------
@dataclass(frozen=True)
class VerdictStyle:
    """How a claim's grounding verdict looks: a colour, and for colour-blind readers an icon and a shape."""

    word: str
    colour: str
    icon: str
    shape: str          # vis-network node shape


# The verdict (the Grounding critic's one label per claim) decides colour, icon and shape; its
# probability only how strong the fill is. Contradicted and supported are never told apart by
# hue alone: a cross and an ellipse against a tick and a box.
VERDICT_STYLES: dict[str, VerdictStyle] = {
    "supported": VerdictStyle("supported", "#16a34a", "✓", "box"),
    "contradicted": VerdictStyle("contradicted", "#dc2626", "✗", "ellipse"),
    "not_enough_info": VerdictStyle("not enough information", "#64748b", "?", "box"),
}
NOT_SCORED_STYLE = VerdictStyle("not scored", GREY, "–", "box")


def verdict_style(verdict: str | None) -> VerdictStyle:
    return VERDICT_STYLES.get(verdict or "", NOT_SCORED_STYLE)


def verdict_fill(verdict: str | None, probability: float | None) -> str:
    """The node fill: the verdict's colour, paler the less sure the verdict (a secondary cue only)."""
    colour = verdict_style(verdict).colour
    if probability is None or not math.isfinite(probability):
        return _mix(colour, "#ffffff", 0.75)
    return _mix(colour, "#ffffff", 0.85 - 0.5 * min(1.0, max(0.0, float(probability))))


# Series drawn side by side (one per profile): distinct, solid, none of them a verdict's or a band's colour.
SERIES_COLOURS = ("#2563eb", "#f59e0b", "#7c3aed", "#0d9488", "#db2777", "#64748b")


def beside_threshold(value: float, threshold: float, digits: int = 2, most: int = 4) -> str:
    """``value`` with enough decimals to tell it from ``threshold`` when it is compared with it: a gap of
    0.297 beside "threshold 0.30" reads 0.297, never 0.30 (which reads as reaching it); else ``digits``."""
    shown = f"{value:.{digits}f}"
    while digits < most and shown == f"{threshold:.{digits}f}" and abs(value - threshold) > 1e-12:
        digits += 1
        shown = f"{value:.{digits}f}"
    return shown


def percent(value: float | None, digits: int = 0) -> str:
    if value is None or not math.isfinite(value):
        return "–"
    return f"{value * 100:.{digits}f}%"


_CODE = re.compile(r"`([^`\n]+)`")


def message_html(text: Any) -> str:
    """A message from the system (an error, the judge's feedback) as safe HTML: escaped, `code` spans kept
    as code, nothing else interpreted. Markdown would print the backslashes its escaping needs inside a
    URL ("http://127\\.0\\.0\\.1") and turn a half-escaped URL into a broken link."""
    return _CODE.sub(lambda m: f"<code>{m.group(1)}</code>", escape(text))


def unbroken_words(text: Any) -> str:
    """``text`` escaped for HTML, a word with a hyphen or dash kept on one line: a narrow column wraps it between
    words, never inside one (a band's span "0.00-0.29" used to break after its hyphen)."""
    return " ".join(f'<span style="white-space:nowrap">{escape(w)}</span>' if re.search(r"[-‐‑–—]", w)
                    else escape(w) for w in str(text).split(" "))


TABLE_CHAR_PX = 8          # a table cell's average character width in pixels (Streamlit's 14 px sans-serif)
TABLE_PAD_PX = 28          # a cell's padding and sort icon


def fit_width(label: str, values: Any = (), *, least: int = 60, most: int = 420) -> int:
    """A table column's width in pixels that shows ``label`` and the longest of ``values`` uncut (up to ``most``,
    beyond which the table wraps or the text is quoted in full elsewhere)."""
    longest = max([len(str(label)), *(len(str(v)) for v in values if v is not None)])
    return max(least, min(most, longest * TABLE_CHAR_PX + TABLE_PAD_PX))


TABLE_LINE_PX = 21         # one wrapped line of a table cell
WRAP_MIN_PX = 65           # Streamlit wraps a cell's text only in rows taller than 4rem (64 px)


def wrapped_row_height(texts: Any, width_px: int, *, most_lines: int = 6) -> int:
    """A table row height in pixels at which the longest of ``texts`` wraps uncut in a ``width_px`` column
    (Streamlit wraps a cell's text when its row is taller than one line), at most ``most_lines`` lines."""
    per_line = max(8, (width_px - TABLE_PAD_PX) // TABLE_CHAR_PX)
    longest = max((len(str(t)) for t in texts if t is not None), default=0)
    lines = max(1, min(most_lines, -(-longest // per_line)))
    if lines == 1:
        return 35                                     # Streamlit's own row height
    return max(WRAP_MIN_PX, 12 + TABLE_LINE_PX * lines + 2)


def table_height(rows: int, row_height: int, *, most_rows: int = 12) -> int:
    """A table's height that shows ``rows`` rows of ``row_height`` without an inner scroll (up to ``most_rows``)."""
    return 42 + min(rows, most_rows) * (row_height + 1)     # header, rows and their borders


def fit_widths(rows: Any) -> dict[str, int]:
    """:func:`fit_width` for every column of a table given as a list of row dicts."""
    rows = list(rows)
    return {name: fit_width(name, [r.get(name) for r in rows]) for name in (rows[0] if rows else {})}


def code_span(text: Any) -> str:
    """``text`` as a Markdown code span (a URL in it is shown as written, never made a link), fenced by more
    backticks than it holds."""
    body = str(text).replace("\n", " ")
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if body.startswith("`") or body.endswith("`") else ""
    return f"{fence}{pad}{body}{pad}{fence}"


# Buttons inside the container of key ``{key}`` show their whole label, wrapped: Streamlit cuts a long label with an
# ellipsis ("Aerobic exercise lowers blood pressure in hy...").
WRAPPED_BUTTONS_CSS = ("<style>.st-key-{key} .stMarkdownEllipsis,.st-key-{key} .stMarkdownEllipsis *"
                       "{{white-space:normal !important;text-overflow:clip !important;overflow:visible !important}}"
                       ".st-key-{key} button{{height:100%}}</style>")

# A spinner drawn with CSS: an emoji hourglass showed as an empty box where no emoji font is installed.
_SPINNER = ('<style>@keyframes cns-spin{to{transform:rotate(360deg)}}</style><span aria-hidden="true" '
            'style="display:inline-block;width:0.8em;height:0.8em;margin-right:0.45em;vertical-align:-0.1em;'
            'border:2px solid rgba(49,51,63,0.2);border-top-color:rgba(49,51,63,0.7);border-radius:50%;'
            'animation:cns-spin 0.8s linear infinite"></span>')


def progress_html(text: str) -> str:
    """A progress line (``data-testid="cns-progress"``) with a spinner the page draws itself; ``text`` is
    escaped."""
    return (f'<div data-testid="cns-progress" style="color:rgba(49,51,63,0.6)">{_SPINNER}'
            f'{escape(text)}</div>')


def escape(text: Any) -> str:
    """HTML-escape user text (quotes included, so it is safe inside attributes too)."""
    return html.escape("" if text is None else str(text), quote=True)
