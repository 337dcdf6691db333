"""One memory, one writer (issue 50): ``cns run`` serves the memory through a Chroma server, every process
reaches it there, and an embedded folder belongs to one process.

The module shares one ``cns run --no-agents --no-dashboard`` (the memory's server alone, started and
supervised as ``make run`` starts it) on a private state folder; the test that kills the server leaves it
restarted, so the others hold in any order.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest
from judge_loop_helpers import lean_torch, wait_for  # noqa: F401  (lean_torch: a fixture)
from local_servers import stop_process
from test_browser import browser, page  # noqa: F401  (fixtures of the Chromium test)

from cns_core.memory.access import served_record, server_answers, store_lock
from cns_core.memory.process_lock import LockHeld

ROOT = Path(__file__).resolve().parent.parent
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False",
           "PYTHONUNBUFFERED": "1"}


@dataclass
class Served:
    state: Path
    env: dict[str, str]
    proc: subprocess.Popen
    log: Path

    @property
    def folder(self) -> Path:
        return self.state / "chroma"

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    state = tmp_path_factory.mktemp("served-state")
    env = {**os.environ, **OFFLINE, "CNS_STATE_DIR": str(state)}
    log = state / "run.log"
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "cns_core.cli", "run", "--no-agents", "--no-dashboard"],
                                cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    here = Served(state, env, proc, log)

    def serving():
        assert proc.poll() is None, here.output()
        record = served_record(here.folder)
        return record if record is not None and server_answers(record.host, record.port) else None

    try:
        wait_for(serving, 60, interval=0.1, what="cns run's memory server")
        yield here
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                stop_process(proc)


@pytest.fixture
def served_env(served, monkeypatch):
    monkeypatch.setenv("CNS_STATE_DIR", str(served.state))
    return served


def _cns(env: dict[str, str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cns_core.cli", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_cns_run_lists_the_memory_server_and_a_second_run_uses_it(served):
    text = served.output()
    pid = int(re.findall(r"\[chroma\] started \(pid (\d+)\)", text)[-1])     # the latest (a test kills one)
    record = served_record(served.folder)
    assert record.server_pid == pid and psutil.Process(pid).is_running()
    assert f"memory: serving {served.folder}" in text and record.url in text
    again = _cns(served.env, "run", "--no-agents", "--no-dashboard", timeout=60)
    assert again.returncode == 0, again.stderr
    assert f"memory: already served for this state folder by the Chroma server at {record.url}" in again.stdout
    assert "nothing to start" in again.stdout


def test_a_served_folder_is_reached_through_the_server_and_held_by_it(served_env):
    from cns_core.memory import MemoryService

    memory = MemoryService()
    record = served_record(served_env.folder)
    assert memory.served == record and memory.path == served_env.folder
    with pytest.raises(LockHeld) as refused:          # nobody opens the served folder embedded
        store_lock(served_env.folder).acquire(patience_s=0.2)
    assert refused.value.holder.pid == record.server_pid
    assert f"port {record.port}" in str(refused.value)


def test_a_turn_written_by_the_agents_process_is_found_by_the_dashboards_search_by_meaning(served_env, other_process):
    """The fault of issue 50: after a turn written by another process, a search by meaning failed ("Error
    finding id") until the dashboard restarted."""
    from streamlit.testing.v1 import AppTest

    from cns_core.memory import MemoryService

    MemoryService().write_episodic_many([{"query": f"How many legs has a {animal}?", "answer": f"A {animal} has {n}.",
                                          "session_id": "s", "query_id": f"legs-{animal}"}
                                         for animal, n in (("spider", 8), ("cat", 4), ("bird", 2))])
    at = AppTest.from_file("../pages/engrams.py", default_timeout=60)
    at.run()
    at.text_input(key="cns_engrams_similar").set_value("capital city of a country").run()
    assert not at.exception and not at.error
    assert not any("id canberra-1" in m.value for m in at.markdown)
    other_process.tell(do="write", turns=[{"query": "What is the capital of Australia?", "session_id": "judge",
                                           "answer": "The capital of Australia is Canberra.", "query_id": "canberra-1"}])
    assert other_process.answer() == {"written": 1}

    def found():
        at.run()
        assert not at.error, [e.value for e in at.error]
        return any("id canberra-1" in m.value for m in at.markdown)

    wait_for(found, 60, interval=0.2, what="the other process's turn in the Engrams page's search by meaning")



@pytest.mark.browser
def test_in_chromium_a_turn_from_another_process_is_found_by_the_engrams_search(served_env, other_process, page):
    """Issue 50's steps as a person takes them: Engrams served from the memory's server, a search by meaning,
    a turn written by another process (the judge loop's), the same page searching again finds it."""
    from local_servers import serve_dashboard
    from test_browser import FIRST_RENDER_MS, WARM_UP_MS, open_page, settle, shoot

    from cns_core.memory import MemoryService

    MemoryService().write_episodic_many([{"query": f"Which {thing} is the largest?", "answer": f"The {name}.",
                                          "session_id": "s", "query_id": f"largest-{thing}"}
                                         for thing, name in (("ocean", "Pacific"), ("planet", "Jupiter"))])
    with serve_dashboard(served_env.state, env=served_env.env) as base:
        open_page(page, base, "engrams", "Engrams")
        search = page.locator(".st-key-cns_engrams_similar input")
        search.wait_for(timeout=WARM_UP_MS)

        def search_for(text: str) -> None:
            search.fill(text)
            search.press("Enter")
            settle(page)

        search_for("capital city of a country")
        assert page.get_by_text("id canberra-2").count() == 0
        other_process.tell(do="write", turns=[{"query": "What is the capital of Australia?", "session_id": "judge",
                                               "answer": "The capital of Australia is Canberra.",
                                               "query_id": "canberra-2"}])
        assert other_process.answer() == {"written": 1}
        asked = iter(["the capital of Australia", "capital city of a country"] * 100)

        def found() -> bool:
            search_for(next(asked))
            assert page.get_by_text("Error finding id").count() == 0
            return page.get_by_text("id canberra-2").count() > 0

        wait_for(found, 60, interval=0.5, what="the other process's turn in Chromium's search by meaning")
        assert page.locator('[data-testid="stException"]').count() == 0
        page.get_by_text("id canberra-2").first.wait_for(timeout=FIRST_RENDER_MS)
        shoot(page, "memory50-engrams-search-after-a-turn")


def write_and_read(me: str, other: str, n: int, go: Path) -> dict:
    """One process's share of the two-process test: write ``n`` turns, read each back at once by id and by
    meaning, grade it, and put a Trust Score on the other process's turns as they appear (while that process
    grades them).

    By id a turn is there at once. By meaning the server's vector index may answer a moment behind a write
    while another client writes too (Chroma's query is not read-after-write across clients: about one turn in
    a hundred under load, `make test-stress`), so a turn not yet found is waited for: found late, never lost."""
    from cns_core.memory import MemoryService

    memory = MemoryService()
    assert memory.served is not None, "the memory is not reached through cns run's server"
    print("ready", flush=True)
    wait_for(go.exists, 120, interval=0.01, what="the go file (both processes start at once)")
    misses, trusted = [], set()
    for i in range(n):
        qid = f"{me}-{i:03d}"
        question, answer = f"Worker {me} asks question number {i}: what is {i} plus {i}?", f"{i} plus {i} is {2 * i}."
        memory.write_episodic(question, answer, me, query_id=qid)
        if [e.id for e in memory.get([qid])] != [qid]:
            misses.append(qid)
        # by meaning (the stored text itself: its vector is the embedder's cached one)
        def found(qid=qid, text=f"{question}\n\n{answer}") -> bool:
            return qid in [e.id for e in memory.search_episodic(text, k=3)]
        wait_for(found, 120, what=f"{qid} found by meaning")
        memory.update_engram_score(qid, 1 + i % 5, f"feedback {qid}")
        theirs = [e.id for e in memory.get([f"{other}-{j:03d}" for j in range(n)]) if e.id not in trusted]
        if theirs:
            memory.record_trust({t: {"trust_score": 0.25, "trust_profile": "p", "trust_settings": me} for t in theirs})
            trusted.update(theirs)
        memory.count()
    return {"misses": misses, "trusted": sorted(trusted)}


OTHER_PROCESS = """
import json, sys, torch
torch.set_num_threads(1)
sys.path.insert(0, 'tests')
from pathlib import Path
from cns_core.memory import MemoryService
from cns_core.models import get_embedder
from test_memory_served import write_and_read
get_embedder().encode(['warm up'])
print('loaded', flush=True)
for line in sys.stdin:
    order = json.loads(line)
    if order['do'] == 'write':
        MemoryService().write_episodic_many(order['turns'])
        print(json.dumps({'written': len(order['turns'])}), flush=True)
    else:
        args = order['args']
        print(json.dumps(write_and_read(args['me'], args['other'], args['n'], Path(args['go']))), flush=True)
"""


class OtherProcess:
    """A second process on the served memory (as the agents' process is beside the dashboard's): it loads the
    embedder once for the module and does what it is told, one JSON line at a time."""

    def __init__(self, env: dict[str, str]):
        self.proc = subprocess.Popen([sys.executable, "-c", OTHER_PROCESS], cwd=ROOT, env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.expect("loaded")

    def expect(self, word: str) -> None:
        line = self.proc.stdout.readline().strip()
        assert line == word, f"the other process said {line!r}: {self.proc.stderr.read() if not line else ''}"

    def tell(self, **order) -> None:
        self.proc.stdin.write(json.dumps(order) + "\n")
        self.proc.stdin.flush()

    def answer(self) -> dict:
        line = self.proc.stdout.readline()
        assert line, f"the other process ended: {self.proc.stderr.read()}"
        return json.loads(line)


@pytest.fixture(scope="module")
def other_process(served):
    other = OtherProcess(served.env)
    try:
        yield other
    finally:
        other.proc.stdin.close()
        stop_process(other.proc)


def test_two_processes_writing_and_reading_at_once_lose_nothing_and_duplicate_nothing(served_env, other_process,
                                                                                     tmp_path, lean_torch):
    """This process and another write, read and grade the served memory at the same time."""
    from cns_core.memory import EngramFilters, MemoryService
    from cns_core.models import get_embedder

    n = 25
    go = tmp_path / "go"
    get_embedder().encode(["warm up"])
    other_process.tell(do="write_and_read", args={"me": "b", "other": "a", "n": n, "go": str(go)})
    other_process.expect("ready")
    go.touch()                                   # both write from here on, at once
    reports = {"a": write_and_read("a", "b", n, go), "b": other_process.answer()}
    assert reports["a"]["misses"] == [] and reports["b"]["misses"] == []
    memory = MemoryService()
    expected = {f"{me}-{i:03d}": i for me in "ab" for i in range(n)}
    stored = memory.get(list(expected))
    assert len(stored) == len({e.id for e in stored}) == 2 * n
    assert sum(memory.count(EngramFilters(session_id=me)) for me in "ab") == 2 * n      # nothing stored twice
    for engram in stored:
        i = expected[engram.id]
        assert engram.answer == f"{i} plus {i} is {2 * i}." and engram.critic_score == 1 + i % 5
        assert engram.feedback == f"feedback {engram.id}"
    other_of = {"a": "b", "b": "a"}
    for me, report in reports.items():
        assert report["trusted"], f"worker {me} never saw the other's turns: the writes did not overlap"
        for engram in memory.get(report["trusted"]):
            assert engram.metadata["trust_settings"] == me and engram.session_id == other_of[me]
            assert engram.critic_score is not None          # the grade written meanwhile is still there


def test_a_killed_server_is_restarted_by_cns_run_and_nothing_stored_is_lost(served_env):
    from cns_core.memory import MemoryService

    memory = MemoryService()
    before = memory.count()
    memory.write_episodic_many([{"query": f"Kill test question {i}?", "answer": f"Answer {i}.", "session_id": "k",
                                 "query_id": f"kill-{i}"} for i in range(5)])
    memory.update_engram_score("kill-3", 4, "kept")
    killed = served_record(served_env.folder).server_pid
    os.kill(killed, signal.SIGKILL)

    def restarted():
        record = served_record(served_env.folder)
        return record is not None and record.server_pid != killed and server_answers(record.host, record.port)

    wait_for(restarted, 60, interval=0.1, what="cns run to restart the killed memory server")
    assert "[chroma] ended by SIGKILL; restarting" in served_env.output()
    assert memory.count() == before + 5                 # the client opened before the kill goes on working
    kept = {e.id: e for e in memory.get([f"kill-{i}" for i in range(5)])}
    assert set(kept) == {f"kill-{i}" for i in range(5)} and kept["kill-3"].critic_score == 4
    assert [e.id for e in memory.search_episodic("Kill test question 2?", k=1)] == ["kill-2"]
    fresh = MemoryService()                             # and a new process's view is the same
    assert fresh.count() == before + 5 and fresh.served.server_pid != killed


_LIST = "/api/v2/tenants/default_tenant/databases/default_database/collections"

# What another local user runs: the standard library only, against the port it can reach on loopback.
_STRANGER = r'''
import json, sys, urllib.error, urllib.request
url, token_file = sys.argv[1], sys.argv[2]
said = {}
for what, method, body, headers in [
        ("list", "GET", None, {}),
        ("create", "POST", b'{"name": "strangers-collection"}', {"Content-Type": "application/json"}),
        ("list with a guessed token", "GET", None, {"Authorization": "Bearer " + "A" * 43})]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=body, method=method, headers=headers),
                                    timeout=30) as reply:
            said[what] = reply.status
    except urllib.error.HTTPError as exc:
        said[what] = exc.code
try:
    open(token_file).read()
    said["token file"] = "read"
except OSError as exc:
    said["token file"] = type(exc).__name__
print(json.dumps(said))
'''


def test_the_memory_server_asks_for_the_token_only_its_owner_can_read(served_env):
    """Issue 71 item 7: the server answered every local user; now a client without the folder's token is refused
    with a clear error, and this user's processes, which read the token, work as before."""
    import stat

    import chromadb
    from chromadb.errors import ChromaAuthError

    from cns_core.memory import MemoryService, MemoryStoreError
    from cns_core.memory.access import open_store
    from cns_core.memory.server_token import TOKEN_NAME

    token = served_env.folder / TOKEN_NAME
    assert stat.S_IMODE(token.stat().st_mode) == 0o600 and stat.S_IMODE(served_env.folder.stat().st_mode) == 0o700
    record = served_record(served_env.folder)
    assert str(token) in served_env.output()            # cns run says where the token is, never the token
    assert token.read_text().strip() not in served_env.output()
    assert server_answers(record.host, record.port)     # the heartbeat stays open: it tells nothing
    with pytest.raises(ChromaAuthError):                # Chroma's own client, without the token
        chromadb.HttpClient(host=record.host, port=record.port,
                            settings=chromadb.config.Settings(anonymized_telemetry=False)).list_collections()
    with pytest.raises(MemoryStoreError, match=r"refused a read \(HTTP 403\): it requires a token, and none was "
                                               r"sent.*only the folder's owner can read"):
        open_store(url=record.url, wait_s=1.0)
    memory = MemoryService()                            # through the record: with the token
    memory.write_episodic("Which metal is liquid at room temperature?", "Mercury.", "tok", query_id="token-1")
    assert [e.id for e in memory.get(["token-1"])] == ["token-1"]


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("runuser") or not Path("/usr/bin/python3").exists(),
                    reason="switching to another local user needs root, runuser and /usr/bin/python3")
def test_another_local_user_is_refused_by_the_memory_server(served):
    """Issue 71 item 7, as the tester did it: user `nobody` listed, read, created and deleted collections."""
    from cns_core.memory.server_token import TOKEN_NAME

    record = served_record(served.folder)
    ran = subprocess.run(["runuser", "-u", "nobody", "--", "/usr/bin/python3", "-I", "-c", _STRANGER,
                          f"{record.url}{_LIST}", str(served.folder / TOKEN_NAME)],
                         capture_output=True, text=True, timeout=120, cwd="/")
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == {"list": 403, "create": 403, "list with a guessed token": 403,
                                      "token file": "PermissionError"}
    names = subprocess.run([sys.executable, "-c", "from cns_core.memory.access import open_store; "
                            "print(sorted(c.name for c in open_store().client.list_collections()))"],
                           env=served.env, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert names.returncode == 0, names.stderr       # this user's process lists them, with the token
    assert names.stdout.startswith("[") and "strangers-collection" not in names.stdout


def test_an_embedded_folder_belongs_to_one_process(tmp_path, monkeypatch, capsys):
    from cns_core.cli.run import memory_server_plan
    from cns_core.memory import MemoryService, StoreBusyError

    folder = tmp_path / "chroma"
    memory = MemoryService(path=folder)
    memory.write_episodic("Who wrote Hamlet?", "Shakespeare.", "s", query_id="a00")
    env = {**os.environ, **OFFLINE, "CNS_STATE_DIR": str(tmp_path)}
    refused = _cns(env, "annotate", "a00", "--verdict", "correct", "--path", str(folder))
    assert refused.returncode == 1
    assert f"is open in pid {os.getpid()}" in refused.stderr and "cns run" in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr
    monkeypatch.setenv("CNS_STATE_DIR", str(tmp_path))
    with pytest.raises(StoreBusyError, match=f"open in pid {os.getpid()}"):   # cns run refuses to serve it
        memory_server_plan(dict(os.environ))
    memory.close()                                      # let go: the other process may open it now
    done = _cns(env, "annotate", "a00", "--verdict", "correct", "--path", str(folder))
    assert done.returncode == 0, done.stderr
    assert MemoryService(path=folder).get(["a00"])[0].human_verdict == "correct"


# A holder whose command line spans lines, as `python -c` with a script does.
_HOLD_THE_FOLDER = """import sys
from cns_core.memory.access import store_lock
store_lock(sys.argv[1]).acquire()
print("held", flush=True)
sys.stdin.read()
"""


def test_the_holder_of_a_busy_folder_is_named_on_one_printable_line(tmp_path, monkeypatch):
    """Issue 71, item 8: the "open in pid ..." error printed the holder's command line with its raw line feeds."""
    from cns_core.cli.run import memory_server_plan
    from cns_core.memory import MemoryService, StoreBusyError

    folder = tmp_path / "chroma"
    holder = subprocess.Popen([sys.executable, "-c", _HOLD_THE_FOLDER + "# \x1b[2J", str(folder)], cwd=ROOT,
                              env={**os.environ, **OFFLINE}, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        monkeypatch.setenv("CNS_STATE_DIR", str(tmp_path))
        with pytest.raises(StoreBusyError) as opened:
            MemoryService(path=folder).count()
        with pytest.raises(StoreBusyError) as served:
            memory_server_plan(dict(os.environ))
        for refused in (opened, served):
            message = str(refused.value)
            assert f"is open in pid {holder.pid} (" in message and "-c import sys\\x0afrom cns_core" in message
            assert not re.search("[\x00-\x1f\x7f-\x9f]", message), message
    finally:
        holder.stdin.close()
        holder.wait()
