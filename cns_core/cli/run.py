"""``cns run``: everything a demo needs, as one command (``make run`` calls it).

Starts the judge loop (``cns agents``: bus proxy, CriticAgent, MemoryAgent and
GeneratorAgent; restarted if it dies) and the dashboard (``streamlit run``) as
supervised children; Ctrl-C stops both and leaves no process or port behind.
A judge loop that already answers on the bus ports (another ``cns run`` or
``cns agents``) is used as it is, and so is a dashboard already serving the port.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
from pathlib import Path

__all__ = ["register", "run_demo", "port_in_use"]


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("run", help="the dashboard and the judge loop together until Ctrl-C")
    p.add_argument("--port", type=int, default=int(os.environ.get("CNS_DASHBOARD_PORT", 8501)),
                   help="dashboard port (default 8501, or CNS_DASHBOARD_PORT); bus ports: config/bus.yaml")
    p.add_argument("--address", default=None, help="dashboard address to bind (default: streamlit's)")
    p.add_argument("--no-agents", action="store_true", help="the dashboard only")
    p.add_argument("--no-dashboard", action="store_true", help="the judge loop only")
    p.add_argument("--grace", type=float, default=10.0, help="seconds a child gets to stop before it is killed")
    p.set_defaults(func=run_demo)


def port_in_use(port: int, host: str = "127.0.0.1", timeout: float = 0.3) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def run_demo(args: argparse.Namespace) -> int:
    from cns_core.agents.bus import bus_settings, proxy_reachable
    from cns_core.config import PROJECT_ROOT
    from cns_core.cli.quiet import quiet_model_loading
    from cns_core.cli.supervisor import ChildSpec, Supervisor

    quiet_model_loading()   # the children inherit the switches
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    bus = bus_settings()
    children: list[ChildSpec] = []
    if not args.no_agents:
        if proxy_reachable(bus):
            print(f"judge loop: already running (bus proxy answers on {bus.pub_address}); using it")
        else:
            children.append(ChildSpec("agents", [sys.executable, "-m", "cns_core.cli", "agents"], env=env,
                                      restart=True))
    if not args.no_dashboard:
        if port_in_use(args.port):
            print(f"dashboard: port {args.port} is already in use (another `make run`?); open "
                  f"http://localhost:{args.port}, or choose another port: PORT={args.port + 1} make run")
        else:
            app = Path(PROJECT_ROOT) / "dashboard.py"
            argv = [sys.executable, "-m", "streamlit", "run", str(app), "--server.port", str(args.port),
                    "--server.headless", "true", "--browser.gatherUsageStats", "false"]
            if args.address:
                argv += ["--server.address", args.address]
            children.append(ChildSpec("dashboard", argv, env=env, cwd=str(PROJECT_ROOT)))
            print(f"dashboard: http://localhost:{args.port}")
    if not children:
        print("nothing to start: everything asked for is already running")
        return 0
    print("press Ctrl-C to stop everything")
    return Supervisor(children, grace_s=args.grace).run()
