"""Colour and badge policy: the critic-agent spec's badge table and the score ramps."""

from __future__ import annotations

import re

import pytest

from cns_core.views import display
from cns_core.critics.base import CRITIC_NAMES


@pytest.mark.parametrize(
    ("score", "colour", "label"),
    [
        (5, "#22c55e", "● 5/5"),
        (4, "#22c55e", "● 4/5"),
        (3, "#f59e0b", "● 3/5"),
        (2, "#ef4444", "● 2/5"),
        (1, "#ef4444", "● 1/5"),
        (4.0, "#22c55e", "● 4/5"),
        ("3", "#f59e0b", "● 3/5"),
        (None, display.GREY, "ungraded"),
    ],
)
def test_score_badge_follows_spec_table(score, colour, label):
    badge = display.score_badge(score)
    assert (badge.colour, badge.label) == (colour, label)


@pytest.mark.parametrize("bad", [0, 6, 2.5, -1, "x", "", float("nan"), True, [4]])
def test_score_badge_refuses_non_grades(bad):
    assert display.grade_of(bad) is None
    assert display.score_badge(bad).label == "ungraded"


def test_score_badge_html_escapes_feedback_in_title():
    feedback = '<script>alert(1)</script> "quoted" & done'
    out = display.score_badge_html(2, feedback)
    assert "<script>" not in out
    title = re.search(r'title="([^"]*)"', out).group(1)
    assert title == "&lt;script&gt;alert(1)&lt;/script&gt; &quot;quoted&quot; &amp; done"
    assert "background:#ef4444" in out and "● 2/5" in out


def test_ungraded_badge_says_so_on_hover():
    out = display.score_badge_html(None)
    assert "ungraded" in out and 'title="no grade yet"' in out and display.GREY in out


def test_every_critic_and_band_has_a_colour_and_label():
    assert set(display.CRITIC_COLOURS) == set(CRITIC_NAMES) == set(display.CRITIC_LABELS)
    signal = {display.GREEN, display.AMBER, display.RED}
    assert not signal & set(display.CRITIC_COLOURS.values())  # identity colours never mean good/bad
    from cns_core.meta.settings import MetaConfig

    for band in MetaConfig.load().bands:
        assert display.band_colour(band) != display.GREY
        assert display.band_label(band) == band.name.title()


def test_unit_colour_ramp_ends_and_middle():
    assert display.unit_colour(0.0) == display.RED
    assert display.unit_colour(0.5) == display.AMBER
    assert display.unit_colour(1.0) == display.GREEN
    assert display.unit_colour(1.7) == display.GREEN  # clipped
    assert display.unit_colour(None) == display.GREY
    assert display.unit_colour(float("nan")) == display.GREY
    # monotone: the green channel grows from red to amber
    greens = [int(display.unit_colour(v / 10)[3:5], 16) for v in range(6)]
    assert greens == sorted(greens) and greens[0] < greens[-1]


def test_escape_quotes_for_attributes():
    assert display.escape("a\"b'<c>&") == "a&quot;b&#x27;&lt;c&gt;&amp;"
    assert display.escape(None) == ""


def test_costliest_parts_names_claims_with_their_text_and_cost():
    from cns_core.critics.base import CriticResult
    from cns_core.views.display import costliest_parts

    result = CriticResult("logic", 0.5, 0.8, "", evidence={"attribution": [
        {"kind": "claim", "id": "c4", "label": "c4", "delta": 0.12},
        {"kind": "relation", "id": "r2", "label": "c3 supports c1", "delta": 0.05},
        {"kind": "claim", "id": "c2", "label": "c2", "delta": 0.01},
        {"kind": "claim", "id": "c5", "label": "c5", "delta": -0.03}]})
    texts = {"c4": "Taxes hurt the poor more than anyone else in the whole country.", "c2": "Short."}
    assert costliest_parts(result, texts, width=20) == \
        'c4 "Taxes hurt the poor ..." -0.12; c3 supports c1 -0.05; c2 "Short." -0.01'
    assert costliest_parts(result, texts, limit=1, width=20) == 'c4 "Taxes hurt the poor ..." -0.12'
    assert costliest_parts(CriticResult("bias", 0.5, 0.8, "")) == ""


@pytest.mark.parametrize("value,threshold,shown", [(0.297, 0.30, "0.297"), (0.3004, 0.30, "0.3004"),
                                                   (0.30, 0.30, "0.30"), (0.42, 0.30, "0.42"), (0.305, 0.30, "0.305")])
def test_a_number_compared_with_a_threshold_shows_the_decimals_that_decide(value, threshold, shown):
    """Issue 70 item 6: a gap of 0.297 read "0.30" beside "threshold 0.30", unflagged."""
    assert display.beside_threshold(value, threshold) == shown


def test_the_blend_note_never_reads_as_a_mix_in_force_under_a_profile_off_the_line():
    """Issue 70 item 6: "0.50 (the blend is not in force)" under the default profile."""
    from cns_core.views.ui_state import BLEND_FROM, BLEND_TO, WeightsInForce, blend_note

    note = blend_note(WeightsInForce({}, "balanced"))
    assert "not a mix" in note and "rests at 0.50 and changes nothing until you move it" in note
    assert blend_note(WeightsInForce({}, BLEND_TO)) == " (the blend's end 1 is this profile)"
    assert blend_note(WeightsInForce({}, BLEND_FROM)) == " (the blend's end 0 is this profile)"
    assert blend_note(WeightsInForce({}, "balanced", custom=True, blend=0.35)) == ""
