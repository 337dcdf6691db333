"""Training the learned Logic critic (``cns train-logic``; settings in ``config/logic_train.yaml``).

Data (:mod:`cns_core.training.logic_data`): sound gold graphs and their flawed copies for the flaw
head, people's quality judgements (IBM train topics, Webis) for the quality head. Claim embeddings
come from the shipped MiniLM and are cached (by text hash) in ``cache_dir``, with the drafted SNOs,
so a second run only trains. Seeds are fixed; on 2 CPU cores a run takes a few minutes.
"""

from __future__ import annotations

import hashlib
import random
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np
import torch

from cns_core.config import ConfigError, data_dir, load_config, project_dir
from cns_core.metrics import roc_auc
from cns_core.training.logic_data import (FLAW_TYPES, Example, JudgedText, drafted, flawed_copies, load_gold,
                                        percentile_within, read_ibm, read_webis, subsample_by_topic, text_split)
from cns_core.models.logic_gnn import GraphInput, LogicGNN, LogicGNNConfig, LogicModel, collate, graph_input
from cns_core.sno import SNO

__all__ = ["LogicTrainSettings", "load_logic_settings", "EmbeddingCache", "TrainingData", "build_data",
           "train_logic", "flaw_auc"]


@dataclass(frozen=True)
class LogicTrainSettings:
    output: str = "models/logic-gnn"
    data_dir: str | None = None               # default: CNS_DATA_DIR
    cache_dir: str = "../cache/logic-train"   # embeddings and drafted SNOs (outside the repository)
    seed: int = 13
    epochs: int = 25
    batch_size: int = 64
    learning_rate: float = 2e-3
    weight_decay: float = 1e-4
    hidden: int = 64
    layers: int = 2
    dropout: float = 0.1
    mix: float = 0.5
    quality_weight: float = 8.0               # weight of the quality MSE (on a 0-1 scale) beside the flaw BCE
    ibm_per_topic: int = 60                   # IBM train arguments drafted per topic
    ibm_dev_per_topic: int = 150              # IBM dev arguments per topic (held out, for the figures)
    webis_per_topic: int = 15                 # Webis arguments drafted per topic (held out, for the benchmark)
    held_out: float = 0.2                     # share of gold texts held out for the flaw AUC
    threads: int = 1

    def path(self, value: str) -> Path:
        p = Path(value)
        return p if p.is_absolute() else project_dir() / p

    @property
    def data_path(self) -> Path:
        return Path(self.data_dir) if self.data_dir else data_dir()


def load_logic_settings(overrides: Mapping[str, Any] | None = None) -> LogicTrainSettings:
    """``config/logic_train.yaml`` with non-None ``overrides``; unknown keys are named."""
    raw = dict(load_config("logic_train") or {})
    raw.update({k: v for k, v in (overrides or {}).items() if v is not None})
    unknown = set(raw) - set(LogicTrainSettings.__dataclass_fields__)
    if unknown:
        raise ConfigError(f"logic_train.yaml: unknown setting(s) {sorted(unknown)}")
    return LogicTrainSettings(**raw)


class EmbeddingCache:
    """Claim vectors by text hash, kept in one ``.npz`` so training runs do not embed again."""

    def __init__(self, path: Path, embedder: Any):
        self.path, self.embedder = path, embedder
        self.vectors: dict[str, np.ndarray] = {}
        if path.is_file():
            with np.load(path) as z:
                self.vectors = dict(zip(z["keys"].tolist(), z["vectors"]))

    @staticmethod
    def key(text: str) -> str:
        return hashlib.blake2b(text.encode("utf-8"), digest_size=12).hexdigest()

    def ensure(self, texts: Iterable[str], progress: Callable[[int, int], None] | None = None) -> None:
        missing = list(dict.fromkeys(t for t in texts if self.key(t) not in self.vectors))
        step = 512
        for start in range(0, len(missing), step):
            chunk = missing[start:start + step]
            for t, v in zip(chunk, self.embedder.encode(chunk)):
                self.vectors[self.key(t)] = np.asarray(v, dtype=np.float32)
            if progress:
                progress(start + len(chunk), len(missing))
            if (start // step) % 4 == 3 or start + step >= len(missing):   # an interrupted run keeps most
                self.save()

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        keys = list(self.vectors)
        tmp = self.path.with_suffix(".tmp.npz")
        np.savez(tmp, keys=np.array(keys), vectors=np.stack([self.vectors[k] for k in keys]))
        tmp.replace(self.path)

    def of(self, sno: SNO) -> np.ndarray:
        return np.stack([self.vectors[self.key(c.text)] for c in sno.claims])


@dataclass
class TrainingData:
    gold: list[Example] = field(default_factory=list)          # sound and flawed, with text split
    judged: list[Example] = field(default_factory=list)        # quality examples (IBM train, Webis)
    ibm_dev: list[Example] = field(default_factory=list)       # never trained on
    webis: list[Example] = field(default_factory=list)         # all Webis (CV in the benchmark)


def _judged_examples(texts: Sequence[JudgedText], snos: Mapping[str, SNO]) -> list[Example]:
    kept = [t for t in texts if t.text_id in snos]
    ranks = percentile_within([t.quality for t in kept], [t.topic for t in kept])
    return [Example(snos[t.text_id], t.corpus, t.text_id, quality=r, topic=t.topic,
                    meta={"raw": t.quality, "words": len(t.text.split()), **t.extra})
            for t, r in zip(kept, ranks)]


def build_data(settings: LogicTrainSettings, log: Callable[[str], None] = print, *,
               webis: bool = True) -> TrainingData:
    """All examples, drafting what the cache lacks (Webis only when ``webis``: it is held out for evaluation)."""
    ddir, cache = settings.data_path, settings.path(settings.cache_dir)
    gold = load_gold(ddir)
    for ex in gold:
        ex.meta["split"] = text_split(ex.corpus, ex.text_id, settings.held_out)
    flawed = flawed_copies(gold, settings.seed)
    for ex in flawed:
        ex.meta["split"] = text_split(ex.corpus, ex.text_id, settings.held_out)
    log(f"gold graphs: {len(gold)} sound, {len(flawed)} flawed copies")
    ibm = read_ibm(ddir)
    ibm_train = subsample_by_topic([t for t in ibm if t.split == "train"], settings.ibm_per_topic, settings.seed)
    ibm_dev = subsample_by_topic([t for t in ibm if t.split == "dev"], settings.ibm_dev_per_topic, settings.seed)
    webis_texts = subsample_by_topic(read_webis(ddir), settings.webis_per_topic, settings.seed) if webis else []
    log(f"drafting (cached in {cache}): IBM {len(ibm_train)} train + {len(ibm_dev)} dev, Webis {len(webis_texts)}")
    ibm_snos = drafted(ibm_train + ibm_dev, cache / "drafted_ibm.jsonl")
    webis_snos = drafted(webis_texts, cache / "drafted_webis.jsonl") if webis else {}
    return TrainingData(gold=gold + flawed, judged=_judged_examples(ibm_train, ibm_snos),
                        ibm_dev=_judged_examples(ibm_dev, ibm_snos), webis=_judged_examples(webis_texts, webis_snos))


def examples_inputs(examples: Sequence[Example], emb: EmbeddingCache) -> list[GraphInput]:
    return [graph_input(ex.sno, emb.of(ex.sno)) for ex in examples]


def flaw_auc(examples: Sequence[Example], scores: Sequence[float]) -> dict[str, dict[str, float]]:
    """Per corpus and flaw type: AUC of ``scores`` for sound (1) over flawed (0) graphs."""
    out: dict[str, dict[str, float]] = {}
    for corpus in sorted({e.corpus for e in examples}):
        sound = [s for e, s in zip(examples, scores) if e.corpus == corpus and e.flaw == "none"]
        row = {}
        for flaw in FLAW_TYPES:
            bad = [s for e, s in zip(examples, scores) if e.corpus == corpus and e.flaw == flaw]
            row[flaw] = roc_auc(sound + bad, [True] * len(sound) + [False] * len(bad), missing=float("nan"))
        bad_all = [s for e, s in zip(examples, scores) if e.corpus == corpus and e.flaw != "none"]
        row["all"] = roc_auc(sound + bad_all, [True] * len(sound) + [False] * len(bad_all), missing=float("nan"))
        out[corpus] = row
    return out


@dataclass
class TrainResult:
    model: LogicModel
    report: dict[str, Any]


def train_logic(settings: LogicTrainSettings, data: TrainingData, emb: EmbeddingCache, *,
                log: Callable[[str], None] = print) -> TrainResult:
    """Train on the train split of the gold graphs (flaw head) and the IBM train topics (quality head).
    IBM dev topics, the held-out gold texts and all of Webis stay out, for the benchmark."""
    torch.manual_seed(settings.seed)
    rng = random.Random(settings.seed)
    if settings.threads:
        torch.set_num_threads(settings.threads)
    flaw_train = [e for e in data.gold if e.meta["split"] == "train"]
    quality_train = list(data.judged)
    examples = flaw_train + quality_train
    inputs = examples_inputs(examples, emb)
    sound = torch.tensor([e.sound if e.sound is not None else -1.0 for e in examples], dtype=torch.float32)
    quality = torch.tensor([e.quality if e.quality is not None else -1.0 for e in examples], dtype=torch.float32)
    n_sound = float((sound == 1).sum())
    n_flawed = float((sound == 0).sum())
    pos_weight = torch.tensor(n_flawed / max(1.0, n_sound))
    cfg = LogicGNNConfig(emb_dim=inputs[0].x.shape[1] - 8, hidden=settings.hidden, layers=settings.layers,
                         dropout=settings.dropout, mix=settings.mix)
    net = LogicGNN(cfg)
    opt = torch.optim.AdamW(net.parameters(), lr=settings.learning_rate, weight_decay=settings.weight_decay)
    steps_per_epoch = (len(examples) + settings.batch_size - 1) // settings.batch_size
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=settings.learning_rate,
                                                total_steps=settings.epochs * steps_per_epoch)
    bce = torch.nn.BCEWithLogitsLoss(pos_weight=pos_weight)
    start = time.time()
    for epoch in range(settings.epochs):
        net.train()
        order = list(range(len(examples)))
        rng.shuffle(order)
        total = 0.0
        for b in range(0, len(order), settings.batch_size):
            idx = order[b:b + settings.batch_size]
            flaw_logit, quality_logit = net(collate([inputs[i] for i in idx]))
            s, q = sound[idx], quality[idx]
            loss = torch.zeros(())
            has_s, has_q = s >= 0, q >= 0
            if has_s.any():
                loss = loss + bce(flaw_logit[has_s], s[has_s])
            if has_q.any():
                loss = loss + settings.quality_weight * torch.mean((torch.sigmoid(quality_logit[has_q]) - q[has_q]) ** 2)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += float(loss.detach()) * len(idx)
        log(f"epoch {epoch + 1}/{settings.epochs}: loss {total / len(examples):.4f} ({time.time() - start:.0f} s)")
    cfg = replace(cfg, extra={"seed": settings.seed, "epochs": settings.epochs,
                              "train_graphs": {"sound": int(n_sound), "flawed": int(n_flawed),
                                               "judged": len(quality_train)}})
    net.cfg = cfg
    model = LogicModel(net)
    report = {"settings": asdict(settings), "train_seconds": round(time.time() - start, 1),
              "train_graphs": cfg.extra["train_graphs"]}
    return TrainResult(model, report)


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman's rho of one topic (:func:`cns_core.metrics.spearman`); NaN where the topic cannot be ranked
    (fewer than 3 values or a constant side), so the mean over topics leaves it out."""
    from cns_core.metrics import spearman as rank_correlation

    if len(a) < 3 or len(set(a)) < 2 or len(set(b)) < 2:
        return float("nan")
    return rank_correlation(a, b)


def mean_topic_spearman(examples: Sequence[Example], scores: Sequence[float]) -> float:
    """Mean over topics of the Spearman correlation of ``scores`` with the examples' raw quality."""
    by: dict[str, list[int]] = {}
    for i, e in enumerate(examples):
        by.setdefault(e.topic, []).append(i)
    values = [spearman([scores[i] for i in idx], [examples[i].meta["raw"] for i in idx]) for idx in by.values()]
    values = [v for v in values if v == v]
    return float(np.mean(values)) if values else float("nan")


def embed_data(data: TrainingData, settings: LogicTrainSettings, embedder: Any = None,
               log: Callable[[str], None] = print) -> EmbeddingCache:
    """Every claim text of ``data`` in the embedding cache (the shipped MiniLM unless ``embedder`` given)."""
    if embedder is None:
        from cns_core.models import get_embedder

        embedder = get_embedder()
    emb = EmbeddingCache(settings.path(settings.cache_dir) / f"embeddings-{embedder.name}.npz", embedder)
    texts = [c.text for e in data.gold + data.judged + data.ibm_dev + data.webis for c in e.sno.claims]
    emb.ensure(texts, progress=lambda a, b: log(f"embedded {a}/{b} new claim texts"))
    return emb


def held_out_report(model: LogicModel, data: TrainingData, emb: EmbeddingCache) -> dict[str, Any]:
    """Flaw AUC on the held-out gold texts and Spearman with the IBM dev topics (never trained on)."""
    test = [e for e in data.gold if e.meta["split"] == "test"]
    flaw_scores = model.predict(examples_inputs(test, emb))[:, 1].tolist()
    dev_scores = model.predict(examples_inputs(data.ibm_dev, emb))[:, 0].tolist()
    return {"flaw_auc": flaw_auc(test, flaw_scores), "test_graphs": len(test),
            "ibm_dev_spearman": mean_topic_spearman(data.ibm_dev, dev_scores), "ibm_dev_texts": len(data.ibm_dev)}


def train_and_save(settings: LogicTrainSettings, log: Callable[[str], None] = print) -> dict[str, Any]:
    """The whole ``cns train-logic`` run: data, embeddings, training, held-out figures, files."""
    import json

    from cns_core.models.logic_gnn import save_logic_model

    data = build_data(settings, log, webis=False)
    emb = embed_data(data, settings, log=log)
    result = train_logic(settings, data, emb, log=log)
    report = {**result.report, "held_out": held_out_report(result.model, data, emb)}
    folder = save_logic_model(result.model.net, settings.path(settings.output))
    (folder / "training_report.json").write_text(json.dumps(report, indent=2, sort_keys=True) + "\n",
                                                 encoding="utf-8")
    return report
