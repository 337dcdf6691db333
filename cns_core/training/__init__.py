"""The recipes that make the shipped models: data readers, augmentation, training loops and metrics.

Kept apart from :mod:`cns_core.models`, which only loads and runs a model: nothing at inference time
imports this package. Each ``cns train-*`` command runs one recipe here:

* :mod:`~cns_core.training.nli` (``cns train-verifier``): the NLI cross-encoder and the answer verifier,
  reading pairs through :mod:`~cns_core.training.nli_data` and :mod:`~cns_core.training.verifier_data`,
  augmented by :mod:`~cns_core.training.nli_augment` and :mod:`~cns_core.training.fact_swaps`, scored by
  :mod:`~cns_core.training.nli_metrics`;
* :mod:`~cns_core.training.logic` (``cns train-logic``): the GNN Logic critic, from
  :mod:`~cns_core.training.logic_data`;
* :mod:`~cns_core.training.drafter` (``cns train-drafter``): the argument miner that drafts SNOs;
* :mod:`~cns_core.training.grounding_fusion` and :mod:`~cns_core.training.claim_errors`: the grounding
  fusion's fit and the development sets it is judged by.
"""
