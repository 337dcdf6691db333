"""Drafted claims that state a figure, grounded by the source they came with.

    python benchmarks/grounding_drafted.py [--data ../shared/data] [--abstracts 10]

Each AbstRCT abstract (name order, the first ``--abstracts``) is drafted with the abstract itself
pasted as its source (a page of about ten sentences), and so are the project's text example
(``examples/text/sugar_tax.md`` with its sources) and issue 42's essay (``tests/fixtures/text``).
For every drafted claim with a figure that a source sentence states, the grounding critic's verdict
is read twice: with the source's passages only (the evidence before issue 42) and with the source
sentence that states the figure added as its own evidence item (drafting now). The figures: claims
counted, share supported, mean p(supported).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cns_core.config import data_dir  # noqa: E402
from cns_core.critics.grounding import GroundingCritic  # noqa: E402
from cns_core.sno import SNO  # noqa: E402
from cns_core.text import SourceText, draft_sno  # noqa: E402
from cns_core.text.annotated import read_genre  # noqa: E402
from cns_core.text.stated import figures, stating_sentences  # noqa: E402


def cases(data: Path, abstracts: int) -> list[tuple[str, str, list[SourceText]]]:
    out = []
    for gold in sorted(read_genre("abstrct", data), key=lambda g: g.name)[:abstracts]:
        out.append(("abstracts", gold.text, [SourceText("the abstract", gold.text)]))
    example = ROOT / "examples" / "text"
    out.append(("README example", (example / "sugar_tax.md").read_text(encoding="utf-8"),
                [SourceText("sugar_tax_sources.txt", (example / "sugar_tax_sources.txt").read_text(encoding="utf-8"))]))
    fixture = ROOT / "tests" / "fixtures" / "text"
    out.append(("issue 42 essay", (fixture / "diesel_essay.md").read_text(encoding="utf-8"),
                [SourceText("pasted source", (fixture / "diesel_source.txt").read_text(encoding="utf-8"))]))
    return out


def without_stating(sno: SNO) -> SNO:
    data = sno.model_dump()
    data["evidence"] = [e for e in data["evidence"] if not e.get("metadata", {}).get("for_claims")]
    return SNO.model_validate(data)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=data_dir())
    parser.add_argument("--abstracts", type=int, default=10)
    args = parser.parse_args()
    critic = GroundingCritic()
    tally: dict[str, dict[str, list[float]]] = {}
    for group, text, sources in cases(args.data, args.abstracts):
        sno = draft_sno(text, sources=sources).sno
        stated = {cid for s in stating_sentences([(c.id, c.text) for c in sno.claims], sources) for cid in s.claims}
        checked = [c.id for c in sno.claims if c.id in stated]
        with_figures = [c.id for c in sno.claims if figures(c.text)]
        rows = tally.setdefault(group, {"before": [], "after": [], "figures": []})
        rows["figures"].append(len(with_figures))
        if not checked:
            continue
        for name, version in (("before", without_stating(sno)), ("after", sno)):
            claims = critic.evaluate(version).evidence["claims"]
            rows[name] += [claims[cid]["p_supported"] for cid in checked]
        print(f"{group}: {len(checked)} claim(s) with a stated figure; p(supported) before "
              f"{[round(p, 2) for p in rows['before'][-len(checked):]]}, now "
              f"{[round(p, 2) for p in rows['after'][-len(checked):]]}", flush=True)
    print("| texts | claims with a figure | of them stated by a source sentence | supported before | "
          "supported now | mean p(supported) before | now |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for group, rows in tally.items():
        before, after = np.array(rows["before"]), np.array(rows["after"])
        n = len(after)
        share = (lambda a: f"{(a >= 0.5).mean():.2f}" if n else "-")
        mean = (lambda a: f"{a.mean():.2f}" if n else "-")
        print(f"| {group} ({len(rows['figures'])}) | {sum(rows['figures'])} | {n} | {share(before)} | "
              f"{share(after)} | {mean(before)} | {mean(after)} |")


if __name__ == "__main__":
    main()
