"""Commands given nothing, a typo or a bad number (issue 53, items 5 and 8): a clear error and a non-zero exit,
before any model loads, and nothing created that was not asked for."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from cns_core.cli import evaluate as evaluate_cli
from cns_core.cli import main
from judge_loop_helpers import bus_config, fake_ollama, judge_settings, ollama, proxy  # noqa: F401  (fixtures)

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.fixture
def no_models(monkeypatch):
    """Fails the test if the critics' pipeline (and with it any model) would be set up."""
    def refuse(*args, **kwargs):
        raise AssertionError("the critics' models were loaded")

    monkeypatch.setattr(evaluate_cli.ScoringRun, "of", classmethod(refuse))


def folders(tmp_path: Path) -> dict[str, Path]:
    """An empty folder, one holding only a named pipe, one holding only a broken symbolic link."""
    out = {name: tmp_path / name for name in ("empty", "pipe", "link")}
    for folder in out.values():
        folder.mkdir()
    os.mkfifo(out["pipe"] / "sno.yaml")
    (out["link"] / "sno.yaml").symlink_to(tmp_path / "gone.yaml")
    return out


@pytest.mark.parametrize("kind", ["empty", "pipe", "link"])
@pytest.mark.parametrize("command", [["meta", "--gate"], ["meta"], ["evaluate"]])
def test_nothing_to_judge_is_an_error_before_any_model_loads(tmp_path, capsys, no_models, command, kind):
    """Item 5: `cns meta --gate` on an empty folder printed nothing and exited 0 after 17 s; `cns evaluate`
    said "evaluated 0 SNO(s)" with exit 0."""
    folder = folders(tmp_path)[kind]
    assert main([*command, str(folder)]) == 1
    err = capsys.readouterr().err
    assert f"nothing to judge: no SNO file (.json, .yaml, .yml) in {folder}" in err


@pytest.mark.parametrize("command", [["meta", "--gate"], ["evaluate"]])
def test_a_named_pipe_alone_is_refused_before_any_model_loads(tmp_path, capsys, no_models, command):
    """Item 8: `cns meta` loaded its models (16 s, 600 MB) before refusing a pipe."""
    fifo = tmp_path / "sno.yaml"
    os.mkfifo(fifo)
    assert main([*command, str(fifo)]) == 1
    err = capsys.readouterr().err
    assert "file: not a regular file (a named pipe)" in err and "nothing to judge" in err


def looping_links(folder: Path) -> list[Path]:
    """``a.yaml`` and ``b.yaml``, two links pointing at each other."""
    a, b = folder / "a.yaml", folder / "b.yaml"
    a.symlink_to(b)
    b.symlink_to(a)
    return [a, b]


@pytest.mark.parametrize("command", [["meta", "--gate"], ["meta"], ["evaluate"]])
def test_a_folder_of_looping_links_names_them_before_any_model_loads(tmp_path, capsys, no_models, command):
    """Issue 71, item 8: a folder holding only two looping `.yaml` links said "no SNO file" of it."""
    folder = tmp_path / "loops"
    folder.mkdir()
    links = looping_links(folder)
    assert main([*command, str(folder)]) == 1
    err = capsys.readouterr().err
    assert "no SNO file" not in err and err.count("file: a symbolic link that loops") == 2
    assert all(f"{link}: " in err for link in links)


def test_looping_links_beside_an_sno_file_are_named_and_the_file_is_read(tmp_path):
    """Issue 71, item 8: loops beside a valid file were passed over without a word."""
    folder = tmp_path / "mixed"
    folder.mkdir()
    links = looping_links(folder)
    good = folder / "c.yaml"
    good.write_bytes((EXAMPLES / "grounded_exercise_bp.yaml").read_bytes())
    reports = evaluate_cli.load_files([folder])
    assert [r.path for r in reports] == [str(p) for p in (*links, good)]
    assert [r.problems for r in reports[:2]] == [["file: a symbolic link that loops"]] * 2
    assert reports[2].ok and len(reports[2].snos) == 1

def test_trust_backfill_with_a_mistyped_path_creates_no_store(tmp_path, state_dir, capsys):
    """Item 8: `cns trust-backfill --path /typo` created an empty store there."""
    typo = tmp_path / "typo"
    assert main(["trust-backfill", "--path", str(typo)]) == 1
    assert not typo.exists() and f"no memory at {typo}" in capsys.readouterr().err


def test_calibrate_revert_without_a_state_folder_does_not_create_it(tmp_path, monkeypatch, capsys):
    """Item 8: `cns calibrate --revert` with a missing state folder created it."""
    missing = tmp_path / "state"
    monkeypatch.setenv("CNS_STATE_DIR", str(missing))
    assert main(["calibrate", "--revert"]) == 1
    assert not missing.exists() and "no calibration is active" in capsys.readouterr().err


@pytest.mark.parametrize("port", ["70000", "-5", "eighty"])
def test_a_port_out_of_range_is_an_argument_error(capsys, port):
    """Item 8: `cns run --port 70000` ended in a Streamlit traceback."""
    with pytest.raises(SystemExit) as exit_:
        main(["run", f"--port={port}"])
    assert exit_.value.code == 2
    assert re.search(r"argument --port: .* is not a port number \(1-65535, or 0 for a free one\)",
                     capsys.readouterr().err)


def test_port_0_starts_the_dashboard_on_a_free_port_and_prints_its_url(monkeypatch, state_dir, capsys):
    """Item 8: `cns run --port 0` printed the URL `:0`. The supervisor is replaced by a recorder: no process
    starts, and the port the dashboard is given is the one printed."""
    import cns_core.cli.supervisor as supervisor

    started: list = []

    class Recorder:
        def __init__(self, children, grace_s):
            started.extend(children)

        def run(self):
            return 0

    monkeypatch.setattr(supervisor, "Supervisor", Recorder)
    assert main(["run", "--port", "0", "--no-agents"]) == 0
    dashboard = next(c for c in started if c.name == "dashboard")       # beside the memory's server ("chroma")
    assert [c.name for c in started] == ["chroma", "dashboard"]
    port = int(dashboard.argv[dashboard.argv.index("--server.port") + 1])
    assert port > 0 and f"open http://127.0.0.1:{port}/" in capsys.readouterr().out


def test_replay_reads_a_byte_order_mark_as_annotate_does(tmp_path):
    """Item 8: `cns replay` refused a first line starting with a BOM that `cns annotate` accepts."""
    from cns_core.cli.agents import read_turns

    path = tmp_path / "turns.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"query": "Q?", "answer": "A", "query_id": "bom"}).encode()
                     + b"\n\xef\xbb\xbf{}\n")
    found = [(n, p and p["query_id"], problem[:9]) for n, p, problem in read_turns(path)]
    assert found == [(1, "bom", ""), (2, None, "not JSON ")]      # a byte-order mark stands only before line 1


def test_replayed_lines_sharing_a_query_id_with_other_answers_warn(tmp_path, state_dir, proxy, capsys):
    """Item 8: three lines sharing a query id with different answers said "sent 1 turn(s)" and nothing else."""
    path = tmp_path / "turns.jsonl"
    lines = [{"query": "Q?", "answer": answer, "query_id": "same"} for answer in ("A", "A", "B", "C")]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert main(["replay", str(path)]) == 0
    out, err = capsys.readouterr()
    assert "sent 4 turn(s) for 1 query id(s), 2 repeating a query id with another answer" in out
    assert [line for line in err.splitlines() if "warning" in line] == [
        f"{path}:{n}: warning: query_id 'same' was sent on line 1 with another answer; the memory keeps one "
        "answer per query id (the last stored)" for n in (3, 4)]


def test_a_file_name_with_control_characters_is_printed_escaped(tmp_path, capsys, no_models):
    """Item 7: what reaches the terminal from outside (here a file's name) has its control characters escaped."""
    bad = tmp_path / "evil\x1b[2J\x07.yaml"
    bad.write_text("id: [unclosed\n")
    assert main(["evaluate", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "evil\\x1b[2J\\x07.yaml: 1 problem(s)" in err and "\x1b" not in err and "\x07" not in err


def test_replay_under_a_loop_that_dies_exits_1_and_keeps_the_turns_for_a_second_send(tmp_path, state_dir, bus_config,
                                                                                    proxy, capsys, monkeypatch):
    """Issue 71 item 4: the agents killed while `cns replay` sent: "sent 20000 turn(s)", a warning, exit 0, and
    the turns the journal never recorded gone unnamed."""
    from cns_core.agents.bus import BusProxy, Publisher
    from cns_core.agents.journal import replay

    path = tmp_path / "turns.jsonl"
    path.write_text("".join(json.dumps({"query": f"Q{i}?", "answer": f"A{i}", "query_id": f"r{i}"}) + "\n"
                            for i in range(6)))
    publish = Publisher.publish

    def dying(self, subject, payload=None, **fields):
        envelope = publish(self, subject, payload, **fields)
        if (payload or {}).get("query_id") == "r2":
            proxy.stop()                                    # the loop dies after the third turn
        return envelope

    monkeypatch.setattr(Publisher, "publish", dying)
    assert main(["replay", str(path)]) == 1
    err = capsys.readouterr().err
    (kept,) = tmp_path.glob("turns.not-kept-*.jsonl")
    assert f"6 of 6 turn(s) are not kept; wrote them to {kept}: send them again with `cns replay {kept}`" in err
    assert [json.loads(line)["query_id"] for line in kept.read_text().splitlines()] == [f"r{i}" for i in range(6)]
    monkeypatch.setattr(Publisher, "publish", publish)
    with BusProxy(bus_config):                          # the loop is back: the kept turns are sent again
        assert main(["replay", str(kept)]) == 0
        journaled = {e.payload["query_id"] for _, e in replay(bus_config, after_seq=0)}
    assert journaled == {f"r{i}" for i in range(6)}


def test_replay_wait_exits_1_when_a_turn_has_no_score(tmp_path, state_dir, bus_config, proxy, judge_settings,
                                                      ollama, capsys):
    """Issue 71 item 4: `cns replay --wait` said "graded 0, no score 1" and exited 0."""
    from cns_core.agents.critic import CriticAgent

    path = tmp_path / "turns.jsonl"
    path.write_text(json.dumps({"query": "Q?", "answer": "A", "query_id": "unscored"}) + "\n")
    ollama.mode = "error"
    with CriticAgent(bus_config, settings=judge_settings):
        assert main(["replay", str(path), "--wait", "--timeout", "60"]) == 1
    assert "graded 0, no score 1, no critique 0" in capsys.readouterr().out
