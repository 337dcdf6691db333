"""People in the loop: their verdicts on stored answers (:mod:`.annotations`), the verdict fitted to them
(:mod:`.calibrate`, over :mod:`cns_core.judging.verdict_calibration`) and the export of it all (:mod:`.export`)."""
