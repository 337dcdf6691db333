"""CNS Studio core: SNOs, critics, Meta-Critic, coherence hook, memory and agents.

The root holds the domain (``sno``, ``pipeline``, ``scoring``, ``memory``,
``engrams``, ``config``); ``views/`` holds what the dashboard pages compute and
``cli/`` the ``cns`` command. Views import the domain, never the reverse.
Nothing in this package imports Streamlit; the dashboard is a separate layer.
"""

__version__ = "0.1.0"
