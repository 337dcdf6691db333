"""What an import came to, for the end of ``cns import``: counts per outcome and per cause.

Kept apart from the command so that any caller (a page, a script) can count a
folder's results the same way: documents imported whole, repaired (imported
with warnings) and refused, each warning and refusal counted by its cause.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Iterable

from cns_core.formats.base import ERROR_CAUSES, WARNING_CAUSES, ImportResult

__all__ = ["ImportSummary"]


@dataclass(frozen=True)
class ImportSummary:
    documents: int
    whole: int                    # imported with no warning
    repaired: int                 # imported with at least one warning
    refused: int
    warnings: Counter             # cause -> warnings
    refusals: Counter             # cause -> refused documents

    @classmethod
    def of(cls, results: Iterable[ImportResult]) -> "ImportSummary":
        results = list(results)
        imported = [r for r in results if r.ok]
        return cls(
            documents=len(results),
            whole=sum(1 for r in imported if not r.repaired),
            repaired=sum(1 for r in imported if r.repaired),
            refused=len(results) - len(imported),
            warnings=Counter(w.cause for r in imported for w in r.warnings),
            refusals=Counter(r.error.cause for r in results if not r.ok and r.error is not None),
        )

    @property
    def imported(self) -> int:
        return self.whole + self.repaired

    def lines(self, *, listed: bool = False) -> list[str]:
        """The summary as text lines; ``listed``: the warnings were printed one by one above."""
        n_warnings = sum(self.warnings.values())
        out = [f"{self.documents} document(s): {self.imported} imported ({self.whole} whole, {self.repaired} "
               f"repaired with {n_warnings} warning(s)), {self.refused} refused"]
        if self.warnings:
            out.append("warnings by cause" + ("" if listed else " (-v lists them)") + ":")
            out += _by_cause(self.warnings, WARNING_CAUSES)
        if self.refusals:
            out.append("refused by cause (the error lines above name file, element and problem):")
            out += _by_cause(self.refusals, ERROR_CAUSES)
        return out


def _by_cause(counts: Counter, meanings: dict[str, str]) -> list[str]:
    width = max(len(c) for c in counts)
    return [f"  {cause:<{width}}  {n:>4}  {meanings.get(cause, '')}".rstrip()
            for cause, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
