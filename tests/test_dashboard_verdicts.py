"""Issue 35 on the dashboard (AppTest): band and gate tell one story, one gate threshold is in force
for the session, the plan follows the weights in force (items 1-4).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from cns_core.views import ui_state

ROOT = Path(__file__).resolve().parent.parent
PAGES = ROOT / "pages"
TIMEOUT = 120


@pytest.fixture(scope="module", autouse=True)
def app_state(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CNS_STATE_DIR", str(tmp_path_factory.mktemp("state")))
        mp.syspath_prepend(str(PAGES))
        yield


def open_example(word: str, page: str | None = None) -> AppTest:
    """A fresh session on the Overview with the example whose id contains ``word``, then ``page``."""
    examples = ui_state.load_examples()
    i = next(i for i, label in enumerate(examples) if word in examples[label].id)
    at = AppTest.from_file(str(ROOT / "dashboard.py"), default_timeout=TIMEOUT)
    at.run()
    at.button(key=f"cns_example_{i}").click().run()
    if page:
        at.switch_page(f"pages/{page}").run()
    assert not at.exception and not [e for e in at.error if not e.value.startswith("Fails")]
    return at


def texts(at: AppTest) -> str:
    return "\n".join(e.value for e in (*at.markdown, *at.caption, *at.success, *at.error, *at.warning))


def gate_caption(at: AppTest) -> str:
    return next(c.value for c in at.caption if "the gate accepts" in c.value)


def test_overview_of_vitamin_c_is_capped_and_band_and_gate_agree(vitamin_c_cap):
    at = open_example("vitamin")
    metric = next(m for m in at.metric if m.label == "Trust Score")
    assert float(metric.value) < 0.5
    text = texts(at)
    assert "capped by contradictions" in text and vitamin_c_cap.describe() in text
    assert ">Fair" not in text and "Acceptable" not in text
    assert ">fails<" in text
    assert any(c.value.startswith("Reject") for c in at.caption)            # the band's action under a failed gate
    assert not any(c.value.startswith("Accept") for c in at.caption)
    assert f"score {metric.value} is below the threshold 0.70" in gate_caption(at)


def test_gate_threshold_tuned_on_meta_critic_is_kept_and_shown_everywhere():
    at = open_example("coffee", "meta_critic.py")
    slider = at.select_slider(key="cns_meta_gate")
    assert slider.value == pytest.approx(0.7) and list(slider.options) == ["0.30 Poor", "0.50 Fair", "0.70 Good",
                                                                         "0.85 Excellent"]
    verdict = next(e.value for e in (*at.success, *at.error) if e.value.startswith(("Passes", "Fails")))
    assert verdict.startswith("Fails") and "Band: Fair (0.50–0.69): Revise" in verdict
    slider.set_value(0.5).run()
    verdict = next(e.value for e in at.success if e.value.startswith("Passes"))
    assert "reaches the threshold 0.50" in verdict and "Band: Fair (0.50–0.69): Accept with caveats" in verdict
    assert any("Quality gate: **0\\.50 \\(fair and above\\)**" in c.value for c in at.sidebar.caption)

    at.switch_page("pages/overview.py").run()
    assert not at.exception
    assert "reaches the threshold 0.50" in gate_caption(at) and ">passes<" in texts(at)
    assert "Accept with caveats" in texts(at)
    at.switch_page("pages/weights.py").run()
    assert "reaches the threshold 0.50" in gate_caption(at)
    at.switch_page("pages/meta_critic.py").run()
    assert at.select_slider(key="cns_meta_gate").value == pytest.approx(0.5)    # not back at 0.70


def test_gate_message_shows_the_digits_it_compares():
    at = open_example("exercise", "meta_critic.py")
    score = next(m for m in at.metric if m.label == "Largest share of the Trust Score")    # the page renders
    assert score
    header = next(m.value for m in at.markdown if "Trust Score" in m.value)
    shown = re.search(r"Trust Score \*\*(0\.\d{3})\*\*", header).group(1)
    verdict = next(e.value for e in (*at.success, *at.error) if e.value.startswith(("Passes", "Fails")))
    assert f"score {shown} " in verdict
    assert verdict.startswith("Passes") == (float(shown) >= 0.7)


def meta_critic_with_grounding_only() -> AppTest:
    """The forecasts example's Meta-Critic page after the Weights page set every critic but grounding to 0."""
    at = open_example("forecasts", "weights.py")
    for name, value in {"grounding": 1.0, "logic": 0.0, "novelty": 0.0, "causal": 0.0, "bias": 0.0}.items():
        at.slider(key=f"cns_w_{name}").set_value(value)
    at.run()
    at.switch_page("pages/meta_critic.py").run()
    assert not at.exception
    return at


def test_plan_follows_custom_weights_with_logic_at_zero():
    at = meta_critic_with_grounding_only()
    plan = next(d.value for d in at.dataframe if "Expected impact" in d.value.columns)
    steps = plan[plan["Priority"] != ""]
    critics = [c.split()[0] for c in steps["Critic"]]
    assert critics.index("Grounding") < critics.index("Logic")
    logic = steps[steps["Critic"].str.startswith("Logic")].iloc[0]
    assert logic["Priority"] == "low" and logic["Expected impact"] == 0
    assert any("Logic gains +0.000: weight 0 in force" in c.value for c in at.caption)
    suggestions = [m.value for m in at.markdown if m.value.startswith("- **") and "worth up to" in m.value]
    order = list(dict.fromkeys(re.search(r"· (\w+)", s).group(1) for s in suggestions))
    assert order.index("Grounding") < order.index("Logic")
