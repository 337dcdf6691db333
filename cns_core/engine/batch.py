"""Batch evaluation of a corpus of SNO files: Ray actors, one results table, resumable.

Why Ray actors: the critics are Python and numpy bound, so threads share one core; each
actor (:class:`cns_core.engine.ray_actors.CorpusScorer`) builds its pipeline and models once, on
this machine (local Ray) or on a cluster (``address``). One worker without an address runs
the same scorer in this process, without starting Ray, and so does a corpus too small to pay
for starting a local Ray (``corpus.ray_min_snos`` in pipeline.yaml; the run says so).

The table has one row per SNO (``file``, ``sno_id``, ``title``, ``content_hash``,
``config_fingerprint``, ``trust_<profile>`` for every weight profile,
``score_<critic>`` (NaN when the critic failed), ``conflicts`` (JSON list of
``{higher, lower, delta}`` from the Meta-Critic's :func:`detect_conflicts`),
``n_conflicts``, ``failures`` (JSON ``{critic: reason}``), ``issues`` (JSON
``{critic: [codes]}``), sizes, and ``error`` for a file that could not be read.

**Resuming**: a row already in the output with the same content hash and the same
configuration fingerprint is not evaluated again (unless a critic failed in it). The fingerprint covers every
critic's ``config_key()``, the NLI and embedding settings (and the fitted lexical
NLI parameters), the weight profiles, the Meta-Critic's conflict threshold, and, because Novelty is measured against
the other SNOs of the batch, the batch's population: adding an SNO to the folder
changes every SNO's novelty, so the whole folder is evaluated again.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import pandas as pd

from cns_core.bounds import is_looping_link
from cns_core.config import config_file, load_config, replace_atomically
from cns_core.critics.base import CRITIC_NAMES, Critic, CriticContext, in_critic_order
from cns_core.scoring import incomplete_note, load_profiles
from cns_core.engine.rows import error_row
from cns_core.sno import SNO, SNOValidationError, load_snos

__all__ = [
    "BASE_COLUMNS",
    "BatchReport",
    "SNO_SUFFIXES",
    "collect_files",
    "config_fingerprint",
    "evaluate_corpus",
    "read_results",
    "write_results",
    "run_batch",
    "ray_min_snos",
    "too_small_for_ray",
]

SNO_SUFFIXES: tuple[str, ...] = (".json", ".yaml", ".yml")
ENGINES: tuple[str, ...] = ("auto", "local", "ray")   # auto: in this process for one worker and no address
RESULT_SUFFIXES: tuple[str, ...] = (".parquet", ".csv")
BASE_COLUMNS: tuple[str, ...] = ("file", "sno_id", "title", "content_hash", "config_fingerprint", "error")
_JSON_COLUMNS = ("conflicts", "failures", "issues")
_TEXT_COLUMNS = (*BASE_COLUMNS, *_JSON_COLUMNS, "incomplete_critics", "not_applicable")


@dataclass
class BatchReport:
    """What a batch run did; ``frame`` holds every row of the output (kept, reused and new)."""

    frame: pd.DataFrame
    out: Path | None = None
    evaluated: int = 0
    skipped: int = 0
    bad_files: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0
    fingerprint: str = ""
    first_row_s: float = 0.0     # from the start until the first SNO came back: start-up and model loading
    last_row_s: float = 0.0      # ... until the last one came back
    note: str = ""               # why the run went where it did, when that differs from what was asked

    @property
    def steady_rate(self) -> float:
        """SNOs per second between the first and the last SNO back (start-up left out)."""
        span = self.last_row_s - self.first_row_s
        return (self.evaluated - 1) / span if self.evaluated > 1 and span > 0 else 0.0

    @property
    def rate(self) -> float:
        """SNOs evaluated per second of wall time (0 when nothing was evaluated)."""
        return self.evaluated / self.elapsed_s if self.evaluated and self.elapsed_s > 0 else 0.0


# ----- inputs -------------------------------------------------------------------

def collect_files(paths: Iterable[str | Path]) -> list[Path]:
    """Files as given, plus every SNO file (.json/.yaml/.yml) under given folders, sorted per folder. A link named
    like an SNO file that loops is kept: reading it fails with its name and "a symbolic link that loops", where
    passing it over said "no SNO file" of a folder holding two of them."""
    files: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*") if p.suffix.lower() in SNO_SUFFIXES
                                and (p.is_file() or is_looping_link(p))))
        else:
            files.append(path)
    return list(dict.fromkeys(files))


def _load(files: Sequence[Path]) -> tuple[list[tuple[str, SNO]], dict[str, str]]:
    items, errors = [], {}
    for path in files:
        try:
            items.extend((str(path), sno) for sno in load_snos(path))
        except SNOValidationError as exc:
            errors[str(path)] = "; ".join(exc.problems)
    return items, errors


# ----- configuration ------------------------------------------------------------

def _population_key(snos: Sequence[SNO]) -> str:
    """What the novelty population is made of: every SNO's id and hypothesis (order-free)."""
    if len(snos) < 2:
        return ""
    parts = sorted(f"{s.id}\x00{s.hypothesis_text}\x00{bool(s.embedding)}" for s in snos)
    return hashlib.blake2b("\x01".join(parts).encode("utf-8"), digest_size=12).hexdigest()


def config_fingerprint(critic_keys: Mapping[str, str], profiles: Mapping[str, Mapping[str, float]],
                       population_key: str = "") -> str:
    """A short hash of everything besides the SNO that changes a row (see the module docstring)."""
    from cns_core.models.nli import nli_settings, weights_fingerprint

    backend, nli_cfg = nli_settings()
    weights = weights_fingerprint(str(nli_cfg["transformers"]["model"])) if backend == "transformers" else ""
    params = ""
    params_file = (nli_cfg.get("lexical") or {}).get("params_file")
    if backend == "lexical" and params_file and config_file(params_file).is_file():
        params = hashlib.blake2b(config_file(params_file).read_bytes(), digest_size=12).hexdigest()
    from cns_core.meta.settings import MetaConfig
    from cns_core.scoring import SCORING_VERSION

    payload = {"critics": dict(critic_keys), "nli": [backend, nli_cfg], "lexical_params": params,
               "nli_weights": weights, "scoring": SCORING_VERSION,
               "conflict_threshold": MetaConfig.load().conflict_threshold,
               "embedding": load_config("models").get("embedding", {}),
               "embedding_backend": os.environ.get("CNS_EMBEDDING_BACKEND", ""),
               "profiles": {k: dict(v) for k, v in profiles.items()}, "population": population_key}
    blob = json.dumps(payload, sort_keys=True, default=str)
    return hashlib.blake2b(blob.encode("utf-8"), digest_size=8).hexdigest()


# ----- results files ------------------------------------------------------------

def _check_suffix(path: Path) -> None:
    if path.suffix.lower() not in RESULT_SUFFIXES:
        raise ValueError(f"--out {path}: use a .parquet or .csv file (got {path.suffix or 'no suffix'!r})")


def read_results(path: str | Path) -> pd.DataFrame:
    """A results table written by :func:`write_results`; errors name the file and what is wrong."""
    path = Path(path)
    _check_suffix(path)
    try:
        if path.suffix.lower() == ".parquet":
            frame = pd.read_parquet(path)
        else:
            frame = pd.read_csv(path, dtype={c: str for c in _TEXT_COLUMNS},
                                keep_default_na=False, na_values={c: [""] for c in ("n_conflicts",)})
    except FileNotFoundError:
        raise ValueError(f"{path}: results file not found") from None
    except Exception as exc:  # pyarrow / parser errors have many types
        raise ValueError(f"{path}: not a readable results table ({type(exc).__name__}: {exc})") from None
    missing = [c for c in BASE_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"{path}: not a CNS results table: missing column(s) {', '.join(missing)}")
    for column in _TEXT_COLUMNS:
        if column in frame.columns:
            frame[column] = frame[column].fillna("").astype(str)
    _mark_completeness(frame)
    for column in frame.columns:
        if column.startswith(("score_", "trust_")):
            frame[column] = pd.to_numeric(frame[column], errors="coerce")
    return frame


def _mark_completeness(frame: pd.DataFrame) -> None:
    """Tables written before ``complete`` existed: derive it from ``failures`` (in place)."""
    if "failures" not in frame.columns:
        return
    if "incomplete_critics" not in frame.columns:
        frame["incomplete_critics"] = frame["failures"].map(
            lambda text: ",".join(in_critic_order(json.loads(text))) if text.strip() else "")
    if "complete" not in frame.columns:
        frame["complete"] = frame["incomplete_critics"] == ""
    frame["complete"] = frame["complete"].map(lambda v: str(v).strip().lower() in ("true", "1", "1.0"))


def write_results(frame: pd.DataFrame, path: str | Path) -> Path:
    """Write atomically (a temporary file renamed over the old one), so a crash never leaves half a table."""
    path = Path(path)
    _check_suffix(path)
    with replace_atomically(path) as tmp:
        if path.suffix.lower() == ".parquet":
            frame.to_parquet(tmp, index=False)
        else:
            frame.to_csv(tmp, index=False)
    return path


def _ordered(rows: list[dict[str, Any]], profiles: Iterable[str]) -> pd.DataFrame:
    frame = pd.DataFrame(rows)
    if frame.empty:
        return pd.DataFrame(columns=list(BASE_COLUMNS))
    first = [*BASE_COLUMNS, *(f"trust_{p}" for p in profiles), "complete", "incomplete_critics",
             *(f"score_{c}" for c in CRITIC_NAMES), "not_applicable",
             "n_conflicts", *_JSON_COLUMNS, "n_claims", "n_relations", "n_evidence"]
    columns = [c for c in first if c in frame.columns] + [c for c in frame.columns if c not in first]
    frame = frame[columns]
    for column in _TEXT_COLUMNS:
        if column in frame.columns:
            frame[column] = frame[column].fillna("").astype(str)
    return frame.sort_values(["file", "sno_id"], kind="stable").reset_index(drop=True)


# ----- workers ------------------------------------------------------------------

def _population(snos: Sequence[SNO], population: str) -> CriticContext:
    if population == "none" or len(snos) < 2:
        return CriticContext()
    from cns_core.engine.population import population_context

    context = population_context(snos)
    # The workers get the embedder from their own pipeline; the population is known by key.
    context.embedder = None
    context.extra["population_fingerprint"] = _population_key(snos)
    return context


# ----- the batch ----------------------------------------------------------------

def evaluate_corpus(paths: str | Path | Iterable[str | Path], out: str | Path | None = None, *, workers: int = 1,
                    profiles: Sequence[str] | None = None, population: str = "batch", timeout_s: float | None = None,
                    progress: bool = True, save_every: int = 25, engine: str = "auto", address: str | None = None,
                    gpus_per_worker: float = 0.0, batch_size: int = 4,
                    critics: Callable[[], Sequence[Critic]] | None = None,
                    on_progress: Callable[[int, int], None] | None = None,
                    say: Callable[[str], None] | None = None) -> BatchReport:
    """Evaluate every SNO under ``paths`` (files or folders), resuming from ``out`` when it exists.

    ``workers`` is the number of Ray actors; ``engine`` ``auto`` runs one worker without an address
    in this process (no Ray start-up), ``local`` always does, ``ray`` always uses Ray. ``address``
    (default: ``RAY_ADDRESS``) joins a running cluster; without it a local Ray is started.
    ``batch_size`` SNOs go to an actor at a time (their model calls are batched together).
    ``profiles`` picks the weight profiles to report (default: all in profiles.yaml);
    ``critics`` builds the critics in each worker (default: the five critics).
    ``on_progress(done, total)`` is called before the first SNO and as each one finishes (the Corpus page's bar).
    A corpus too small to pay for a local Ray (``corpus.ray_min_snos`` in pipeline.yaml) runs in this
    process with ``engine`` ``auto``; ``say`` gets the one line that says so (also ``report.note``).
    """
    started = time.perf_counter()
    if workers < 1:
        raise ValueError(f"--workers must be at least 1 (got {workers})")
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)} (got {engine!r})")
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1 (got {batch_size})")
    if gpus_per_worker < 0:
        raise ValueError(f"--gpus-per-worker must be 0 or more (got {gpus_per_worker})")
    address = address or os.environ.get("RAY_ADDRESS") or None
    use_ray = engine == "ray" or (engine == "auto" and (workers > 1 or address is not None or gpus_per_worker > 0))
    if engine == "local" and (workers > 1 or address or gpus_per_worker > 0):
        raise ValueError("engine 'local' runs one worker in this process: no --workers > 1, --address or GPUs")
    if population not in ("batch", "none"):
        raise ValueError(f"--population: a corpus run measures novelty against its own SNOs (batch) or none "
                         f"(got {population!r}; examples and FILES apply to single files)")
    out_path = Path(out) if out is not None else None
    if out_path is not None:
        _check_suffix(out_path)
    known = load_profiles()
    chosen = list(profiles) if profiles else list(known)
    unknown = [p for p in chosen if p not in known]
    if unknown:
        raise ValueError(f"unknown weight profile(s) {', '.join(unknown)} (known: {', '.join(known)})")
    weight_sets = {p: known[p] for p in chosen}

    if isinstance(paths, (str, Path)):
        paths = [paths]
    files = collect_files(paths)
    items, load_errors = _load(files)

    from cns_core.critics import default_critics

    critic_keys = {c.name: c.config_key() for c in (critics() if critics is not None else default_critics())}
    snos = [s for _, s in items]
    fingerprint = config_fingerprint(critic_keys, weight_sets, _population_key(snos) if population == "batch" else "")

    existing = read_results(out_path) if out_path is not None and out_path.exists() else None
    done: dict[tuple[str, str], dict[str, Any]] = {}
    if existing is not None:
        for row in existing.to_dict("records"):
            # rows with a failed critic (a timeout, a model down) are tried again
            clean = not row["error"] and row.get("failures", "{}") in ("{}", "")
            if clean and row["config_fingerprint"] == fingerprint:
                done.setdefault((row["content_hash"], fingerprint), row)

    rows: dict[tuple[str, str], dict[str, Any]] = {}
    todo: list[tuple[str, SNO]] = []
    for file, sno in items:
        hit = done.get((sno.content_hash(), fingerprint))
        if hit is not None:   # same content and configuration: reuse, under this file's name
            rows[(file, sno.id)] = {**hit, "file": file, "sno_id": sno.id, "title": sno.title}
        else:
            todo.append((file, sno))
    skipped = len(rows)
    for file, error in load_errors.items():
        rows[(file, "")] = error_row(file, error)

    # Rows of files not in this run stay; rows of this run's files are replaced.
    inputs = {str(f) for f in files}
    kept = [] if existing is None else [
        r for r in existing.to_dict("records") if r["file"] not in inputs and (r["file"], r["sno_id"]) not in rows]

    def save() -> None:
        if out_path is not None:
            write_results(_ordered(kept + list(rows.values()), chosen), out_path)

    note = ""
    if use_ray and engine == "auto" and too_small_for_ray(len(todo), workers, address, gpus_per_worker):
        note = (f"--workers {workers}: {len(todo)} SNO(s) to evaluate is below corpus.ray_min_snos "
                f"({ray_min_snos()}, config/pipeline.yaml), too few to pay for starting Ray and loading the models "
                "in each worker; evaluating in this process (--engine ray to use Ray anyway)")
        use_ray, workers = False, 1
        if say is not None:
            say(note)

    from cns_core.engine.ray_actors import ScorerSettings, connect

    # Connect before anything is written: an unreachable cluster leaves the output as it was.
    started_ray = connect(address, max(workers, os.cpu_count() or 1)) if todo and use_ray else False
    settings = ScorerSettings(fingerprint=fingerprint, profiles=weight_sets, timeout_s=timeout_s, critics=critics)
    times: list[float] = []

    def tick() -> None:
        times.append(time.perf_counter() - started)
        if on_progress is not None:
            on_progress(len(times), len(todo))

    try:
        if todo:
            if on_progress is not None:
                on_progress(0, len(todo))
            _run(todo, snos, rows, population, settings, workers, use_ray, gpus_per_worker, batch_size, progress,
                 save, save_every, tick)
    finally:   # an interrupted run keeps every row finished so far
        save()
        if started_ray:
            import ray

            ray.shutdown()
    frame = _ordered(kept + list(rows.values()), chosen)
    return BatchReport(frame=frame, out=out_path, evaluated=len(todo), skipped=skipped,
                       bad_files=sorted(load_errors), elapsed_s=time.perf_counter() - started, fingerprint=fingerprint,
                       first_row_s=times[0] if times else 0.0, last_row_s=times[-1] if times else 0.0, note=note)


def ray_min_snos() -> int:
    """``corpus.ray_min_snos`` of pipeline.yaml: the smallest corpus a local Ray is started for."""
    from cns_core.config import config_mapping, config_number

    section = config_mapping(load_config("pipeline"), "corpus", file="pipeline.yaml")
    return config_number(section, "ray_min_snos", file="pipeline.yaml", path="corpus", default=0, low=0,
                         integer=True)


def too_small_for_ray(count: int, workers: int, address: str | None, gpus_per_worker: float) -> bool:
    """True when ``count`` SNOs would start a local Ray that costs more than its second worker saves.

    Only a run that would *start* a local Ray: a cluster (``address``), GPUs, or a Ray already
    running in this process (its start is paid) are used as asked."""
    ray = sys.modules.get("ray")
    running = ray is not None and getattr(ray, "is_initialized", lambda: False)()
    return (workers > 1 and address is None and gpus_per_worker == 0 and not running
            and 0 < count < ray_min_snos())


def _run(todo: list[tuple[str, SNO]], snos: list[SNO], rows: dict[tuple[str, str], dict[str, Any]],
         population: str, settings: Any, workers: int, use_ray: bool, gpus_per_worker: float, batch_size: int,
         progress: bool, save: Callable[[], None], save_every: int, tick: Callable[[], None]) -> None:
    from tqdm import tqdm

    from cns_core.engine.ray_actors import CorpusScorer, score_on_ray

    context = _population(snos, population)      # embedded once, here; actors get it from the object store
    workers = min(workers, -(-len(todo) // batch_size))   # a worker with nothing to do only costs its start-up
    since_save = 0
    with tqdm(total=len(todo), desc="evaluating", unit="SNO", file=sys.stderr, disable=not progress) as bar:
        def collect(row: dict[str, Any]) -> None:
            nonlocal since_save
            rows[(row["file"], row["sno_id"])] = row
            tick()
            bar.update(1)
            since_save += 1
            if since_save >= save_every:
                save()
                since_save = 0

        if not use_ray:                           # the SNOs as they are: no JSON round trip in this process
            scorer = CorpusScorer(settings, context)
            for start in range(0, len(todo), batch_size):
                for row in scorer.score(todo[start:start + batch_size]):
                    collect(row)
            return
        items = [(file, sno.model_dump(mode="json")) for file, sno in todo]   # what travels to the actors
        if gpus_per_worker == 0:
            settings.threads = max(1, (os.cpu_count() or 1) // workers)
        score_on_ray(items, settings, context, workers=workers, gpus_per_worker=gpus_per_worker,
                     batch_size=batch_size, collect=collect)


# ----- command line -------------------------------------------------------------

def run_batch(args: Any) -> int:
    """``cns evaluate PATH... --workers N --out FILE`` (called by cns_core.cli.evaluate)."""
    report = evaluate_corpus(args.files, getattr(args, "out", None), workers=getattr(args, "workers", 1),
                             profiles=[args.profile] if getattr(args, "profile", None) else None,
                             population=getattr(args, "population", "batch"),
                             timeout_s=getattr(args, "timeout", None), progress=sys.stderr.isatty(),
                             engine=getattr(args, "engine", "auto"), address=getattr(args, "address", None),
                             gpus_per_worker=getattr(args, "gpus_per_worker", 0.0),
                             say=lambda line: print(line, file=sys.stderr, flush=True))
    frame = report.frame
    for file in report.bad_files:
        error = frame.loc[(frame["file"] == file) & (frame["sno_id"] == ""), "error"].iloc[0]
        print(f"{file}: {error}", file=sys.stderr)
    failed = frame[(frame["error"] != "") & (frame["sno_id"] != "")]
    for row in failed.itertuples():
        print(f"{row.file}: {row.sno_id}: {row.error}", file=sys.stderr)
    if report.out is None:
        trust = f"trust_{args.profile}" if getattr(args, "profile", None) else "trust_default"
        ok = frame[frame["error"] == ""]
        for row in ok.to_dict("records"):
            note = incomplete_note(filter(None, str(row.get("incomplete_critics", "")).split(",")))
            print(f"{row[trust]:.3f}  {row['sno_id']}  {row['file']}{'  ' + note if note else ''}")
    rate = f" in {report.elapsed_s:.1f} s ({report.rate:.1f} SNO/s)" if report.evaluated else ""
    target = f" -> {report.out}" if report.out else ""
    print(f"evaluated {report.evaluated} SNO(s), skipped {report.skipped} already evaluated, "
          f"{len(report.bad_files)} bad file(s){rate}{target}")
    return 1 if report.bad_files or not failed.empty else 0
