"""End a server process whose work is done without the interpreter's finalization.

The dashboard (:mod:`cns_core.views.serve`) and the memory's Chroma server (:mod:`cns_core.cli.memory_server`)
run their work on daemon threads: the dashboard's model warm-up, the Chroma server itself. An interpreter that
finalizes while a daemon thread is inside native code (PyTorch's C++, Chroma's Rust) aborts ("terminate called
without an active exception") or hangs past ``cns run``'s grace, so a server that stopped cleanly was killed
instead of exiting. Neither holds anything to save once stopped: the memory is written as each call answers,
settings files are replaced whole.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import NoReturn

__all__ = ["leave"]


def leave(code: int) -> NoReturn:
    """End the process with ``code`` once its logs and output are flushed, skipping finalization."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):      # a closed or broken pipe: nothing more can be said
            pass
    os._exit(code)
