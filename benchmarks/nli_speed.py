"""CPU speed of the shipped NLI model, side by side in one run.

    .venv/bin/python benchmarks/nli_speed.py [--pairs 2000] [--threads 0] [--sno 200]

* pairs per second on SNLI-length pairs (SNLI dev; short sentences) for the backend in fp32
  and int8, for a **bare** batched forward pass of the same model over the same length-sorted
  batches (the backend's overhead is the gap), and for the ``lexical`` proxy;
* int8 against fp32 on MultiNLI dev-mismatched (``--accuracy-pairs``): accuracy and agreement;
* one SNO of ``--sno`` claims x ``--sno`` evidence items grounded whole by the critic with the
  default settings (top-k evidence windows per claim), with a cold embedding cache.

Methods take turns (``--repeat`` rounds, the fastest counts) after one untimed warm-up round.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent


def _grounding_bench():
    """benchmarks/grounding.py as a module: its bare forward pass, round-robin timer and SNO builder."""
    spec = importlib.util.spec_from_file_location("grounding_bench", HERE / "grounding.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=2000, help="SNLI-length pairs timed per method")
    parser.add_argument("--accuracy-pairs", type=int, default=3000, help="MultiNLI mismatched pairs, int8 vs fp32")
    parser.add_argument("--sno", type=int, default=200, help="claims and evidence items of the grounded SNO")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    parser.add_argument("--model", default=None, help="model folder (default: the shipped one)")
    args = parser.parse_args(argv)

    import torch

    from cns_core.config import data_dir
    from cns_core.critics.base import CriticContext
    from cns_core.critics.grounding import GroundingCritic
    from cns_core.models.embeddings import MiniLMEmbedder
    from cns_core.models.lexical_nli import from_config as lexical_from_config
    from cns_core.models.nli import SHIPPED_MODEL, TransformersNLI, nli_settings
    from cns_core.training.nli_data import read_nli_tsv

    if args.threads:
        torch.set_num_threads(args.threads)
    model = args.model or SHIPPED_MODEL
    fp32 = TransformersNLI(model, device="cpu")
    int8 = TransformersNLI(model, device="cpu", precision="int8")
    lexical = lexical_from_config(nli_settings("lexical")[1])
    tokenizer, bare_model, _, _ = fp32._load()
    snli = read_nli_tsv(data_dir() / "nli_train" / "snli_dev.tsv.gz", limit=args.pairs)
    pairs = snli.pairs
    tokens = [len(tokenizer(p, h)["input_ids"]) for p, h in pairs]
    print(f"model: {model}, {sum(p.numel() for p in bare_model.parameters()) / 1e6:.1f}M parameters, "
          f"{torch.get_num_threads()} CPU threads; {len(pairs)} SNLI dev pairs, median {int(np.median(tokens))} "
          f"tokens, batch {fp32.batch_size}")

    bench = _grounding_bench()
    timed, _ = bench._round_robin({
        "bare forward (fp32)": lambda: bench.bare_forward(pairs, tokenizer, bare_model, fp32.batch_size,
                                                          fp32.max_length),
        "backend fp32": lambda: fp32.predict(pairs),
        "backend int8": lambda: int8.predict(pairs),
        "lexical proxy": lambda: lexical.predict(pairs),
    }, args.repeat)
    best = {name: wall for name, (wall, _cpu) in timed.items()}       # wall seconds, fastest of the rounds
    print(f"{'method':<24}{'seconds':>10}{'pairs/s':>10}")
    for name, seconds in best.items():
        print(f"{name:<24}{seconds:>10.2f}{len(pairs) / seconds:>10.1f}")
    print(f"backend fp32 overhead over the bare forward pass: "
          f"{100 * (best['backend fp32'] / best['bare forward (fp32)'] - 1):.0f}%")
    print(f"int8 speed-up over fp32: {best['backend fp32'] / best['backend int8']:.2f}x")

    mnli = read_nli_tsv(data_dir() / "nli_train" / "mnli_dev_mismatched.tsv.gz", limit=args.accuracy_pairs)
    labels = np.asarray(mnli.labels)
    p32, p8 = fp32.predict(mnli.pairs), int8.predict(mnli.pairs)
    acc32, acc8 = float(np.mean(p32.argmax(1) == labels)), float(np.mean(p8.argmax(1) == labels))
    print(f"MultiNLI dev-mismatched, first {len(labels)} pairs: accuracy fp32 {acc32:.3f}, int8 {acc8:.3f} "
          f"({100 * (acc8 - acc32):+.1f} points); same label {np.mean(p32.argmax(1) == p8.argmax(1)):.3f}")

    sno = bench.build_sno(args.sno, args.sno, seed=1)
    critic = GroundingCritic()
    start = time.perf_counter()
    result = critic.evaluate(sno, CriticContext(nli=fp32, embedder=MiniLMEmbedder()))
    seconds = time.perf_counter() - start
    print(f"grounding one SNO of {args.sno} claims x {args.sno} evidence (top {critic.settings['top_k']} "
          f"windows per claim, {result.evidence['pairs']} pairs, cold embedding cache): {seconds:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
