"""CNS Studio core: SNOs, critics, Meta-Critic, coherence hook, memory and agents.

Nothing in this package imports Streamlit; the dashboard is a separate layer.
"""

__version__ = "0.1.0"
