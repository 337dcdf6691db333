"""The demo's figures as the documentation quotes them, read from a demo state folder.

``make run``'s demo (``python -m cns_core.cli.demo_memory`` then ``demo_corpus``) is deterministic, so
the docs quote its counts; they are written to ``docs/figures/demo.json`` by ``scripts/docs_screens.py``
when it builds the demo itself, and the docs hook (``scripts/docs_hooks.py``) puts them into the pages
(``<!-- demo:KEY -->``). A figure in the docs is therefore read from the demo data, never typed.

    python -m cns_core.cli.demo_figures [STATE_DIR]      # print them as JSON
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Sequence

__all__ = ["demo_figures", "FIGURE_KEYS"]

FIGURE_KEYS = ("engrams", "quarantined", "blocked", "released", "chains", "compared", "trust_scored", "disagreements",
               "drift_chains", "drift_followed", "indicator_pct", "judged_chains", "judged_followed",
               "base_rate_pct", "lift")


def demo_figures(state: str | Path) -> dict[str, Any]:
    """The counts of the demo memory and the drift indicator of its coherence log, in ``state``."""
    from cns_core.agents.pending import memory_counts
    from cns_core.judging.answer_trust import TrustSettings
    from cns_core.coherence.drift_indicator import IndicatorSettings, drift_indicator
    from cns_core.coherence.log_view import load_log, summarise
    from cns_core.engrams import EngramFilters
    from cns_core.memory import MemoryService

    state = Path(state)
    memory = MemoryService(path=str(state / "chroma"))
    rule = TrustSettings.from_config().rule
    summary = summarise(load_log(state / "coherence.jsonl"))
    drift = drift_indicator(summary.points, IndicatorSettings.from_config())
    counts = memory_counts(memory)
    return {
        "engrams": counts.engrams,
        "quarantined": counts.quarantined,
        "blocked": counts.blocked,          # every turn the coherence hook held back ...
        "released": counts.released,        # ... and those a later re-check released into the engrams
        "chains": summary.chains,
        "compared": summary.chains - summary.uncompared,       # chains with something to compare
        "trust_scored": memory.count(EngramFilters(min_trust=0.0)),
        "disagreements": memory.count(EngramFilters(disagreeing=rule)),
        "drift_chains": drift.drift_chains,
        "drift_followed": drift.drift_followed,
        "indicator_pct": None if drift.indicator is None else round(100 * drift.indicator),
        "judged_chains": drift.judged_chains,
        "judged_followed": drift.judged_followed,
        "base_rate_pct": None if drift.base_rate is None else round(100 * drift.base_rate),
        "lift": None if drift.lift is None else round(drift.lift, 1),
    }


def main(argv: Sequence[str] | None = None) -> int:
    from cns_core.cli.quiet import offline_and_quiet
    from cns_core.config import state_dir

    offline_and_quiet()
    args = list(sys.argv[1:] if argv is None else argv)
    print(json.dumps(demo_figures(args[0] if args else state_dir()), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
