"""The opposites probe: does the verifier read an opposite as contradicted, and leave a restatement alone?

    .venv/bin/python benchmarks/opposites_probe.py                       # the shipped verifier
    .venv/bin/python benchmarks/opposites_probe.py --model DIR --model DIR2   # other verifier folders beside
    .venv/bin/python benchmarks/opposites_probe.py --json out.json

Each item of ``benchmarks/data/opposites_probe.yaml`` is a claim read against its evidence (after its
question, where it answers one), as the memory and the grounding critic read it. ``opposite`` items state the
opposite or another value of the same one-valued slot ("lost" for "won", "Sydney" for Canberra): each should be
read contradicted. ``open`` items restate, generalise, convert or add an unstated detail ("An English novelist."
for Jane Austen): none should be, since a red badge on them is the error that costs a reader most.

A claim counts as read contradicted at p(contradiction) >= 0.5. The figures of the verifier shipped when the
probe was written are in ``benchmarks/baselines/opposites_probe.json`` and printed beside.
A few seconds of CPU after the model loads.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from cns_core.cli.quiet import offline_and_quiet

offline_and_quiet()

import numpy as np  # noqa: E402

from cns_core.config import load_data_yaml  # noqa: E402
from cns_core.models.nli import CONTRADICTION  # noqa: E402
from cns_core.models.verifier import verifier_pair  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PROBE = ROOT / "benchmarks" / "data" / "opposites_probe.yaml"
BASELINE = ROOT / "benchmarks" / "baselines" / "opposites_probe.json"
KINDS = ("opposite", "open")
CONTRADICTED_AT = 0.5
_MAX_BYTES = 200_000
_MAX_ITEMS = 1000
_MAX_FIELD = 2000


@dataclass(frozen=True)
class ProbeItem:
    kind: str            # opposite (must be read contradicted) or open (must not be)
    evidence: str
    claim: str
    question: str = ""

    @property
    def pair(self) -> tuple[str, str]:
        return verifier_pair(self.evidence, self.claim, self.question or None)


def load_items(path: str | Path = PROBE) -> list[ProbeItem]:
    """The probe's items; a damaged file is a ValueError naming the item and the field."""
    data = load_data_yaml(path, _MAX_BYTES) or {}
    rows = data.get("items") if isinstance(data, dict) else None
    if not isinstance(rows, list) or not rows or len(rows) > _MAX_ITEMS:
        raise ValueError(f"{path}: items: expected a list of 1 to {_MAX_ITEMS} items")
    items = []
    for n, row in enumerate(rows, 1):
        if not isinstance(row, dict):
            raise ValueError(f"{path}: item {n}: expected a mapping of kind, evidence, claim and question")
        unknown = sorted(set(row) - {"kind", "evidence", "claim", "question"})
        if unknown:
            raise ValueError(f"{path}: item {n}: {', '.join(unknown)}: not a field of an item")
        if row.get("kind") not in KINDS:
            raise ValueError(f"{path}: item {n}: kind: must be one of {', '.join(KINDS)}")
        for field in ("evidence", "claim", "question"):
            value = row.get(field, "" if field == "question" else None)
            if not isinstance(value, str) or (field != "question" and not value.strip()) or len(value) > _MAX_FIELD:
                raise ValueError(f"{path}: item {n}: {field}: missing, empty, not text or over {_MAX_FIELD} "
                                 "characters")
        items.append(ProbeItem(row["kind"], row["evidence"].strip(), row["claim"].strip(),
                               row.get("question", "").strip()))
    return items


def probe_figures(predict: Callable[[Sequence[tuple[str, str]]], np.ndarray],
                  items: Sequence[ProbeItem]) -> dict[str, dict[str, object]]:
    """Per kind: how many items are read contradicted, the mean p(contradiction), and the items read wrongly
    (opposites not read contradicted, open items read contradicted)."""
    p = np.asarray(predict([item.pair for item in items]))[:, CONTRADICTION]
    out: dict[str, dict[str, object]] = {}
    for kind in KINDS:
        idx = [i for i, item in enumerate(items) if item.kind == kind]
        called = [i for i in idx if p[i] >= CONTRADICTED_AT]
        wrong = [i for i in idx if (i in called) != (kind == "opposite")]
        out[kind] = {"items": len(idx), "read_contradicted": len(called),
                     "mean_contradiction": round(float(np.mean(p[idx])), 3) if idx else None,
                     "read_wrongly": [f"{items[i].claim} | {items[i].evidence}" for i in wrong]}
    return out


def _line(label: str, figures: dict[str, dict[str, object]]) -> str:
    opposite, open_ = figures["opposite"], figures["open"]
    return (f"  {label:28} opposites read contradicted {opposite['read_contradicted']:>2} of {opposite['items']} "
            f"(all should be); open read contradicted {open_['read_contradicted']:>2} of {open_['items']} "
            f"(none should be)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", action="append", help="a verifier folder (repeatable; default: the shipped one)")
    parser.add_argument("--probe", default=str(PROBE), help="the probe's YAML file")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    parser.add_argument("--verbose", action="store_true", help="list the items each model reads wrongly")
    args = parser.parse_args(argv)
    try:
        items = load_items(args.probe)
    except ValueError as exc:
        print(f"opposites probe: {exc}", file=sys.stderr)
        return 2
    from cns_core.models import get_nli_backend
    from cns_core.models.nli import TransformersNLI

    models = {folder: TransformersNLI(folder) for folder in args.model} if args.model else \
        {"shipped": get_nli_backend()}
    figures = {label: probe_figures(model.predict, items) for label, model in models.items()}
    print(f"opposites probe ({len(items)} items; read contradicted at p >= {CONTRADICTED_AT}):")
    if BASELINE.is_file():
        before = json.loads(BASELINE.read_text(encoding="utf-8"))
        print(_line(f"baseline ({before['model']}, {before['date']})", before["figures"]))
    for label, found in figures.items():
        print(_line(label, found))
        if args.verbose:
            for kind in KINDS:
                for line in found[kind]["read_wrongly"]:
                    print(f"      {kind}: {line}")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
