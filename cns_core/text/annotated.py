"""Annotated argument texts: the training and evaluation data of the argument miner.

Three genres, each read from its own format in ``<data>/`` (see ``../shared/data/README.md``):

* ``microtexts``: 112 short argumentative texts (Peldszus & Stede); every unit is argumentative,
  one central claim, supports and attacks (an undercut counts at the claim it finally attacks,
  as the SNO's reasoning graph reads it).
* ``cdcp``: 581 user comments on a consumer-protection rule (Park & Cardie); propositions with
  support links only, no single main claim, many propositions linked to nothing.
* ``abstrct``: 400 randomized-trial abstracts (Mayer et al.); MajorClaim / Claim / Premise,
  support and attack; background and method sentences are not argumentative.

Spans are compared as :mod:`benchmarks/extract.py` always compared them: two spans match when
they share at least half the word tokens of the longer one (:func:`align`).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["GoldText", "GraphScore", "GENRES", "read_genre", "read_microtexts", "read_cdcp", "read_abstrct",
           "tokens", "overlap", "align"]

GENRES: tuple[str, ...] = ("microtexts", "cdcp", "abstrct")

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


@dataclass
class GoldText:
    """One annotated text: its units (argumentative spans), their relations, and the main claim(s).

    ``relations`` are ``(source, target, kind)`` over unit indices, kind ``support`` or ``attack``;
    ``main`` holds the indices of the units the annotators marked as the main claim (empty where
    the genre marks none).
    """

    genre: str
    name: str
    text: str
    units: list[str]
    relations: list[tuple[int, int, str]] = field(default_factory=list)
    main: frozenset[int] = frozenset()

    @property
    def sources(self) -> set[int]:
        return {s for s, _, _ in self.relations}

    @property
    def linked(self) -> set[int]:
        return {s for s, _, _ in self.relations} | {t for _, t, _ in self.relations}


def tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def overlap(a: str, b: str) -> float:
    """The share of the longer span's word tokens the two spans share (as a multiset); 0 for an empty one."""
    ta, tb = Counter(tokens(a)), Counter(tokens(b))
    if not ta or not tb:
        return 0.0
    shared = sum((ta & tb).values())
    return shared / max(sum(ta.values()), sum(tb.values()))


def align(drafted: list[str], gold: list[str], threshold: float = 0.5) -> dict[int, int]:
    """One-to-one matching of drafted to gold spans sharing at least ``threshold`` of their tokens, best first."""
    scored = []
    for i, d in enumerate(drafted):
        for j, g in enumerate(gold):
            share = overlap(d, g)
            if share >= threshold:
                scored.append((share, i, j))
    out: dict[int, int] = {}
    used: set[int] = set()
    for _, i, j in sorted(scored, key=lambda row: (-row[0], row[1], row[2])):
        if i not in out and j not in used:
            out[i] = j
            used.add(j)
    return out


def _gold(genre: str, name: str, text: str, sno, main_ids: set[str]) -> GoldText:
    """An imported SNO as gold: its claims in order, its reasoning graph's edges, its main claim(s)."""
    index = {c.id: k for k, c in enumerate(sno.claims)}
    relations = sorted({(index[u], index[v], d["kind"]) for u, v, d in sno.graph.edges(data=True)})
    return GoldText(genre, name, text, [c.text for c in sno.claims], relations,
                    frozenset(index[m] for m in main_ids))


def read_microtexts(folder: Path) -> list[GoldText]:
    """The English microtexts, read through the project's importer (the reasoning graph is the gold)."""
    from cns_core.formats.microtexts import read_microtext

    out = []
    for xml in sorted(folder.glob("micro_*.xml")):
        sno = read_microtext(xml).sno
        out.append(_gold("microtexts", xml.stem, xml.with_suffix(".txt").read_text(encoding="utf-8"), sno,
                         {sno.hypothesis}))
    return out


def read_cdcp(folder: Path) -> list[GoldText]:
    """CDCP comments through the project's importer: propositions, ``reasons`` and ``evidences`` as supports."""
    from cns_core.formats.cdcp import read_cdcp as import_cdcp

    out = []
    for ann_path in sorted(folder.glob("*.ann.json")):
        name = ann_path.name.split(".")[0]
        sno = import_cdcp(ann_path, evidence_rule="none").sno
        out.append(_gold("cdcp", name, ann_path.with_name(name + ".txt").read_text(encoding="utf-8"), sno, set()))
    return out


def read_abstrct(folder: Path) -> list[GoldText]:
    """AbstRCT abstracts through the brat importer: Attack and Partial-Attack are attacks, MajorClaims the main."""
    from cns_core.formats.brat import read_brat

    out = []
    for ann_path in sorted(folder.rglob("*.ann")):
        sno = read_brat(ann_path, evidence_rule="none").sno
        majors = {u for u, kind in sno.metadata["unit_types"].items() if kind == "MajorClaim"}
        out.append(_gold("abstrct", ann_path.stem, ann_path.with_suffix(".txt").read_text(encoding="utf-8"), sno,
                         majors))
    return out


def read_genre(genre: str, data: Path) -> list[GoldText]:
    """The training texts of one genre under the shared data folder ``data``."""
    readers = {
        "microtexts": lambda: read_microtexts(data / "arg_microtexts_en" / "corpus_en"),
        "cdcp": lambda: read_cdcp(data / "cdcp_train"),
        "abstrct": lambda: read_abstrct(data / "abstrct_train"),
    }
    if genre not in readers:
        raise ValueError(f"genre: must be one of {', '.join(GENRES)} (got {genre!r})")
    texts = readers[genre]()
    if not texts:
        raise FileNotFoundError(f"no {genre} texts under {data} (set CNS_DATA_DIR or --data)")
    return texts


@dataclass
class GraphScore:
    """Drafted SNOs against gold texts: main claim, units and relations (labelled and unlabelled)."""

    texts: int = 0
    main_texts: int = 0
    main_hits: int = 0
    unit_tp: int = 0
    unit_pred: int = 0
    unit_gold: int = 0
    rel_tp: int = 0
    rel_tp_unlabelled: int = 0
    rel_pred: int = 0
    rel_gold: int = 0

    def add(self, drafted, gold: GoldText) -> None:
        """Score one drafted SNO; relations are read as its reasoning graph reads them."""
        claims = list(drafted.claims)
        match = align([c.text for c in claims], gold.units)
        to_gold = {claims[i].id: j for i, j in match.items()}
        self.texts += 1
        if gold.main:
            self.main_texts += 1
            self.main_hits += to_gold.get(drafted.hypothesis) in gold.main
        self.unit_tp += len(match)
        self.unit_pred += len(claims)
        self.unit_gold += len(gold.units)
        drafted_edges = {(to_gold.get(u), to_gold.get(v), d["kind"]) for u, v, d in drafted.graph.edges(data=True)}
        gold_edges = set(gold.relations)
        self.rel_tp += len(drafted_edges & gold_edges)
        self.rel_tp_unlabelled += len({(u, v) for u, v, _ in drafted_edges if u is not None}
                                      & {(u, v) for u, v, _ in gold_edges})
        self.rel_pred += drafted.graph.number_of_edges()
        self.rel_gold += len(gold_edges)

    @staticmethod
    def prf(tp: int, pred: int, gold: int) -> tuple[float, float, float]:
        p = tp / pred if pred else 0.0
        r = tp / gold if gold else 0.0
        return p, r, (2 * p * r / (p + r) if p + r else 0.0)

    @property
    def main_accuracy(self) -> float | None:
        return self.main_hits / self.main_texts if self.main_texts else None

    @property
    def units(self) -> tuple[float, float, float]:
        return self.prf(self.unit_tp, self.unit_pred, self.unit_gold)

    @property
    def relations(self) -> tuple[float, float, float]:
        return self.prf(self.rel_tp, self.rel_pred, self.rel_gold)

    @property
    def relations_unlabelled(self) -> tuple[float, float, float]:
        return self.prf(self.rel_tp_unlabelled, self.rel_pred, self.rel_gold)
