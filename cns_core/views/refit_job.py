"""The drafter's refit on the kept corrections, run in the background, with its state in a file the page reads.

The refit (``cns train-drafter --corrections``) embeds the ten thousand units of the shipped genres and fits
the miner's two models again: minutes of CPU. It runs as a child process of the dashboard. A thread of the
dashboard waits on it, so the child is reaped the moment it ends (a child nobody waited on stayed a defunct
process until the demo stopped), and writes ``<state>/drafter/refit-status.json``: running, done or failed,
when it started and ended, its exit code and its log. Every page run (any browser, after a reload) reads that
file, so the panel shows the refit as it goes without a reload, and quotes the last refit's real duration.
A status left "running" by a dashboard that stopped while the refit ran reads as interrupted.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from cns_core.config import replace_atomically
from cns_core.text.corrections import corrections_dir

__all__ = ["RefitStatus", "refit_status", "start_refit", "status_path", "TYPICAL_REFIT_S", "duration_words", "estimate_words"]

# What a refit took where no refit has run here yet: 6 min 54 s on the shared two-core machine (issue 70's
# demo; "about 10 min 0 s" before, a guess quoted to the second); the panel quotes the last refit's own
# duration once there is one.
TYPICAL_REFIT_S = 414.0
_lock = threading.Lock()
_waiting: set[int] = set()        # children a thread of this process waits on (it writes how they ended)


def status_path(root: Path | None = None) -> Path:
    return corrections_dir(root).parent / "refit-status.json"


def duration_words(seconds: float) -> str:
    """``9 min 41 s``, ``48 s``: a measured duration."""
    seconds = max(0, round(seconds))
    minutes, rest = divmod(seconds, 60)
    return f"{minutes} min {rest} s" if minutes else f"{rest} s"


def estimate_words(seconds: float) -> str:
    """An expected duration as precise as an estimate is: ``7 min`` (whole minutes from two minutes on), ``50 s``
    (tens of seconds below), never ``10 min 0 s``."""
    if seconds >= 120:
        return f"{round(seconds / 60)} min"
    return f"{max(10, round(seconds / 10) * 10)} s"


@dataclass(frozen=True)
class RefitStatus:
    """The latest refit of this state folder: ``state`` is none, running, done, failed or interrupted."""

    state: str = "none"
    started: float | None = None       # epoch seconds
    finished: float | None = None
    returncode: int | None = None
    pid: int | None = None
    log: str = ""
    last_seconds: float | None = None  # how long the latest refit that finished took

    @property
    def running(self) -> bool:
        return self.state == "running"

    def elapsed(self, now: float | None = None) -> float:
        if self.started is None:
            return 0.0
        return max(0.0, (self.finished if self.finished is not None else (now or time.time())) - self.started)

    @property
    def expected_seconds(self) -> float:
        """How long a refit takes here: the last one's duration, else :data:`TYPICAL_REFIT_S`."""
        return self.last_seconds or TYPICAL_REFIT_S

    def fraction(self, now: float | None = None) -> float:
        """Elapsed over expected, below 1 while it runs (an estimate: the refit reports no steps)."""
        return 1.0 if not self.running else min(0.99, self.elapsed(now) / self.expected_seconds)

    def words(self, now: float | None = None) -> str:
        """What the panel says about the refit."""
        took = duration_words(self.elapsed(now))
        if self.state == "running":
            source = (f"the last refit here took {duration_words(self.last_seconds)}" if self.last_seconds else
                      f"one took {duration_words(TYPICAL_REFIT_S)} on two shared CPU cores")
            return (f"Refitting: running for {took}; it takes about {estimate_words(self.expected_seconds)} "
                    f"({source}). You can keep working; this line follows it.")
        if self.state == "done":
            return f"The last refit finished in {took}; it is the active drafter."
        if self.state == "failed":
            return f"The last refit failed after {took} (exit code {self.returncode}); its log is below."
        if self.state == "interrupted":
            return f"The last refit was interrupted after about {took}: the dashboard stopped while it ran."
        return ""

    def log_tail(self, chars: int = 2000) -> str:
        try:
            return Path(self.log).read_text(encoding="utf-8", errors="replace")[-chars:] if self.log else ""
        except OSError:
            return ""


def _write(path: Path, status: RefitStatus) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with replace_atomically(path) as tmp:
        tmp.write_text(json.dumps(asdict(status)), encoding="utf-8")


def _alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:      # a child that ended but was not waited on yet is no longer running
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def refit_status(root: Path | None = None) -> RefitStatus:
    """The latest refit as the status file has it (none when no refit ran here)."""
    path = status_path(root)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        status = RefitStatus(**{k: data[k] for k in RefitStatus.__dataclass_fields__ if k in data})
    except (OSError, ValueError, TypeError):
        return RefitStatus()
    if status.running and status.pid not in _waiting and not _alive(status.pid):
        status = RefitStatus(**{**asdict(status), "state": "interrupted"})
    return status


def start_refit(command: list[str], root: Path | None = None) -> RefitStatus:
    """Run ``command`` (the refit) in the background unless one is running; its output goes to
    ``<state>/drafter/refit.log``. A thread waits on the child (reaping it) and records how it ended."""
    path = status_path(root)
    with _lock:
        current = refit_status(root)
        if current.running:
            return current
        log = path.parent / "refit.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("w", encoding="utf-8") as handle:
            process = subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT)
        status = RefitStatus("running", time.time(), None, None, process.pid, str(log), current.last_seconds)
        _write(path, status)
        _waiting.add(process.pid)

    def wait() -> None:
        code = process.wait()                     # reaps the child
        ended = time.time()
        done = RefitStatus("done" if code == 0 else "failed", status.started, ended, code, None, status.log,
                           ended - status.started if code == 0 else status.last_seconds)
        _write(path, done)
        _waiting.discard(process.pid)

    threading.Thread(target=wait, name="cns-drafter-refit", daemon=True).start()
    return status
