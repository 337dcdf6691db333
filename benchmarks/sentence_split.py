"""Sentence splitting on the shared corpora: our regular expression beside pySBD, one run.

    python benchmarks/sentence_split.py [--data ../shared/data]

Each corpus gives texts whose sentence boundaries are known:

* microtexts: a text's EDUs (its gold segmentation); a sentence ends with the EDU
  that ends in . ! or ? (EDUs are clauses, so only those ends are sentence ends);
* AIF maps (DialAM-2024): each map's locutions in order, the speaker prefix
  removed; the transcripts carry no punctuation, so each locution gets a capital and
  a full stop and is one sentence (this measures over-splitting inside speech);
* Climate-FEVER: each claim's five evidence sentences, joined by a space.

Boundary F1: a boundary is the position (in the text with whitespace removed) after
which a sentence ends, the text's end left out; precision and recall are pooled over
all texts. "exact" is the share of texts split exactly as the gold.
"""

from __future__ import annotations

import argparse
import json
import re
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

try:   # the comparison needs the bench extra; our splitter is measured without it
    import pysbd
except ImportError:   # pragma: no cover
    pysbd = None

from cns_core.config import data_dir
from cns_core.text import split_sentences

DATA = data_dir()
_SENTENCE_END = re.compile(r"[.!?][\"'\u201d)\]]*\s*$")


@dataclass
class Score:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    exact: int = 0
    texts: int = 0
    seconds: float = 0.0

    def f1(self) -> tuple[float, float, float]:
        p = self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0
        r = self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0
        return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def boundaries(sentences: Iterable[str]) -> set[int]:
    ends, pos = set(), 0
    for s in sentences:
        pos += len(re.sub(r"\s+", "", s))
        ends.add(pos)
    ends.discard(pos)
    return ends


def microtexts(root: Path) -> list[list[str]]:
    docs = []
    for path in sorted((root / "arg_microtexts_en" / "corpus_en").glob("micro_*.xml")):
        sentences, current = [], []
        for edu in ET.parse(path).getroot().iter("edu"):
            current.append((edu.text or "").strip())
            if _SENTENCE_END.search(current[-1]):
                sentences.append(" ".join(current))
                current = []
        if current:
            sentences.append(" ".join(current))
        docs.append(sentences)
    return docs


def aif_maps(root: Path) -> list[list[str]]:
    docs = []
    for path in sorted((root / "aif_dialam2024_test_maps").glob("test_map*.json")):
        seen, sentences = set(), []
        for node in json.loads(path.read_text(encoding="utf-8"))["nodes"]:
            if node.get("type") != "L":
                continue
            text = node["text"].rsplit(": ", 1)[-1].strip()   # "Host: Speaker: words" -> "words"
            if not text or text in seen:
                continue
            seen.add(text)
            text = text[0].upper() + text[1:]
            sentences.append(text if _SENTENCE_END.search(text) else text + ".")
        docs.append(sentences)
    return docs


def climate_fever(root: Path) -> list[list[str]]:
    with open(root / "climate_fever" / "climate-fever.jsonl", encoding="utf-8") as fh:
        return [[e["evidence"].strip() for e in json.loads(line)["evidences"]] for line in fh if line.strip()]


def score(split: Callable[[str], list[str]], docs: list[list[str]]) -> Score:
    out = Score()
    start = time.perf_counter()
    for gold in docs:
        predicted = split(" ".join(gold))
        g, p = boundaries(gold), boundaries(predicted)
        out.tp += len(g & p)
        out.fp += len(p - g)
        out.fn += len(g - p)
        out.exact += g == p
        out.texts += 1
    out.seconds = time.perf_counter() - start
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args()
    splitters = {"ours (regex)": split_sentences}
    if pysbd is not None:
        splitters[f"pySBD {pysbd.__version__}"] = pysbd.Segmenter(language="en", clean=False).segment
    else:
        print("pySBD is not installed (pip install -e .[bench]): measuring ours alone")
    corpora = {"microtexts": microtexts(args.data), "AIF maps": aif_maps(args.data),
               "Climate-FEVER": climate_fever(args.data)}
    print(f"{'corpus':<14} {'texts':>6} {'sents':>6}  {'splitter':<14} {'P':>6} {'R':>6} {'F1':>6} {'exact':>6} "
          f"{'ms/text':>8}")
    for name, docs in corpora.items():
        sents = sum(len(d) for d in docs)
        for label, split in splitters.items():
            s = score(split, docs)
            p, r, f = s.f1()
            print(f"{name:<14} {s.texts:>6} {sents:>6}  {label:<14} {p:>6.3f} {r:>6.3f} {f:>6.3f} "
                  f"{s.exact / s.texts:>6.3f} {1000 * s.seconds / s.texts:>8.2f}")


if __name__ == "__main__":
    main()
