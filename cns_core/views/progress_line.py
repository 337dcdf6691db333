"""Progress lines whose seconds keep counting in the browser, even while the page's script is busy.

Why: Streamlit draws a line when a script run reaches it, and a page that waits on a model blocks its run
for many seconds. The warm-up line said "20 s" at 12.4 s and "26 s" at 24.2 s on a cold Engrams page. So a
line carries the seconds as of its drawing (``data-cns-elapsed``), and a small script in the page adds, every
second, the time since the browser first showed it; the next drawing brings the server's figure again. The
line is HTML built here from our own words, escaped; nothing a visitor typed reaches the script.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Sequence

from cns_core.cli.demo_progress import DemoProgress, read_progress
from cns_core.views import warm_up
from cns_core.views.display import escape

__all__ = ["DEMO_DATA_PAGES", "UnderWay", "under_way", "ticking_line", "lines_html", "TICKER_SCRIPT"]

# The pages (their url paths) that show the memory or the corpus: only they carry the demo data's line; every
# page carries the models' line. The README says which, by their titles (tests/test_docs.py holds it to this).
DEMO_DATA_PAGES = frozenset({"coherence", "corpus", "engrams", "judge"})

_MARK = "\x00cns-seconds\x00"     # where the counter goes; never in the words of a line
_STYLE = "color:rgba(49,51,63,0.6);font-size:0.95rem;margin:0 0 0.25rem 0"

# One interval for the whole page, however many lines and redraws. Each counter starts from its own figure,
# again whenever a redraw brings a new one (the browser may keep the element and change only the attribute).
TICKER_SCRIPT = """<script>
(() => {
  const tick = () => {
    const now = performance.now();
    document.querySelectorAll("[data-cns-elapsed]").forEach((el) => {
      if (el.dataset.cnsFrom !== el.dataset.cnsElapsed) {
        el.dataset.cnsFrom = el.dataset.cnsElapsed;
        el.dataset.cnsShownAt = String(now);
      }
      const s = Number(el.dataset.cnsElapsed) + (now - Number(el.dataset.cnsShownAt)) / 1000;
      el.textContent = `${Math.round(s)} s`;
    });
  };
  tick();
  if (!window.cnsSecondsTicker) window.cnsSecondsTicker = setInterval(tick, 250);
})();
</script>"""
_CODE = re.compile(r"`([^`<>]+)`")


def ticking_line(line: Callable[[str], str], seconds: float, testid: str) -> str:
    """``line(counter)`` as an HTML block, the counter starting at ``seconds`` (one decimal kept for the script);
    a command in backticks is set as code, as the pages' markdown sets it."""
    counter = f'<span data-cns-elapsed="{max(0.0, seconds):.1f}">{max(0.0, seconds):.0f} s</span>'
    text = _CODE.sub(r'<code style="font-size:0.85em">\1</code>', escape(line(_MARK))).replace(_MARK, counter)
    return f'<div data-testid="{escape(testid)}" style="{_STYLE}">{text}</div>'


def lines_html(lines: Sequence[str]) -> str:
    """The lines with the one script that makes their counters tick (for ``st.html(..., unsafe_allow_javascript=True)``)."""
    return "".join(lines) + TICKER_SCRIPT


@dataclass(frozen=True)
class UnderWay:
    """What is still under way as a page is drawn: the models loading (every page) and ``make run``'s demo data
    (on the pages that show the memory or the corpus; None elsewhere, and once it is done)."""

    warming: warm_up.WarmUpStatus
    demo: DemoProgress | None

    @property
    def moving(self) -> bool:
        """Whether anything will change by itself (the page's lines then follow it)."""
        return not self.warming.finished or (self.demo is not None and self.demo.running)

    def changed_since(self, drawn: "UnderWay") -> bool:
        """The page must be drawn again: the models it waited for are loaded, or the demo data moved to another
        stage (more to show)."""
        if drawn.demo is not None and (self.demo is None or self.demo.stage != drawn.demo.stage):
            return True
        return self.warming.finished and not drawn.warming.finished

    def html(self) -> str | None:
        """The lines to show above the page (for ``st.html(..., unsafe_allow_javascript=True)``), None when
        nothing is under way."""
        lines = []
        if not self.warming.finished:
            lines.append(ticking_line(self.warming.line, self.warming.elapsed_s, "cns-warm-up"))
        demo = self.demo
        if demo is not None:
            lines.append(ticking_line(lambda s: demo.line(seconds=s), demo.elapsed(), "cns-demo-data"))
        return lines_html(lines) if lines else None


def under_way(with_demo_data: bool) -> UnderWay:
    """Where the models' warm-up (started here if ``cns run`` did not) and, ``with_demo_data``, the demo data
    stand now."""
    demo = read_progress() if with_demo_data else None
    return UnderWay(warm_up.start(), demo if demo is not None and demo.shown else None)
