"""The ``associations`` reader of a training mix: mine one corpus file for the base model's confusions.

:mod:`cns_core.training.association_swaps` holds the method; this module runs it for a training run: it
reads a file's slot facts (judged answers or supported claim-verification pairs, the held-out questions
and folds left out as every other reader leaves them out), builds the candidate names from the answers
people gave and the file's own names, finds each name's neighbours with the product's embedder (the MiniLM
the verifier was fine-tuned from: names it places close together), loads the model being trained from (the
calibrated verifier, for the adversarial filter) and caches the mined pairs in the run's checkpoint folder,
keyed by the model's weights, the file and the mining settings: a resumed run reads them back instead of
mining again, and a new round (a new base model) mines anew.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Callable, Literal, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from cns_core.training.association_swaps import (MiningSettings, NameNeighbours, ProbeFilter, SlotFact, claim_facts,
                                                 evouna_facts, mine_pairs, value_kind)
from cns_core.training.nli_data import NLIPairs, read_nli_tsv, read_pairs_cache, write_pairs_cache

__all__ = ["MiningConfig", "mined_pairs"]

_CACHE_VERSION = 3


class MiningConfig(BaseModel):
    """``mining`` in a training YAML: how the ``associations`` reader mines (see :class:`MiningSettings`)."""

    model_config = ConfigDict(extra="forbid")

    candidates: int = Field(4, ge=1, le=50)
    keep: int = Field(2, ge=1, le=20)
    min_entailment: float = Field(0.3, ge=0.0, le=1.0)
    question_form: float = Field(0.5, ge=0.0, le=1.0)
    max_facts: int = Field(8000, ge=1)            # facts mined per file (a seeded sample)
    probe: str | None = "benchmarks/data/association_probe.yaml"   # its facts never reach training
    # Who mines: "base" (the model the run starts from) or "pilot" (a model of the same recipe, trained first
    # without the mined sources: cns_core.training.pilot), for a recipe that starts from the public base.
    model: Literal["base", "pilot"] = "base"
    pilot_epochs: int = Field(1, ge=1, le=10)
    pilot_fraction: float = Field(0.4, gt=0, le=1)   # share of the recipe's pairs the pilot trains on

    def method(self) -> MiningSettings:
        return MiningSettings(candidates=self.candidates, keep=self.keep, min_entailment=self.min_entailment,
                              question_form=self.question_form)


def _facts_of(path: Path, answers: Sequence, seed: int) -> tuple[list[SlotFact], list[str]]:
    """(slot facts of the file, the short answers people gave in the judged answers: candidate names)."""
    from cns_core.training import verifier_data as vd

    said = [a.answer.strip().rstrip(".") for a in answers if len(a.answer.split()) <= 4]
    said += [g.strip() for a in answers for g in a.reference.split("|")]
    if path.name.endswith(".jsonl") and "evouna" in path.name:
        return evouna_facts(answers, seed), said
    if path.name.endswith(".jsonl"):
        return claim_facts(vd.read_fever_symmetric([path]), path.name), said
    return claim_facts(read_nli_tsv(path), path.name), said


def _cache_key(settings: Any, path: Path, model_path: Path) -> str:
    from cns_core.config import project_path
    from cns_core.models.nli import weights_fingerprint

    # what the probe leaves out of training, not its file: questions added to it do not change the pairs
    probe = settings.mining.probe
    probe_text = repr(ProbeFilter.from_file(project_path(probe)).facts).encode() \
        if probe and project_path(probe).is_file() else b""
    stat = path.stat()
    parts = [str(_CACHE_VERSION), weights_fingerprint(str(model_path)), path.name, str(stat.st_size),
             settings.mining.model_dump_json(), str(settings.seed), json.dumps(settings.exclude_questions),
             str(settings.question_folds), json.dumps(settings.question_held_folds),
             hashlib.blake2b(probe_text, digest_size=8).hexdigest()]
    return hashlib.blake2b("|".join(parts).encode(), digest_size=10).hexdigest()


def mined_pairs(settings: Any, path: Path, model_path: Path, answers: Sequence,
                log: Callable[[str], None] = print) -> NLIPairs:
    """The mined pairs of one file for the model at ``model_path`` (cached in the run's checkpoint folder).

    ``settings`` is the run's ``TrainSettings``; ``answers`` the judged answers training may read (their
    short answers are candidate names; for the judged-answer file itself, its facts)."""
    from cns_core.config import project_path
    from cns_core.models.embeddings import get_embedder

    cache = settings.checkpoint_path / "mined" / f"{path.name}.{_cache_key(settings, path, model_path)}.jsonl.gz"
    if cache.is_file():
        return read_pairs_cache(cache)
    facts, said = _facts_of(path, answers, settings.seed)
    probe = settings.mining.probe
    keep = ProbeFilter.from_file(project_path(probe) if probe else None)
    facts = [f for f in facts if keep.keeps(f.texts())]
    if len(facts) > settings.mining.max_facts:
        rng = np.random.default_rng(settings.seed)
        facts = [facts[i] for i in np.sort(rng.choice(len(facts), settings.mining.max_facts, replace=False))]
    names = [f.value for f in facts if f.kind == "name"] + [s for s in said if value_kind(s) == "name"]
    names = [n for n in dict.fromkeys(names) if keep.keeps(n)]
    log(f"{path.name}: {len(facts)} facts, {len(names)} candidate names")
    neighbours = NameNeighbours(names, get_embedder().encode)
    from cns_core.models.nli import TransformersNLI

    import torch

    # int8 on a CPU: the filter ranks swaps, it needs the model's leaning, not its third decimal
    on_gpu = settings.device != "cpu" and torch.cuda.is_available()
    verifier = TransformersNLI(str(model_path), batch_size=64, max_length=settings.max_length, device=settings.device,
                               precision="fp32" if on_gpu else "int8")
    pairs = mine_pairs(facts, verifier.predict, neighbours, settings.mining.method(), seed=settings.seed,
                       source=f"associations:{path.name}", log=log)
    write_pairs_cache(cache, pairs)
    return pairs
