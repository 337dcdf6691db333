"""Suggestions that say what to do and where (spec 4.4), most costly first.

Codes map to advice through the ``suggestions`` table of ``config/meta.yaml``; a
code missing there, or a weak critic that reports no issue, gets its critic's
fallback advice, so a low score never goes unexplained. Each suggestion carries the
critic's :class:`~cns_core.critics.base.Issue`\\ s it answers, so it names the claims,
relations, cycles or evidence concerned in the critic's own words (``Issue.message``)
and ids (``Issue.nodes``). Nothing here knows a particular code: a critic that adds a
code (say ``weak_support`` naming "c4 supports c2 only superficially") gets its claims
named without a change here.

Order, the improvement plan's (:func:`~cns_core.meta.gain.rank_key`): critics by priority under
the weights in force, then by the Trust Score they cost (the measured gain if they reached their
target, :func:`~cns_core.meta.gain.expected_gain`); within a critic,
suggestions by their worst issue's severity, then by how many places they name; within
a suggestion, issues by severity, then by the score of the node they name where the
critic reports one (a lower score costs more).

A conflict between two critics is no separate "Address: ..." line: its reading is the
*reason* attached to the lower critic's suggestions, which say what to fix and where.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import Any, Iterable, Mapping

from cns_core.critics.base import CriticResult, Issue
from cns_core.meta.conflicts import Conflict
from cns_core.meta.gain import expected_gain, rank_key
from cns_core.meta.settings import MetaConfig

__all__ = ["Suggestion", "advice_for", "critic_suggestions", "generate_suggestions", "id_list", "IDS_LISTED"]

_SEVERITY = {"high": 0, "medium": 1, "low": 2}
IDS_LISTED = 8      # a list of ids names this many, then says how many more: never "c1, c2, ... c138"


def id_list(ids: Iterable[str], limit: int = IDS_LISTED) -> str:
    """``c1, c2, c3`` or ``c1, ..., c8 and 130 more``: ids a reader can take in."""
    ids = list(dict.fromkeys(ids))
    if len(ids) <= limit:
        return ", ".join(ids)
    return f"{', '.join(ids[:limit])} and {len(ids) - limit} more"
# Per-node numbers a critic may report in its evidence (``evidence[<table>][<node id>][<key>]``),
# each in [0, 1] with lower meaning worse: the node's own score, its p(supported), its validity.
_NODE_SCORE_KEYS = ("score", "p_supported", "validity")


@dataclass(frozen=True)
class Suggestion:
    """One piece of advice and the places it is about.

    ``issues`` are the critic's issues it answers, most costly first (empty when the critic
    scored low without naming anything); ``cost`` is the Trust Score the critic costs (the
    gain if it reached its target); ``because`` the conflict readings that point at it.
    ``in_force`` is False for a critic at weight 0: acting on it changes no Trust Score, so it has
    no "why now" either.
    """

    critic: str
    advice: str
    score: float | None          # None: the critic abstained (its issues still say what would let it judge)
    codes: tuple[str, ...] = ()
    issues: tuple[Issue, ...] = ()
    cost: float = 0.0
    because: tuple[str, ...] = ()
    listed: int = 3
    in_force: bool = True        # False: the critic has weight 0 under the weights in force (it moves no score)

    @property
    def standing(self) -> str:
        """The critic's standing in words: "0.42, worth up to +0.050 Trust", or why it has no score yet."""
        if self.score is None:
            return "not scored yet: acting on this lets it judge"
        return f"{self.score:.2f}, worth up to +{self.cost:.3f} Trust"

    @property
    def nodes(self) -> tuple[str, ...]:
        """Every claim / relation end / evidence id named, in cost order, each once."""
        return tuple(dict.fromkeys(n for i in self.issues for n in i.nodes))

    @property
    def places(self) -> list[str]:
        """The places in the critic's words: the first ``listed`` issue messages, then the ids of the rest."""
        if not self.issues:
            return [f"no single claim is named; {self.critic} scores {self.score:.2f} for the SNO as a whole"]
        shown = [_place(i) for i in self.issues[:self.listed]]
        rest = self.issues[self.listed:]
        if rest:
            ids = list(dict.fromkeys(n for i in rest for n in i.nodes))
            more = f"and {len(rest)} more issue{'s' if len(rest) > 1 else ''}"    # counted as issues, not ids
            shown.append(more + (f" about {id_list(ids)}" if ids else ""))
        return shown

    @property
    def node_list(self) -> str:
        """The ids it concerns, most costly first, at most :data:`IDS_LISTED` of them named."""
        return id_list(self.nodes)

    @property
    def where(self) -> str:
        return "; ".join(self.places)

    @property
    def text(self) -> str:
        """What to do and where, as one line."""
        return f"{self.advice}: {self.where}"

    @property
    def short(self) -> str:
        """What to do and the ids it concerns (the improvement plan's action)."""
        nodes = self.nodes
        if not nodes:
            return f"{self.advice} ({'see ' + self.issues[0].message.rstrip('. ') if self.issues else 'the SNO as a whole'})"
        return f"{self.advice} ({id_list(nodes)})"

    def __str__(self) -> str:
        return self.text

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "advice": self.advice, "critic": self.critic, "codes": list(self.codes),
                "nodes": list(self.nodes), "where": [i.message for i in self.issues], "cost": round(self.cost, 4),
                "because": list(self.because), "in_force": self.in_force}


def _place(issue: Issue) -> str:
    """The issue in the critic's words, with the ids its message leaves unsaid ("Loaded wording in 5 of 8
    claims: ..." becomes "... (h, c1, c3)")."""
    text = issue.message.rstrip(". ")
    unsaid = [n for n in dict.fromkeys(issue.nodes) if not re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", text)]
    return f"{text} ({id_list(unsaid)})" if unsaid else text


def _node_score(result: CriticResult, nodes: Iterable[str]) -> float:
    """The lowest per-node score the critic reports for ``nodes`` (inf when it reports none)."""
    best = math.inf
    tables = [t for t in result.evidence.values() if isinstance(t, Mapping)]
    for node in nodes:
        for table in tables:
            entry = table.get(node)
            if not isinstance(entry, Mapping):
                continue
            for key in _NODE_SCORE_KEYS:
                value = entry.get(key)
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    best = min(best, float(value))
                    break
    return best


def _issue_order(result: CriticResult) -> list[Issue]:
    """The critic's issues, most costly first: severity, then the named node's score, then as reported."""
    indexed = list(enumerate(result.issues))
    indexed.sort(key=lambda p: (_SEVERITY.get(p[1].severity, 1), _node_score(result, p[1].nodes), p[0]))
    return [issue for _, issue in indexed]


def critic_suggestions(critic: str, result: CriticResult, config: MetaConfig, *, cost: float = 0.0,
                       because: tuple[str, ...] = ()) -> list[Suggestion]:
    """One critic's suggestions: one per piece of advice, with the issues it answers, most costly first."""
    fallback = config.fallback_suggestions.get(critic, f"Improve the {critic} score")
    grouped: dict[str, list[Issue]] = {}
    for issue in _issue_order(result):
        grouped.setdefault(config.suggestions.get(issue.code, fallback), []).append(issue)
    if not grouped:
        return [Suggestion(critic, fallback, result.score, (), (), cost, because, config.suggestion_listed)]
    first_seen = {advice: i for i, advice in enumerate(grouped)}
    ordered = sorted(grouped, key=lambda a: (min(_SEVERITY.get(i.severity, 1) for i in grouped[a]),
                                             -len(grouped[a]), first_seen[a]))
    return [Suggestion(critic, advice, result.score, tuple(dict.fromkeys(i.code for i in grouped[advice])),
                       tuple(grouped[advice]), cost, because if k == 0 else (), config.suggestion_listed)
            for k, advice in enumerate(ordered)]


def advice_for(critic: str, result: CriticResult, config: MetaConfig) -> list[str]:
    """The advice texts for one critic's issues, most costly first, each once."""
    return [s.advice for s in critic_suggestions(critic, result, config)]


def generate_suggestions(results: Mapping[str, CriticResult], conflicts: Iterable[Conflict],
                         config: MetaConfig, weights: Mapping[str, float] | None = None) -> list[Suggestion]:
    """Suggestions for every critic scoring below ``suggestion_below`` and for the lower critic of
    every conflict (the conflict's reading becomes the reason), most costly first (module docstring).

    ``weights`` (default: equal) measure each critic's cost. Failed critics give no advice about
    the SNO: their failure is reported separately.
    """
    ok = {n: r for n, r in results.items() if r.ok}
    unweighted = {n for n in ok if weights is not None and not weights.get(n, 0) > 0}
    because: dict[str, list[str]] = {}
    for c in conflicts:
        if c.lower in ok and c.lower not in unweighted:   # a critic at weight 0 has no reason to act now
            because.setdefault(c.lower, []).append(
                f"{c.lower} {c.low_score:.2f} trails {c.higher} {c.high_score:.2f}: {c.interpretation}")
    chosen = [n for n, r in ok.items() if r.score < config.suggestion_below or n in because]
    weights = dict(weights) if weights is not None else {n: 1.0 for n in ok}
    weighted = any(weights.get(n, 0) > 0 for n in ok)
    cost = {n: expected_gain(results, weights, n, max(config.target_for(n), ok[n].score))
            if weighted else 0.0 for n in chosen}
    chosen.sort(key=lambda n: rank_key(n, ok[n], cost[n], config))
    out = [replace(s, in_force=n not in unweighted) for n in chosen
           for s in critic_suggestions(n, ok[n], config, cost=cost[n], because=tuple(because.get(n, ())))]
    # A critic that abstained for want of something to read ("no evidence") says what would let it judge; that
    # advice comes after the scored ones (its gain cannot be priced without a score).
    out += [s for n, r in results.items() if not r.applicable and r.issues
            for s in critic_suggestions(n, r, config, because=(f"{n} abstains: {r.abstention}",))]
    first: dict[str, Suggestion] = {}
    for suggestion in out:                       # an exact repeat keeps its first place
        first.setdefault(suggestion.text, suggestion)
    return list(first.values())
