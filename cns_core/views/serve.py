"""``python -m cns_core.views.serve dashboard.py [streamlit options]``: ``streamlit run`` with the models
loading in the background from the moment the server process starts (:mod:`cns_core.views.warm_up`).

``cns run`` starts the dashboard this way, so a visitor's first page finds the models loaded, or loading
with a progress line, instead of paying for them itself.

Once Streamlit has stopped, the process leaves without the interpreter's finalization
(:func:`cns_core.cli.process_exit.leave`): the warm-up is a daemon thread, and a dashboard stopped while the
models were still loading aborted or was killed instead of exiting.
"""

from __future__ import annotations

import sys
from typing import Sequence

from cns_core.cli.process_exit import leave

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    from streamlit.web import cli

    from cns_core.views import warm_up

    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0].startswith("-"):
        print("usage: python -m cns_core.views.serve APP.py [streamlit run options]", file=sys.stderr)
        return 2
    warm_up.start()
    try:
        cli.main(args=["run", *args], prog_name="streamlit", standalone_mode=True)
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


if __name__ == "__main__":
    leave(main())
