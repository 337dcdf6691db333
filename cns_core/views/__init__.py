"""What the dashboard pages compute, without Streamlit.

Pages (``dashboard.py``, ``pages/``) only arrange widgets; what they show is
computed here, so it can be tested without a browser. Views import the domain
(``cns_core.sno``, ``scoring``, ``memory``, ``engrams``, the critics, the bus);
the domain never imports a view (``tests/test_layout.py`` checks it).

- :mod:`~cns_core.views.ui_state`: session state, the SNO library, the weights in force
- :mod:`~cns_core.views.display`: every colour, band, label and badge (one policy module)
- :mod:`~cns_core.views.graph_html`: the offline reasoning-graph HTML
- :mod:`~cns_core.views.engram_view`: the Engrams page's filters, histogram, Trust badges and disagreement marks
- :mod:`~cns_core.views.text_draft`: the Author page's "From text" (a draft as editable tables, and back)
- :mod:`~cns_core.views.judge_feed`: the Judge page's bus feed and judge status
- :mod:`~cns_core.views.coherence_view`: the Coherence page's account of who judged (model or heuristics), time and budget
"""
