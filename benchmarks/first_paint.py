"""A fresh direct link per page: how long until the page shows its title, and until its run is over.

    .venv/bin/python benchmarks/first_paint.py [--pages overview weights corpus ...] [--state DIR]

Each page gets a server nobody has visited (``streamlit run`` on 127.0.0.1) and Debian's chromium
opens its address directly, as a bookmark would: the legacy page run, the hand-over to the router,
the sidebar, the models' first load and the page itself all count. Printed per page: seconds until
the HTML answered, until the title showed, until the progress line or a spinner showed (if one
did), and until the script run was over. ``--state`` reuses a state folder (a demo memory, say) for
every server. Figures depend on the machine's load: the table names its load average.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from local_servers import serve_dashboard  # noqa: E402

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
PROBE = """() => ({
  title: document.querySelectorAll('h1').length > 0,
  progress: document.body.innerText.includes('Running the five critics')
            || document.querySelectorAll('[data-testid="stSpinner"]').length > 0,
  done: (document.querySelector('[data-testid="stApp"]') || {getAttribute: () => ''})
            .getAttribute('data-test-script-state') === 'notRunning'})"""


def visit(browser, base: str, path: str, limit_s: float = 120.0) -> dict[str, float | None]:
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    start = time.monotonic()
    page.goto(f"{base}/{path}")
    seen: dict[str, float | None] = {"html": time.monotonic() - start, "title": None, "progress": None, "done": None}
    while time.monotonic() - start < limit_s:
        state = page.evaluate(PROBE)
        now = time.monotonic() - start
        for key in ("title", "progress"):
            if state[key] and seen[key] is None:
                seen[key] = now
        if state["done"] and seen["title"] is not None:
            seen["done"] = now
            break
        time.sleep(0.05)
    page.close()
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", nargs="+", default=["", "weights", "corpus", "meta_critic", "graph", "engrams",
                                                       "judge"])
    parser.add_argument("--state", type=Path, help="state folder for every server (default: a fresh empty one each)")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    rows = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        for path in args.pages:
            state = args.state or Path(tempfile.mkdtemp(prefix="cns-first-paint-"))
            with serve_dashboard(state) as base:
                rows.append((path or "overview", visit(browser, base, path)))
        browser.close()
    fmt = lambda v: "-" if v is None else f"{v:.1f}"  # noqa: E731
    print(f"| page | HTML (s) | title (s) | progress (s) | run over (s) |   load average {os.getloadavg()[0]:.1f}")
    print("| --- | --- | --- | --- | --- |")
    for name, seen in rows:
        print(f"| {name} | {fmt(seen['html'])} | {fmt(seen['title'])} | {fmt(seen['progress'])} | {fmt(seen['done'])} |")


if __name__ == "__main__":
    main()
