"""Drafting SNOs from text against the microtexts' own argument graphs, beside a positional baseline.

    python benchmarks/extract.py [--data ../shared/data] [--split test|dev|all] [--no-trust]

The 112 English microtexts (Peldszus & Stede): each text goes in as plain text, its
XML graph (imported by ``cns_core.formats.microtexts``) is the gold. The drafting rules
were developed on the *dev* half (the texts at even positions in file-name order) and
are reported on the *test* half (odd positions), which was not looked at while
developing; ``--split all`` adds the dev half back (then the figures are not held out).

Figures, per method:

* main claim: the drafted hypothesis matches the gold central claim;
* unit P/R/F1: drafted claims against gold ADUs, one-to-one;
* relation P/R/F1: a drafted relation matches a gold one with the same kind (support or
  attack) when its source and its target match theirs; relations are read as the SNO's
  reasoning graph reads them (an undercut counts at the claim it finally attacks);
* two spans match when they share at least half the word tokens of the longer one;
* Spearman correlation of the Trust Score (default profile, no population) of drafted
  vs gold SNOs; both get evidence by the importer's ``leaf_premises`` rule, so they are
  scored alike;
* texts/second of drafting alone (all texts in one call, so one NLI pass; models loaded before the
  clock starts).

Baselines (positional, no model): units are sentences; the main claim is the last
sentence of the introduction (the first paragraph) or the first sentence; each
paragraph's other sentences support its first sentence, which supports the main claim.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cns_core.config import data_dir  # noqa: E402
from cns_core.formats.base import leaf_premise_evidence  # noqa: E402
from cns_core.formats.microtexts import read_microtext  # noqa: E402
from cns_core.sno import SNO  # noqa: E402
from cns_core.text import draft_sno, draft_snos  # noqa: E402
from cns_core.text.segment import segment_units  # noqa: E402

DATA = data_dir()
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def overlap(a: str, b: str) -> float:
    """The share of the longer span's word tokens the two spans share (as a multiset); 0 for an empty one."""
    ta, tb = tokens(a), tokens(b)
    if not ta or not tb:
        return 0.0
    shared = sum(min(ta.count(w), tb.count(w)) for w in set(ta))
    return shared / max(len(ta), len(tb))


def align(drafted: list[str], gold: list[str]) -> dict[int, int]:
    """One-to-one matching of drafted to gold spans that share at least half their tokens, best overlap first."""
    scored = []
    for i, d in enumerate(drafted):
        for j, g in enumerate(gold):
            share = overlap(d, g)
            if share >= 0.5:
                scored.append((share, i, j))
    out: dict[int, int] = {}
    used: set[int] = set()
    for _, i, j in sorted(scored, reverse=True):
        if i not in out and j not in used:
            out[i] = j
            used.add(j)
    return out


def edges(sno: SNO) -> set[tuple[str, str, str]]:
    return {(u, v, d["kind"]) for u, v, d in sno.graph.edges(data=True)}


@dataclass
class Tally:
    main: int = 0
    texts: int = 0
    unit_tp: int = 0
    unit_pred: int = 0
    unit_gold: int = 0
    rel_tp: int = 0
    rel_pred: int = 0
    rel_gold: int = 0

    def add(self, drafted: SNO, gold: SNO) -> None:
        d_claims, g_claims = list(drafted.claims), list(gold.claims)
        match = align([c.text for c in d_claims], [c.text for c in g_claims])
        to_gold = {d_claims[i].id: g_claims[j].id for i, j in match.items()}
        self.texts += 1
        self.main += to_gold.get(drafted.hypothesis) == gold.hypothesis
        self.unit_tp += len(match)
        self.unit_pred += len(d_claims)
        self.unit_gold += len(g_claims)
        gold_edges = edges(gold)
        mapped = {(to_gold.get(u), to_gold.get(v), k) for u, v, k in edges(drafted)}
        self.rel_tp += len(mapped & gold_edges)
        self.rel_pred += len(edges(drafted))
        self.rel_gold += len(gold_edges)

    @staticmethod
    def prf(tp: int, pred: int, gold: int) -> tuple[float, float, float]:
        p = tp / pred if pred else 0.0
        r = tp / gold if gold else 0.0
        return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def positional(text: str, sno_id: str, *, main_rule: str) -> SNO:
    """The positional baseline: sentences, main claim by position, paragraphs support their first sentence."""
    units, _ = segment_units(text, clauses=False)   # the prose paragraphs' sentences
    sentences = [" ".join(u.text.split()) for u in units]
    first_of = [u.index for u in units if u.sentence_in_paragraph == 0]
    if main_rule == "intro_last":
        main = (first_of[1] - 1) if len(first_of) > 1 else len(sentences) - 1
    else:
        main = 0
    ids = [f"s{i + 1}" for i in range(len(sentences))]
    relations = []
    bounds = first_of + [len(sentences)]
    for p, start in enumerate(first_of):
        head = main if start <= main < bounds[p + 1] else start
        for i in range(start, bounds[p + 1]):
            if i != head:
                relations.append({"source": ids[i], "target": ids[head], "kind": "support"})
        if head != main:
            relations.append({"source": ids[head], "target": ids[main], "kind": "support"})
    return SNO.model_validate({"id": sno_id, "hypothesis": ids[main],
                               "claims": [{"id": i, "text": t} for i, t in zip(ids, sentences)],
                               "relations": relations})


def with_leaf_evidence(sno: SNO, name: str) -> SNO:
    data = sno.model_dump(mode="python")
    data["evidence"] = leaf_premise_evidence(data["claims"], data["relations"], sno.hypothesis, name)
    return SNO.model_validate(data)


def trust_scores(snos: list[SNO]) -> np.ndarray:
    from cns_core.pipeline import CriticPipeline

    pipeline = CriticPipeline(timeout_s=120)
    return np.array([pipeline.evaluate(s, "default").score.trust_score for s in snos])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--split", choices=("test", "dev", "all"), default="test")
    parser.add_argument("--no-trust", action="store_true", help="skip the Trust Score correlation (the slow part)")
    parser.add_argument("--show", type=int, default=0, help="print the first N drafts beside their gold")
    args = parser.parse_args()
    folder = args.data / "arg_microtexts_en" / "corpus_en"
    xmls = sorted(folder.glob("micro_*.xml"))
    if not xmls:
        sys.exit(f"no microtexts under {folder} (set --data or CNS_DATA_DIR)")
    chosen = {"dev": xmls[0::2], "test": xmls[1::2], "all": xmls}[args.split]
    texts = [x.with_suffix(".txt").read_text(encoding="utf-8") for x in chosen]
    gold = [read_microtext(x).sno for x in chosen]

    load_start = time.perf_counter()
    draft_sno("Warm up, because the models load once. Therefore it is warm.")
    load_s = time.perf_counter() - load_start
    start, cpu_start = time.perf_counter(), time.process_time()
    drafted = [d.sno for d in draft_snos(texts, sno_ids=[x.stem for x in chosen])]   # one NLI pass
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start

    methods: dict[str, list[SNO]] = {
        "drafted (ours)": drafted,
        "positional: intro's last sentence": [positional(t, x.stem, main_rule="intro_last")
                                              for t, x in zip(texts, chosen)],
        "positional: first sentence": [positional(t, x.stem, main_rule="first") for t, x in zip(texts, chosen)],
    }
    gold_trust = None if args.no_trust else trust_scores([with_leaf_evidence(g, g.id) for g in gold])
    print(f"microtexts, {args.split} split: {len(chosen)} texts "
          f"({'held out: the rules were developed on the dev half' if args.split == 'test' else 'NOT held out'})")
    print(f"{'method':<36} {'main':>6} {'unit P':>7} {'unit R':>7} {'unit F1':>7} {'rel P':>6} {'rel R':>6} "
          f"{'rel F1':>6} {'trust rho':>9}")
    for name, snos in methods.items():
        tally = Tally()
        for d, g in zip(snos, gold):
            tally.add(d, g)
        up, ur, uf = Tally.prf(tally.unit_tp, tally.unit_pred, tally.unit_gold)
        rp, rr, rf = Tally.prf(tally.rel_tp, tally.rel_pred, tally.rel_gold)
        rho = "-"
        if gold_trust is not None:
            scores = trust_scores([with_leaf_evidence(s, s.id) for s in snos])
            rho = f"{spearmanr(scores, gold_trust).statistic:.3f}"
        print(f"{name:<36} {tally.main / tally.texts:>6.3f} {up:>7.3f} {ur:>7.3f} {uf:>7.3f} {rp:>6.3f} {rr:>6.3f} "
              f"{rf:>6.3f} {rho:>9}")
    print(f"drafting speed: {len(chosen) / seconds:.1f} texts/s wall ({seconds:.1f} s for {len(chosen)} texts; "
          f"{cpu:.1f} s of CPU, {len(chosen) / cpu:.1f} texts per CPU-second; models loaded before: {load_s:.1f} s; "
          f"torch threads {__import__('torch').get_num_threads()}, {os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.1f})")
    for d, g, t in list(zip(drafted, gold, texts))[:args.show]:
        print("\n" + d.id, "|", " ".join(t.split()))
        print("  gold main:", g.hypothesis_text)
        print("  ours main:", d.hypothesis_text, "|", d.hypothesis_claim.metadata.get("why"))
        for r in d.relations:
            print(f"  ours {r.source}->{r.target} {r.kind} {r.attack_type or ''}: {r.metadata.get('why')}")
        for r in g.relations:
            print(f"  gold {r.source}->{r.target} {r.kind} {r.attack_type or ''}")
        print("  ours units:", [c.text for c in d.claims])
        print("  gold units:", [c.text for c in g.claims])


if __name__ == "__main__":
    main()
