"""One computation per fact, shown the same everywhere (issue 31, items 2-4).

* a claim's grounding verdict: Reasoning graph, Coherence, ``cns evaluate --json`` and its table;
* the weights in force: the Weights page, the sidebar, the Overview (and a preset resets the blend);
* the novelty population: pinned and named, so the CLI and the dashboard give one score.

The SNO is drafted (``cns extract``) from a README-style remote-work text and its source, written
here: its claim c1 is restated by c8, so the coherence hook's own tag called both "supported"
(entail 0.99 / 0.83) while their grounding verdict is "not enough information" (p 0.15).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from cns_core.critics.grounding_verdict import shown_probability
from cns_core.cli import main
from cns_core.sno import load_snos
from cns_core.views import ui_state

ROOT = Path(__file__).resolve().parent.parent
VERDICT_WORDS = {"supported": "supported", "contradicted": "contradicted", "not_enough_info": "not enough information"}
TIMEOUT = 180

TEXT = """# Remote work

Remote work makes employees more productive. A two-year study of 16,000 workers found a 13% performance \
increase among those who worked from home. Employees who work from home also take fewer sick days, because \
they are not exposed to colds in the office.

Critics say that remote work harms collaboration. But teams can meet online, so collaboration does not suffer.

In short, remote work makes employees more productive, so companies should let employees work from home.
"""
SOURCE = """A Stanford study followed 16,000 employees of a Chinese travel agency for two years. Working from \
home led to a 13% performance increase, of which about 9% came from working more minutes per shift and 4% \
from more calls per minute.

Home workers reported improved work satisfaction and their attrition rate halved. They took fewer sick days.

Surveys of managers report that spontaneous collaboration is harder to sustain in fully remote teams.
"""


@pytest.fixture(scope="module")
def drafted(tmp_path_factory) -> Path:
    """The remote-work text drafted into an SNO file (as ``cns extract TEXT --sources SOURCE -o DIR``)."""
    folder = tmp_path_factory.mktemp("remote")
    (folder / "remote.md").write_text(TEXT, encoding="utf-8")
    (folder / "remote_sources.txt").write_text(SOURCE, encoding="utf-8")
    assert main(["extract", str(folder / "remote.md"), "--sources", str(folder / "remote_sources.txt"),
                 "-o", str(folder / "out")]) == 0
    return folder / "out" / "remote.yaml"


@pytest.fixture(scope="module", autouse=True)
def app_state(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CNS_STATE_DIR", str(tmp_path_factory.mktemp("state")))
        mp.syspath_prepend(str(ROOT / "pages"))
        yield


def _cli_json(capsys, *args: str) -> dict:
    capsys.readouterr()
    assert main(["evaluate", "--json", *args]) == 0
    return json.loads(capsys.readouterr().out)


def _app_with(path: Path) -> AppTest:
    """The dashboard with ``path`` uploaded on Author / Load (it becomes the current SNO)."""
    at = AppTest.from_file(str(ROOT / "dashboard.py"), default_timeout=TIMEOUT)
    at.run()
    at.switch_page("pages/author.py").run()
    at.file_uploader(key="cns_author_upload").set_value((path.name, path.read_bytes(), "application/yaml"))
    at.run()
    assert not at.exception and not at.error
    return at


def _table(at: AppTest, *columns: str):
    return next(t.value for t in at.dataframe if set(columns) <= set(t.value.columns))


# ----- item 2: one verdict per claim ----------------------------------------------------
def test_every_surface_shows_the_same_verdict_per_claim(drafted, capsys):
    (sno,) = load_snos(drafted)
    cli = _cli_json(capsys, str(drafted))["results"][0]
    critic = cli["critics"]["grounding"]["evidence"]["claims"]
    words = {cid: VERDICT_WORDS[v["verdict"]] for cid, v in critic.items()}
    assert set(words) == {c.id for c in sno.claims}

    at = _app_with(drafted)
    at.switch_page("pages/graph.py").run()
    assert not at.exception
    graph = _table(at, "Claim", "Verdict", "p(supported)")
    assert dict(zip(graph["Claim"], graph["Verdict"])) == words
    assert dict(zip(graph["Claim"], graph["p(supported)"])) == pytest.approx(
        {cid: shown_probability(v["p_supported"]) for cid, v in critic.items()}, abs=1e-6)   # as every page shows it

    at.switch_page("pages/coherence.py").run()
    assert not at.exception
    # the restatement: the hook's tag finds c1 entailed (by c8), its verdict is still not enough information
    assert words["c1"] == "not enough information"
    badges = "".join(m.value for m in at.markdown)
    assert re.findall(r">([^<>]+)</span>(?: <span[^>]*>[^<>]*</span>)? <b>(c\d+)</b>", badges) == [
        (w, cid) for cid, w in words.items()]
    coherence = _table(at, "Claim", "Verdict", "p(supported)")
    assert dict(zip(coherence["Claim"], coherence["Verdict"])) == words
    assert dict(zip(coherence["Claim"], coherence["p(supported)"])) == pytest.approx(
        {cid: shown_probability(v["p_supported"]) for cid, v in critic.items()}, abs=1e-6)   # as every page shows it
    assert {cid: c["label"] for cid, c in cli["claims"].items()} == words       # the CLI's own list: the same


def test_labels_agree_with_their_probabilities(drafted, capsys):
    data = _cli_json(capsys, str(drafted), *sorted(str(p) for p in (ROOT / "examples").glob("*.yaml")))
    from cns_core.critics.common import critic_settings
    from cns_core.critics.grounding import verdict_rule_of

    rule = verdict_rule_of(critic_settings("grounding"))     # the thresholds in force (fitted with the fusion)
    seen = set()
    for result in data["results"]:
        for cid, c in result["critics"]["grounding"]["evidence"]["claims"].items():
            seen.add(c["verdict"])
            assert (c["verdict"] == "supported") == (c["p_supported"] >= rule.supported), (result["sno_id"], cid, c)
            assert (c["verdict"] == "contradicted") == (c["p_contradicted"] >= rule.contradicted), (
                result["sno_id"], cid, c)
    assert seen == {"supported", "contradicted", "not_enough_info"}


def test_the_cli_table_lists_each_claims_verdict(drafted, capsys):
    (result,) = _cli_json(capsys, "--population", "none", str(drafted))["results"]
    verdicts = [c["verdict"] for c in result["critics"]["grounding"]["evidence"]["claims"].values()]
    assert len(verdicts) == 9
    capsys.readouterr()
    assert main(["evaluate", "--claims", "--population", "none", str(drafted)]) == 0
    out = capsys.readouterr().out
    assert (f"claims: {verdicts.count('supported')} supported, {verdicts.count('contradicted')} contradicted, "
            f"{verdicts.count('not_enough_info')} not enough information") in out
    assert re.search(r"^    c1 +not enough information +p\(supported\) 0\.\d\d  p\(contradicted\) 0\.\d\d  \S", out, re.M)


# ----- item 3: the weights in force -----------------------------------------------------
def test_weights_in_force_are_one_fact_named_the_same_everywhere():
    at = AppTest.from_file(str(ROOT / "dashboard.py"), default_timeout=TIMEOUT)
    at.run()
    at.switch_page("pages/weights.py").run()
    profiles = ui_state.load_profiles()
    at.selectbox(key="cns_w_preset").select("verification").run()
    assert at.slider(key="cns_w_blend").value == 1.0                  # the preset reset the blend to its end
    at.slider(key="cns_w_blend").set_value(0.0).run()                 # now exploration's weights, as custom
    assert not at.exception
    assert at.session_state[ui_state.KEY_WEIGHTS] == {n: round(w, 2) for n, w in profiles["exploration"].items()}
    assert at.selectbox(key="cns_w_preset").value == "custom (blend 0.0)"
    assert at.sidebar.selectbox(key="cns_sidebar_profile").value == "custom (blend 0.0)"
    assert any("In force on every page: **custom \\(blend 0\\.0\\)**" in c.value for c in at.caption)
    band = next(c.value for c in at.caption if "with custom \\(blend 0\\.0\\)" in c.value)
    assert "with the verification profile" in band                     # the comparison says which is which

    at.switch_page("pages/overview.py").run()
    assert any("weights: custom \\(blend 0\\.0\\)" in c.value for c in at.caption)
    assert any("(weights: custom \\(blend 0\\.0\\))" in c.value for c in at.caption)    # the gate's weights

    at.switch_page("pages/weights.py").run()
    at.slider(key="cns_w_blend").set_value(0.25).run()
    assert at.selectbox(key="cns_w_preset").value == "custom (blend 0.25)"
    at.sidebar.selectbox(key="cns_sidebar_profile").select("verification").run()   # a profile replaces them
    assert at.session_state[ui_state.KEY_WEIGHTS] is None and at.session_state[ui_state.KEY_BLEND] is None
    assert at.selectbox(key="cns_w_preset").value == "verification"
    assert at.slider(key="cns_w_blend").value == 1.0                  # the sidebar's choice reset the blend too
    assert {n: at.slider(key=f"cns_w_{n}").value for n in profiles["verification"]} == pytest.approx(
        profiles["verification"])
    at.selectbox(key="cns_w_preset").select("exploration").run()
    assert at.slider(key="cns_w_blend").value == 0.0


# ----- item 4: the novelty population -----------------------------------------------------
def test_a_pinned_population_gives_the_same_score_alone_in_a_batch_and_on_the_dashboard(drafted, capsys):
    example = ROOT / "examples" / "grounded_exercise_bp.yaml"
    alone = _cli_json(capsys, "--population", "examples", str(example))["results"][0]
    batch = _cli_json(capsys, "--population", "examples", *sorted(str(p) for p in (ROOT / "examples").glob("*.yaml")))
    within = next(r for r in batch["results"] if r["file"] == str(example))
    # equal far below what is shown (3 decimals): a claim's vector is computed by whichever critic thread embeds it
    # first, in that critic's batch, and MiniLM's last digits depend on the batch (about 1e-9 of Trust)
    assert alone["trust_score"] == pytest.approx(within["trust_score"], abs=1e-6)
    assert alone["population"]["origin"] == "examples" and alone["population"]["size"] == 5
    assert "exercise-blood-pressure" not in alone["population"]["members"]         # itself left out

    pinned = _cli_json(capsys, "--population", "examples", str(drafted))["results"][0]
    assert pinned["population"]["size"] == 6
    at = _app_with(drafted)
    at.switch_page("pages/overview.py").run()
    trust = {m.label: m.value for m in at.metric}["Trust Score"]
    assert trust == f"{pinned['trust_score']:.3f}"
    assert any("novelty against 6 SNOs \\(the bundled examples\\)" in c.value for c in at.caption)

    none = _cli_json(capsys, "--population", "none", str(drafted))["results"][0]
    at.sidebar.selectbox(key="cns_sidebar_population").select("none").run()
    assert not at.exception
    assert {m.label: m.value for m in at.metric}["Trust Score"] == f"{none['trust_score']:.3f}"
    assert any("novelty against no SNO" in c.value for c in at.sidebar.caption)


def test_population_flag_errors_name_the_flag(tmp_path, capsys):
    example = str(ROOT / "examples" / "grounded_exercise_bp.yaml")
    assert main(["evaluate", "--population", str(tmp_path / "missing.yaml"), example]) != 0
    assert "--population: no SNO file matches" in capsys.readouterr().err
