"""The judge loop: a ZeroMQ bus and the agents on it.

* :mod:`~cns_core.agents.bus` and :mod:`~cns_core.agents.journal`: envelopes, proxy, publishers,
  subscribers, and the replay journal;
* :mod:`~cns_core.agents.prometheus`, :mod:`~cns_core.agents.judge_parse`,
  :mod:`~cns_core.agents.ollama`: the Prometheus prompt, the verdict parser, the Ollama client;
* :mod:`~cns_core.agents.critic`, :mod:`~cns_core.agents.memory_agent`,
  :mod:`~cns_core.agents.generator`: the agents, each a state machine in a thread.

Import the submodule you need; this package imports nothing heavy on its own.
"""

__all__: list[str] = []
