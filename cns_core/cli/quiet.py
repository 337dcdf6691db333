"""Keep command-line output for real work: no model-loading bars or load reports.

transformers and huggingface_hub print a "Loading weights" bar and a load report
every time a model loads; on the command line they drown the results. Progress
bars for real work (``cns replay``, batch runs) use tqdm directly and stay.
Call :func:`quiet_model_loading` before any model is loaded (environment first,
so libraries imported later read it; the runtime switches for those already imported).
"""

from __future__ import annotations

import os
import sys

__all__ = ["OFFLINE_ENV", "QUIET_ENV", "offline_and_quiet", "quiet_model_loading"]

# Every command works offline: nothing is fetched from a model hub, no telemetry is sent.
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"}

QUIET_ENV = {
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",      # huggingface_hub's and transformers' bars
    "TRANSFORMERS_VERBOSITY": "error",         # no LOAD REPORT / advisory warnings
    "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
    "TOKENIZERS_PARALLELISM": "false",         # no fork warning from tokenizers
}


def quiet_model_loading() -> None:
    """Silence model-loading output in this process and in the processes it starts."""
    for key, value in QUIET_ENV.items():
        os.environ.setdefault(key, value)
    if "transformers" in sys.modules:
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
    if "huggingface_hub" in sys.modules:
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()


def offline_and_quiet() -> None:
    """What every command-line entry point sets first: offline (unless the environment says
    otherwise) and no model-loading output."""
    for key, value in OFFLINE_ENV.items():
        os.environ.setdefault(key, value)
    quiet_model_loading()
