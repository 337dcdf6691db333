"""Training the learned Logic critic (``cns train-logic``; settings in ``config/logic_train.yaml``).

Data (:mod:`cns_core.training.logic_data`), five genres: the gold argument graphs of microtexts,
AbstRCT and CDCP (sound) with their flawed copies for the flaw head; arguments people judged (IBM
train topics, Webis train topics) for the quality head, their best- and worst-ranked also as real
sound and unsound arguments for the flaw head. ``leave_out`` trains without whole genres, which is
how the benchmark measures the critic across genres. Claim embeddings come from the shipped MiniLM
and are cached (by text hash) in ``cache_dir``, with the drafted SNOs, so a second run only trains.
Seeds are fixed; on 2 CPU cores a run takes a few minutes once the cache is warm.
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
from cns_core.training.logic_data import (FLAW_TYPES, GENRES, JUDGED_CORPORA, Example, JudgedText, drafted,
                                         flawed_copies, held_topics, load_gold, mark_extremes, percentile_within,
                                         read_ibm, read_webis, subsample_by_topic, text_split)
from cns_core.models.logic_gnn import GraphInput, LogicGNN, LogicGNNConfig, LogicModel, collate, graph_input
from cns_core.sno import SNO

__all__ = ["LogicTrainSettings", "load_logic_settings", "EmbeddingCache", "TrainingData", "build_data",
           "train_logic", "flaw_auc", "judged_figures", "pairwise_agreement", "pearson", "held_out_report"]


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
    webis_per_topic: int = 200                # Webis arguments drafted per topic (all of them: at most ~90)
    webis_held_topics: float = 0.3            # share of Webis topics held out (by hash), for the figures
    judged_extremes: float = 0.1              # top / bottom share of a judged topic: real sound / unsound
    held_out: float = 0.2                     # share of gold texts held out for the flaw AUC
    leave_out: tuple[str, ...] = ()           # genres not trained on (the benchmark's cross-genre runs)
    threads: int = 1

    def __post_init__(self) -> None:
        unknown = set(self.leave_out) - set(GENRES)
        if unknown:
            raise ConfigError(f"logic_train.yaml: leave_out names unknown genre(s) {sorted(unknown)}; "
                              f"known: {list(GENRES)}")
        if not 0.0 <= self.judged_extremes < 0.5:
            raise ConfigError("logic_train.yaml: judged_extremes must be in [0, 0.5)")
        if not 0.0 < self.webis_held_topics < 1.0:
            raise ConfigError("logic_train.yaml: webis_held_topics must be in (0, 1)")
        object.__setattr__(self, "leave_out", tuple(self.leave_out))

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
    """Every example, each with ``meta["split"]`` (train / test); only train examples are ever trained on."""

    gold: list[Example] = field(default_factory=list)          # sound and flawed, split by text
    judged: list[Example] = field(default_factory=list)        # IBM (train / dev topics) and Webis (by topic)

    def of(self, genre: str, split: str) -> list[Example]:
        pool = self.judged if genre in JUDGED_CORPORA else self.gold
        return [e for e in pool if e.corpus == genre and e.meta.get("split") == split]

    @property
    def ibm_dev(self) -> list[Example]:
        return self.of("ibm", "test")

    @property
    def webis_test(self) -> list[Example]:
        return self.of("webis", "test")


def _judged_examples(texts: Sequence[JudgedText], snos: Mapping[str, SNO], split: Callable[[JudgedText], str],
                     extremes: float) -> list[Example]:
    kept = [t for t in texts if t.text_id in snos]
    ranks = percentile_within([t.quality for t in kept], [t.topic for t in kept])
    out = [Example(snos[t.text_id], t.corpus, t.text_id, quality=r, topic=t.topic,
                   meta={"raw": t.quality, "words": len(t.text.split()), "split": split(t), **t.extra})
           for t, r in zip(kept, ranks)]
    mark_extremes([e for e in out if e.meta["split"] == "train"], extremes)
    return out


def build_data(settings: LogicTrainSettings, log: Callable[[str], None] = print) -> TrainingData:
    """All examples of the five genres, drafting what the cache lacks."""
    ddir, cache = settings.data_path, settings.path(settings.cache_dir)
    gold = load_gold(ddir)
    flawed = flawed_copies(gold, settings.seed)
    for ex in gold + flawed:
        ex.meta["split"] = text_split(ex.corpus, ex.text_id, settings.held_out)
    log(f"gold graphs: {len(gold)} sound, {len(flawed)} flawed copies")
    ibm = read_ibm(ddir)
    ibm_train = subsample_by_topic([t for t in ibm if t.split == "train"], settings.ibm_per_topic, settings.seed)
    ibm_dev = subsample_by_topic([t for t in ibm if t.split == "dev"], settings.ibm_dev_per_topic, settings.seed)
    webis_texts = subsample_by_topic(read_webis(ddir), settings.webis_per_topic, settings.seed)
    webis_held = held_topics((t.topic for t in webis_texts), settings.webis_held_topics)
    log(f"drafting (cached in {cache}): IBM {len(ibm_train)} train + {len(ibm_dev)} dev, Webis {len(webis_texts)} "
        f"({len(webis_held)} topics held out)")
    ibm_snos = drafted(ibm_train + ibm_dev, cache / "drafted_ibm.jsonl")
    webis_snos = drafted(webis_texts, cache / "drafted_webis.jsonl")
    judged = (_judged_examples(ibm_train + ibm_dev, ibm_snos, lambda t: "test" if t.split == "dev" else "train",
                               settings.judged_extremes)
              + _judged_examples(webis_texts, webis_snos, lambda t: "test" if t.topic in webis_held else "train",
                                 settings.judged_extremes))
    return TrainingData(gold=gold + flawed, judged=judged)


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
    """Train on the train split of every genre not in ``settings.leave_out``: gold graphs and their copies
    (flaw head), judged arguments (quality head; their extremes the flaw head too). The test splits (held-out
    gold texts, IBM dev topics, held-out Webis topics) stay out, for the figures."""
    torch.manual_seed(settings.seed)
    rng = random.Random(settings.seed)
    if settings.threads:
        torch.set_num_threads(settings.threads)
    examples = [e for e in data.gold + data.judged
                if e.meta.get("split") == "train" and e.corpus not in settings.leave_out]
    if not examples:
        raise ValueError("nothing to train on: every genre is left out or has no train split")
    inputs = examples_inputs(examples, emb)
    sound = torch.tensor([e.sound if e.sound is not None else -1.0 for e in examples], dtype=torch.float32)
    quality = torch.tensor([e.quality if e.quality is not None else -1.0 for e in examples], dtype=torch.float32)
    genre_weight = _genre_weights(examples)
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
            s, q, w = sound[idx], quality[idx], genre_weight[idx]
            loss = torch.zeros(())
            has_s, has_q = s >= 0, q >= 0
            if has_s.any():
                loss = loss + bce(flaw_logit[has_s], s[has_s])
            if has_q.any():
                err = (torch.sigmoid(quality_logit[has_q]) - q[has_q]) ** 2
                loss = loss + settings.quality_weight * torch.sum(w[has_q] * err) / torch.sum(w[has_q])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += float(loss.detach()) * len(idx)
        log(f"epoch {epoch + 1}/{settings.epochs}: loss {total / len(examples):.4f} ({time.time() - start:.0f} s)")
    cfg = replace(cfg, extra={"seed": settings.seed, "epochs": settings.epochs,
                              "train_graphs": {"sound": int(n_sound), "flawed": int(n_flawed),
                                               "judged": sum(e.quality is not None for e in examples)},
                              "left_out": list(settings.leave_out)})
    net.cfg = cfg
    model = LogicModel(net)
    report = {"settings": asdict(settings), "train_seconds": round(time.time() - start, 1),
              "train_graphs": cfg.extra["train_graphs"]}
    return TrainResult(model, report)


def _genre_weights(examples: Sequence[Example]) -> torch.Tensor:
    """Each judged genre weighs the same in the quality loss, however many arguments it has: 3,000 one-sentence
    IBM arguments must not drown the longer web-debate ones, which are what users hold."""
    counts: dict[str, int] = {}
    for e in examples:
        if e.quality is not None:
            counts[e.corpus] = counts.get(e.corpus, 0) + 1
    return torch.tensor([1.0 / counts[e.corpus] if e.quality is not None else 0.0 for e in examples],
                        dtype=torch.float32)


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


def pairwise_agreement(scores: Sequence[float], quality: Sequence[float], topics: Sequence[str]) -> tuple[float, int]:
    """Share of within-topic pairs of differing quality where the higher score goes with the higher quality
    (a tie in score counts half), and the number of pairs: how a reader comparing two arguments would check."""
    agree, total = 0.0, 0
    by: dict[str, list[int]] = {}
    for i, t in enumerate(topics):
        by.setdefault(t, []).append(i)
    for idx in by.values():
        s = np.array([scores[i] for i in idx], dtype=np.float64)
        q = np.array([quality[i] for i in idx], dtype=np.float64)
        ds, dq = np.subtract.outer(s, s), np.subtract.outer(q, q)
        mask = np.triu(dq != 0, 1)
        agree += float(((np.sign(ds) == np.sign(dq)) & mask).sum() + 0.5 * ((ds == 0) & mask).sum())
        total += int(mask.sum())
    return (agree / total if total else float("nan")), total


def pearson(a: Sequence[float], b: Sequence[float]) -> float:
    """Pearson's r over all the items (NaN where a side is constant)."""
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.size < 2 or x.std() == 0 or y.std() == 0:
        return float("nan")
    return float(np.corrcoef(x, y)[0, 1])


def judged_figures(examples: Sequence[Example], scores: Sequence[float]) -> dict[str, float]:
    """How ``scores`` agree with people on judged arguments: mean per-topic Spearman, pooled Pearson and
    within-topic pairwise agreement with the raw quality."""
    raw = [e.meta["raw"] for e in examples]
    agree, pairs = pairwise_agreement(scores, raw, [e.topic for e in examples])
    return {"spearman": mean_topic_spearman(examples, scores), "pearson": pearson(scores, raw),
            "pairwise": agree, "pairs": pairs, "texts": len(examples)}


def embed_data(data: TrainingData, settings: LogicTrainSettings, embedder: Any = None,
               log: Callable[[str], None] = print) -> EmbeddingCache:
    """Every claim text of ``data`` in the embedding cache (the shipped MiniLM unless ``embedder`` given)."""
    if embedder is None:
        from cns_core.models import get_embedder

        embedder = get_embedder()
    emb = EmbeddingCache(settings.path(settings.cache_dir) / f"embeddings-{embedder.name}.npz", embedder)
    texts = [c.text for e in data.gold + data.judged for c in e.sno.claims]
    emb.ensure(texts, progress=lambda a, b: log(f"embedded {a}/{b} new claim texts"))
    return emb


def held_out_report(model: LogicModel, data: TrainingData, emb: EmbeddingCache) -> dict[str, Any]:
    """Per genre, on its test split only: flaw AUC of the gold corpora's held-out texts (sound against their
    flawed copies), agreement with people on the IBM dev topics and the held-out Webis topics."""
    test = [e for e in data.gold if e.meta["split"] == "test"]
    flaw_scores = model.predict(examples_inputs(test, emb))[:, 1].tolist() if test else []
    report: dict[str, Any] = {"flaw_auc": flaw_auc(test, flaw_scores), "test_graphs": len(test)}
    for genre in JUDGED_CORPORA:
        examples = data.of(genre, "test")
        if examples:
            report[genre] = judged_figures(examples, model.predict(examples_inputs(examples, emb))[:, 0].tolist())
    return report


def train_and_save(settings: LogicTrainSettings, log: Callable[[str], None] = print) -> dict[str, Any]:
    """The whole ``cns train-logic`` run: data, embeddings, training, held-out figures, files."""
    import json

    from cns_core.models.logic_gnn import save_logic_model

    data = build_data(settings, log)
    emb = embed_data(data, settings, log=log)
    result = train_logic(settings, data, emb, log=log)
    report = {**result.report, "held_out": held_out_report(result.model, data, emb)}
    folder = save_logic_model(result.model.net, settings.path(settings.output))
    (folder / "training_report.json").write_text(json.dumps(report, indent=2, sort_keys=True) + "\n",
                                                 encoding="utf-8")
    return report
