"""``python -m cns_core.views.serve dashboard.py [streamlit options]``: ``streamlit run`` with the models
loading in the background from the moment the server process starts (:mod:`cns_core.views.warm_up`).

``cns run`` starts the dashboard this way, so a visitor's first page finds the models loaded, or loading
with a progress line, instead of paying for them itself.

Once Streamlit has stopped, the process leaves without the interpreter's finalization (:func:`leave`): the
warm-up is a daemon thread, and an interpreter that finalizes while a daemon thread is inside PyTorch's C++
aborts ("terminate called without an active exception") or hangs past ``cns run``'s grace, so a dashboard
stopped while the models were still loading was killed instead of exiting. The dashboard holds nothing to
save: the memory is written through its server, settings files are replaced whole.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import NoReturn, Sequence

__all__ = ["main", "leave"]


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


def leave(code: int) -> NoReturn:
    """End the process with ``code`` once its output is flushed, skipping the interpreter's finalization (the
    module docstring says why); only for a process whose work is done, like a stopped server."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):      # a closed or broken pipe: nothing more can be said
            pass
    os._exit(code)


if __name__ == "__main__":
    leave(main())
