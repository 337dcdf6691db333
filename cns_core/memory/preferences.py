"""Preference pairs from a judged memory: answers to the same question, the better one chosen.

Answers are grouped by question (:func:`cns_core.engrams.question_key`) and ordered as recall orders them,
by their quality (:func:`cns_core.memory.recall.judge_quality`). A pair is kept when the chosen answer's
quality is at least ``recall.preferences.min_gap`` above the rejected one's (ties and near ties say
nothing), the chosen answer is not one recall leaves out (judged incorrect), and the two texts differ.
Where the judge compared the two answers directly (``cns grade --pair``), its winner is chosen, whatever
their qualities. Each pair is a ``prompt`` / ``chosen`` / ``rejected`` row, the format DPO trainers read
(TRL's ``DPOTrainer``), with the ids and the margin beside.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Mapping

from cns_core.engrams import Engram, question_key
from cns_core.memory.recall import Quality, RecallSettings, judge_quality

__all__ = ["PreferencePair", "preference_pairs", "compared_winners", "with_pair_win", "PAIR_KEY", "MAX_PAIR_WINS"]

PAIR_KEY = "critic_pair_wins"   # engram metadata: ids of answers the judge found worse than this one, comma-separated
MAX_PAIR_WINS = 100             # losers kept on one engram, the latest comparisons'


@dataclass(frozen=True)
class PreferencePair:
    prompt: str
    chosen: str
    rejected: str
    chosen_id: str
    rejected_id: str
    margin: float             # chosen quality minus rejected quality
    by: str                   # "quality" or "judge's comparison"

    def as_dict(self) -> dict[str, Any]:
        return {"prompt": self.prompt, "chosen": self.chosen, "rejected": self.rejected, "chosen_id": self.chosen_id,
                "rejected_id": self.rejected_id, "margin": round(self.margin, 4), "by": self.by}


def compared_winners(engrams: Iterable[Engram]) -> dict[frozenset[str], str]:
    """{frozenset(a, b): winner id} from the judge's pairwise comparisons kept on the engrams."""
    out: dict[frozenset[str], str] = {}
    for e in engrams:
        for loser in _ids(e.metadata.get(PAIR_KEY)):
            if loser != e.id:
                out[frozenset((e.id, loser))] = e.id
    return out


def _ids(value: Any) -> list[str]:
    return [i.strip() for i in str(value or "").split(",") if i.strip()]


def with_pair_win(winner: Engram, loser: Engram) -> tuple[str, str]:
    """The ``PAIR_KEY`` values of the winner and the loser after the judge preferred ``winner``: the loser
    joins the winner's list (the latest :data:`MAX_PAIR_WINS` kept) and an earlier opposite comparison
    leaves the loser's, so the latest comparison of two answers is the one that counts."""
    wins = [i for i in _ids(winner.metadata.get(PAIR_KEY)) if i != loser.id] + [loser.id]
    kept = [i for i in _ids(loser.metadata.get(PAIR_KEY)) if i != winner.id]
    return ",".join(wins[-MAX_PAIR_WINS:]), ",".join(kept)


def _pairs_of(answers: list[tuple[Engram, Quality]], settings: RecallSettings,
              judged: Mapping[frozenset[str], str]) -> Iterator[PreferencePair]:
    answers = sorted(answers, key=lambda a: (-a[1].value, a[0].id))
    kept = 0
    for i, (better, qb) in enumerate(answers):
        for worse, qw in answers[i + 1:]:
            if kept >= settings.max_pairs_per_question:
                return
            if better.answer.strip() == worse.answer.strip():
                continue
            winner = judged.get(frozenset((better.id, worse.id)))
            if winner is not None:
                (chosen, qc), (rejected, qr) = ((better, qb), (worse, qw)) if winner == better.id else \
                    ((worse, qw), (better, qb))
                by = "judge's comparison"
            elif qb.value - qw.value >= settings.min_gap and qb.excluded is None:
                (chosen, qc), (rejected, qr), by = (better, qb), (worse, qw), "quality"
            else:
                continue
            kept += 1
            yield PreferencePair(chosen.query, chosen.answer, rejected.answer, chosen.id, rejected.id,
                                 qc.value - qr.value, by)


def preference_pairs(engrams: Iterable[Engram], settings: RecallSettings | None = None) -> list[PreferencePair]:
    """Every preference pair of these engrams (see the module doc), questions in the order first seen."""
    settings = settings or RecallSettings()
    engrams = list(engrams)
    judged = compared_winners(engrams)
    groups: dict[str, list[tuple[Engram, Quality]]] = defaultdict(list)
    for e in engrams:
        groups[question_key(e.query)].append((e, judge_quality(e, settings)))
    return [pair for answers in groups.values() if len(answers) > 1 for pair in _pairs_of(answers, settings, judged)]
