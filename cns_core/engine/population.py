"""The novelty population: the SNOs a hypothesis is compared with, named so a score can be reproduced.

Novelty is distance to the nearest known hypothesis, so the same SNO scores differently against
different populations (alone, within a batch, against the dashboard's examples). A
:class:`Population` says what it is (``describe``: "novelty against 5 SNOs (examples): ...") and
can be pinned the same way in the CLI (``cns evaluate --population examples|none|batch|FILES``)
and on the dashboard (the sidebar's population), so both give the same score for the same file
and the same population. Each SNO leaves its own row out (by id).
"""

from __future__ import annotations

import glob
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from cns_core.critics.base import CriticContext
from cns_core.sno import SNO, SNOValidationError, load_snos

__all__ = ["Population", "POPULATION_WORDS", "population_context"]

# origin -> how it is named in a sentence
POPULATION_WORDS = {"none": "none", "batch": "the SNOs given together", "examples": "the bundled examples",
                    "files": "pinned files", "session": "every SNO of this session"}
_SNO_SUFFIXES = (".json", ".yaml", ".yml")


def population_context(snos: Sequence[SNO], embedder: Any = None) -> CriticContext:
    """A context whose novelty population is these SNOs (each leaves itself out by id)."""
    if not snos:
        return CriticContext()
    if embedder is None:
        from cns_core.models import get_embedder

        embedder = get_embedder()
    missing = [s.hypothesis_text for s in snos if not s.embedding]
    encoded = iter(np.asarray(embedder.encode(missing), dtype=np.float32)) if missing else iter(())
    rows = [np.asarray(s.embedding, dtype=np.float32) if s.embedding else next(encoded) for s in snos]
    if len({r.shape for r in rows}) > 1:  # SNO embeddings of another size cannot share a population
        return CriticContext()
    return CriticContext(population=np.stack(rows), embedder=embedder,
                         extra={"population_ids": [s.id for s in snos]})


def _sno_files(spec: str) -> list[Path]:
    """The SNO files one ``--population`` item names: a file, a folder (its SNO files) or a glob."""
    path = Path(spec)
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.suffix.lower() in _SNO_SUFFIXES)
    if path.is_file():
        return [path]
    matches = sorted(Path(p) for p in glob.glob(spec) if Path(p).is_file())
    if not matches:
        raise ValueError(f"--population: no SNO file matches {spec!r} (give batch, none, examples, "
                         "or SNO files, folders or globs separated by commas)")
    return matches


@dataclass(frozen=True)
class Population:
    """The SNOs novelty is measured against and where they come from (``POPULATION_WORDS``)."""

    snos: tuple[SNO, ...] = ()
    origin: str = "none"

    @classmethod
    def of(cls, snos: Iterable[SNO], origin: str) -> "Population":
        if origin not in POPULATION_WORDS:
            raise ValueError(f"population origin must be one of {', '.join(POPULATION_WORDS)} (got {origin!r})")
        return cls(tuple(snos), origin)

    @classmethod
    def from_files(cls, paths: Iterable[str | Path], origin: str = "files") -> "Population":
        """The SNOs of these files; a file that does not validate is an error naming it."""
        snos: list[SNO] = []
        for path in paths:
            try:
                snos.extend(load_snos(path))
            except SNOValidationError as exc:
                raise ValueError(f"--population: {path}: {'; '.join(exc.problems[:3])}") from None
        return cls.of(snos, origin)

    @classmethod
    def examples(cls, folder: Path | None = None) -> "Population":
        """The bundled examples (``examples/*.json|yaml``, file-name order), as the dashboard's default."""
        from cns_core.config import project_path

        folder = folder or project_path("examples")
        files = sorted(p for p in folder.glob("*") if p.suffix.lower() in _SNO_SUFFIXES) if folder.is_dir() else []
        snos: list[SNO] = []
        for path in files:
            try:
                snos.extend(load_snos(path))
            except SNOValidationError:
                continue   # a broken example is the examples' tests' business (the dashboard skips it too)
        return cls.of(snos, "examples")

    @classmethod
    def resolve(cls, spec: str, batch: Sequence[SNO] = ()) -> "Population":
        """``--population``: ``batch`` (the SNOs given together), ``none``, ``examples`` or FILES
        (SNO files, folders or globs separated by commas)."""
        spec = (spec or "").strip()
        if spec in ("batch", "none"):
            return cls.of(batch if spec == "batch" else (), spec)
        if spec == "examples":
            return cls.examples()
        items = [s.strip() for s in spec.split(",") if s.strip()]
        if not items:
            raise ValueError("--population: give batch, none, examples, or SNO files separated by commas")
        return cls.from_files([p for item in items for p in _sno_files(item)])

    def members_for(self, sno: SNO | None = None) -> list[SNO]:
        """The SNOs ``sno`` is compared with: all but itself (by id)."""
        return [s for s in self.snos if sno is None or s.id != sno.id]

    def describe(self, sno: SNO | None = None, limit: int = 8) -> str:
        """``novelty against 5 SNOs (the bundled examples): a, b, ...`` as every surface says it."""
        members = self.members_for(sno)
        where = POPULATION_WORDS[self.origin]
        if not members:
            return f"novelty against no SNO (population: {where}): maximally novel"
        names = ", ".join(s.id for s in members[:limit]) + (f", … ({len(members) - limit} more)"
                                                            if len(members) > limit else "")
        return f"novelty against {len(members)} SNO{'s' if len(members) != 1 else ''} ({where}): {names}"

    def to_dict(self, sno: SNO | None = None) -> dict[str, Any]:
        members = self.members_for(sno)
        return {"origin": self.origin, "size": len(members), "members": [s.id for s in members]}

    @property
    def key(self) -> str:
        """What the population is made of (origin aside): its SNOs' content hashes, order-free."""
        digest = hashlib.blake2b(digest_size=12)
        for h in sorted(s.content_hash() for s in self.snos):
            digest.update(h.encode())
        return digest.hexdigest()

    def context(self, embedder: Any = None) -> CriticContext:
        """The critics' context with this population (embedded once, here)."""
        return population_context(self.snos, embedder)
