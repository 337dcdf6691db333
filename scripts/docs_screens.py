"""The screenshots of the documentation and the README, made by driving Chromium through the app.

    python scripts/docs_screens.py                      # the app of `make run` if it answers, else its own
    python scripts/docs_screens.py --url http://127.0.0.1:8501
    python scripts/docs_screens.py --own --count 60     # always its own demo state and dashboard

Without a running app it writes a small demo into a temporary state folder (the demo memory and the
demo corpus run, as ``make run`` does) and serves the dashboard on a free port with the browser tests'
helpers (``tests/local_servers.py``, ``tests/test_browser.py``). Every page the router lists is opened
by its address and saved, one window high, as ``docs/img/pages/<stem>.png``; the Reasoning graph is
copied to ``assets/dashboard.png`` for the README. Debian's ``/usr/bin/chromium`` is driven by
Playwright; no browser is downloaded.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.request
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from local_servers import serve_dashboard  # noqa: E402
from test_browser import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    WARM_UP_MS,
    assert_clean,
    dashboard_pages,
    open_page,
    settle,
)

OUT = ROOT / "docs" / "img" / "pages"
README_SHOT = ROOT / "assets" / "dashboard.png"
README_PAGE = "graph"
VIEWPORT = {"width": 1400, "height": 900}


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as resp:
            return resp.status == 200
    except OSError:
        return False


def demo_state(count: int) -> Path:
    """``make run``'s demo data, smaller, in a private state folder."""
    state = Path(tempfile.mkdtemp(prefix="cns-docs-screens-"))
    env = {**os.environ, "CNS_STATE_DIR": str(state), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "ANONYMIZED_TELEMETRY": "False"}
    for module, extra in (("cns_core.cli.demo_memory", ["--count", str(count)]), ("cns_core.cli.demo_corpus", [])):
        print(f"docs-screens: python -m {module} {' '.join(extra)} (state {state})", flush=True)
        subprocess.run([sys.executable, "-m", module, *extra], cwd=ROOT, env=env, check=True)
    return state


def shoot_all(base: str) -> list[Path]:
    from playwright.sync_api import sync_playwright

    OUT.mkdir(parents=True, exist_ok=True)
    written = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_context(viewport=VIEWPORT).new_page()
            page.goto(f"{base}/")
            page.locator('[data-testid="stMetric"]', has_text="Trust Score").first.wait_for(timeout=WARM_UP_MS)
            for stem, title in dashboard_pages():
                open_page(page, base, stem, title)
                page.wait_for_timeout(2500)      # charts, graphs and grids are drawn after the script run
                settle(page)
                assert_clean(page, title)
                path = OUT / f"{stem}.png"
                page.screenshot(path=str(path))
                written.append(path)
                print(f"docs-screens: {title:<16} -> {path.relative_to(ROOT)}", flush=True)
        finally:
            browser.close()
    shutil.copyfile(OUT / f"{README_PAGE}.png", README_SHOT)
    written.append(README_SHOT)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=f"http://127.0.0.1:{os.environ.get('PORT', '8501')}",
                        help="a running dashboard (make run); used when it answers")
    parser.add_argument("--own", action="store_true", help="always start an own demo dashboard")
    parser.add_argument("--count", type=int, default=60, help="demo turns for an own dashboard (default 60)")
    args = parser.parse_args(argv)
    if not CHROMIUM.is_file():
        parser.error(f"{CHROMIUM} is missing: `make browser` installs Debian's chromium")
    with ExitStack() as stack:
        base = args.url.rstrip("/")
        if args.own or not answers(base):
            print(f"docs-screens: nothing answers at {base}; starting an own demo dashboard", flush=True)
            state = demo_state(args.count)
            stack.callback(shutil.rmtree, state, True)
            base = stack.enter_context(serve_dashboard(state, timeout_s=180))
        shoot_all(base)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
