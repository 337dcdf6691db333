"""What the dashboard pages need from the library, without Streamlit.

Pages only arrange widgets; everything they compute goes through here so it can
be tested without a browser: the bundled examples, the session's SNO library
and current SNO (with the one fallback to a default example every page uses),
the weights in force (:class:`WeightsInForce`, the one source every page and the sidebar
read), the novelty population, and turning the Author form's tables into a validated SNO.

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

from cns_core.config import project_path
from cns_core.critics.base import CRITIC_NAMES, CriticContext, CriticResult
from cns_core.engine.population import Population
from cns_core.scoring import blend, load_profiles
from cns_core.sno import SNO, SNOValidationError, load_snos, parse_snos

__all__ = [
    "EXAMPLE_HINTS",
    "blend_rest",
    "blend_note",
    "example_hint",
    "KEY_LIBRARY",
    "KEY_CURRENT",
    "KEY_PROFILE",
    "KEY_WEIGHTS",
    "KEY_BLEND",
    "KEY_POPULATION",
    "KEY_JUDGE_TURNS",
    "KEY_JUDGE_PAIRS",
    "KEY_GATE",
    "GateInForce",
    "gate_in_force",
    "set_gate",
    "BLEND_FROM",
    "BLEND_TO",
    "DEFAULT_PROFILE",
    "examples_dir",
    "load_examples",
    "ensure_library",
    "current_sno",
    "select_sno",
    "add_snos",
    "current_profile",
    "current_weights",
    "WeightsInForce",
    "weights_in_force",
    "choose_profile",
    "set_custom_weights",
    "blend_weights",
    "profile_options",
    "POPULATION_CHOICES",
    "current_population",
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
KEY_BLEND = "cns_blend"            # float | None: the blend position the custom weights came from
KEY_POPULATION = "cns_population"  # str: what novelty is measured against (POPULATION_CHOICES)
KEY_JUDGE_TURNS = "cns_judge_turns"  # list[dict]: turns sent to the judge in this session
KEY_JUDGE_PAIRS = "cns_judge_pairs"  # list[PairOutcome]: comparisons of two answers asked for in this session
KEY_GATE = "cns_gate"              # float | None: the quality gate's threshold tuned on the Meta-Critic page

DEFAULT_PROFILE = "default"
BLEND_FROM, BLEND_TO = "exploration", "verification"     # the Weights page's blend runs between these


def examples_dir() -> Path:
    """The bundled examples: the project's ``examples/`` (:func:`cns_core.config.project_path`)."""
    return project_path("examples")


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


# What each bundled example shows, for its button's tooltip: the examples' ``metadata.profile`` tags are the
# tests' and the corpus' handles ("one-sided-loaded"), not words for a reader.
EXAMPLE_HINTS = {
    "grounded": "A well-grounded claim: every claim has a strong source, and the objection is answered.",
    "contradicted": "A claim its own evidence contradicts.",
    "circular": "A circular argument: the claims vouch for each other in support cycles.",
    "novel-ungrounded": "A novel idea whose evidence is anecdotal or about something else.",
    "one-sided-loaded": "A one-sided piece in loaded wording, all its evidence from one source.",
    "correlation-as-causation": "A causal claim resting on correlation alone.",
}


def example_hint(sno: SNO) -> str | None:
    """The tooltip of an example's button: what it shows, in words (None for an example without a known tag)."""
    tag = sno.metadata.get("profile") if isinstance(sno.metadata, dict) else None
    return EXAMPLE_HINTS.get(tag) if isinstance(tag, str) else None


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


@dataclass(frozen=True)
class WeightsInForce:
    """The weights every page scores with, and how every page names them.

    ``profile`` is the profile last chosen (what the Weights page compares with); ``custom``
    weights replace it until a profile is chosen again; ``blend`` is the blend position
    they came from (None when set by hand).
    """

    weights: dict[str, float]
    profile: str
    custom: bool = False
    blend: float | None = None

    @property
    def label(self) -> str:
        """``verification``, ``custom (blend 0.0)`` or ``custom``: the same words on every page."""
        if not self.custom:
            return self.profile
        return f"custom (blend {round(self.blend, 2)})" if self.blend is not None else "custom"


def blend_rest(profile: str) -> float:
    """Where the blend slider rests under a profile: that profile's own end of the line, else the middle."""
    return {BLEND_FROM: 0.0, BLEND_TO: 1.0}.get(profile, 0.5)


def blend_note(force: WeightsInForce) -> str:
    """What the blend slider's position means under the weights in force, said under it. A profile off the
    exploration → verification line leaves the slider resting in the middle without being a 50/50 mix, and the
    note must not read as if 0.50 were in force."""
    if force.custom:
        return "" if force.blend is not None else " (set by hand: the blend slider's position is not in force)"
    if force.profile in (BLEND_FROM, BLEND_TO):
        return f" (the blend's end {blend_rest(force.profile):.0f} is this profile)"
    return (f" (a profile of its own, not a mix: the blend slider rests at {blend_rest(force.profile):.2f} and "
            "changes nothing until you move it)")


def weights_in_force(state: Mapping[str, Any], profiles: Mapping[str, Mapping[str, float]] | None = None
                     ) -> WeightsInForce:
    """The one source of truth for the weights in force (profile, or custom weights from the Weights page)."""
    profiles = profiles if profiles is not None else load_profiles()
    name = current_profile(state, profiles)
    custom = state.get(KEY_WEIGHTS)
    if isinstance(custom, dict) and custom and sum(custom.values()) > 0:
        t = state.get(KEY_BLEND)
        return WeightsInForce({c: float(custom.get(c, 0.0)) for c in CRITIC_NAMES}, name, True,
                              float(t) if isinstance(t, (int, float)) else None)
    return WeightsInForce(dict(profiles[name]), name)


def current_weights(state: Mapping[str, Any], profiles: Mapping[str, Mapping[str, float]] | None = None
                    ) -> tuple[dict[str, float], str]:
    """The weights in force and their label (a profile name, ``custom`` or ``custom (blend 0.35)``)."""
    force = weights_in_force(state, profiles)
    return force.weights, force.label


def choose_profile(state: MutableMapping[str, Any], name: str) -> None:
    """Make profile ``name`` the weights in force: custom weights and their blend are dropped."""
    state[KEY_PROFILE] = name
    state[KEY_WEIGHTS] = None
    state[KEY_BLEND] = None


def set_custom_weights(state: MutableMapping[str, Any], weights: Mapping[str, float],
                       blend_at: float | None = None) -> None:
    """Custom weights (rounded to the sliders' 0.01) in force; ``blend_at``: the blend position they came from."""
    state[KEY_WEIGHTS] = {c: round(float(weights.get(c, 0.0)), 2) for c in CRITIC_NAMES}
    state[KEY_BLEND] = None if blend_at is None else float(blend_at)


def blend_weights(profiles: Mapping[str, Mapping[str, float]], t: float) -> dict[str, float]:
    """The blend of ``BLEND_FROM`` and ``BLEND_TO`` at ``t`` (0: the first, 1: the second)."""
    return blend(profiles[BLEND_FROM], profiles[BLEND_TO], t)


def profile_options(force: WeightsInForce, profiles: Mapping[str, Any]) -> list[str]:
    """What a profile picker offers: the profiles, and the custom weights' label while they are in force."""
    return [*profiles, force.label] if force.custom else list(profiles)


# ----- the quality gate in force ------------------------------------------------------
@dataclass(frozen=True)
class GateInForce:
    """The quality gate's threshold every page decides with, and how every page names it.

    Like :class:`WeightsInForce`: tuned on the Meta-Critic page, kept for the session, read by
    the Overview, the Weights page and the sidebar. ``lowest`` is the band it starts (the gate
    accepts it and every band above); ``default`` the threshold of ``config/meta.yaml``.
    """

    threshold: float
    lowest: str
    default: float

    @property
    def tuned(self) -> bool:
        return abs(self.threshold - self.default) > 1e-9

    @property
    def label(self) -> str:
        """``0.70 (good and above)``: the same words on every page."""
        return f"{self.threshold:.2f} ({self.lowest} and above)"


def gate_in_force(state: Mapping[str, Any], config: Any) -> GateInForce:
    """The one source of truth for the gate's threshold: the session's, else ``config.gate_threshold``.

    ``config`` is a :class:`cns_core.meta.MetaConfig`; a stored value that is no longer a band edge
    (the config changed) falls back to the default.
    """
    chosen = state.get(KEY_GATE)
    try:
        threshold = config.gate_threshold_of(chosen) if chosen is not None else config.gate_threshold
    except ValueError:
        threshold = config.gate_threshold
    return GateInForce(threshold, config.band_at(threshold).name, config.gate_threshold)


def set_gate(state: MutableMapping[str, Any], threshold: float, config: Any) -> GateInForce:
    """Put ``threshold`` (a band edge, else ValueError) in force for the session."""
    state[KEY_GATE] = config.gate_threshold_of(threshold)
    return gate_in_force(state, config)


# ----- the novelty population --------------------------------------------------------
POPULATION_CHOICES = {"examples": "the bundled examples", "session": "every SNO of this session",
                      "none": "none (every SNO maximally novel)"}


def current_population(state: Mapping[str, Any], examples: Mapping[str, SNO]) -> Population:
    """What novelty is measured against on every page: the examples (the default, as
    ``cns evaluate --population examples``), every SNO of the session, or none."""
    choice = state.get(KEY_POPULATION)
    if choice == "none":
        return Population.of((), "none")
    if choice == "session":
        library = state.get(KEY_LIBRARY)
        snos = list((library if isinstance(library, dict) else examples).values())
        unique = list({s.content_hash(): s for s in snos}.values())
        return Population.of(unique, "session")
    return Population.of(examples.values(), "examples")


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
    """A critic pipeline that measures novelty against a named :class:`Population`.

    Without a population the Novelty critic calls every SNO maximally novel, which tells a
    demo audience nothing; the dashboard's default is the bundled examples (an example leaves
    its own row out by id), the same as ``cns evaluate --population examples``. Each
    population is embedded once (kept by its :attr:`Population.key`). An explicit context
    passed by the caller wins. Everything else is the wrapped
    :class:`cns_core.pipeline.CriticPipeline`, so its cache serves every page.
    """

    def __init__(self, pipeline: Any, reference: Mapping[str, SNO] | Population):
        self._pipeline = pipeline
        self._default = reference if isinstance(reference, Population) else Population.of(reference.values(),
                                                                                            "examples")
        self._contexts: dict[str, CriticContext] = {}
        self._lock = threading.Lock()

    @property
    def pipeline(self) -> Any:
        return self._pipeline

    def context_for(self, population: Population | None = None) -> CriticContext:
        """The critics' context for ``population`` (default: the one this pipeline was made with)."""
        population = population if population is not None else self._default
        with self._lock:
            ctx = self._contexts.get(population.key)
            if ctx is None:
                from cns_core.models import get_embedder

                ctx = population.context(self._pipeline.embedder or get_embedder())
                while len(self._contexts) >= 8:
                    self._contexts.pop(next(iter(self._contexts)))
                self._contexts[population.key] = ctx
            return ctx

    def default_context(self) -> CriticContext:
        return self.context_for(None)

    def run_critics(self, sno: SNO, context: CriticContext | None = None,
                    population: Population | None = None) -> dict[str, CriticResult]:
        return self._pipeline.run_critics(sno, context if context is not None else self.context_for(population))

    def evaluate(self, sno: SNO, weights: Any = "default", context: CriticContext | None = None,
                 population: Population | None = None) -> Any:
        return self._pipeline.evaluate(sno, weights, context if context is not None else self.context_for(population))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pipeline, name)
