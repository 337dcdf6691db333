"""The learned Logic critic's model, f_GNN(G; theta): a small message-passing network in plain torch.

Input: the reasoning graph of an SNO. Node features are the claim's MiniLM embedding plus its
role (proponent, opponent, none), whether it is the hypothesis, its length and degrees, and its
cosine to the hypothesis; edge features are the relation kind (support, rebut, undercut), the
cosine and word overlap of the two claims and whether the edge reaches the hypothesis. The NLI
model is *not* read, so the critic does not change when the NLI is retrained.

Two or three layers pass messages along and against the edges (mean of a small MLP of the
neighbour's state and the edge); a readout of mean, max and the hypothesis' state with a few
graph-level numbers feeds two heads: ``flaw`` (logit that the graph is a sound argument rather
than a flawed copy) and ``quality`` (logit of how people rank the argument within its topic).
The score is ``mix * sigmoid(flaw) + (1 - mix) * sigmoid(quality)`` in [0, 1].

A model folder holds ``config.json`` (architecture, ``mix``, the embedder it was trained with)
and ``model.safetensors``; :func:`load_logic_model` checks both and raises
:class:`~cns_core.models.errors.ModelUnavailableError` naming what is wrong.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch
from torch import nn

from cns_core.models.errors import ModelUnavailableError
from cns_core.sno import SNO

__all__ = ["LogicGNNConfig", "GraphInput", "LogicGNN", "LogicModel", "graph_input", "collate",
           "load_logic_model", "save_logic_model", "NODE_EXTRA", "EDGE_DIM", "GRAPH_DIM"]

_ROLES = ("proponent", "opponent", "none")
NODE_EXTRA = 8    # role x3, hypothesis, length, in-degree, out-degree, cosine to the hypothesis
EDGE_DIM = 6      # support, rebut, undercut, cosine, word overlap, reaches the hypothesis
GRAPH_DIM = 4     # claims, relations, share of claims that reach the hypothesis, words (all log-scaled)
_WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class LogicGNNConfig:
    emb_dim: int = 384
    hidden: int = 64
    layers: int = 2
    dropout: float = 0.1
    mix: float = 0.5                  # weight of the flaw head in the score
    embedder: str = "minilm"          # the embedder the model was trained with
    extra: dict[str, Any] = field(default_factory=dict)   # training record (data, seed, figures)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> "LogicGNNConfig":
        known = set(cls.__dataclass_fields__)
        unknown = set(raw) - known
        if unknown:
            raise ValueError(f"unknown key(s) {sorted(unknown)}")
        cfg = cls(**raw)
        if not (1 <= cfg.layers <= 4 and cfg.hidden >= 1 and cfg.emb_dim >= 1 and 0.0 <= cfg.mix <= 1.0):
            raise ValueError("layers must be 1-4, hidden and emb_dim positive, mix in [0, 1]")
        return cfg


@dataclass
class GraphInput:
    """One graph as arrays: what the model reads, and what attribution removes parts of."""

    ids: list[str]                    # claim ids, node order
    x: np.ndarray                     # (n, emb_dim + NODE_EXTRA)
    edges: np.ndarray                 # (m, 2) source, target node indices
    edge_attr: np.ndarray             # (m, EDGE_DIM)
    relation_ids: list[str]           # relation id of each edge
    hyp: int                          # node index of the hypothesis
    graph_attr: np.ndarray            # (GRAPH_DIM,)


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def graph_input(sno: SNO, vectors: np.ndarray, *, drop_claim: str | None = None,
                drop_relation: str | None = None) -> GraphInput:
    """Features of ``sno``'s reasoning graph; ``vectors`` holds one unit embedding per claim, in claim order.

    ``drop_claim`` / ``drop_relation`` leave one claim (with its relations) or one relation out, for
    leave-one-out attribution (the hypothesis is never dropped).
    """
    g = sno.graph
    index_of = {c.id: i for i, c in enumerate(sno.claims)}
    keep = [c for c in sno.claims if c.id != drop_claim or c.id == sno.hypothesis]
    ids = [c.id for c in keep]
    local = {cid: k for k, cid in enumerate(ids)}
    vec = np.asarray(vectors, dtype=np.float32)[[index_of[c] for c in ids]]
    edges, eattr, rel_ids = [], [], []
    words = {c.id: _words(c.text) for c in keep}
    for u, v, d in g.edges(data=True):
        if u not in local or v not in local or d.get("relation") == drop_relation and drop_relation is not None:
            continue
        a, b = local[u], local[v]
        wu, wv = words[u], words[v]
        overlap = len(wu & wv) / max(1, len(wu | wv))
        kind = d.get("kind")
        undercut = d.get("attack_type") == "undercut"
        edges.append((a, b))
        eattr.append([float(kind == "support"), float(kind == "attack" and not undercut), float(undercut),
                      float(vec[a] @ vec[b]), overlap, float(v == sno.hypothesis)])
        rel_ids.append(str(d.get("relation") or ""))
    n = len(ids)
    e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    indeg = np.bincount(e[:, 1], minlength=n) if len(e) else np.zeros(n)
    outdeg = np.bincount(e[:, 0], minlength=n) if len(e) else np.zeros(n)
    hyp = local[sno.hypothesis]
    lengths = np.array([len(sno.claims_by_id[c].text.split()) for c in ids], dtype=np.float32)
    extra = np.zeros((n, NODE_EXTRA), dtype=np.float32)
    for k, cid in enumerate(ids):
        role = sno.claims_by_id[cid].role
        extra[k, _ROLES.index(role) if role in _ROLES else 2] = 1.0
    extra[hyp, 3] = 1.0
    extra[:, 4] = np.log1p(lengths) / 4.0
    extra[:, 5] = np.log1p(indeg)
    extra[:, 6] = np.log1p(outdeg)
    extra[:, 7] = vec @ vec[hyp]
    # share of claims from which the hypothesis can be reached (an argument hangs together)
    reach = {hyp}
    incoming: dict[int, list[int]] = {}
    for a, b in e.tolist():
        incoming.setdefault(b, []).append(a)
    stack = [hyp]
    while stack:
        for a in incoming.get(stack.pop(), ()):
            if a not in reach:
                reach.add(a)
                stack.append(a)
    graph_attr = np.array([math.log1p(n) / 3.0, math.log1p(len(e)) / 3.0, len(reach) / n,
                           math.log1p(float(lengths.sum())) / 6.0], dtype=np.float32)
    return GraphInput(ids, np.concatenate([vec, extra], axis=1), e,
                      np.asarray(eattr, dtype=np.float32).reshape(-1, EDGE_DIM), rel_ids, hyp, graph_attr)


@dataclass
class Batch:
    x: torch.Tensor
    edges: torch.Tensor
    edge_attr: torch.Tensor
    graph_of: torch.Tensor            # (n_total,) graph index of each node
    hyp: torch.Tensor                 # (graphs,) global node index of each hypothesis
    graph_attr: torch.Tensor
    graphs: int


def collate(items: Sequence[GraphInput]) -> Batch:
    xs, es, eas, gof, hyps, gas = [], [], [], [], [], []
    offset = 0
    for k, item in enumerate(items):
        n = item.x.shape[0]
        xs.append(item.x)
        es.append(item.edges + offset)
        eas.append(item.edge_attr)
        gof.append(np.full(n, k, dtype=np.int64))
        hyps.append(item.hyp + offset)
        gas.append(item.graph_attr)
        offset += n
    return Batch(torch.from_numpy(np.concatenate(xs)), torch.from_numpy(np.concatenate(es)).long(),
                 torch.from_numpy(np.concatenate(eas)), torch.from_numpy(np.concatenate(gof)),
                 torch.tensor(hyps, dtype=torch.long), torch.from_numpy(np.stack(gas)), len(items))


def _mean_into(size: int, index: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    total = torch.zeros(size, values.shape[1], dtype=values.dtype).index_add_(0, index, values)
    count = torch.zeros(size, dtype=values.dtype).index_add_(0, index, torch.ones_like(index, dtype=values.dtype))
    return total / count.clamp(min=1.0).unsqueeze(1)


class _Layer(nn.Module):
    def __init__(self, hidden: int, dropout: float):
        super().__init__()
        self.incoming = nn.Sequential(nn.Linear(2 * hidden + EDGE_DIM, hidden), nn.ReLU())
        self.outgoing = nn.Sequential(nn.Linear(2 * hidden + EDGE_DIM, hidden), nn.ReLU())
        self.update = nn.Linear(3 * hidden, hidden)
        self.norm = nn.LayerNorm(hidden)
        self.drop = nn.Dropout(dropout)

    def forward(self, h: torch.Tensor, edges: torch.Tensor, edge_attr: torch.Tensor) -> torch.Tensor:
        n = h.shape[0]
        src, dst = edges[:, 0], edges[:, 1]
        # what argues about a claim (src -> dst) and what the claim argues about
        m_in = self.incoming(torch.cat([h[src], h[dst], edge_attr], dim=1))
        m_out = self.outgoing(torch.cat([h[dst], h[src], edge_attr], dim=1))
        agg_in = _mean_into(n, dst, m_in)
        agg_out = _mean_into(n, src, m_out)
        return self.norm(h + self.drop(torch.relu(self.update(torch.cat([h, agg_in, agg_out], dim=1)))))


class LogicGNN(nn.Module):
    """Message passing over the reasoning graph, then two graph-level heads (flaw, quality)."""

    def __init__(self, cfg: LogicGNNConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Sequential(nn.Linear(cfg.emb_dim + NODE_EXTRA, cfg.hidden), nn.ReLU(),
                                   nn.Dropout(cfg.dropout))
        self.layers = nn.ModuleList(_Layer(cfg.hidden, cfg.dropout) for _ in range(cfg.layers))
        readout = 3 * cfg.hidden + GRAPH_DIM
        self.flaw = nn.Sequential(nn.Linear(readout, cfg.hidden), nn.ReLU(), nn.Linear(cfg.hidden, 1))
        self.quality = nn.Sequential(nn.Linear(readout, cfg.hidden), nn.ReLU(), nn.Linear(cfg.hidden, 1))

    def forward(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.embed(batch.x)
        for layer in self.layers:
            h = layer(h, batch.edges, batch.edge_attr)
        mean = _mean_into(batch.graphs, batch.graph_of, h)
        mx = torch.full((batch.graphs, h.shape[1]), -1e4, dtype=h.dtype).scatter_reduce(
            0, batch.graph_of.unsqueeze(1).expand_as(h), h, reduce="amax", include_self=True)
        pooled = torch.cat([mean, mx, h[batch.hyp], batch.graph_attr], dim=1)
        return self.flaw(pooled).squeeze(1), self.quality(pooled).squeeze(1)


_PREDICT_LOCK = threading.Lock()


class LogicModel:
    """A loaded model, ready to score graphs (eval mode, no gradients).

    Inference runs on one torch thread: the network is tiny, and on a busy 2-core machine two threads
    made a 10-claim SNO's leave-one-out pass 15-20x slower (36 ms on one thread against 500-740 ms,
    load average 9). The process's thread count is restored afterwards (under a lock, so concurrent
    critics cannot leave it at one)."""

    def __init__(self, net: LogicGNN, path: Path | None = None, digest: str = ""):
        self.net = net.eval()
        self.cfg = net.cfg
        self.path = path
        self.digest = digest          # sha256 of the weights: names the model in cache keys and results

    @torch.no_grad()
    def predict(self, items: Sequence[GraphInput], batch_size: int = 256) -> np.ndarray:
        """``(len(items), 3)``: score, p(sound), quality, each in [0, 1]."""
        out = []
        with _PREDICT_LOCK:
            threads = torch.get_num_threads()
            torch.set_num_threads(1)
            try:
                for start in range(0, len(items), batch_size):
                    flaw, quality = self.net(collate(items[start:start + batch_size]))
                    p, q = torch.sigmoid(flaw), torch.sigmoid(quality)
                    out.append(torch.stack([self.cfg.mix * p + (1 - self.cfg.mix) * q, p, q], dim=1).numpy())
            finally:
                torch.set_num_threads(threads)
        return np.concatenate(out) if out else np.zeros((0, 3), dtype=np.float32)


def save_logic_model(net: LogicGNN, folder: Path) -> Path:
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(asdict(net.cfg), indent=2, sort_keys=True) + "\n",
                                        encoding="utf-8")
    save_file({k: v.detach().contiguous() for k, v in net.state_dict().items()}, str(folder / "model.safetensors"))
    return folder


def load_logic_model(folder: str | Path) -> LogicModel:
    """Load a model folder, or raise :class:`ModelUnavailableError` saying what is missing or broken."""
    from safetensors.torch import load as load_bytes

    folder = Path(folder)
    hint = "Run `cns train-logic` to build it, or set logic.model to null in config/critics.yaml."
    cfg_path, weights = folder / "config.json", folder / "model.safetensors"
    if not cfg_path.is_file() or not weights.is_file():
        raise ModelUnavailableError("logic model", f"{folder} lacks config.json or model.safetensors", hint)
    try:
        cfg = LogicGNNConfig.from_dict(json.loads(cfg_path.read_text(encoding="utf-8")))
    except (ValueError, TypeError) as exc:
        raise ModelUnavailableError("logic model", f"{cfg_path}: {exc}", hint) from None
    blob = weights.read_bytes()
    try:
        net = LogicGNN(cfg)
        net.load_state_dict(load_bytes(blob))
    except Exception as exc:  # a truncated or mismatched file must name itself, not crash the critic
        raise ModelUnavailableError("logic model", f"{weights}: cannot load the weights ({type(exc).__name__}: "
                                    f"{str(exc)[:200]})", hint) from None
    return LogicModel(net, folder, hashlib.sha256(blob).hexdigest())
