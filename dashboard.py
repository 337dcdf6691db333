"""CNS Studio dashboard: the router and the shared frame (``streamlit run dashboard.py``).

Pages live in ``pages/`` and only arrange widgets; the logic is in ``cns_core``
(``cns_core.views.ui_state`` for what pages share, ``cns_core.views.display`` for colours).
``pages/_frame.py`` holds the Streamlit glue (cached pipeline, Meta-Critic and
memory; the current SNO; error guard) that every page imports as ``from pages import _frame``
(the project root is on ``sys.path``; ``pages/`` itself is not).

Every way in goes through this router, in this order: Streamlit's legacy ``pages/`` mode is
switched off for every later run (``frame.leave_legacy_pages``; a page that this mode ran alone,
for a direct link on a fresh server, hands over to this router in ``frame.page``), then the
access gate (``frame.gate``: the token of a shared dashboard; nothing is loaded or shown before
it), then the sidebar, then the page. Until the models have loaded (``cns_core.views.warm_up``, started
once per server process, by ``cns run`` as the server starts), a progress line stands above every page; on the
pages that show the memory or the corpus, another says how far ``make run``'s demo data has got while it is
written in the background (``cns_core.cli.demo_progress``). Their seconds tick in the browser
(``cns_core.views.progress_line``), so they stay true while a page's script waits.

Session-state keys (constants in ``cns_core.views.ui_state``; set them only through
its helpers, e.g. ``ui_state.select_sno(st.session_state, label, sno)``):

* ``cns_library``  (``KEY_LIBRARY``)  dict[str, SNO]: every SNO of this session by label
  (bundled examples, uploads, authored ones);
* ``cns_current``  (``KEY_CURRENT``)  str: label of the current SNO; absent means
  "the default example" (:func:`cns_core.views.ui_state.current_sno` is the one fallback);
* ``cns_profile``  (``KEY_PROFILE``)  str: the chosen weight profile;
* ``cns_weights``  (``KEY_WEIGHTS``)  dict[str, float] | None: custom weights set on the
  Weights page (None: the profile's weights are in force); ``cns_blend`` (``KEY_BLEND``) the
  blend position they came from. Read them only as ``ui_state.weights_in_force`` (its ``label``
  names them the same way everywhere: ``verification``, ``custom (blend 0.0)``); set them with
  ``ui_state.choose_profile`` / ``ui_state.set_custom_weights``;
* ``cns_population`` (``KEY_POPULATION``) str: what novelty is measured against (examples,
  session, none; ``ui_state.current_population``);
* ``cns_judge_turns`` (``KEY_JUDGE_TURNS``) list[dict]: turns sent to the judge;
* ``cns_judge_pairs`` (``KEY_JUDGE_PAIRS``) list[PairOutcome]: comparisons of two answers asked for on the Judge
  page (``cns_core.views.pair_view``);
* ``cns_gate`` (``KEY_GATE``) float | None: the quality gate's threshold tuned on the Meta-Critic page
  (a band edge; None: config/meta.yaml's). Read it only as ``ui_state.gate_in_force`` (``frame.gate_in_force``),
  set it with ``ui_state.set_gate``.

To open an SNO on every page from another page (the Corpus page does this):
``ui_state.select_sno(st.session_state, label, sno); st.switch_page("pages/overview.py")``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import streamlit as st

from cns_core.views import progress_line, ui_state
from pages import _frame as frame
from pages import _rerun_fold

if TYPE_CHECKING:
    from streamlit.delta_generator import DeltaGenerator
    from streamlit.navigation.page import StreamlitPage

ROOT = Path(__file__).resolve().parent
PAGES = ROOT / "pages"

frame.leave_legacy_pages()
_rerun_fold.keep_navigation_over_timer_reruns()   # a progress tick never undoes a click in the sidebar
st.set_page_config(page_title="CNS Studio", page_icon=str(ROOT / "assets" / "icon.png"), layout="wide")

_SECTIONS: dict[str, list[tuple[str, str, str]]] = {
    "Evaluate an SNO": [
        ("overview.py", "Overview", ":material/dashboard:"),
        ("author.py", "Author / Load", ":material/edit_note:"),
        ("graph.py", "Reasoning graph", ":material/account_tree:"),
        ("weights.py", "Weights", ":material/tune:"),
        ("meta_critic.py", "Meta-Critic", ":material/balance:"),
        ("coherence.py", "Coherence", ":material/join_inner:"),
    ],
    "Corpora": [
        ("corpus.py", "Corpus", ":material/library_books:"),
    ],
    "Memory and judge": [
        ("engrams.py", "Engrams", ":material/memory:"),
        ("judge.py", "Judge", ":material/gavel:"),
    ],
}


# Pages that work on the memory and the judge, not on an SNO: the sidebar's SNO controls would do nothing there
# and push the page's own filters below the fold.
_WITHOUT_SNO = frozenset(Path(name).stem for name, _, _ in _SECTIONS["Memory and judge"])   # their url paths
# Pages that show the memory or the corpus: they say how far `make run`'s demo data has got while it is written.
_DEMO_DATA_PAGES = progress_line.DEMO_DATA_PAGES


def _navigation() -> dict[str, list]:
    sections: dict[str, list] = {}
    for section, entries in _SECTIONS.items():
        pages = [st.Page(f"pages/{name}", title=title, icon=icon, default=name == "overview.py")
                 for name, title, icon in entries if (PAGES / name).is_file()]
        if pages:
            sections[section] = pages
    return sections


_SNO_WIDGET = "cns_sidebar_sno"
_PROFILE_WIDGET = "cns_sidebar_profile"


def _on_sno_change() -> None:
    ui_state.select_sno(st.session_state, st.session_state[_SNO_WIDGET])


_POPULATION_WIDGET = "cns_sidebar_population"


def _on_profile_change() -> None:
    chosen = st.session_state[_PROFILE_WIDGET]
    if chosen in frame.profiles():       # the custom entry itself changes nothing
        ui_state.choose_profile(st.session_state, chosen)  # a chosen profile replaces custom weights and blend


def _on_population_change() -> None:
    st.session_state[ui_state.KEY_POPULATION] = st.session_state[_POPULATION_WIDGET]


def _sidebar(page: StreamlitPage) -> None:
    """What the SNO pages share: the SNO, the weights and gate in force, the novelty population (all cheap)."""
    with st.sidebar:
        st.markdown("### CNS Studio")
        if page.url_path in _WITHOUT_SNO:
            return
        with frame.guard("Could not load the SNOs"):
            label, _ = frame.current()
            library = st.session_state[ui_state.KEY_LIBRARY]
            if st.session_state.get(_SNO_WIDGET) != label:
                st.session_state[_SNO_WIDGET] = label
            st.selectbox("Current SNO", list(library), key=_SNO_WIDGET, on_change=_on_sno_change,
                         help="Every page shows this SNO. Load or build more on Author / Load.")
        with frame.guard("Could not read the weight profiles"):
            profiles = frame.profiles()
            force = frame.in_force()
            if st.session_state.get(_PROFILE_WIDGET) != force.label:
                st.session_state[_PROFILE_WIDGET] = force.label
            st.selectbox("Weights", ui_state.profile_options(force, profiles), key=_PROFILE_WIDGET,
                         on_change=_on_profile_change,
                         help="The weights in force on every page: a profile (config/profiles.yaml) or the custom "
                              "weights tuned on Weights. Choosing a profile replaces custom weights.")
            if force.custom:
                st.caption(f"Custom weights from the Weights page are in force (compared with {force.profile}).")
        with frame.guard("Could not read the quality gate"):
            gate = frame.gate_in_force()
            tuned = f" · tuned on Meta-Critic (default {gate.default:.2f})" if gate.tuned else ""
            st.caption(f"Quality gate: **{frame.md(gate.label)}**{tuned}",
                       help="The gate accepts the band starting at its threshold and every band above. Tune it on "
                            "the Meta-Critic page; it stays in force for the session on every page.")
        with frame.guard("Could not read the novelty population"):
            choice = st.session_state.get(ui_state.KEY_POPULATION, "examples")
            if st.session_state.get(_POPULATION_WIDGET) != choice:
                st.session_state[_POPULATION_WIDGET] = choice
            st.selectbox("Novelty population", list(ui_state.POPULATION_CHOICES), key=_POPULATION_WIDGET,
                         format_func=ui_state.POPULATION_CHOICES.get, on_change=_on_population_change,
                         help="What Novelty measures each hypothesis against. The bundled examples are the same "
                              "as `cns evaluate FILE --population examples`, so the CLI gives the same score.")
            st.caption(frame.md(frame.population().describe(frame.current()[1])))


def _models(slot: DeltaGenerator) -> None:
    """The NLI in use, under the sidebar's choices. Filled after the page: naming the backend may load it,
    and a fresh page must show its title and progress first, not wait for a caption."""
    from cns_core.models import get_nli_backend
    from cns_core.models.nli import nli_identity

    with slot, frame.guard("Could not read the model settings"):
        backend = get_nli_backend()
        st.caption(f"NLI: **{nli_identity(backend)}** · embeddings: MiniLM (offline)")
        if getattr(backend, "fallback_reason", None):
            st.warning("The configured NLI model could not be loaded; scores come from the fallback "
                       f"named above. {backend.fallback_reason}")


def _progress(page: StreamlitPage) -> progress_line.UnderWay:
    return progress_line.under_way(with_demo_data=page.url_path in _DEMO_DATA_PAGES)


def _draw_progress(slot: DeltaGenerator, now: progress_line.UnderWay) -> None:
    """The progress lines in ``slot`` (empty when nothing is under way); their seconds tick in the browser."""
    html = now.html()
    if html is None:
        slot.empty()
    else:
        slot.html(html, unsafe_allow_javascript=True)      # our own words and numbers, escaped


def _follow_progress(slot: DeltaGenerator, page: StreamlitPage, drawn: progress_line.UnderWay) -> None:
    """After the page: while something is under way, its lines are drawn again every second (fresh figures from
    the server), and the whole page once the models it waited for are loaded or the demo data moves on.

    The lines are drawn before the rerun is asked for: drawing is where a run yields to a request that came
    meanwhile, so a page the reader clicked in the sidebar goes first. Asked for after it, the rerun of this
    page would replace that request (Streamlit keeps the later page of two) and the click would be lost."""
    def tick() -> None:
        now = _progress(page)
        _draw_progress(st.empty(), now)
        if now.changed_since(drawn):
            st.rerun(scope="app")

    with slot.container():
        st.fragment(tick, run_every=1.0)()


granted = frame.access_granted()
navigation = st.navigation(_navigation(), position="sidebar" if granted else "hidden")   # keeps the asked-for page
if not granted:
    frame.gate()        # the token prompt; the run stops here
_sidebar(navigation)
models_slot = st.sidebar.container()
top = st.empty()     # above the page: what is under way (models loading, demo data), until it is done
_draw_progress(top, _progress(navigation))
try:
    with frame.routed():
        navigation.run()
finally:                 # also after a page's st.stop()
    drawn = _progress(navigation)
    if drawn.moving:
        _follow_progress(top, navigation, drawn)
    else:
        _draw_progress(top, drawn)
    _models(models_slot)
    frame.coherence_hook()   # warms the coherence hook's models in the background, after the page has drawn
