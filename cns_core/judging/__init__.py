"""Judging an answer against its reference: the answer verdict, its head and calibration, the answer's
Trust Score and the agreement with people's marks.

* :mod:`~cns_core.judging.answer_verdict`: correct / incorrect / unverified from the verifier's readings;
* :mod:`~cns_core.judging.verdict_head`: the learned head over the readings and the answer's surface cues;
* :mod:`~cns_core.judging.verdict_calibration`: people's marks fitted into the verdict's thresholds;
* :mod:`~cns_core.judging.answer_trust`: the engram's Trust Score, backfill and relabelling;
* :mod:`~cns_core.judging.agreement`: how the verdicts agree with people.

The judge loop (:mod:`cns_core.agents`) only carries turns and calls these. Import the submodule you need.
"""

__all__: list[str] = []
