"""The drift leading indicator over hand-made logs whose answer is worked out by hand."""

from __future__ import annotations

import json

import pytest

from cns_core.coherence.drift_indicator import IndicatorSettings, drift_indicator
from cns_core.coherence.log_view import chain_points, load_log

SMALL = IndicatorSettings(window=4, z=1.0, min_drop=0.1, horizon=2, min_history=4)


def _line(tick, chain, coherence, facets=(), p="0"):
    return {"tick": tick, "chain_id": chain, "p_id": f"{chain}:{p}", "entail": 0.5, "contradict": 0.1,
            "uncertainty": 0.5, "types": [], "drift_facets": list(facets), "coherence_chain": coherence,
            "contradiction_density": 0.0, "blocked": False}


def _write(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_hand_made_log(tmp_path):
    # coherence per chain:   0    1    2    3    4    5    6    7    8    9
    values = [0.8, 0.8, 0.8, 0.8, 0.8, 0.2, 0.8, 0.8, 0.8, 0.3]
    drift = {4, 7}          # chain 4 precedes the drop at 5; chain 7 precedes the one at 9 (within 2)
    records = []
    for i, v in enumerate(values):
        records.append(_line(i + 1, f"c{i}", v, ["self"] if i in drift else []))
        records.append(_line(i + 1, f"c{i}", v, [], p="1"))          # a second proposition, same chain
    records.insert(3, {"event": "error", "tick": 2, "chain_id": "c1", "error": "x"})
    points = chain_points(load_log(_write(tmp_path / "c.jsonl", records)))
    assert [p.coherence for p in points] == values and [i for i, p in enumerate(points) if p.drift] == [4, 7]

    result = drift_indicator(points, SMALL)
    # chain 5: window 1-4 all 0.8, std 0 -> threshold 0.8 - 0.1 = 0.7 > 0.2: spike.
    # chain 6: window 2-5 = .8,.8,.8,.2: mean .65, std .2598 -> .3902 < .8: no. 7: window 3-6 same: no.
    # chain 8: window 4-7 same: no. chain 9: window 5-8 = .2,.8,.8,.8 same: threshold .3902 > .3: spike.
    assert result.spikes == (5, 9)
    # judged chains: 0..7 (8 and 9 lack a whole horizon); followed within 2: 3, 4 (-> 5) and 7 (-> 9)
    assert (result.judged_chains, result.judged_followed) == (8, 3)
    assert (result.drift_chains, result.drift_followed) == (2, 2)
    assert result.indicator == 1.0 and result.base_rate == pytest.approx(3 / 8)
    assert result.lift == pytest.approx(8 / 3)
    # stability: std of the last 4 = .8, .8, .8, .3 -> mean .675, std sqrt(3*.125^2 + .375^2)/2
    assert result.stability == pytest.approx(0.21650635, abs=1e-6)


def test_drift_that_leads_nothing_has_lift_below_one():
    values = [0.5, 0.6] * 10 + [0.0, 0.6, 0.5, 0.6]    # one drop, at 20
    points = chain_points([_line(i, f"c{i}", v, ["g"] if i in (2, 4, 6) else []) for i, v in enumerate(values)])
    result = drift_indicator(points, SMALL)
    assert result.spikes == (20,)
    assert result.drift_chains == 3 and result.drift_followed == 0 and result.indicator == 0.0
    assert result.judged_followed == 2 and result.base_rate == pytest.approx(2 / 22) and result.lift == 0.0


def test_no_drift_chains_and_short_logs_have_no_indicator():
    result = drift_indicator(chain_points([_line(i, f"c{i}", 0.5) for i in range(3)]), SMALL)
    assert result.chains == 3 and result.spikes == () and result.indicator is None and result.lift is None
    assert drift_indicator([], SMALL).stability is None


@pytest.mark.parametrize("section, message", [
    ({"window": 0}, "drift.indicator.window"),
    ({"z": -1}, "drift.indicator.z"),
    ({"horizon": "ten"}, "drift.indicator.horizon"),
    ({"window": 5, "min_history": 9}, "must not exceed window"),
    ({"spike": 1}, "unknown key(s) spike"),
])
def test_bad_settings_name_the_field(section, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        IndicatorSettings.from_config({"drift": {"indicator": section}})


def test_the_configured_settings_load():
    s = IndicatorSettings.from_config()
    assert (s.window, s.z, s.horizon) == (50, 2.0, 10)


def test_one_tick_rule_for_points_and_summary():
    from cns_core.coherence.log_view import summarise

    rows = [_line(1, "a", 0.9), _line(2, "b", 0.4), _line(1, "a", 0.9, ["self"], p="1"),   # "a" again, drifting
            _line(None, "c", 0.1), {"event": "error", "tick": 3, "chain_id": "a"}]          # no tick; an event
    summary = summarise(rows)
    assert [(p.tick, p.chain_id, p.coherence, p.drift) for p in summary.points] == [(1, "a", 0.9, True),
                                                                                   (2, "b", 0.4, False)]
    assert summary.chains == 2 and summary.propositions == 4 and summary.mean_coherence == pytest.approx(0.65)
    assert [p["tick"] for p in summary.series] == [1, 2] and chain_points(rows) == list(summary.points)


def test_chains_with_nothing_to_compare_are_not_coherence_zero():
    """Issue 31 item 8: a chain with no evidence pairs has no coherence to plot, average or lead with."""
    from cns_core.coherence.log_view import summarise

    rows = [dict(_line(1, "first", 0.0), evidence_pairs=0, model_pairs=0),       # nothing stored before it
            dict(_line(2, "b", 0.8), evidence_pairs=3, model_pairs=3),
            dict(_line(3, "c", 0.6, ["self"]), evidence_pairs=2, model_pairs=0),
            dict(_line(4, "lone", 0.0), evidence_pairs=0, model_pairs=0),
            _line(5, "old", 0.4)]                                                     # logged before pairs were
    summary = summarise(rows)
    assert summary.chains == 5 and summary.uncompared == 2
    assert [p["chain_id"] for p in summary.series] == ["b", "c", "old"]
    assert summary.mean_coherence == pytest.approx((0.8 + 0.6 + 0.4) / 3)
    result = drift_indicator(summary.points, SMALL)
    assert result.chains == 3 and result.uncompared == 2


def test_a_share_over_few_chains_says_so():
    from cns_core.views.coherence_view import share_note, uncompared_note

    result = drift_indicator(chain_points([_line(i, f"c{i}", 0.5, ["g"] if i < 2 else []) for i in range(5)]),
                             SMALL)
    assert result.drift_chains == 2 and result.too_few(result.drift_chains)
    assert share_note(2, 2, "drift chains", result.too_few(2)) == "2 of 2 drift chains; too few to read"
    assert share_note(7, 40, "chains", False) == "7 of 40 chains"
    assert share_note(0, 0, "drift chains", True) == "no drift chains yet"
    assert uncompared_note(0) == "" and uncompared_note(3).startswith("3 chain(s) had nothing to compare")
    assert IndicatorSettings.from_config().min_chains == 10
