"""A person's corrections of drafts, kept in the state folder, and which drafter is active.

When someone corrects a draft on the Author page (roles, relations, the main claim), the text and
the corrected SNO are kept as one JSON file under ``<state>/drafter/corrections/`` (one file per
text: correcting it again replaces it). ``cns train-drafter --corrections DIR`` (or the page's
button, which runs that command) refits the miner on the shipped genres plus these corrections,
each correction read as a gold graph (:func:`read_corrections`), and writes the refit under
``<state>/drafter/refit``, never over the shipped model. The refit drafts only while
``<state>/drafter/active.json`` names it; reverting deletes that file, and the shipped miner drafts again.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timezone
from pathlib import Path

from cns_core.bounds import InputTooLarge, read_bounded
from cns_core.config import replace_atomically, state_dir
from cns_core.sno import SNO
from cns_core.text.annotated import GoldText

__all__ = ["corrections_dir", "refit_dir", "record_correction", "read_corrections", "kept_correction",
           "active_refit", "activate_refit", "revert_to_shipped", "changed", "CorrectionError", "MAX_CORRECTION_BYTES"]

FORMAT = 1
MAX_CORRECTION_BYTES = 2_000_000


class CorrectionError(ValueError):
    """A correction file that cannot be read; the message names the file and the problem."""


def _drafter_dir(root: Path | None) -> Path:
    return (root if root is not None else state_dir()) / "drafter"


def corrections_dir(root: Path | None = None) -> Path:
    return _drafter_dir(root) / "corrections"


def refit_dir(root: Path | None = None) -> Path:
    return _drafter_dir(root) / "refit"


def _graph(sno: SNO) -> tuple[str, set[tuple[str, str, str]], dict[str, str]]:
    return (sno.hypothesis, {(r.source, r.target, r.kind) for r in sno.relations},
            {c.id: c.role for c in sno.claims})


def changed(drafted: SNO, corrected: SNO) -> bool:
    """Whether the person changed a role, a relation, a claim's text or the main claim."""
    texts = ([c.text for c in drafted.claims], [c.text for c in corrected.claims])
    return _graph(drafted) != _graph(corrected) or texts[0] != texts[1]


def _correction_path(text: str, root: Path | None) -> Path:
    return corrections_dir(root) / f"{hashlib.blake2b(text.encode('utf-8'), digest_size=8).hexdigest()}.json"


def record_correction(text: str, drafted: SNO, corrected: SNO, root: Path | None = None) -> Path | None:
    """Keep ``corrected`` with its text (None when nothing was changed); returns the file written."""
    if not changed(drafted, corrected):
        return None
    path = _correction_path(text, root)
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"format": FORMAT, "saved": datetime.now(timezone.utc).isoformat(timespec="seconds"), "text": text,
              "drafter": drafted.metadata.get("drafter", ""), "drafted": drafted.model_dump(mode="json"),
              "corrected": corrected.model_dump(mode="json")}
    with replace_atomically(path) as tmp:
        tmp.write_text(json.dumps(record, indent=1), encoding="utf-8")
    return path


def _gold(path: Path) -> GoldText:
    try:
        record = json.loads(read_bounded(path, MAX_CORRECTION_BYTES).decode("utf-8"))
    except InputTooLarge as exc:
        raise CorrectionError(f"{path.name}: {exc}") from exc
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CorrectionError(f"{path.name}: not a readable JSON correction ({type(exc).__name__}: {exc})") from exc
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        raise CorrectionError(f"{path.name}: format {record.get('format') if isinstance(record, dict) else None!r}, "
                              f"this code reads {FORMAT}")
    text = record.get("text")
    if not isinstance(text, str) or not text.strip():
        raise CorrectionError(f"{path.name}: text: missing or empty")
    try:
        sno = SNO.model_validate(record.get("corrected"))
    except ValueError as exc:
        raise CorrectionError(f"{path.name}: corrected: not a valid SNO ({str(exc).splitlines()[0]})") from exc
    index = {c.id: k for k, c in enumerate(sno.claims)}
    relations = sorted({(index[u], index[v], d["kind"]) for u, v, d in sno.graph.edges(data=True)
                        if u in index and v in index})
    return GoldText("corrections", path.stem, text, [c.text for c in sno.claims], relations,
                    frozenset({index[sno.hypothesis]}) if sno.hypothesis in index else frozenset())


def kept_correction(text: str, root: Path | None = None) -> tuple[SNO, str] | None:
    """The person's corrected SNO of exactly this text and when it was kept, or None (none kept, or a file that
    cannot be read: drafting then goes on as if there were none). A refit learns from every correction, but the
    miner's weights move little for one text; the text itself drafts as corrected from then on."""
    path = _correction_path(text, root)
    if not path.is_file():
        return None
    try:
        record = json.loads(read_bounded(path, MAX_CORRECTION_BYTES).decode("utf-8"))
        if record.get("format") != FORMAT or record.get("text") != text:
            return None
        return SNO.model_validate(record.get("corrected")), str(record.get("saved", ""))
    except (InputTooLarge, OSError, UnicodeDecodeError, ValueError, AttributeError):
        return None


def read_corrections(folder: Path) -> list[GoldText]:
    """Every correction in ``folder`` as a gold text (name order); :class:`CorrectionError` names a bad file."""
    if not folder.is_dir():
        raise CorrectionError(f"{folder}: no such folder of corrections")
    return [_gold(path) for path in sorted(folder.glob("*.json"))]


def _active_file(root: Path | None) -> Path:
    return _drafter_dir(root) / "active.json"


def active_refit(root: Path | None = None) -> Path | None:
    """The refit folder when it is the active drafter, else None (the shipped miner drafts)."""
    file = _active_file(root)
    if not file.is_file():
        return None
    folder = refit_dir(root)
    return folder if (folder / "miner.json").is_file() else None


def activate_refit(root: Path | None = None) -> None:
    """Make the refit under the state folder the drafter (after ``cns train-drafter --corrections``)."""
    file = _active_file(root)
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(json.dumps({"model": "refit", "since": datetime.now(timezone.utc).isoformat(timespec="seconds")}),
                    encoding="utf-8")


def revert_to_shipped(root: Path | None = None) -> bool:
    """The shipped miner drafts again (the refit stays on disk); whether a refit was active."""
    file = _active_file(root)
    if file.is_file():
        file.unlink()
        return True
    return False
