"""The verifier's one input form: evidence against a claim, with the question the claim answers.

"It was Tesla, in 1893" means nothing without "Who first demonstrated radio transmission?", and a
bare reference such as "Guglielmo Marconi" means nothing without it either. When a claim answers a
question, the question is written into the hypothesis ahead of the claim, so the cross-encoder reads
question, evidence and answer together; without a question the pair is plain NLI. Training
(:mod:`cns_core.training.verifier_data`) and every caller at inference build pairs here, so the
model always sees the form it was trained on.
"""

from __future__ import annotations

__all__ = ["verifier_pair", "QUESTION_PREFIX", "ANSWER_PREFIX"]

QUESTION_PREFIX = "Question:"
ANSWER_PREFIX = "Answer:"


def verifier_pair(evidence: str, claim: str, question: str | None = None) -> tuple[str, str]:
    """``(premise, hypothesis)`` for the cross-encoder: the evidence, and the claim (after its question)."""
    evidence, claim = " ".join(evidence.split()), " ".join(claim.split())
    question = " ".join((question or "").split())
    if not question:
        return evidence, claim
    return evidence, f"{QUESTION_PREFIX} {question} {ANSWER_PREFIX} {claim}"
