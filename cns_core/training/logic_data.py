"""Training data for the learned Logic critic (:mod:`cns_core.models.logic_gnn`).

Two kinds of example, both SNOs:

* **sound vs flawed graphs**: the gold argument graphs of ``arg_microtexts_en``, ``abstrct_train``
  and ``cdcp_train`` are sound; flawed copies are made from them as the CNS spec lists (a premise
  swapped in from another text, a premise restating the claim it supports, a support turned into
  an attack or back, a claim left without support, relations rewired at random). Texts are split
  (by hash of corpus and id) before copies are made, so no text is on both sides.
* **people's judgements**: ``ibm_argq30k`` (one-sentence arguments, quality ``WA``, topic splits)
  and ``webis_argquality20`` (longer web-debate arguments, Logical Quality; a share of its topics held
  out by hash), drafted to SNOs with the public :func:`cns_core.text.draft_snos` and cached as JSON
  lines outside the repository. The arguments people ranked at the top and at the bottom of their
  topic are also *real* sound and unsound examples for the flaw head (:func:`mark_extremes`), so
  that it does not learn soundness from synthetic corruptions alone.

Everything here is deterministic for a given seed.
"""

from __future__ import annotations

import csv
import hashlib
import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from cns_core.sno import SNO

__all__ = ["FLAW_TYPES", "GOLD_CORPORA", "JUDGED_CORPORA", "GENRES", "Example", "text_split", "held_topics",
           "load_gold", "make_flawed", "flawed_copies", "JudgedText", "read_ibm", "read_webis", "drafted",
           "percentile_within", "mark_extremes"]

FLAW_TYPES: tuple[str, ...] = ("relevance", "circular", "flip", "unsupported", "rewire")
GOLD_CORPORA: tuple[str, ...] = ("microtexts", "abstrct", "cdcp")
JUDGED_CORPORA: tuple[str, ...] = ("ibm", "webis")
GENRES: tuple[str, ...] = GOLD_CORPORA + JUDGED_CORPORA


@dataclass
class Example:
    """One training or evaluation graph: ``sound`` 1/0 for the flaw task, ``quality`` in [0, 1] or None."""

    sno: SNO
    corpus: str
    text_id: str
    flaw: str = "none"               # none or one of FLAW_TYPES
    sound: float | None = None
    quality: float | None = None
    topic: str = ""
    meta: dict[str, Any] = field(default_factory=dict)


def text_split(corpus: str, text_id: str, held_out: float = 0.2) -> str:
    """``train`` or ``test`` by a stable hash of the text (never by position, never random)."""
    h = int(hashlib.sha256(f"{corpus}/{text_id}".encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    return "test" if h < held_out else "train"


def held_topics(topics: Iterable[str], share: float) -> set[str]:
    """The ``share`` of ``topics`` held out of training, chosen by a stable hash of each topic (so the same
    topics are held out on every machine, whatever the order they are read in)."""
    ordered = sorted(set(topics), key=lambda t: hashlib.sha256(t.encode("utf-8")).hexdigest())
    return set(ordered[:round(share * len(ordered))])


def load_gold(data_dir: Path) -> list[Example]:
    """The gold graphs with at least one relation, as sound examples."""
    from cns_core.formats import import_path
    from cns_core.formats.cdcp import read_cdcp

    results: list[tuple[str, Any]] = []
    results += [("microtexts", r) for r in import_path("microtexts", data_dir / "arg_microtexts_en" / "corpus_en",
                                                       evidence_rule="none")]
    for path in sorted((data_dir / "abstrct_train").rglob("*.ann")):
        results.append(("abstrct", _abstrct(path)))
    for path in sorted((data_dir / "cdcp_train").glob("*.ann.json")):
        try:
            results.append(("cdcp", read_cdcp(path, evidence_rule="none")))
        except ValueError:
            continue
    out = []
    for corpus, res in results:
        if res.ok and res.sno.relations and len(res.sno.claims) >= 2:
            out.append(Example(res.sno, corpus, f"{Path(res.file).parent.name}/{res.sno.id}", sound=1.0))
    return out


def _abstrct(path: Path) -> Any:
    """An AbstRCT abstract through the brat importer (which reads its Support / Attack / Partial-Attack)."""
    from cns_core.formats import ImportResult
    from cns_core.formats.brat import read_brat

    try:
        return read_brat(path, evidence_rule="none")
    except ValueError as exc:
        return ImportResult(file=str(path), error=exc)  # type: ignore[arg-type]


# ----- flawed copies --------------------------------------------------------

def _rebuild(sno: SNO, claims: list[dict], relations: list[dict], flaw: str) -> SNO:
    ids = {c["id"] for c in claims}
    rel_ids = {r["id"] for r in relations if r.get("id")}
    keep = [r for r in relations if r["source"] in ids and (r["target"] in ids or r["target"] in rel_ids)]
    data = {"id": f"{sno.id}~{flaw}", "hypothesis": sno.hypothesis, "claims": claims, "relations": keep}
    return SNO.model_validate(data)


def _claims(sno: SNO) -> list[dict]:
    return [{"id": c.id, "text": c.text, "role": c.role} for c in sno.claims]


def _relations(sno: SNO) -> list[dict]:
    return [{"id": r.id, "source": r.source, "target": r.target, "kind": r.kind,
             **({"attack_type": r.attack_type} if r.attack_type else {})} for r in sno.relations]


def _supporters(sno: SNO) -> list[str]:
    return sorted({r.source for r in sno.relations if r.kind == "support"})


def _relevance(sno: SNO, rng: random.Random, pool: Sequence[str]) -> SNO | None:
    """Half the supporting premises (at least one) get the text of a claim from another text."""
    sup = _supporters(sno)
    if not sup or not pool:
        return None
    swap = set(rng.sample(sup, max(1, len(sup) // 2)))
    claims = [dict(c, text=rng.choice(pool)) if c["id"] in swap else c for c in _claims(sno)]
    return _rebuild(sno, claims, _relations(sno), "relevance")


def _restate(text: str, rng: random.Random) -> str:
    words = text.split()
    if len(words) > 6:
        i = rng.randrange(len(words))
        words = words[:i] + words[i + 1:]
    lead = rng.choice(["", "", "In other words, ", "Clearly, ", "That is, ", "As we know, "])
    body = " ".join(words)
    return lead + (body[:1].lower() + body[1:] if lead else body)


def _circular(sno: SNO, rng: random.Random, pool: Sequence[str]) -> SNO | None:
    """A premise restates (nearly word for word) the claim it supports; sometimes the loop is closed too."""
    supports = [r for r in sno.relations if r.kind == "support" and r.target in sno.claims_by_id]
    if not supports:
        return None
    rel = rng.choice(supports)
    target_text = sno.claims_by_id[rel.target].text
    claims = [dict(c, text=_restate(target_text, rng)) if c["id"] == rel.source else c for c in _claims(sno)]
    relations = _relations(sno)
    if rng.random() < 0.5:
        relations.append({"id": "circ", "source": rel.target, "target": rel.source, "kind": "support"})
    return _rebuild(sno, claims, relations, "circular")


def _flip(sno: SNO, rng: random.Random, pool: Sequence[str]) -> SNO | None:
    """About a third of the claim-to-claim relations (at least one) change kind."""
    candidates = [i for i, r in enumerate(sno.relations) if r.target in sno.claims_by_id]
    if not candidates:
        return None
    chosen = set(rng.sample(candidates, max(1, len(candidates) // 3)))
    relations = []
    for i, r in enumerate(_relations(sno)):
        if i in chosen:
            r = {k: v for k, v in r.items() if k != "attack_type"}
            r["kind"] = "attack" if r["kind"] == "support" else "support"
        relations.append(r)
    return _rebuild(sno, _claims(sno), relations, "flip")


def _unsupported(sno: SNO, rng: random.Random, pool: Sequence[str]) -> SNO | None:
    """A claim loses every premise under it (its supporters and what argues about them): a missing warrant.
    The hypothesis is chosen half the time, which can leave a bare assertion."""
    g = sno.graph
    supported = sorted({r.target for r in sno.relations if r.kind == "support" and r.target in sno.claims_by_id})
    if not supported:
        return None
    target = sno.hypothesis if sno.hypothesis in supported and rng.random() < 0.5 else rng.choice(supported)
    removed: set[str] = set()
    stack = [u for u, _, d in g.in_edges(target, data=True) if d["kind"] == "support"]
    while stack:
        node = stack.pop()
        if node in removed or node == sno.hypothesis or node == target:
            continue
        removed.add(node)
        stack.extend(u for u, _ in g.in_edges(node))
    claims = [c for c in _claims(sno) if c["id"] not in removed]
    return _rebuild(sno, claims, _relations(sno), "unsupported")


def _rewire(sno: SNO, rng: random.Random, pool: Sequence[str]) -> SNO | None:
    """About 40% of the relations (at least one) point at a random other claim."""
    ids = [c.id for c in sno.claims]
    if len(ids) < 3:
        return None
    rels = _relations(sno)
    chosen = rng.sample(range(len(rels)), max(1, int(0.4 * len(rels))))
    for i in chosen:
        r = rels[i]
        options = [c for c in ids if c not in (r["source"], r["target"])]
        r.pop("attack_type", None)
        r["target"] = rng.choice(options)
    seen, unique = set(), []
    for r in rels:
        if (r["source"], r["target"]) not in seen and r["source"] != r["target"]:
            seen.add((r["source"], r["target"]))
            unique.append(r)
    return _rebuild(sno, _claims(sno), unique, "rewire")


_FLAWS: dict[str, Callable[[SNO, random.Random, Sequence[str]], SNO | None]] = {
    "relevance": _relevance, "circular": _circular, "flip": _flip, "unsupported": _unsupported, "rewire": _rewire}


def make_flawed(sno: SNO, flaw: str, rng: random.Random, pool: Sequence[str] = ()) -> SNO | None:
    """A flawed copy of ``sno`` (None when the graph has nothing the flaw can act on).
    ``pool``: claim texts from *other* texts, for the relevance swap."""
    try:
        return _FLAWS[flaw](sno, rng, pool)
    except ValueError:      # a copy that is not a valid SNO is skipped, not guessed at
        return None


def flawed_copies(sound: Sequence[Example], seed: int) -> list[Example]:
    """One flawed copy per flaw type for every sound example. The relevance pool of an example holds
    claims of other texts from the same corpus and the same split only."""
    rng = random.Random(seed)
    pools: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for ex in sound:
        key = (ex.corpus, text_split(ex.corpus, ex.text_id))
        pools.setdefault(key, []).extend((ex.text_id, c.text) for c in ex.sno.claims)
    out = []
    for ex in sound:
        pool_all = pools[(ex.corpus, text_split(ex.corpus, ex.text_id))]
        pool = [t for tid, t in rng.sample(pool_all, min(200, len(pool_all))) if tid != ex.text_id]
        for flaw in FLAW_TYPES:
            copy = make_flawed(ex.sno, flaw, rng, pool)
            if copy is not None:
                out.append(Example(copy, ex.corpus, ex.text_id, flaw=flaw, sound=0.0))
    return out


# ----- texts judged by people ---------------------------------------------

@dataclass(frozen=True)
class JudgedText:
    corpus: str          # ibm or webis
    text_id: str
    topic: str
    split: str           # ibm: train / dev; webis: all
    text: str
    quality: float       # IBM WA (0-1) or Webis Logical Quality (z-score)
    extra: dict[str, float] = field(default_factory=dict)


def read_ibm(data_dir: Path) -> list[JudgedText]:
    path = data_dir / "ibm_argq30k" / "arg_quality_rank_30k.csv"
    with path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    return [JudgedText("ibm", f"ibm{i}", r["topic"], r["set"], r["argument"], float(r["WA"]))
            for i, r in enumerate(rows)]


def read_webis(data_dir: Path, arguments_only: bool = True) -> list[JudgedText]:
    path = data_dir / "webis_argquality20" / "webis-argquality20-arguments.csv"
    with path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    out = []
    for i, r in enumerate(rows):     # ids by row: Argument ID repeats across discussions
        if arguments_only and r["Is Argument?"].strip().lower() != "true":
            continue
        try:
            quality = float(r["Logical Quality"])
            combined = float(r["Combined Quality"])
        except ValueError:
            continue
        out.append(JudgedText("webis", f"webis{i}", r["Topic ID"], "all", r["Premise"], quality,
                              {"combined": combined}))
    return out


def drafted(texts: Sequence[JudgedText], cache: Path, batch: int = 64,
            progress: Callable[[int, int], None] | None = None) -> dict[str, SNO]:
    """``text_id -> SNO`` drafted with :func:`cns_core.text.draft_snos`, cached as JSON lines in ``cache``
    (appended batch by batch, so an interrupted run continues). Texts the drafter refuses are left out."""
    from cns_core.text import draft_snos

    done: dict[str, SNO] = {}
    if cache.is_file():
        for line in cache.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if row.get("sno"):
                done[row["id"]] = SNO.model_validate(row["sno"])
            else:
                done[row["id"]] = None  # type: ignore[assignment]
    todo = [t for t in texts if t.text_id not in done]
    cache.parent.mkdir(parents=True, exist_ok=True)
    with cache.open("a", encoding="utf-8") as fh:
        for start in range(0, len(todo), batch):
            chunk = todo[start:start + batch]
            try:
                drafts = draft_snos([t.text for t in chunk], sno_ids=[t.text_id for t in chunk])
                pairs = [(t, d.sno) for t, d in zip(chunk, drafts)]
            except ValueError:   # one bad text: draft the chunk one by one
                pairs = []
                for t in chunk:
                    try:
                        pairs.append((t, draft_snos([t.text], sno_ids=[t.text_id])[0].sno))
                    except ValueError:
                        pairs.append((t, None))
            for t, sno in pairs:
                done[t.text_id] = sno
                fh.write(json.dumps({"id": t.text_id, "sno": sno.to_data() if sno else None}) + "\n")
            fh.flush()
            if progress:
                progress(start + len(chunk), len(todo))
    return {k: v for k, v in done.items() if v is not None}


def percentile_within(values: Sequence[float], groups: Sequence[str]) -> list[float]:
    """Each value's rank percentile (0..1, ties averaged) within its group: a topic's scale is its own."""
    by: dict[str, list[int]] = {}
    for i, g in enumerate(groups):
        by.setdefault(g, []).append(i)
    out = [0.5] * len(values)
    for idx in by.values():
        if len(idx) < 2:
            continue
        order = sorted(idx, key=lambda i: values[i])
        pos = 0
        while pos < len(order):
            end = pos
            while end + 1 < len(order) and values[order[end + 1]] == values[order[pos]]:
                end += 1
            rank = (pos + end) / 2 / (len(order) - 1)
            for k in order[pos:end + 1]:
                out[k] = rank
            pos = end + 1
    return out


def mark_extremes(examples: Iterable[Example], share: float) -> int:
    """Real arguments as soundness examples: those people ranked in the top ``share`` of their topic become
    sound (1), those in the bottom ``share`` unsound (0); the middle stays unlabelled for the flaw head.
    ``quality`` must already be the within-topic percentile. Returns how many were marked."""
    marked = 0
    for ex in examples:
        if ex.quality is None or share <= 0:
            continue
        if ex.quality >= 1.0 - share:
            ex.sound = 1.0
        elif ex.quality <= share:
            ex.sound, ex.flaw = 0.0, "judged"
        else:
            continue
        marked += 1
    return marked


def subsample_by_topic(texts: Iterable[JudgedText], per_topic: int, seed: int) -> list[JudgedText]:
    """At most ``per_topic`` texts of each topic, chosen with a fixed seed."""
    rng = random.Random(seed)
    by: dict[str, list[JudgedText]] = {}
    for t in texts:
        by.setdefault(t.topic, []).append(t)
    out = []
    for topic in sorted(by):
        items = by[topic]
        out.extend(items if len(items) <= per_topic else rng.sample(items, per_topic))
    return out
