"""The judge loop as a real process, for fault injection (tests/test_faults.py) and the soak (benchmarks/soak.py).

:class:`LoopUnderTest` runs ``cns agents`` (bus proxy and journal, MemoryAgent, CriticAgent, pending
grader; no generator, no coherence hook, no Trust Score: they cost seconds per start and are not
what is under test) on free loopback ports against a state folder, with a config folder whose judge
timeout and pending-grade schedule are short. It can be killed with SIGKILL and started again on
the same folder and ports. What happened is read back from the places that record it: the bus
journal (every critique published), the fake judge (every request it received) and, once the loop
is stopped, the memory itself.
"""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from local_servers import ROOT, free_port, wait_for

__all__ = ["LoopUnderTest", "loop_config_dir", "turn_payload"]

RESPONSE_SUBJECT = "response.generation"


def loop_config_dir(folder: Path, grade_timeout: float = 1.0) -> Path:
    """A copy of config/ whose judge gives up after ``grade_timeout`` seconds."""
    target = folder / "config"
    if not target.exists():
        shutil.copytree(ROOT / "config", target)
        critic = target / "critic.yaml"
        text = critic.read_text(encoding="utf-8")
        assert "grade_timeout: 30" in text, "config/critic.yaml changed: update the harness"
        critic.write_text(text.replace("grade_timeout: 30", f"grade_timeout: {grade_timeout:g}"), encoding="utf-8")
    return target


def turn_payload(i: int, tag: str = "t") -> dict[str, Any]:
    """A distinct, valid ``response.generation`` payload (its answer names the turn, so the fake judge's
    request log can be matched to it)."""
    return {"query": f"What is fact number {i} of run {tag}?", "answer": f"Fact {tag}-{i} holds.",
            "session_id": f"faults-{tag}", "query_id": f"{tag}-{i:05d}"}


class LoopUnderTest:
    """One state folder's judge loop; ``start`` / ``kill`` / ``stop`` as often as needed."""

    def __init__(self, folder: Path, judge_url: str, *, sweep_s: float = 0.5, retry_first_s: float = 0.5,
                 retry_max_s: float = 2.0, grade_timeout: float = 1.0, extra_env: dict[str, str] | None = None):
        self.folder = folder
        self.state = folder / "state"
        self.state.mkdir(parents=True, exist_ok=True)
        self.ports = {"PUB": free_port(), "SUB": free_port(), "JOURNAL": free_port()}
        self.env = {**os.environ, "CNS_STATE_DIR": str(self.state), "CNS_CONFIG_DIR": str(loop_config_dir(folder,
                                                                                                            grade_timeout)),
                    "CNS_OLLAMA_URL": judge_url, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
                    "ANONYMIZED_TELEMETRY": "False", "PYTHONUNBUFFERED": "1",
                    "CNS_PENDING_CHECK_EVERY_S": str(sweep_s), "CNS_PENDING_RETRY_FIRST_S": str(retry_first_s),
                    "CNS_PENDING_RETRY_MAX_S": str(retry_max_s),
                    **{f"CNS_BUS_{k}_PORT": str(v) for k, v in self.ports.items()}, **(extra_env or {})}
        self.proc: subprocess.Popen | None = None
        self.logs: list[Path] = []

    @property
    def bus(self):
        from cns_core.agents.bus import bus_settings

        return bus_settings(pub_port=self.ports["PUB"], sub_port=self.ports["SUB"],
                            journal_port=self.ports["JOURNAL"], journal_path=str(self.state / "bus_journal.sqlite"))

    @property
    def log(self) -> str:
        return "".join(p.read_text(encoding="utf-8", errors="replace") for p in self.logs if p.exists())

    def start(self, timeout: float = 120.0, on_bus: Any = None) -> "LoopUnderTest":
        """Start ``cns agents`` and return once it says "press Ctrl-C"; ``on_bus()`` is called as soon as
        the bus proxy is up (its "bus:" line), while the agents are still starting."""
        log = self.folder / f"agents-{len(self.logs)}.log"
        self.logs.append(log)
        with log.open("w") as out:
            self.proc = subprocess.Popen([sys.executable, "-m", "cns_core.cli", "agents", "--no-generator",
                                          "--no-coherence", "--no-trust"], cwd=ROOT, env=self.env, stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True)

        def started() -> bool:
            nonlocal on_bus
            text = log.read_text(encoding="utf-8", errors="replace")
            if on_bus is not None and "bus: publishers" in text:
                on_bus()
                on_bus = None
            return "press Ctrl-C" in text

        wait_for(started, timeout, 0.1, "cns agents to say 'press Ctrl-C'", proc=self.proc, log=lambda: self.log)
        return self

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL: no clean-up of any kind (the record file, the checkpoint and the journal stay as they are)."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM and wait; the exit status."""
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        return self.proc.returncode

    def wait_for_sweeps(self, count: int = 3, timeout: float = 60.0) -> None:
        """Wait until the pending grader has finished ``count`` more sweeps (each rewrites
        ``pending_grades.json`` with the time it ended): from the second on they began after this call,
        so a turn one of them asked the judge for again has had a sweep's time to come back graded."""
        import json

        path = self.state / "pending_grades.json"
        last, seen = time.time(), 0

        def swept() -> bool:
            nonlocal last, seen
            try:
                updated = float(json.loads(path.read_text(encoding="utf-8"))["updated"])
            except (OSError, ValueError, KeyError, TypeError):
                updated = 0.0
            if updated > last:
                last, seen = updated, seen + 1
            return seen >= count

        wait_for(swept, timeout, what=f"{count} pending-grade sweeps", proc=self.proc, log=lambda: self.log)

    # ------------------------------------------------------------------ what happened

    def journal_rows(self, subject: str) -> list[str]:
        """Bodies of every journaled message of ``subject`` (read-only; safe while the loop writes)."""
        path = self.state / "bus_journal.sqlite"
        if not path.exists():
            return []
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
        try:
            return [r[0] for r in db.execute("SELECT body FROM messages WHERE subject = ?", (subject,))]
        except sqlite3.Error:
            return []
        finally:
            db.close()

    def journal_messages(self, subject: str) -> list[tuple[float, dict[str, Any]]]:
        """(time the journal received it, payload) of every journaled message of ``subject``."""
        import json

        path = self.state / "bus_journal.sqlite"
        if not path.exists():
            return []
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
        try:
            rows = db.execute("SELECT received, body FROM messages WHERE subject = ? ORDER BY seq", (subject,))
            return [(float(t), json.loads(body)["payload"]) for t, body in rows]
        except sqlite3.Error:
            return []
        finally:
            db.close()

    def memory_behind(self) -> int:
        """Turns the journal holds past the MemoryAgent's checkpoint: 0 once the memory has stored (or
        quarantined, or rejected) every journaled turn. Read from the checkpoint file, so it can be asked
        while the loop runs (the embedded store cannot)."""
        import json

        try:
            position = json.loads((self.state / "memory_agent.checkpoint.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return len(self.journal_rows(RESPONSE_SUBJECT))
        path = self.state / "bus_journal.sqlite"
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
        try:
            after = position.get("after_seq", 0)
            if isinstance(position.get("after_message_id"), str):
                row = db.execute("SELECT seq FROM messages WHERE message_id = ?",
                                 (position["after_message_id"],)).fetchone()
                after = row[0] if row else 0
            return int(db.execute("SELECT COUNT(*) FROM messages WHERE subject = ? AND seq > ?",
                                  (RESPONSE_SUBJECT, after)).fetchone()[0])
        except sqlite3.Error:
            return len(self.journal_rows(RESPONSE_SUBJECT))
        finally:
            db.close()

    def grades(self) -> Counter:
        """query_id -> how many critiques *with a score* the journal holds (the judge graded it that often)."""
        import json

        out: Counter = Counter()
        for body in self.journal_rows("critique.result"):
            payload = json.loads(body)["payload"]
            if isinstance(payload.get("score"), int):
                out[payload["query_id"]] += 1
        return out

    def memory_census(self, ids: list[str]) -> dict[str, Any]:
        """Once the loop is stopped: how many engrams the memory holds, which of ``ids`` are stored and
        graded, and the quarantined ids."""
        from cns_core.memory import MemoryService

        assert not self.alive, "read the memory once the loop is stopped"
        url = self.env.get("CNS_CHROMA_URL")          # the memory in a server (the soak's --chroma-kills)
        service = MemoryService(url=url) if url else MemoryService(path=self.state / "chroma")
        found = service.get(ids)
        return {"count": service.count(), "stored": {e.id for e in found}, "graded": {e.id for e in found if e.graded},
                "quarantined": [e.id for e in service.list_quarantined()]}
