"""What the dashboard pages need from the library, without Streamlit.

Pages only arrange widgets; everything they compute goes through here so it can
be tested without a browser: the bundled examples, the session's SNO library
and current SNO (with the one fallback to a default example every page uses),
the weights in force, and turning the Author form's tables into a validated SNO.

Session state is passed in as a plain mutable mapping (Streamlit's
``st.session_state`` is one); the key names are the ``KEY_*`` constants below.
"""

from __future__ import annotations

import json
import math
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Mapping, MutableMapping

from cns_core.config import PROJECT_ROOT
from cns_core.critics.base import CRITIC_NAMES, CriticContext, CriticResult
from cns_core.scoring import load_profiles
from cns_core.sno import SNO, SNOValidationError, load_snos, parse_snos

__all__ = [
    "KEY_LIBRARY",
    "KEY_CURRENT",
    "KEY_PROFILE",
    "KEY_WEIGHTS",
    "KEY_JUDGE_TURNS",
    "DEFAULT_PROFILE",
    "examples_dir",
    "load_examples",
    "ensure_library",
    "current_sno",
    "select_sno",
    "add_snos",
    "current_profile",
    "current_weights",
    "FormResult",
    "is_blank",
    "sno_from_tables",
    "parse_upload",
    "PopulationPipeline",
]

# ----- session-state keys (documented for every page in dashboard.py) -----------
KEY_LIBRARY = "cns_library"        # dict[str, SNO]: every SNO this session knows, by display label
KEY_CURRENT = "cns_current"        # str: label of the current SNO in the library
KEY_PROFILE = "cns_profile"        # str: the chosen weight profile (config/profiles.yaml)
KEY_WEIGHTS = "cns_weights"        # dict[str, float] | None: custom weights from the Weights page
KEY_JUDGE_TURNS = "cns_judge_turns"  # list[dict]: turns sent to the judge in this session

DEFAULT_PROFILE = "default"


def examples_dir() -> Path:
    return PROJECT_ROOT / "examples"


@lru_cache(maxsize=4)
def _examples_from(folder: str, stamp: tuple[tuple[str, int], ...]) -> dict[str, SNO]:
    out: dict[str, SNO] = {}
    for name, _ in stamp:
        path = Path(folder) / name
        try:
            snos = load_snos(path)
        except SNOValidationError:
            continue  # a broken example is the critic-pipeline tests' business, not a page crash
        for i, sno in enumerate(snos):
            label = sno.title or sno.id
            if label in out:
                label = f"{label} ({path.stem}{'' if len(snos) == 1 else f' #{i + 1}'})"
            out[label] = sno
    return out


def load_examples(folder: Path | None = None) -> dict[str, SNO]:
    """The bundled example SNOs by label (title, else id), in file-name order.

    Cached on the folder's file names and modification times, so an edited
    example is picked up on the next call and an unchanged folder costs a stat.
    """
    folder = folder or examples_dir()
    files = sorted(p for p in folder.glob("*") if p.suffix.lower() in (".json", ".yaml", ".yml")) if folder.is_dir() else []
    stamp = tuple((p.name, p.stat().st_mtime_ns) for p in files)
    return dict(_examples_from(str(folder), stamp))


def ensure_library(state: MutableMapping[str, Any], examples: Mapping[str, SNO]) -> dict[str, SNO]:
    """The session's SNO library, seeded with the examples on first use."""
    library = state.get(KEY_LIBRARY)
    if not isinstance(library, dict):
        library = dict(examples)
        state[KEY_LIBRARY] = library
    return library


def current_sno(state: MutableMapping[str, Any], examples: Mapping[str, SNO]) -> tuple[str, SNO]:
    """The current SNO and its label, falling back to the first example.

    This is the single fallback every page relies on: a page opened directly,
    before anything was chosen, shows the default example instead of an empty state.
    Raises ``LookupError`` only when there is no SNO at all (no examples, nothing loaded).
    """
    library = ensure_library(state, examples)
    label = state.get(KEY_CURRENT)
    if isinstance(label, str) and label in library:
        return label, library[label]
    if not library:
        raise LookupError("No SNO loaded and no bundled example found in examples/. "
                          "Load or build one on the Author page.")
    label = next(iter(library))
    state[KEY_CURRENT] = label
    return label, library[label]


def select_sno(state: MutableMapping[str, Any], label: str, sno: SNO | None = None) -> str:
    """Make ``label`` the current SNO (adding ``sno`` to the library under it when given).

    Other pages (the Corpus page among them) call this to open an SNO on every page.
    """
    library = state.setdefault(KEY_LIBRARY, {})
    if sno is not None:
        library[label] = sno
    if label not in library:
        raise KeyError(f"no SNO labelled {label!r} in this session")
    state[KEY_CURRENT] = label
    return label


def add_snos(state: MutableMapping[str, Any], snos: Iterable[SNO], source: str) -> list[str]:
    """Add loaded SNOs under unique labels ``title · source``; returns the labels."""
    library = state.setdefault(KEY_LIBRARY, {})
    labels = []
    for sno in snos:
        base = f"{sno.title or sno.id} · {source}"
        label, n = base, 2
        while label in library and library[label].content_hash() != sno.content_hash():
            label, n = f"{base} ({n})", n + 1
        library[label] = sno
        labels.append(label)
    return labels


def current_profile(state: Mapping[str, Any], profiles: Mapping[str, Mapping[str, float]] | None = None) -> str:
    profiles = profiles if profiles is not None else load_profiles()
    name = state.get(KEY_PROFILE)
    return name if isinstance(name, str) and name in profiles else (
        DEFAULT_PROFILE if DEFAULT_PROFILE in profiles else next(iter(profiles)))


def current_weights(state: Mapping[str, Any], profiles: Mapping[str, Mapping[str, float]] | None = None
                    ) -> tuple[dict[str, float], str]:
    """The weights in force and where they come from (a profile name or ``"custom"``)."""
    profiles = profiles if profiles is not None else load_profiles()
    custom = state.get(KEY_WEIGHTS)
    if isinstance(custom, dict) and custom and sum(custom.values()) > 0:
        return {c: float(custom.get(c, 0.0)) for c in CRITIC_NAMES}, "custom"
    name = current_profile(state, profiles)
    return dict(profiles[name]), name


# ----- the Author page ------------------------------------------------------------
@dataclass(frozen=True)
class FormResult:
    """The SNO built from the form, or every problem found (each ``field: message``)."""

    data: dict[str, Any]
    sno: SNO | None
    problems: list[str]


def is_blank(value: Any) -> bool:
    """An editor cell left empty: None, NaN (pandas' empty number) or only whitespace."""
    return value is None or (isinstance(value, float) and math.isnan(value)) or (
        isinstance(value, str) and not value.strip())


def _clean_rows(rows: Iterable[Mapping[str, Any]], fields: tuple[str, ...]) -> list[dict[str, Any]]:
    """Drop rows left entirely blank (a data editor's spare row); drop blank optional cells."""
    out = []
    for row in rows:
        cells = {f: row.get(f) for f in fields}
        if all(is_blank(v) for v in cells.values()):
            continue
        out.append({f: (v.strip() if isinstance(v, str) else v) for f, v in cells.items() if not is_blank(v)})
    return out


def sno_from_tables(sno_id: str, title: str, hypothesis: str | None, claims: Iterable[Mapping[str, Any]],
                    relations: Iterable[Mapping[str, Any]], evidence: Iterable[Mapping[str, Any]]) -> FormResult:
    """Validate the Author form: tables of claims, relations and evidence become an SNO.

    Validation is the same as for files (:func:`cns_core.sno.parse_snos`), so the
    form and an upload report problems with the same field paths.
    """
    data: dict[str, Any] = {"id": (sno_id or "").strip(), "title": (title or "").strip(),
                            "hypothesis": (hypothesis or "").strip(),
                            "claims": _clean_rows(claims, ("id", "text", "role")),
                            "relations": _clean_rows(relations, ("id", "source", "target", "kind", "attack_type")),
                            "evidence": _clean_rows(evidence, ("id", "text", "source", "validity"))}
    for ev in data["evidence"]:
        if isinstance(ev.get("validity"), str):
            try:
                ev["validity"] = float(ev["validity"])
            except ValueError:
                pass  # left as text: validation names the field
    try:
        sno = parse_snos(json.dumps(data), name="form", fmt="json")[0]
    except SNOValidationError as exc:
        return FormResult(data, None, exc.problems)
    return FormResult(data, sno, [])


def parse_upload(name: str, content: bytes) -> tuple[list[SNO], list[str]]:
    """An uploaded JSON/YAML file: its SNOs, or every problem found (``field: message``)."""
    try:
        return parse_snos(content, name=name), []
    except SNOValidationError as exc:
        return [], exc.problems


# ----- the dashboard's pipeline ------------------------------------------------------
class PopulationPipeline:
    """A critic pipeline whose default context compares novelty with a reference set of SNOs.

    Without a population the Novelty critic calls every SNO maximally novel, which
    tells a demo audience nothing; the dashboard uses the bundled examples as the
    reference (an example leaves its own row out through ``population_ids``). An
    explicit context passed by the caller wins. Everything else is the wrapped
    :class:`cns_core.pipeline.CriticPipeline`, so its cache serves every page.
    """

    def __init__(self, pipeline: Any, reference: Mapping[str, SNO]):
        self._pipeline = pipeline
        self._reference = list(reference.values())
        self._context: CriticContext | None = None
        self._lock = threading.Lock()

    @property
    def pipeline(self) -> Any:
        return self._pipeline

    def default_context(self) -> CriticContext:
        with self._lock:
            if self._context is None:
                import numpy as np

                from cns_core.critics.novelty import sno_embedding
                from cns_core.models import get_embedder

                ctx = CriticContext(embedder=self._pipeline.embedder or get_embedder())
                rows = [sno_embedding(s, ctx)[0] for s in self._reference]
                population = np.vstack(rows).astype(np.float32) if rows else None
                self._context = CriticContext(population=population, embedder=ctx.embedder,
                                              extra={"population_ids": [s.id for s in self._reference]})
            return self._context

    def run_critics(self, sno: SNO, context: CriticContext | None = None) -> dict[str, CriticResult]:
        return self._pipeline.run_critics(sno, context if context is not None else self.default_context())

    def evaluate(self, sno: SNO, weights: Any = "default", context: CriticContext | None = None) -> Any:
        return self._pipeline.evaluate(sno, weights, context if context is not None else self.default_context())

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pipeline, name)
