"""Pure functions over an SNO's reasoning graph: sides, cycles, orphans, unanswered attacks.

Edges run from the arguing claim to the claim it argues about (``c1 -> h``: c1 supports
or attacks h), so the hypothesis is a sink. Two readings follow from that direction:

* **orphan**: the spec's "claim with no incoming edge" assumes edges from the hypothesis
  down to its premises. Here a claim with no incoming edge is simply a basic premise
  (grounded by evidence, not by other claims) and is normal. What the spec means, a claim
  hanging from nothing, is a non-hypothesis claim with **no outgoing edge**: it argues
  for or against nothing.
* **side**: the hypothesis is on side +1; a claim that supports a claim takes that claim's
  side, one that attacks it takes the other side; undercutting a relation opposes the
  side of that relation's source. Claims the hypothesis cannot be reached from have no side.

These are the logic critic's features; a learned graph model can reuse them.
"""

from __future__ import annotations

from collections import defaultdict, deque
from itertools import islice

import networkx as nx

from cns_core.sno import SNO

__all__ = [
    "claim_sides",
    "orphan_claims",
    "support_cycles",
    "support_cycles_capped",
    "format_cycle",
    "unanswered_attacks",
    "detached_components",
    "unfocused_claims",
]


def claim_sides(sno: SNO) -> dict[str, int]:
    """+1 for claims arguing for the hypothesis, -1 against; unreachable claims are absent.

    Breadth-first from the hypothesis, so the shortest chain of relations decides when
    a cycle would give a claim both sides.
    """
    by_target: dict[str, list] = defaultdict(list)
    by_source: dict[str, list] = defaultdict(list)
    for rel in sno.relations:
        by_target[rel.target].append(rel)
        by_source[rel.source].append(rel)
    sides = {sno.hypothesis: 1}
    queue = deque([sno.hypothesis])
    while queue:
        claim = queue.popleft()
        side = sides[claim]
        arrivals = [(r, side if r.kind == "support" else -side) for r in by_target.get(claim, ())]
        # relations leaving this claim carry its side; undercutting one opposes it
        arrivals += [(u, -side) for r in by_source.get(claim, ()) for u in by_target.get(r.id or "", ())]
        for rel, arriving in arrivals:
            if rel.source not in sides:
                sides[rel.source] = arriving
                queue.append(rel.source)
    return sides


def orphan_claims(sno: SNO) -> list[str]:
    """Non-hypothesis claims with no outgoing edge: they argue for nothing (see module doc)."""
    g = sno.graph
    return [n for n in g.nodes if n != sno.hypothesis and g.out_degree(n) == 0]


def _canonical(cycle: list[str], hypothesis: str) -> tuple[str, ...]:
    start = cycle.index(hypothesis) if hypothesis in cycle else cycle.index(min(cycle))
    return tuple(cycle[start:] + cycle[:start])


def support_cycles(sno: SNO, limit: int = 20) -> list[tuple[str, ...]]:
    """Cycles of support relations (circular reasoning), at most ``limit``, shortest first.

    Each cycle lists its claims in edge order, starting at the hypothesis when it is on
    the cycle, else at the smallest id. Mutual attacks are not circular reasoning and are
    left out. :func:`support_cycles_capped` also says whether more exist.
    """
    return support_cycles_capped(sno, limit)[0]


def support_cycles_capped(sno: SNO, limit: int = 20) -> tuple[list[tuple[str, ...]], bool]:
    """``(cycles, capped)``: at most ``limit`` support cycles, and True when the graph holds more.

    A dense graph can hold exponentially many cycles, so enumeration stops after ``limit + 1``
    (Johnson's algorithm costs O(V + E) per cycle found): the time stays linear in the edges.
    """
    g = sno.graph
    support = nx.DiGraph((u, v) for u, v, kind in g.edges(data="kind") if kind == "support")
    found = [_canonical(list(c), sno.hypothesis) for c in islice(nx.simple_cycles(support), limit + 1)]
    capped = len(found) > limit
    return sorted(found[:limit], key=lambda c: (len(c), c)), capped


def format_cycle(cycle: tuple[str, ...]) -> str:
    """``('h', 'c5', 'c1')`` -> ``'h -> c5 -> c1 -> h'``."""
    return " -> ".join((*cycle, cycle[0]))


def unanswered_attacks(sno: SNO, sides: dict[str, int] | None = None) -> list[tuple[str, str, str]]:
    """Attacks on the hypothesis' side that nothing answers: ``(attacker, target, relation id)``.

    An attack is answered when its attacker is itself attacked (rebutted or, for an
    undercutter, attacked in turn) or when the attack relation is undercut.
    ``target`` is the attacked claim, or the undercut relation's id.
    """
    sides = claim_sides(sno) if sides is None else sides
    attacked = {r.target for r in sno.relations if r.kind == "attack"}
    out = []
    for rel in sno.relations:
        if rel.kind != "attack" or sides.get(rel.source) != -1:
            continue
        if rel.source in attacked or (rel.id and rel.id in attacked):
            continue
        out.append((rel.source, rel.target, rel.id or ""))
    return out


def detached_components(sno: SNO) -> list[tuple[str, ...]]:
    """Groups of claims with no path of relations (either way) to the hypothesis, sorted."""
    comps = [tuple(sorted(c)) for c in nx.weakly_connected_components(sno.graph) if sno.hypothesis not in c]
    return sorted(comps)


def unfocused_claims(sno: SNO, max_out_degree: float) -> list[str]:
    """Claims that argue about more than ``max_out_degree`` other claims."""
    g = sno.graph
    return [n for n in g.nodes if g.out_degree(n) > max_out_degree]
