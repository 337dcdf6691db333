"""Reading a judge's verdict: the score from the END of its output, the feedback before it.

Pure functions, table-tested. The score is the *last* score marker in the judge's
own output: ``[RESULT] 4`` (Prometheus' format, also ``[RESULT] Score: 4``),
``Score: 4`` (also ``###Score: 4`` and ``**Score:** 4``) or ``4/5``. Only the
judge's output is parsed, never the prompt, so neither the template's own
``[RESULT]`` nor an answer that contains ``[RESULT] 5`` can set the grade; and
when the judge quotes such an answer, its own final marker still comes last.
A last marker holding 0, 6, 2.5 or nothing is a failure, not a reason to look
further back. Digits are ASCII only: ``[RESULT] ٤`` (an Arabic-Indic four) is no score, since
Python's ``\d`` and ``int`` would read it as 4.

Relative grading (:func:`parse_pair_verdict`) reads the last ``[RESULT]`` the same way, wanting
``A`` or ``B`` after it (also ``(A)``, ``"B"``, ``Response A``). A judge that answers a pairwise
request with a single score (``[RESULT] 4``, ``Score: 4``) gets an error saying so: it graded one
answer and chose none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Verdict", "parse_verdict", "parse_score", "PairVerdict", "parse_pair_verdict"]

_NUMBER = r"(?P<n>[-+]?[0-9]+(?:[.,][0-9]+)?)(?!\d)"       # ASCII digits, not followed by any other digit
_MARKERS = re.compile(
    r"\[RESULT\]\s*\(?\s*(?:score\s*[:=]?\s*)?" + _NUMBER.replace("?P<n>", "?P<result>")
    + r"|score\**\s*[:=]\s*\**\s*\(?\s*" + _NUMBER.replace("?P<n>", "?P<score>")
    + r"|(?<![0-9.,/])" + _NUMBER.replace("?P<n>", "?P<ratio>") + r"\s*/\s*5(?![0-9.,])",
    re.IGNORECASE)
_BARE_RESULT = re.compile(r"\[RESULT\]", re.IGNORECASE)
_LABEL = re.compile(r"^\s*(?:#+\s*)?feedback\s*:\s*", re.IGNORECASE)


@dataclass(frozen=True)
class Verdict:
    """A parsed judge output: ``score`` is an int 1-5, or None with ``error`` saying why."""

    score: int | None
    feedback: str
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.score is not None


def _feedback(text: str) -> str:
    """The text before the score, without a leading "Feedback:" or the marker's own "###"/"**"."""
    return _LABEL.sub("", text).rstrip(" \t\r\n#*").strip()


def parse_verdict(output: str) -> Verdict:
    """Score and feedback from a judge's output (see the module doc for the rules)."""
    if not isinstance(output, str) or not output.strip():
        return Verdict(None, "", "the judge returned no text")
    matches = list(_MARKERS.finditer(output))
    last_start = matches[-1].start() if matches else -1
    trailing_result = [m for m in _BARE_RESULT.finditer(output) if m.start() > last_start]
    if trailing_result:
        return Verdict(None, _feedback(output[:trailing_result[-1].start()]),
                       "the judge's final [RESULT] carries no score")
    if not matches:
        return Verdict(None, _feedback(output), "no score marker ([RESULT] n, Score: n or n/5) in the judge output")
    last = matches[-1]
    token = next(v for v in last.group("result", "score", "ratio") if v is not None)
    feedback = _feedback(output[:last.start()])
    if not re.fullmatch(r"[-+]?[0-9]+", token):
        return Verdict(None, feedback, f"score {token!r} is not a whole number 1-5")
    score = int(token)
    if not 1 <= score <= 5:
        return Verdict(None, feedback, f"score {score} is outside 1-5")
    return Verdict(score, feedback)


def parse_score(output: str) -> int | None:
    """Just the score (None when the output has no valid final score)."""
    return parse_verdict(output).score


_CHOICE = re.compile(r"""\s*[:=]?\s*[(\["'*]*\s*(?:(?i:response)\s*)?(?P<choice>[AB])(?![A-Za-z0-9])""")
# the choice is a capital A or B: "[RESULT] a draw" names no answer


@dataclass(frozen=True)
class PairVerdict:
    """A parsed relative grading: ``winner`` is "A" or "B", or None with ``error`` saying why."""

    winner: str | None
    feedback: str
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.winner is not None


def _single_score_error(score: int | str) -> str:
    return (f"the judge answered a pairwise request with a single score ({score}) instead of choosing A or B: "
            "it graded one answer; a relative-grading judge (Prometheus 2) answers \"[RESULT] A\" or \"[RESULT] B\"")


def parse_pair_verdict(output: str) -> PairVerdict:
    """The winner ("A" or "B") and the feedback from a judge's relative grading (see the module doc)."""
    if not isinstance(output, str) or not output.strip():
        return PairVerdict(None, "", "the judge returned no text")
    results = list(_BARE_RESULT.finditer(output))
    if not results:
        single = parse_verdict(output)
        if single.ok:
            return PairVerdict(None, single.feedback, _single_score_error(single.score))
        return PairVerdict(None, _feedback(output), "no [RESULT] A or [RESULT] B in the judge output")
    last = results[-1]
    feedback = _feedback(output[:last.start()])
    choice = _CHOICE.match(output, last.end())
    if choice:
        return PairVerdict(choice.group("choice"), feedback)
    score = _MARKERS.match(output, last.start())
    if score and score.group("result") is not None:
        return PairVerdict(None, feedback, _single_score_error(score.group("result")))
    after = output[last.end():].strip()
    if not after:
        return PairVerdict(None, feedback, "the judge's final [RESULT] names no answer (A or B)")
    return PairVerdict(None, feedback, f"the judge's final [RESULT] is followed by {after[:40]!r}, not A or B")
