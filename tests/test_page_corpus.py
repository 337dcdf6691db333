"""The Corpus page (AppTest): load a results table, see its counts, open an SNO on every page; paths outside
the allowed folders (state folder, examples/, shared data) are refused, however they are spelled."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from cns_core.engine.batch import write_results
from cns_core.engine.rows import error_row, evaluation_row
from cns_core.critics.base import CRITIC_NAMES, CriticResult
from cns_core.scoring import load_profiles
from cns_core.sno import SNO, dump_snos

ROOT = Path(__file__).resolve().parent.parent


def make_results(tmp_path: Path) -> Path:
    """A results file for two SNO files on disk and one unreadable file (critic results made by hand)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    rows = []
    for ident, grounding in (("cars", 0.9), ("bikes", 0.2)):
        sno = SNO(id=ident, title=f"On {ident} <b>", hypothesis="h",
                  claims=[{"id": "h", "text": f"Cities should limit {ident}."},
                          {"id": "p", "text": "Streets get safer."}],
                  relations=[{"source": "p", "target": "h", "kind": "support"}])
        path = dump_snos(sno, tmp_path / f"{ident}.json")
        results = {n: CriticResult(critic=n, score=grounding if n == "grounding" else 0.5, confidence=0.7,
                                   explanation="hand-made") for n in CRITIC_NAMES}
        rows.append(evaluation_row(results, sno, str(path), "fp", load_profiles()))
    rows.append(error_row(str(tmp_path / "broken.json"), "claims: is required"))
    return write_results(pd.DataFrame(rows), tmp_path / "results.parquet")


def corpus_page() -> AppTest:
    at = AppTest.from_file(str(ROOT / "dashboard.py"), default_timeout=120)
    at.run()
    at.switch_page("pages/corpus.py")
    return at.run()


def test_page_corpus_loads_a_results_file_and_opens_an_sno(state_dir):
    path = make_results(state_dir)
    at = corpus_page()
    assert not at.exception
    assert at.title[0].value == "Corpus"
    at.text_input(key="cns_corpus_path").input(str(path))
    at.button(key="cns_corpus_load").click()
    at.run()
    assert not at.exception and not at.error
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["SNOs evaluated"] == "2" and metrics["Unreadable files / SNOs"] == "1"
    assert metrics["SNOs with conflicts"] == "1"        # cars: grounding 0.9 vs 0.5 elsewhere
    conflicts = at.dataframe[0].value                  # the conflict table comes before the SNO table
    assert set(conflicts["pair"]) == {"Grounding over Logic", "Grounding over Novelty-Parsimony", "Grounding over Causal",
                                      "Grounding over Bias"}
    # issue 31 item 9: human labels, never raw names like trust_default (sort box and table headers)
    sort = at.selectbox(key="cns_corpus_sort")
    assert "Trust (default)" in sort.options and not any("_" in o for o in sort.options)
    table_columns = json.loads(at.dataframe[1].proto.columns)
    labels = {name: cfg.get("label") for name, cfg in table_columns.items()}
    assert labels["trust_default"] == "Trust (default)" and labels["score_grounding"] == "Grounding"
    assert labels["sno_id"] == "SNO" and table_columns["title"]["width"] == "large"
    from table_fit import cut_cells                       # issue 43: "Trus…" and the SNO ids were cut

    assert cut_cells(at.dataframe[1], ["sno_id", "trust_default", "score_grounding"]) == []
    # issue 70 item 6: the conflicts count sat right-aligned past the table's edge; the profiles' histograms
    # overlaid into colours their legend did not have
    conflicts_column = table_columns["n_conflicts"]
    assert conflicts_column["label"] == "Conflicts" and conflicts_column.get("alignment") == "left"
    assert isinstance(conflicts_column["width"], int)
    at.multiselect(key="cns_corpus_profiles").set_value(["default", "verification"]).run()
    trust = json.loads(next(c.proto.spec for c in at.get("plotly_chart") if "Trust Score" in c.proto.spec))
    colours = [t["marker"]["color"] for t in trust["data"]]
    assert trust["layout"]["barmode"] == "group" and len(set(colours)) == 2
    assert all("opacity" not in t for t in trust["data"])
    pick = at.selectbox(key="cns_corpus_pick")
    assert [o.split(" — ")[0] for o in pick.options] == ["cars", "bikes"]   # sorted by Trust Score, desc
    pick.select(f"{state_dir / 'bikes.json'}::bikes")
    at.button(key="cns_corpus_open").click()
    at.run()
    assert not at.exception
    assert at.session_state["cns_current"] == "On bikes <b> · corpus"
    assert at.session_state["cns_library"]["On bikes <b> · corpus"].id == "bikes"
    assert at.title[0].value == "Overview"               # the page the other pages' SNO opens on


def test_page_corpus_names_a_bad_results_file(state_dir):
    bad = state_dir / "results.csv"
    bad.write_text("a,b\n1,2\n")
    at = corpus_page()
    at.text_input(key="cns_corpus_path").input(str(bad))
    at.button(key="cns_corpus_load").click()
    at.run()
    assert not at.exception
    assert [e.value for e in at.error] == [f"Could not load the results: {bad}: not a CNS results table: "
                                           "missing column(s) file, sno_id, title, content_hash, "
                                           "config_fingerprint, error"]
    assert at.info[0].value.startswith("Nothing loaded yet")


def _refused(at: AppTest, shown: str, what: str = "Results file") -> None:
    from cns_core.access import allowed_roots

    assert not at.exception
    errors = [e.value for e in at.error]
    assert len(errors) == 1, errors
    assert errors[0].startswith(f"Could not {'load the results' if what == 'Results file' else 'evaluate the folder'}: "
                                f"{what} {shown}: outside the folders the dashboard may read: ")
    for root in allowed_roots():           # the message names every allowed folder
        assert str(root.path) in errors[0]
    assert at.info[0].value.startswith("Nothing loaded yet")      # nothing was read


def test_page_corpus_refuses_results_files_outside_the_allowed_folders(tmp_path, state_dir):
    outside = make_results(tmp_path / "elsewhere")        # a real results table, outside every root
    at = corpus_page()
    box = at.text_input(key="cns_corpus_path")

    dotted = f"{state_dir}/../elsewhere/results.parquet"   # starts in the state folder, climbs out
    box.input(dotted)
    at.button(key="cns_corpus_load").click()
    _refused(at.run(), f"{dotted} (= {outside})")

    at.text_input(key="cns_corpus_path").input(str(outside))       # absolute, outside
    at.button(key="cns_corpus_load").click()
    _refused(at.run(), str(outside))

    at.text_input(key="cns_corpus_path").input("/etc/passwd")
    at.button(key="cns_corpus_load").click()
    _refused(at.run(), "/etc/passwd")

    link = state_dir / "results.parquet"                  # inside the state folder, pointing out of it
    link.symlink_to(outside)
    at.text_input(key="cns_corpus_path").input(str(link))
    at.button(key="cns_corpus_load").click()
    _refused(at.run(), f"{link} (= {outside})")

    link.unlink()                                         # the same table copied in is read
    link.write_bytes(outside.read_bytes())
    at.text_input(key="cns_corpus_path").input(str(link))
    at.button(key="cns_corpus_load").click()
    at.run()
    assert not at.exception and not at.error
    assert {m.label: m.value for m in at.metric}["SNOs evaluated"] == "2"


def test_page_corpus_refuses_a_folder_that_leads_out(tmp_path, state_dir):
    folder = tmp_path / "snos"
    folder.mkdir()
    dump_snos(SNO(id="one", title="one", hypothesis="h", claims=[{"id": "h", "text": "Claim one."}]),
              folder / "one.json")
    link = state_dir / "snos"
    link.symlink_to(folder, target_is_directory=True)
    at = corpus_page()
    at.radio(key="cns_corpus_source").set_value("Folder of SNO files")
    at.run()
    at.text_input(key="cns_corpus_folder").input(str(link))
    at.button(key="cns_corpus_evaluate").click()
    _refused(at.run(), f"{link} (= {folder})", what="Folder of SNO files")
    assert not (state_dir / "corpus").exists()            # no run was started, nothing written


@pytest.mark.slow
def test_page_corpus_evaluates_a_folder(state_dir):
    folder = state_dir / "snos"
    folder.mkdir()
    for ident in ("one", "two"):
        dump_snos(SNO(id=ident, title=ident, hypothesis="h", claims=[{"id": "h", "text": f"Claim {ident}."}]),
                  folder / f"{ident}.json")
    at = corpus_page()
    at.radio(key="cns_corpus_source").set_value("Folder of SNO files")
    at.run()
    at.text_input(key="cns_corpus_folder").input(str(folder))
    at.button(key="cns_corpus_evaluate").click()
    at.run()
    assert not at.exception and not at.error
    assert {m.label: m.value for m in at.metric}["SNOs evaluated"] == "2"
    assert list((state_dir / "corpus").glob("snos-*.parquet"))    # resumable results kept in the state dir


def test_a_folder_run_reports_progress_sno_by_sno(tmp_path, state_dir, monkeypatch):
    from cns_core.engine import corpus

    monkeypatch.setenv("CNS_NLI_BACKEND", "lexical")
    folder = tmp_path / "snos"
    folder.mkdir()
    for ident in ("one", "two", "three"):
        dump_snos(SNO(id=ident, title=ident, hypothesis="h", claims=[{"id": "h", "text": f"Claim {ident}."}]),
                  folder / f"{ident}.json")
    seen: list[tuple[int, int]] = []
    corpus.evaluate_folder(folder, on_progress=lambda done, total: seen.append((done, total)))
    assert seen == [(0, 3), (1, 3), (2, 3), (3, 3)]
    again: list[tuple[int, int]] = []
    corpus.evaluate_folder(folder, on_progress=lambda done, total: again.append((done, total)))
    assert again == []                                            # every row done: nothing to report
    assert corpus.progress_text(1, 3) == "Evaluating: 1 of 3 SNO(s) done"


def _two_sno_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "snos"
    folder.mkdir()
    for ident in ("one", "two"):
        dump_snos(SNO(id=ident, title=ident, hypothesis="h", claims=[{"id": "h", "text": f"Claim {ident}."}]),
                  folder / f"{ident}.json")
    return folder


def test_page_corpus_opens_on_the_latest_finished_run(tmp_path, state_dir, monkeypatch):
    from cns_core.engine import corpus

    monkeypatch.setenv("CNS_NLI_BACKEND", "lexical")
    folder = _two_sno_folder(tmp_path)
    corpus.evaluate_folder(folder)
    latest = corpus.latest_run()
    assert latest is not None and latest.origin == str(folder) and latest.rows == 2
    assert Path(latest.results) == corpus.folder_results_path(folder).resolve()
    at = corpus_page()
    assert not at.exception and not at.error
    assert {m.label: m.value for m in at.metric}["SNOs evaluated"] == "2"     # no click needed
    assert not at.info or not at.info[0].value.startswith("Nothing loaded yet")
    assert any("latest finished run" in c.value for c in at.caption)


def test_an_interrupted_or_vanished_run_is_not_the_latest(tmp_path, state_dir, monkeypatch):
    from cns_core.engine import corpus

    monkeypatch.setenv("CNS_NLI_BACKEND", "lexical")
    folder = _two_sno_folder(tmp_path)

    def interrupt(done: int, total: int) -> None:
        if done == 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        corpus.evaluate_folder(folder, on_progress=interrupt)
    assert corpus.folder_results_path(folder).is_file()        # the finished row was kept ...
    assert corpus.latest_run() is None                        # ... but the run did not finish
    corpus.evaluate_folder(folder)
    assert corpus.latest_run() is not None
    corpus.folder_results_path(folder).unlink()
    assert corpus.latest_run() is None                        # its results file is gone
    at = corpus_page()
    assert not at.exception and at.info[0].value.startswith("Nothing loaded yet")
