"""The argument miner: a learned unit classifier and pair scorer, decoded into one graph per text.

Trained on annotated argument graphs of three genres (:mod:`cns_core.training.drafter`):

1. **Unit roles.** A multinomial logistic regression over a unit's named features and its
   projected embedding (:mod:`cns_core.text.miner_features`) gives each unit
   p(main claim), p(root: argues about no other unit), p(attached: argues about another unit)
   and p(not argumentative: background, method, a question, a greeting).
2. **Pairs.** A second one scores every (unit, candidate target) pair within a window:
   p(none), p(support), p(attack).
3. **Decoding.** The main claim is the unit with the highest p(main) (plus its similarity to the
   question, when there is one); a unit is argumentative when p(not argumentative) is not its
   largest class, and a question never is. The argumentative units get one parent each, by a
   maximum spanning arborescence (Edmonds, networkx) over log-probabilities rooted at the main
   claim. With ``tree`` (the shipped setting) every unit hangs from another unit by its link
   probability. Without it (a forest), a unit may also stand alone, with p(root) + p(main) against
   p(attached) x its share of the unit's link probability; a unit that stands alone is attached to
   the main claim only when the pair scorer reads that link as likely (``attach_threshold``).

The weights are plain arrays (``miner.npz``, read with ``allow_pickle=False``) and the
settings JSON beside them: a model file can never run code on load.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from cns_core.text.miner_features import (PAIR_FEATURES, UNIT_FEATURES, TextUnits, candidate_pairs, is_question,
                                          pair_matrix, unit_rows)

__all__ = ["UNIT_ROLES", "PAIR_LABELS", "LinearModel", "ArgumentMiner", "MinedText", "MinedRelation", "ReadingHints",
           "default_miner_path", "load_default_miner", "MinerUnavailable"]

UNIT_ROLES: tuple[str, ...] = ("main", "root", "attached", "none")
PAIR_LABELS: tuple[str, ...] = ("none", "support", "attack")
FORMAT_VERSION = 1
# An attack the pair scorer gives less than this, on a unit with no turning word ("but", "critics say"),
# is drafted as a support: unsure attacks put a restated conclusion against the claim it restates.
UNSURE_ATTACK = 0.25
# A conclusion ("Therefore ...", "In conclusion ...") this similar to the main claim (cosine of the sentence
# embeddings) restates it: one claim, not a premise of it. Thesis and restated conclusion of the essays of
# issue 51 are 0.81 apart; a premise and the claim it supports, rarely above 0.6.
RESTATES_COSINE = 0.75
# The turns that answer the sentence before them ("X. But Y."): X is then an objection even without a
# concession word ("Shop owners often fear losing customers. But ..."), and Y attacks it.
ANSWERING_TURNS = frozenset({"but", "however", "yet", "nevertheless", "nonetheless", "still", "even so", "and yet",
                             "that said", "having said that", "be that as it may", "all the same", "but still"})


class MinerUnavailable(RuntimeError):
    """The shipped argument miner could not be read (missing, corrupt or of another format)."""


@dataclass
class LinearModel:
    """Standardisation and a multinomial logistic regression, as plain arrays."""

    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray          # (classes, features)
    intercept: np.ndarray     # (classes,)

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        if x.shape[0] == 0:
            return np.zeros((0, self.coef.shape[0]))
        logits = ((x - self.mean) / self.scale) @ self.coef.T + self.intercept
        logits -= logits.max(axis=1, keepdims=True)
        e = np.exp(logits)
        return e / e.sum(axis=1, keepdims=True)

    @classmethod
    def from_sklearn(cls, scaler: Any, classifier: Any, classes: int) -> "LinearModel":
        coef, intercept = classifier.coef_, classifier.intercept_
        if coef.shape[0] != classes:   # a class absent from the training rows: it is never predicted
            full = np.zeros((classes, coef.shape[1]))
            bias = np.full(classes, -30.0)
            for row, label in enumerate(classifier.classes_):
                full[int(label)], bias[int(label)] = coef[row], intercept[row]
            coef, intercept = full, bias
        scale = np.where(scaler.scale_ > 0, scaler.scale_, 1.0)
        return cls(scaler.mean_.copy(), scale, coef.copy(), intercept.copy())


@dataclass
class MinedRelation:
    """One drafted relation: ``source`` argues about ``target`` (unit indices), and the target it beat."""

    source: int
    target: int
    kind: str                       # support | attack
    probabilities: dict[str, float]
    runner_up: int | None = None    # the next most likely target and its link probability
    runner_up_link: float = 0.0
    rule: str = ""                  # set when a discourse rule chose the side or target over the scores

    @property
    def link(self) -> float:
        return 1.0 - self.probabilities.get("none", 1.0)


@dataclass
class MinedText:
    """The miner's reading of one text: roles, the main claim, relations and what it left out."""

    main: int
    role_probabilities: np.ndarray          # (n, 4) in UNIT_ROLES order
    relations: list[MinedRelation]
    left_out: dict[int, str] = field(default_factory=dict)    # unit -> why it is not in the graph
    standalone: dict[int, str] = field(default_factory=dict)  # unit -> why it is a claim with no relation

    def role(self, i: int) -> str:
        """The unit's role for a reader: main claim, claim (something argues about it), premise, or none."""
        if i == self.main:
            return "main claim"
        if i in self.left_out:
            return "not argumentative"
        if i in self.standalone:
            return "stated fact"
        return "claim" if any(r.target == i for r in self.relations) else "premise"


@dataclass
class ArgumentMiner:
    """The trained model (two linear models and an embedding projection) and its decoding settings."""

    unit_model: LinearModel
    pair_model: LinearModel
    projection: np.ndarray        # (components, dim)
    projection_mean: np.ndarray   # (dim,)
    max_distance: int = 12
    question_weight: float = 3.0
    attach_threshold: float = 0.25
    tree: bool = False
    info: dict[str, Any] = field(default_factory=dict)
    weak_link: float = 0.5        # a drafted link below this probability is flagged "a weak link: check it"

    # ----- inference ----------------------------------------------------------------
    def read(self, tu: TextUnits, hints: ReadingHints | None = None) -> MinedText:
        """Roles, the main claim and one consistent graph for one described text."""
        named = unit_rows(tu)
        projected = (tu.vectors - self.projection_mean) @ self.projection.T
        roles = self.unit_model.probabilities(np.hstack([named, projected]))
        pairs = candidate_pairs(tu.n, self.max_distance)
        links = self.pair_model.probabilities(pair_matrix(tu, pairs, named, projected))
        return decode(tu, roles, pairs, links, self.question_weight, self.attach_threshold, self.tree, hints)

    # ----- files ----------------------------------------------------------------------
    def save(self, folder: str | Path) -> None:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        arrays = {"projection": self.projection, "projection_mean": self.projection_mean}
        for name, model in (("unit", self.unit_model), ("pair", self.pair_model)):
            for part in ("mean", "scale", "coef", "intercept"):
                arrays[f"{name}_{part}"] = getattr(model, part)
        np.savez_compressed(folder / "miner.npz", **{k: np.asarray(v, dtype=np.float32) for k, v in arrays.items()})
        settings = {"format": FORMAT_VERSION, "unit_roles": list(UNIT_ROLES), "pair_labels": list(PAIR_LABELS),
                    "unit_features": list(UNIT_FEATURES), "pair_features": list(PAIR_FEATURES),
                    "max_distance": self.max_distance, "question_weight": self.question_weight,
                    "attach_threshold": self.attach_threshold, "tree": self.tree, "weak_link": self.weak_link,
                    "info": self.info}
        (folder / "miner.json").write_text(json.dumps(settings, indent=2, sort_keys=True) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, folder: str | Path) -> "ArgumentMiner":
        """Read a saved miner; :class:`MinerUnavailable` names what is wrong with the folder."""
        folder = Path(folder)
        try:
            settings = json.loads((folder / "miner.json").read_text(encoding="utf-8"))
            with np.load(folder / "miner.npz", allow_pickle=False) as data:
                arrays = {k: data[k].astype(np.float64) for k in data.files}
        except (OSError, ValueError, KeyError) as exc:
            raise MinerUnavailable(f"argument miner at {folder}: {type(exc).__name__}: {exc}") from exc
        if settings.get("format") != FORMAT_VERSION:
            raise MinerUnavailable(f"argument miner at {folder}: format {settings.get('format')!r}, "
                                   f"this code reads {FORMAT_VERSION}")
        if (settings.get("unit_features") != list(UNIT_FEATURES)
                or settings.get("pair_features") != list(PAIR_FEATURES)):
            raise MinerUnavailable(f"argument miner at {folder}: trained on other features than this code "
                                   "computes; retrain it with `cns train-drafter`")
        try:
            models = {name: LinearModel(*(arrays[f"{name}_{p}"] for p in ("mean", "scale", "coef", "intercept")))
                      for name in ("unit", "pair")}
            miner = cls(models["unit"], models["pair"], arrays["projection"], arrays["projection_mean"],
                        int(settings["max_distance"]), float(settings["question_weight"]),
                        float(settings["attach_threshold"]), bool(settings.get("tree", False)),
                        dict(settings.get("info", {})), float(settings.get("weak_link", 0.5)))
        except KeyError as exc:
            raise MinerUnavailable(f"argument miner at {folder}: missing {exc}") from exc
        width = len(UNIT_FEATURES) + miner.projection.shape[0]
        if miner.unit_model.coef.shape != (len(UNIT_ROLES), width):
            raise MinerUnavailable(f"argument miner at {folder}: unit model has shape {miner.unit_model.coef.shape}, "
                                   f"expected {(len(UNIT_ROLES), width)}")
        return miner

    @property
    def identity(self) -> str:
        """A short fingerprint of the weights: stored scores drafted by another miner are scored again."""
        digest = hashlib.blake2b(digest_size=6)
        for array in (self.unit_model.coef, self.pair_model.coef, self.projection):
            digest.update(np.ascontiguousarray(array, dtype=np.float32).tobytes())
        return f"argument-miner:{digest.hexdigest()}"


@dataclass(frozen=True)
class ReadingHints:
    """What rules know about a text's units before the models read it (:mod:`cns_core.text.context`).

    ``context``: units that frame the argument (signposts, anecdotes), out of the graph; ``argues``:
    units a reason clause ties into the argument, in the graph whatever their role probabilities;
    ``facts``: units stating a figure, date or finding, never dropped (a claim standing alone when
    the model reads them as not argumentative).
    """

    context: dict[int, str] = field(default_factory=dict)
    argues: frozenset[int] = frozenset()
    facts: frozenset[int] = frozenset()


def decode(tu: TextUnits, roles: np.ndarray, pairs: list[tuple[int, int]], links: np.ndarray,
           question_weight: float, attach_threshold: float, tree: bool = False,
           hints: ReadingHints | None = None) -> MinedText:
    """One graph per text from the unit and pair probabilities (see the module's docstring)."""
    n = tu.n
    hints = hints or ReadingHints()
    questions = {i for i in range(n) if is_question(tu.texts[i])}
    main_score = np.log(roles[:, 0] + 1e-9)
    if tu.question_similarity is not None:
        main_score = main_score + question_weight * tu.question_similarity
    barred = questions | set(hints.context)
    main_score[list(barred)] = -np.inf
    main = int(np.argmax(main_score)) if len(barred) < n else 0
    left_out: dict[int, str] = {}
    standalone: dict[int, str] = {}
    for i in range(n):
        if i == main:
            continue
        if i in questions:
            left_out[i] = "a question, never a claim"
        elif i in hints.context or (int(np.argmax(roles[i])) == 3 and i not in hints.argues):
            why = hints.context.get(i, f"not argumentative (p {roles[i, 3]:.2f})")
            if i in hints.facts:
                standalone[i] = f"{why}; it states a figure, date or finding, so it stays a claim to be checked"
            else:
                left_out[i] = why
    argumentative = [i for i in range(n) if i not in left_out and i not in standalone]
    keep = set(argumentative)
    links_of: dict[int, dict[int, np.ndarray]] = {i: {} for i in argumentative}    # unit -> target -> row
    for (a, j), row in zip(pairs, links):
        if a in keep and j in keep:
            links_of[a][j] = row
    graph = nx.DiGraph()
    graph.add_node("root")
    for i in argumentative:
        graph.add_node(i)
        if i == main:
            graph.add_edge("root", i, weight=0.0)
            continue
        p_arg = max(1e-9, 1.0 - roles[i, 3])
        alone = min(max((roles[i, 0] + roles[i, 1]) / p_arg, 1e-9), 1.0 - 1e-9)
        if not tree:
            graph.add_edge("root", i, weight=math.log(alone))
        candidates = {j: 1.0 - row[0] for j, row in links_of[i].items()}
        mass = sum(candidates.values())
        for j, p_link in candidates.items():
            share = p_link / mass if mass > 0 else 0.0
            weight = math.log(max(p_link, 1e-12)) if tree else math.log(max((1.0 - alone) * share, 1e-12))
            graph.add_edge(j, i, weight=weight)
        if tree and main not in candidates:      # beyond the window of every candidate: the main claim, last resort
            graph.add_edge(main, i, weight=-50.0)
    for j in list(graph.predecessors(main)):
        if j != "root":
            graph.remove_edge(j, main)
    arborescence = nx.maximum_spanning_arborescence(graph, attr="weight", preserve_attrs=True)
    relations: list[MinedRelation] = []
    for parent, child in sorted(arborescence.edges(), key=lambda e: e[1]):
        if parent == "root":
            if child == main:
                continue
            row = links_of[child].get(main)
            if row is None or 1.0 - row[0] < attach_threshold:
                continue      # argues about nothing the scorer can name: a claim of its own, with no relation
            relations.append(_relation(child, main, links_of[child]))
            continue
        if parent not in links_of[child]:      # the tree's last resort: no scored candidate
            relations.append(MinedRelation(child, parent, "support", {}))
            continue
        relations.append(_relation(child, parent, links_of[child]))
    main, relations = restated_main(tu, main, relations, left_out)
    relations = objection_sides(tu, main, relations, links_of)
    return MinedText(main, roles, relations, left_out, standalone)


def restated_main(tu: TextUnits, main: int, relations: list[MinedRelation],
                  left_out: dict[int, str]) -> tuple[int, list[MinedRelation]]:
    """A conclusion that restates the main claim ("Therefore the high street should be closed to cars." after
    "The town should close the high street to cars.") is the same claim, not a premise of it: it leaves the graph
    (``left_out``, with why) and what argued about it argues about the main claim. Where the miner took the
    conclusion itself for the main claim, the earlier statement it restates is the main claim. Returns the main
    claim and the relations."""
    from cns_core.text.cues import stance_cues

    concluding = {i for i, cue in enumerate(tu.cues) if cue is not None and cue.kind in ("conclusion", "summary")}
    in_graph = {main} | {r.source for r in relations}

    def restates(i: int) -> bool:
        """A conclusion and a plain statement, both taking the author's stance ("should", "must", "I believe"),
        this similar: "But people who take vitamin C feel healthier." does not restate "So everyone should take
        vitamin C every day.", however many words they share."""
        plain = main if i in concluding else i
        cue = tu.cues[plain]
        return ((i in concluding) != (main in concluding) and bool(stance_cues(tu.texts[i]))
                and bool(stance_cues(tu.texts[main])) and (cue is None or cue.kind in ("addition",))
                and float(tu.vectors[i] @ tu.vectors[main]) >= RESTATES_COSINE)

    candidates = [(float(tu.vectors[i] @ tu.vectors[main]), i) for i in sorted(in_graph - {main}) if restates(i)]
    if not candidates:
        return main, relations
    similarity, other = max(candidates)
    restating, kept = (main, other) if main in concluding else (other, main)
    left_out[restating] = (f"restates the main claim (similarity {similarity:.2f}): a conclusion that repeats "
                           "the thesis is the same claim, not a reason for it")
    moved = []
    for r in relations:
        if r.source in (restating, kept) and r.target in (restating, kept):
            continue                                   # the two restatements of one claim: no relation
        if r.source == restating:
            continue
        if r.target == restating:
            r = MinedRelation(r.source, kept, r.kind, r.probabilities, rule=(r.rule + "; " if r.rule else "")
                              + f"it argues about a restatement of the main claim: attached to the main claim")
        moved.append(r)
    return kept, moved


def objection_sides(tu: TextUnits, main: int, relations: list[MinedRelation],
                    links_of: dict[int, dict[int, np.ndarray]]) -> list[MinedRelation]:
    """An objection ("Critics say ...", "Admittedly ...") attacks the claim it objects to (the main claim,
    unless the model chose an earlier unit), and the turn that answers it ("but", "however", in the next
    two units of its paragraph) attacks the objection: the corpora hold too few objections for the
    pair model to learn their sides, and a reader expects exactly these."""
    by_source = {r.source: r for r in relations}
    for o, cue in enumerate(tu.cues):
        if o not in by_source or o == main:
            continue
        if cue is not None and cue.kind == "concession":
            why = f"an objection ({cue.phrase!r}): it attacks what it objects to"
        elif (cue is None or cue.kind == "addition") and (answer := _answering_turn(tu, o)) is not None:
            why = f"an objection, answered by the next sentence ({answer!r}): it attacks what it objects to"
        else:
            continue
        old = by_source[o]
        target = old.target if old.target < o and old.target != main and old.kind == "attack" else main
        by_source[o] = _ruled(o, target, links_of, why)
        for a in range(o + 1, min(o + 3, tu.n)):
            if tu.units[a].paragraph != tu.units[o].paragraph:
                break
            answer = tu.cues[a]
            if answer is not None and answer.kind == "contrast" and a in by_source and not _reaches(by_source, o, a):
                by_source[a] = _ruled(a, o, links_of, f"answers the objection before it ({answer.phrase!r}): "
                                                      "it attacks the objection")
                break
            if answer is not None and answer.kind != "addition":
                break
    for i, r in by_source.items():
        cue = tu.cues[i]
        turning = cue is not None and cue.kind in ("concession", "contrast")
        if r.kind == "attack" and not r.rule and not turning and r.probabilities.get("attack", 0.0) < UNSURE_ATTACK:
            r.kind = "support"
            r.rule = (f"support: no turning word and the scorer is unsure of an attack "
                      f"(p {r.probabilities.get('attack', 0.0):.2f} < {UNSURE_ATTACK})")
    return [by_source[s] for s in sorted(by_source)]


def _answering_turn(tu: TextUnits, o: int) -> str | None:
    """The turn ("but", "however") opening the unit right after ``o`` in its paragraph, when it answers ``o``: ``o``
    then reports a view without taking a stance of its own ("should", "must", "I believe") and is not the point
    a reason clause of its sentence argues for ("Because ..., streets must become safer. However, ..." turns to
    an objection; it does not answer one)."""
    from cns_core.text.cues import stance_cues

    a = o + 1
    if a >= tu.n or tu.units[a].paragraph != tu.units[o].paragraph:
        return None
    cue = tu.cues[a]
    if cue is None or cue.kind != "contrast" or cue.phrase.lower() not in ANSWERING_TURNS:
        return None
    reasoned = any(tu.units[k].sentence == tu.units[o].sentence and c is not None and c.kind == "reason"
                   for k, c in enumerate(tu.cues))
    return None if stance_cues(tu.texts[o]) or reasoned else cue.phrase


def _reaches(by_source: dict[int, MinedRelation], start: int, goal: int) -> bool:
    """Whether following the relations up from ``start`` reaches ``goal`` (an edge to it would close a cycle)."""
    seen, k = set(), start
    while k in by_source and k not in seen:
        if k == goal:
            return True
        seen.add(k)
        k = by_source[k].target
    return k == goal


def _ruled(source: int, target: int, links_of: dict[int, dict[int, np.ndarray]], why: str) -> MinedRelation:
    """An attack chosen by a discourse rule, with the pair scorer's probabilities when it scored the pair."""
    targets = links_of.get(source, {})
    if target in targets:
        relation = _relation(source, target, targets)
        relation.kind, relation.rule = "attack", why
        return relation
    return MinedRelation(source, target, "attack", {}, rule=why)


def _relation(source: int, target: int, targets: dict[int, np.ndarray]) -> MinedRelation:
    """The relation ``source`` -> ``target`` from the source's scored targets, with the runner-up among them."""
    row = targets[target]
    kind = "attack" if row[2] > row[1] else "support"
    probabilities = {label: round(float(p), 3) for label, p in zip(PAIR_LABELS, row)}
    others = sorted(((1.0 - r[0], j) for j, r in targets.items() if j != target), reverse=True)
    runner_up, runner_up_link = (others[0][1], round(float(others[0][0]), 3)) if others else (None, 0.0)
    return MinedRelation(source, target, kind, probabilities, runner_up, runner_up_link)


def default_miner_path() -> Path:
    """The active drafter: a refit on the person's corrections when one is active in the state folder
    (:mod:`cns_core.text.corrections`), else ``models/argument-miner`` in the project (``drafter.model``
    in config/models.yaml can point elsewhere)."""
    from cns_core.config import load_config, project_path
    from cns_core.text.corrections import active_refit

    refit = active_refit()
    if refit is not None:
        return refit
    configured = (load_config("models").get("drafter") or {}).get("model")
    path = Path(configured) if configured else Path("models/argument-miner")
    return project_path(path)


@lru_cache(maxsize=4)
def _load_cached(folder: str, stamp: float) -> ArgumentMiner:
    return ArgumentMiner.load(folder)


def load_default_miner() -> ArgumentMiner:
    """The active miner, read once per process and again when its files change; raises :class:`MinerUnavailable`."""
    folder = default_miner_path()
    try:
        stamp = (folder / "miner.npz").stat().st_mtime
    except OSError:
        stamp = 0.0
    return _load_cached(str(folder), stamp)
