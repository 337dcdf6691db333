"""``cns run``: everything a demo needs, as one command (``make run`` calls it).

Starts the memory's Chroma server (:mod:`cns_core.cli.memory_server`, on a free loopback
port; restarted if it dies), the judge loop (``cns agents``: bus proxy, CriticAgent,
MemoryAgent and GeneratorAgent; restarted if it dies) and the dashboard (``streamlit run``)
as supervised children; Ctrl-C stops them all and leaves no process or port behind.
The judge loop, the dashboard and any ``cns`` command run meanwhile reach the memory through
that server (:mod:`cns_core.memory.access`); a folder another process holds embedded is
refused, naming that process.
A judge loop is used as it is only when it serves the same state folder (its record,
``<state dir>/judge_loop.json``, names a live process and its ports answer: see
:mod:`cns_core.agents.loop_record`); when the bus ports are held by anything else (a
loop of another state folder, say), ours starts on free ports and the dashboard is
told them. A dashboard already serving the port is used as it is.

With ``--demo-data`` (``make run`` passes it) one more child, a one-shot, writes the demo data (the demo
memory, then the examples' corpus run: :mod:`cns_core.cli.demo_data`) in the background once the dashboard
answers; it reaches the memory through the server like the others, and a second run with the data there
writes nothing. The dashboard serves first; the pages that show the memory or the corpus say how far the demo
data has got.

The dashboard listens on 127.0.0.1 unless ``--address`` says otherwise; any other
address shares it with whoever reaches the machine, so it needs an access token
(``CNS_DASHBOARD_TOKEN``, or the token file that ``--new-token`` writes) and is
refused without one.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cns_core.agents.wire import BusConfig

__all__ = ["register", "run_demo", "port_number", "free_port", "free_bus_ports", "port_in_use", "dashboard_url", "dashboard_token_for", "judge_loop_plan",
           "memory_server_plan", "bus_env", "STREAMLIT_OPTIONS", "turn_count", "demo_data_plan", "DEMO_TURNS"]


# How cns run starts the dashboard: no browser, no usage statistics, and no file watching (a watcher on the
# project folder floods the log with "Inotify queue overflowed" and burns CPU while the judge loop writes
# the state folder; nobody edits the code of a running demo: restart it instead).
STREAMLIT_OPTIONS = ("--server.headless", "true", "--browser.gatherUsageStats", "false",
                     "--server.fileWatcherType", "none", "--server.runOnSave", "false")
DEMO_TURNS = 300      # make run's demo memory


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("run", help="the dashboard and the judge loop together until Ctrl-C")
    p.add_argument("--port", type=port_number, default=os.environ.get("CNS_DASHBOARD_PORT", "8501"),
                   help="dashboard port (default 8501, or CNS_DASHBOARD_PORT; 0 picks a free one); bus ports: "
                        "config/bus.yaml")
    p.add_argument("--address", default=os.environ.get("CNS_DASHBOARD_ADDRESS") or "127.0.0.1",
                   help="dashboard address to listen on (default 127.0.0.1: this machine only; or "
                        "CNS_DASHBOARD_ADDRESS); any other address needs an access token")
    p.add_argument("--new-token", action="store_true",
                   help="write a new random access token to <state dir>/dashboard_token and print the link")
    p.add_argument("--no-agents", action="store_true", help="the dashboard only")
    p.add_argument("--no-dashboard", action="store_true",
                   help="the judge loop only (with --no-agents: the memory's Chroma server only)")
    p.add_argument("--demo-data", nargs="?", type=turn_count, const=DEMO_TURNS, default=None, metavar="TURNS",
                   help=f"also write the demo data (make run does): {DEMO_TURNS} demo turns (or TURNS) into the memory, "
                        "then the bundled examples as a corpus run, in the background once the dashboard answers; "
                        "idempotent (what is there is not written again). The pages show how far it has got")
    p.add_argument("--grace", type=float, default=10.0, help="seconds a child gets to stop before it is killed")
    p.set_defaults(func=run_demo)


def port_number(text: str) -> int:
    """``--port``: a TCP port, 1-65535, or 0 for a free one (argparse says the error, not Streamlit's traceback)."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (1-65535, or 0 for a free one)") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port number (1-65535, or 0 for a free one)")
    return port


def turn_count(text: str) -> int:
    """``--demo-data TURNS``: a whole number of demo turns, at least 1."""
    try:
        turns = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of demo turns (a whole number, at least 1)") from None
    if turns < 1:
        raise argparse.ArgumentTypeError(f"{turns} demo turns: give at least 1")
    return turns


def free_port(address: str) -> int:
    """A port nothing listens on at ``address`` right now (``--port 0``), so the URL printed is the real one; drawn
    where the OS hands out no port by itself, so nothing takes it before the child binds it."""
    from cns_core.cli.ports import spare_port

    return spare_port(address)


def port_in_use(port: int, host: str = "127.0.0.1", timeout: float = 0.3) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def dashboard_url(address: str, port: int, token: str | None) -> tuple[str, str]:
    """(where it listens, in words; the URL to open), the token in the URL's query when there is one."""
    from cns_core.access import is_loopback

    host = address.strip("[]")
    if host in ("", "0.0.0.0", "::"):
        where = f"every {'IPv6 and IPv4' if host == '::' else 'IPv4'} interface ({host or '*'}:{port})"
        host = socket.gethostname()
    elif is_loopback(host):
        where = f"{address}:{port}, this machine only"
    else:
        where = f"{address}:{port}"
    shown = f"[{host}]" if ":" in host else host
    return where, f"http://{shown}:{port}/" + (f"?token={token}" if token else "")


def dashboard_token_for(address: str, new: bool) -> str | None:
    """The token the dashboard will ask for; raises AccessError for a shared address without one."""
    from cns_core.access import TOKEN_ENV, AccessError, dashboard_token, is_loopback, new_token, token_file

    token = new_token() if new else dashboard_token()
    if token is None and not is_loopback(address):
        raise AccessError(f"--address {address} shares the dashboard with whoever reaches this machine, and no "
                          f"access token is set. Run `cns run --address {address} --new-token` (it writes "
                          f"{token_file()} and prints the link to open), or set {TOKEN_ENV}. The default, "
                          "127.0.0.1, needs no token.")
    return token


def bus_env(bus: "BusConfig") -> dict[str, str]:
    """The ``CNS_BUS_*`` variables that point a child at ``bus``'s host and ports."""
    return {"CNS_BUS_HOST": bus.host, "CNS_BUS_PUB_PORT": str(bus.pub_port), "CNS_BUS_SUB_PORT": str(bus.sub_port),
            "CNS_BUS_JOURNAL_PORT": str(bus.journal_port)}


def free_bus_ports(base: "BusConfig") -> "BusConfig":
    """``base`` on three ports that nothing listens on right now, drawn where the OS hands out none by itself
    (:mod:`cns_core.cli.ports`), so a Ray worker or a client starting meanwhile cannot take them first."""
    from cns_core.cli.ports import spare_ports

    pub, sub, journal = spare_ports(base.host, 3)
    return base.model_copy(update={"pub_port": pub, "sub_port": sub, "journal_port": journal})


def judge_loop_plan(bus: "BusConfig") -> tuple["BusConfig", list[str] | None]:
    """(the bus to use, the command that starts our judge loop or None to use the running one); says which."""
    from cns_core.agents.loop_record import find_loop

    found = find_loop(bus)
    if found.ours:
        assert found.record is not None
        print(f"judge loop: already running for this state folder (pid {found.record.pid}, bus "
              f"{found.bus.pub_address}); using it")
        return found.bus, None
    if found.state == "stranger" or any(port_in_use(p, bus.host) for p in (bus.pub_port, bus.sub_port,
                                                                           bus.journal_port)):
        why = found.describe() if found.state == "stranger" else f"bus port {bus.journal_port} is in use"
        bus = free_bus_ports(bus)
        print(f"judge loop: {why}; starting ours on free ports {bus.pub_port}/{bus.sub_port}/{bus.journal_port} "
              "(the dashboard uses them too)")
    return bus, [sys.executable, "-m", "cns_core.cli", "agents", "--exit-with-parent"]


def memory_server_plan(env: dict[str, str]) -> "tuple[ChildSpec | None, Path | None]":
    """(the Chroma server child that serves this state folder's memory, the folder it serves), or (None, None)
    when there is nothing to serve: a server named in the configuration, or a live ``cns run`` serving the folder
    already. StoreBusyError when another process holds the folder embedded. Says which."""
    from cns_core.cli.supervisor import ChildSpec
    from cns_core.memory import memory_settings
    from cns_core.memory.access import (StoreBusyError, server_read_problem, served_record, store_folder, store_lock,
                                        write_server_record)
    from cns_core.memory.server_token import TokenError, read_token

    cfg = memory_settings()
    if cfg.get("url"):
        print(f"memory: the Chroma server at {cfg['url']} (memory.url or CNS_CHROMA_URL); nothing to serve")
        return None, None
    folder = store_folder(cfg.get("path"))
    record = served_record(folder)
    if record is not None:
        print(f"memory: already served for this state folder by {record.describe()}; using it")
        return None, None
    holder = store_lock(folder).holder()
    if holder is not None:
        raise StoreBusyError(f"the memory at {folder} is open in {holder.describe()}, which `cns run` cannot share: "
                             "stop that process, then run `cns run` again (it serves the memory to the judge loop, "
                             "the dashboard and every `cns` command through one Chroma server)")
    host = "127.0.0.1"
    port = free_port(host)
    argv = [sys.executable, "-m", "cns_core.cli.memory_server", "--path", str(folder), "--host", host,
            "--port", str(port)]
    print(f"memory: serving {folder} through a Chroma server on http://{host}:{port} ([chroma] below); the judge "
          "loop, the dashboard and any `cns` command reach the memory there with the token only this user can read")

    def health() -> str | None:
        """A real read with a deadline, carrying the folder's token (the server makes it as it first starts)."""
        try:
            return server_read_problem(host, port, timeout=10.0, token=read_token(folder))
        except TokenError as exc:
            return str(exc)

    return ChildSpec("chroma", argv, env=env, restart=True, max_restarts=5, restart_pause_s=1.0,
                     stop_last=True, on_start=lambda pid: write_server_record(folder, host, port, pid),
                     health=health, health_every_s=15.0, health_misses=2), folder


def demo_data_plan(turns: int, env: dict[str, str], address: str, port: int | None) -> "ChildSpec":
    """The one-shot child that writes the demo data (:mod:`cns_core.cli.demo_data`) once our dashboard on
    ``address:port`` answers (``port`` None: no dashboard of ours, it starts at once). Started after the memory's
    server, so it opens the memory through that server, never embedded."""
    from cns_core.cli.demo_progress import DemoProgress, write_progress
    from cns_core.cli.supervisor import ChildSpec

    argv = [sys.executable, "-m", "cns_core.cli.demo_data", "--turns", str(turns)]
    if port is not None:
        host = address.strip("[]")
        host = "127.0.0.1" if host in ("", "0.0.0.0", "::") else host      # a wildcard answers on loopback too
        argv += ["--after", f"http://{f'[{host}]' if ':' in host else host}:{port}/_stcore/health"]
    print(f"demo data: {turns} demo turns and the examples' corpus run are written in the background ([demo] below) "
          "once the dashboard answers; what is there already is kept. The Engrams, Judge, Coherence and Corpus "
          "pages show how far it has got")

    def first_record(pid: int) -> None:
        """Written as the child starts, before the dashboard can answer: no page meanwhile finds no record, or the
        last run's "done"."""
        write_progress(DemoProgress.begin(turns, "waiting" if port is not None else "checking", pid=pid))

    return ChildSpec("demo", argv, env=env, one_shot=True, on_start=first_record)


def _replaced_orphan(port: int) -> bool:
    """True when ``port`` was held by this state folder's dashboard whose ``cns run`` is gone, and it is
    stopped now (so ours can start there); False when anything else holds the port."""
    from cns_core.cli.dashboard_record import orphaned_dashboard, stop_dashboard

    orphan = orphaned_dashboard(port)
    if orphan is None:
        return False
    print(f"dashboard: pid {orphan.pid} on port {port} was started by a `cns run` (pid {orphan.supervisor}) that is "
          "gone; stopping it and starting a new one")
    if not stop_dashboard(orphan):
        print(f"dashboard: pid {orphan.pid} could not be stopped")
        return False
    deadline = time.monotonic() + 5.0
    while port_in_use(port) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not port_in_use(port)


def run_demo(args: argparse.Namespace) -> int:
    from cns_core.access import AccessError
    from cns_core.agents.bus import bus_settings
    from cns_core.config import project_path
    from cns_core.cli.quiet import quiet_model_loading
    from cns_core.cli.dashboard_record import write_dashboard_record
    from cns_core.cli.supervisor import ChildSpec, Supervisor

    token = None
    if not args.no_dashboard:
        try:
            token = dashboard_token_for(args.address, args.new_token)
        except (AccessError, OSError) as exc:
            print(f"cns run: {exc}", file=sys.stderr)
            return 2
    from cns_core.memory.access import MemoryStoreError, clear_server_record

    quiet_model_loading()   # the children inherit the switches
    from cns_core.config import make_private, state_dir

    for problem in make_private(state_dir()):    # the state folder is the owner's alone (and so are new files)
        print(f"cns run: warning: cannot make private: {problem}", file=sys.stderr)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    try:
        memory_server, served_folder = memory_server_plan(env)
    except MemoryStoreError as exc:
        print(f"cns run: {exc}", file=sys.stderr)
        return 2
    bus = bus_settings()
    children: list[ChildSpec] = []
    dashboard_port: int | None = None
    if not args.no_agents:
        bus, agents = judge_loop_plan(bus)
        env = {**env, **bus_env(bus)}           # the agents and the dashboard use the same ports
        if agents is not None:
            children.append(ChildSpec("agents", agents, env=env, restart=True))
    if not args.no_dashboard:
        if args.port == 0:
            args.port = free_port(args.address)
        if port_in_use(args.port) and not _replaced_orphan(args.port):
            print(f"dashboard: port {args.port} is already in use (another `make run`?); open "
                  f"http://localhost:{args.port}, or choose another port: PORT={args.port + 1} make run")
        else:
            app = project_path("dashboard.py")
            argv = [sys.executable, "-m", "cns_core.views.serve", str(app), "--server.port", str(args.port),
                    "--server.address", args.address, *STREAMLIT_OPTIONS]
            port = args.port
            children.append(ChildSpec("dashboard", argv, env=env, cwd=str(app.parent), death_signal=signal.SIGKILL,
                                      on_start=lambda pid: write_dashboard_record(pid, port)))
            dashboard_port = port
            where, url = dashboard_url(args.address, args.port, token)
            print(f"dashboard: listening on {where}; open {url}")
            if token:
                print("dashboard: visitors give the access token once per browser session (the link above "
                      "carries it); keep it private, and put a TLS reverse proxy in front beyond a trusted network")
    if args.demo_data and (children or memory_server is not None):   # else the running `cns run` writes it
        children.append(demo_data_plan(args.demo_data, env, args.address, dashboard_port))
    if memory_server is not None:      # first: its record is written before the others open the memory
        children.insert(0, memory_server)
    if not children:
        print("nothing to start: everything asked for is already running")
        return 0
    print("press Ctrl-C to stop everything")
    try:
        return Supervisor(children, grace_s=args.grace).run()
    finally:
        if served_folder is not None:
            clear_server_record(served_folder)
