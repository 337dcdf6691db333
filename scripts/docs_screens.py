"""The screenshots of the documentation and the README, made by driving Chromium through the app.

    python scripts/docs_screens.py                      # the app of `make run` if it answers (once its demo
                                                        # data is written), else its own
    python scripts/docs_screens.py --url http://127.0.0.1:8501
    python scripts/docs_screens.py --own                # always its own demo state and dashboard

Without a running app it writes the demo into a temporary state folder (the demo memory of 300 turns and
the demo corpus run, as ``make run`` does; then the figures the docs quote, ``docs/figures/demo.json``) and starts ``cns run`` (dashboard and judge loop, no judge model)
on free ports, as ``tests/test_browser_demo.py`` does, with the browser tests' helpers
(``tests/local_servers.py``, ``tests/test_browser.py``). Every page the router lists is opened
by its address and saved, one window high, as ``docs/img/pages/<stem>.png`` (and the pages of ``FILTERED_SHOTS``
again with a sidebar filter set, e.g. ``engrams-sydney.png``); the Reasoning graph is
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
import time
import urllib.request
from contextlib import ExitStack, contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from local_servers import free_port, stop_process, wait_for_demo_data, wait_until_serving  # noqa: E402
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
# A page shown once more with one sidebar text filter set: (page stem, title, filter label, text, file stem).
# The Engrams page filtered to the demo's "Sydney is the capital of Australia." turns shows their answer verdict.
FILTERED_SHOTS = (("engrams", "Engrams", "Text contains", "Sydney", "engrams-sydney"),)
VIEWPORT = {"width": 1400, "height": 900}
FIGURES = ROOT / "docs" / "figures" / "demo.json"
MAKE_RUN_TURNS = 300          # python -m cns_core.cli.demo_memory's default, what make run writes


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as resp:
            return resp.status == 200
    except OSError:
        return False


def demo_env(state: Path) -> dict[str, str]:
    """A private state folder, bus ports nobody uses, and a judge URL where nothing answers."""
    return {**os.environ, "CNS_STATE_DIR": str(state), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
            "ANONYMIZED_TELEMETRY": "False", "CNS_OLLAMA_URL": f"http://127.0.0.1:{free_port()}",
            **{k: str(free_port()) for k in ("CNS_BUS_PUB_PORT", "CNS_BUS_SUB_PORT", "CNS_BUS_JOURNAL_PORT")}}


def demo_state(count: int, env: dict[str, str]) -> Path:
    """``make run``'s demo data (``count`` turns) in the private state folder."""
    state = Path(env["CNS_STATE_DIR"])
    for module, extra in (("cns_core.cli.demo_memory", ["--count", str(count)]), ("cns_core.cli.demo_corpus", [])):
        print(f"docs-screens: python -m {module} {' '.join(extra)} (state {state})", flush=True)
        subprocess.run([sys.executable, "-m", module, *extra], cwd=ROOT, env=env, check=True)
    return state


def write_figures(state: Path, env: dict[str, str]) -> None:
    """The demo's figures the docs quote (``<!-- demo:KEY -->``), read from the demo data just written."""
    done = subprocess.run([sys.executable, "-m", "cns_core.cli.demo_figures", str(state)], cwd=ROOT, env=env,
                          check=True, capture_output=True, text=True)
    FIGURES.write_text(done.stdout, encoding="utf-8")
    print(f"docs-screens: wrote {FIGURES.relative_to(ROOT)}", flush=True)


@contextmanager
def cns_run(env: dict[str, str]):
    """``cns run`` (dashboard and judge loop) on a free port; yields the dashboard URL once the loop is up."""
    web = free_port()
    log_path = Path(env["CNS_STATE_DIR"]) / "run.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen([sys.executable, "-m", "cns_core.cli", "run", "--port", str(web), "--address",
                                 "127.0.0.1"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_until_serving(f"http://127.0.0.1:{web}/_stcore/health", proc, "cns run's dashboard", 300)
        deadline = time.monotonic() + 300
        while "memory: running" not in log_path.read_text():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the judge loop did not start; log:\n{log_path.read_text()}")
            time.sleep(1)
        yield f"http://127.0.0.1:{web}"
    finally:
        stop_process(proc)


def wait_for_make_run_demo() -> None:
    """A `make run` that answers may still be writing its demo data in the background: the screenshots wait for it
    (its record in the state folder, polled) so that they show the whole demo."""
    from cns_core.config import state_dir

    state = state_dir(create=False)
    print(f"docs-screens: waiting for make run's demo data in {state} (if it is still being written)", flush=True)
    written = wait_for_demo_data(state)
    if written is not None and written.stage != "done":
        raise SystemExit(f"docs-screens: make run's demo data is incomplete: {written.line()}")


def shoot_filtered(page, base: str, stem: str, title: str, label: str, text: str, name: str) -> Path:
    """The page again with its sidebar filter ``label`` set to ``text``, saved as ``<name>.png``."""
    open_page(page, base, stem, title)
    box = page.get_by_role("textbox", name=label)
    box.fill(text)
    box.press("Enter")
    settle(page)
    return save_shot(page, f"{title} ({label}: {text})", name)


def save_shot(page, what: str, name: str) -> Path:
    """The page as it stands, once what is drawn after the script run (charts, graphs, grids, rows) is there,
    saved as ``<name>.png``."""
    page.wait_for_timeout(2500)
    settle(page)
    assert_clean(page, what)
    path = OUT / f"{name}.png"
    page.screenshot(path=str(path))
    print(f"docs-screens: {what:<16} -> {path.relative_to(ROOT)}", flush=True)
    return path


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
                if stem == "judge":              # the status row lands a moment after the script run
                    page.get_by_text("Judge loop").first.wait_for(timeout=60_000)
                written.append(save_shot(page, title, stem))
            for stem, title, label, text, name in FILTERED_SHOTS:
                written.append(shoot_filtered(page, base, stem, title, label, text, name))
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
    parser.add_argument("--count", type=int, default=MAKE_RUN_TURNS,
                        help=f"demo turns for an own dashboard (default {MAKE_RUN_TURNS}, as make run writes: the "
                             "screenshots and docs/figures/demo.json then show make run's demo)")
    args = parser.parse_args(argv)
    if not CHROMIUM.is_file():
        parser.error(f"{CHROMIUM} is missing: `make browser` installs Debian's chromium")
    with ExitStack() as stack:
        base = args.url.rstrip("/")
        if not args.own and answers(base):
            wait_for_make_run_demo()
        if args.own or not answers(base):
            print(f"docs-screens: nothing answers at {base}; starting an own demo dashboard", flush=True)
            env = demo_env(Path(tempfile.mkdtemp(prefix="cns-docs-screens-")))
            stack.callback(shutil.rmtree, env["CNS_STATE_DIR"], True)
            state = demo_state(args.count, env)
            if args.count == MAKE_RUN_TURNS:
                write_figures(state, env)
            base = stack.enter_context(cns_run(env))
        shoot_all(base)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
