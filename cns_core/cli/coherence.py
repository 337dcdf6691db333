"""``cns coherence-eval FILE`` and ``cns coherence-check``: the coherence hook from the shell.

``coherence-eval`` prints the spec's section-13 metrics on a labelled pairs file
(SICK ``.tsv`` or SNLI-style ``.jsonl``), one figure a line::

    contradiction precision: 0.939
    contradiction recall: 0.769
    ECE margin before calibration: 0.097
    ...

``coherence-check`` runs one chain (``--text``) or the claims of SNO files
(``--sno``) through the hook and prints the tags.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["register", "run_eval", "run_check"]


def _hook(args: argparse.Namespace, **kwargs: Any):
    from cns_core.coherence import CoherenceHook

    model: Any = None
    if getattr(args, "heuristics_only", False):
        model = False
    elif getattr(args, "backend", None):
        from cns_core.coherence.nli import ModelPass
        from cns_core.models import get_nli_backend

        name = args.backend
        model = ModelPass(factory=lambda: get_nli_backend(name))
    return CoherenceHook(model=model, **kwargs)


def run_eval(args: argparse.Namespace) -> int:
    from cns_core.coherence.calibration import Calibrator
    from cns_core.coherence.evaluate import evaluate_file

    if args.limit is not None and args.limit <= 0:
        raise ValueError(f"--limit: must be a positive number, got {args.limit}")
    if args.chain_size <= 0:
        raise ValueError(f"--chain-size: must be a positive number, got {args.chain_size}")
    hook = _hook(args, log=False)
    if hook.model is not None and not hook.model.ready:
        print(f"note: NLI backend unavailable ({hook.model.unavailable}); heuristics only", file=sys.stderr)
    calibrator = Calibrator.load(args.calibration) if args.calibration else None
    report = evaluate_file(hook, args.file, limit=args.limit, fit_fraction=args.fit_fraction, seed=args.seed,
                           chain_size=args.chain_size, calibrator=calibrator,
                           save_calibration=args.save_calibration, fit_weights=args.fit_weights)
    for line in report.lines():
        print(line)
    if args.save_calibration:
        print(f"calibration saved: {args.save_calibration}")
    return 0


def run_check(args: argparse.Namespace) -> int:
    if not args.text and not args.sno:
        raise ValueError("give --text TEXT or --sno FILE")
    hook = _hook(args, log=False if args.no_log else None).warm_up()
    out: list[dict[str, Any]] = []
    if args.text:
        if args.memory:
            from cns_core.memory import MemoryService

            hook.attach_memory(MemoryService())
        # a look, not a write: nothing goes to the quarantine
        result = hook.check_chain(args.chain_id, args.text, importance=args.importance,
                                  goals_ctx=args.goal or (), narrative_ctx=args.narrative or (),
                                  store_quarantine=False)
        out.append({"chain_id": result.chain_id, "blocked": result.blocked,
                    "metrics": result.chain_metrics.to_dict(), "degraded": list(result.degraded),
                    "error": result.error, "props": [t.to_dict() for t in result.prop_tags]})
    for path in args.sno or ():
        from cns_core.sno import load_snos

        for sno in load_snos(path):
            report = hook.check_sno(sno, unlimited=args.no_time_limit)
            out.append({"sno": sno.id, "claims": {k: v.status for k, v in report.claims.items()},
                        "contradictions": [vars(p) | {"types": list(p.types)} for p in report.pairs],
                        "coherence": report.metrics.coherence_chain, "degraded": list(report.degraded),
                        "judged": vars(report.coverage)})
    if args.json:
        print(json.dumps(out, indent=2, default=list))
        return 0
    from cns_core.coherence.schemas import ModelCoverage

    for item in out:
        if "chain_id" in item:
            print(f"chain {item['chain_id']}: coherence {item['metrics']['coherence_chain']:+.2f}, "
                  f"blocked {'yes' if item['blocked'] else 'no'}"
                  + (f", degraded: {', '.join(item['degraded'])}" if item["degraded"] else ""))
            for p in item["props"]:
                types = ", ".join(p["contradiction_types"])
                print(f"  {p['p_id']}: entail {p['entail']:.2f} contradict {p['contradict']:.2f}"
                      + (f" [{types}]" if types else "") + f"  {p['text']}")
        else:
            judged = item["judged"]
            print(f"SNO {item['sno']}: coherence {item['coherence']:+.2f}, "
                  f"{len(item['contradictions'])} contradiction(s)"
                  + (f", degraded: {', '.join(item['degraded'])}" if item["degraded"] else ""))
            print(f"  {ModelCoverage(**judged).sentence('claims')}")
            for c in item["contradictions"]:
                print(f"  {c['a']} x {c['b']}: {c['score']:.2f} {'/'.join(c['types'])}"
                      + (" (declared attack)" if c["declared"] else ""))
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("coherence-eval", help="coherence hook metrics on a labelled pairs file",
                              description="Section-13 metrics of the coherence hook on a labelled pairs file: "
                                          "SICK .tsv (sentence_A, sentence_B, entailment_label) or SNLI-style "
                                          ".jsonl (sentence1, sentence2, gold_label).")
    p.add_argument("file", type=Path, help="labelled pairs (.tsv or .jsonl)")
    p.add_argument("--limit", type=int, default=None, help="only the first N pairs")
    p.add_argument("--fit-fraction", type=float, default=0.5,
                   help="share of the pairs used to fit the calibration (default 0.5; the rest is measured)")
    p.add_argument("--seed", type=int, default=0, help="seed of the fit / evaluation split")
    p.add_argument("--chain-size", type=int, default=10, help="propositions per chain for the stability figure")
    p.add_argument("--calibration", type=Path, default=None,
                   help="use this saved calibration state instead of fitting one")
    p.add_argument("--save-calibration", type=Path, default=None, help="save the fitted calibration state here")
    p.add_argument("--backend", default=None, help="NLI backend (default: nli.backend of models.yaml)")
    p.add_argument("--heuristics-only", action="store_true", help="no model pass (the spec's phase A)")
    p.add_argument("--fit-weights", action="store_true",
                   help="also choose the fusion weights w_h/w_m on the fitting part (precision target 0.90)")
    p.set_defaults(func=run_eval)

    c = subparsers.add_parser("coherence-check", help="run the coherence hook on a chain or SNO files")
    c.add_argument("--text", default=None, help="the chain's text")
    c.add_argument("--chain-id", default="cli", help="chain id (default: cli)")
    c.add_argument("--importance", type=float, default=None, help="chain importance in [0, 1]")
    c.add_argument("--goal", action="append", help="an active goal proposition (repeatable)")
    c.add_argument("--narrative", action="append", help="a narrative context proposition (repeatable)")
    c.add_argument("--memory", action="store_true", help="retrieve evidence from the engram memory")
    c.add_argument("--sno", action="append", type=Path, help="check the claims of this SNO file (repeatable)")
    c.add_argument("--backend", default=None, help="NLI backend (default: nli.backend of models.yaml)")
    c.add_argument("--heuristics-only", action="store_true", help="no model pass")
    c.add_argument("--no-time-limit", action="store_true",
                   help="--sno: let the model judge every claim however long it takes "
                        "(default: budgets.sno_check_ms of coherence.yaml)")
    c.add_argument("--no-log", action="store_true", help="do not append to the coherence log")
    c.add_argument("--json", action="store_true", help="print JSON")
    c.set_defaults(func=run_check)
