"""Corpus evaluation: many SNO files scored into one resumable results table.

``batch`` reads the files, skips rows already done (same content hash and configuration
fingerprint) and writes rows as they finish; it scores in this process or on Ray actors
(``ray_actors``: models loaded once per actor, NLI and embedding calls merged across SNOs,
the novelty population shared through the object store). ``rows`` builds a table row,
``population`` the novelty population, ``corpus`` what the Corpus page asks of a run.
"""
