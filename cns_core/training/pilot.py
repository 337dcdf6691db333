"""The recipe's own miner: a pilot model of the same recipe, trained first, that the mined readers read.

The verifier is made by one recipe from the public base. Its hard examples (the names its associations
confuse, the supported claims it flags as contradicted) must be mined by *a model of that recipe*, not by a
model some earlier chain of stages left behind. With ``mining.model: pilot`` the run first trains a pilot:
the same settings, the mined sources left out, ``mining.pilot_epochs`` epochs, written under the run's
checkpoint folder (resumable like any run). The mined readers then read the pilot, and their pairs are
cached under the pilot's weights, so the mining happens once per recipe and a resumed or repeated run (or a
GPU run carrying the cache) reads them back.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["MINED_READERS", "uses_pilot", "pilot_settings", "pilot_is_written", "miner_path"]

# Readers whose pairs depend on a model's own readings.
MINED_READERS = ("associations", "false_alarms")


def uses_pilot(settings: Any) -> bool:
    return settings.mining.model == "pilot" and any(s.reader in MINED_READERS for s in settings.sources)


def pilot_settings(settings: Any) -> Any:
    """The pilot's settings: the recipe less its mined sources, ``pilot_fraction`` of its pairs for
    ``pilot_epochs`` epochs, no blend, written in ``<checkpoint>/pilot``."""
    sources = [s for s in settings.sources if s.reader not in MINED_READERS]
    folder = settings.checkpoint_path / "pilot"
    return settings.model_copy(update={
        "train_files": sources, "epochs": settings.mining.pilot_epochs, "output": str(folder),
        "train_fraction": settings.mining.pilot_fraction,
        "checkpoint_dir": str(folder.with_name("pilot.checkpoint")), "interpolate_with": None,
        "interpolation_weight": 1.0, "max_train_seconds": None, "stop_at_step": None,
        "mining": settings.mining.model_copy(update={"model": "base"})})


def pilot_is_written(settings: Any) -> bool:
    return (pilot_settings(settings).output_path / "config.json").is_file()


def miner_path(settings: Any, base: Path) -> Path:
    """The model the mined readers read: the pilot, or the run's base (``mining.model: base``)."""
    if settings.mining.model != "pilot":
        return base
    path = pilot_settings(settings).output_path
    if not (path / "config.json").is_file():
        raise ValueError(f"mining.model: the pilot in {path} is not trained yet (run the recipe's command)")
    return path
