"""Judge: send a turn to the judge loop on the bus and watch its grade arrive."""

from __future__ import annotations

import streamlit as st

from pages import _frame as frame
from cns_core.views import display, ui_state
from cns_core.agents.bus import BusError, bus_settings
from cns_core.agents.pending import memory_counts, read_schedule, request_grades
from cns_core.views.engram_view import badges_html, disagreement_rule
from cns_core.views.judge_feed import (
    apply_updates, ask_problem, judge_status, loop_view, new_turn, retry_schedule_text, store_ungraded, stored_turns,
)
from cns_core.views.pair_view import compare_on_page

frame.page("Judge", "Paste a query and an answer (or ask a question) and the CriticAgent grades it 1-5 over the "
           "bus; the answer shows at once and its badge appears when the grade arrives.")

turns: list[dict] = st.session_state.setdefault(ui_state.KEY_JUDGE_TURNS, [])


@st.fragment(run_every=2.0)
def memory_status() -> None:
    """The memory's counts and the pending grades' retries, read from the memory on every tick: the judge loop
    stores and grades turns meanwhile, so a count taken before a send would stay behind."""
    with frame.guard("Could not read the memory's counts"):
        counts = memory_counts(frame.memory())
        st.caption(f"Memory: {counts.words()}", help="Read from the memory now; the Engrams page states the same.")
        retries = retry_schedule_text(read_schedule(), waiting=counts.ungraded)
        if retries:
            st.caption(retries)


feed = None
status = None

with frame.guard("Could not read the bus and judge settings"):
    status = judge_status(bus_settings())
    feed_error = None
    if status.loop.ours:      # this folder's loop holds the ports: the feed proves that it answers
        loop_bus = status.loop.bus
        try:
            feed = frame.judge_feed(loop_bus.host, loop_bus.pub_port, loop_bus.sub_port)
        except BusError as exc:
            feed_error = str(exc)
        if feed is not None and not feed.alive:
            frame.judge_feed.clear()
            feed, feed_error = None, "the page's bus listener stopped; reload the page"
    loop = loop_view(status.loop, feed_error)
    c1, c2, c3 = st.columns(3)
    c1.markdown("**Judge loop** " + frame.badge(loop.badge, loop.colour), unsafe_allow_html=True)
    c1.caption(loop.caption)
    c2.markdown(f"**{status.server_label}** " + frame.badge("reachable" if status.judge_server else "not reachable",
                                                          display.GREEN if status.judge_server else display.RED),
                unsafe_allow_html=True)
    c2.caption(f"{status.backend} backend · {display.code_span(status.judge_url)}")   # code, never a link
    model_badge = (("present", display.GREEN) if status.judge_model_present else ("missing", display.AMBER)
                   if status.judge_server else ("unknown: server unreachable", display.GREY))
    c3.markdown("**Judge model** " + frame.badge(*model_badge), unsafe_allow_html=True)
    c3.caption(frame.md(status.judge_model))
    memory_status()
    if loop.message:
        st.warning(loop.message)
        st.code(loop.command, language="bash")
    if not status.judge_server or not status.judge_model_present:
        tried = (f"no judge answers: tried the **{status.backend}** backend at `{status.judge_url}`"
                 if not status.judge_server else
                 f"the judge model `{status.judge_model}` is not served at `{status.judge_url}` ({status.backend})")
        button = " (or at once with **Grade pending turns** below)" if feed is not None else ""
        st.warning(f"Grading is paused: {tried}. Turns are still stored; their grade stays empty until a judge "
                   f"answers, then the judge loop grades the pending turns{button}. Start a judge with:")
        st.code(status.start_command, language="bash")

modes = ["Paste a query and an answer", "Ask a question (GeneratorAgent answers)"]
mode = st.radio("Mode", modes, horizontal=True, key="cns_judge_mode",
                help="Asking needs this folder's judge loop, a generator model in config/critic.yaml and its server.")
asking = mode == modes[1]
cannot_ask = ask_problem(status, feed is not None) if asking else None
if cannot_ask:
    st.warning(f"Asking cannot work right now: {cannot_ask} Paste a query and an answer instead.")
with st.form("cns_judge_form", clear_on_submit=True):
    query = st.text_area("Query", key="cns_judge_query", height=80)
    answer = "" if asking else st.text_area("Answer", key="cns_judge_answer", height=120)
    session_id = st.text_input("Session id", value="dashboard", key="cns_judge_session")
    sent = st.form_submit_button("Send to the judge", type="primary", disabled=bool(cannot_ask),
                                 help="GeneratorAgent answers the question first, then the judge grades the answer."
                                 if asking else None)

if sent:
    if not query.strip():
        st.error("Query: must not be empty.")
    elif not asking and not answer.strip():
        st.error("Answer: paste the answer to grade (or choose Ask a question).")
    elif feed is not None:          # asking got this far only with a feed and a generator (ask_problem above)
        turn = new_turn(query.strip(), None if asking else answer.strip(), session_id.strip(),
                        "ask" if asking else "paste")
        with frame.guard("Could not publish the turn"):
            (feed.ask if asking else feed.send_turn)(turn)
            turns.append(turn)
    else:
        turn = new_turn(query.strip(), answer.strip(), session_id.strip(), "stored")
        with frame.guard("Could not store the turn"):
            store_ungraded(frame.memory(), turn)
            turns.append(turn)

if feed is not None:
    with frame.guard("Could not request the pending grades"):
        if st.button("Grade pending turns", key="cns_judge_pending", disabled=status is None or not status.can_grade,
                     help="Send every stored turn without a grade to the judge (each once; graded turns are "
                          "never graded again)."):
            count = request_grades(feed.publisher, frame.memory())
            st.success(f"Asked the judge for {count} pending turn(s)." if count else "No turn is waiting for a grade.")


@st.fragment(run_every=1.0)
def _turns() -> None:
    apply_updates(turns, feed)
    if not turns:
        st.info("No turn sent yet in this session.")
        return
    stored = stored_turns(frame.memory(), turns)    # the memory's record of each turn, as Engrams shows it
    rule = disagreement_rule()
    for turn in reversed(turns):
        engram = stored.get(turn["query_id"])
        badges = f'<div style="text-align:right">{badges_html(engram, rule)}</div>' if engram else ""
        with st.container(border=True):
            st.markdown(f"**Q:** {display.escape(turn['query'])}", unsafe_allow_html=True)
            if turn["mode"] == "stored":
                st.markdown(f"<div>{display.escape(turn['answer'])}</div>{badges}", unsafe_allow_html=True)
                st.caption("Stored ungraded (no judge loop of this state folder answered); it is graded when one "
                           "runs and a judge answers.")
                continue
            if turn["answer"] is None:
                st.caption("Waiting for GeneratorAgent's answer…")
                continue
            st.markdown(f"<div>{display.escape(turn['answer'])}</div>", unsafe_allow_html=True)
            if turn["graded"] and display.grade_of(turn["score"]) is None:
                # the judge's message as written: its `code` as code, a URL as plain text (no markdown escapes)
                st.markdown('<div class="cns-feedback" style="font-size:0.875rem;color:rgba(49,51,63,0.6)">'
                            "The judge could not grade this turn: "
                            f"{display.message_html(turn['feedback'] or 'no score')}</div>{badges}",
                            unsafe_allow_html=True)
            elif turn["graded"]:
                badge = badges or (f'<div style="text-align:right">'
                                   f'{display.score_badge_html(turn["score"], turn["feedback"])}</div>')
                st.markdown(badge, unsafe_allow_html=True)
                if turn["feedback"]:
                    with st.expander("Judge feedback"):
                        st.markdown(f"<div>{display.message_html(turn['feedback'])}</div>", unsafe_allow_html=True)
            else:
                st.caption("Waiting for the judge's grade…")


st.subheader("Turns")
_turns()


st.subheader("Compare two answers")
st.caption("The judge reads two answers to one question side by side (Prometheus' relative grading) and says "
           "which is better and why. It is asked with A first and then with B first; a winner counts only when "
           "it names the same answer both times.")
pairs: list = st.session_state.setdefault(ui_state.KEY_JUDGE_PAIRS, [])
with st.form("cns_pair_form"):
    pair_question = st.text_area("Question", key="cns_pair_question", height=80)
    col_a, col_b = st.columns(2)
    pair_a = col_a.text_area("Answer A", key="cns_pair_a", height=140)
    pair_b = col_b.text_area("Answer B", key="cns_pair_b", height=140)
    pair_reference = st.text_input("Reference answer (optional)", key="cns_pair_reference",
                                   help="A right answer the judge compares both with.")
    pair_keep = st.checkbox("Keep the comparison in the memory", value=True, key="cns_pair_keep",
                            help="Stores both answers as engrams of the question when the memory does not hold them "
                                 "yet; preference pairs (Engrams page, `cns export preferences`) choose the winner.")
    compare = st.form_submit_button("Compare the two answers")

if compare:
    with st.spinner("The judge is comparing the two answers…"):
        pairs.append(compare_on_page(pair_question, pair_a, pair_b, pair_reference, keep=pair_keep,
                                     memory_of=frame.memory))

for outcome in reversed(pairs):
    with st.container(border=True):
        st.markdown(f"**Q:** {display.escape(outcome.question)}", unsafe_allow_html=True)
        if outcome.problem:
            st.error(outcome.headline)
            continue
        col_a, col_b = st.columns(2)
        for col, name, text in ((col_a, "A", outcome.answer_a), (col_b, "B", outcome.answer_b)):
            won = outcome.comparison is not None and outcome.comparison.winner == name
            col.markdown(f"**Answer {name}**" + (" " + frame.badge("better", display.GREEN) if won else ""),
                         unsafe_allow_html=True)
            col.markdown(f"<div>{display.escape(text)}</div>", unsafe_allow_html=True)
        if outcome.comparison.ok:
            st.success(outcome.headline)
        else:      # the judge's message as written (its `code` as code, a URL as plain text), as for a turn
            st.markdown(f'<div class="cns-pair-failed" style="color:{display.RED}">'
                        f"{display.message_html(outcome.headline)}</div>", unsafe_allow_html=True)
        if outcome.comparison.feedback:
            st.markdown('<div class="cns-pair-why"><b>Why:</b> '
                        f"{display.message_html(outcome.comparison.feedback)}</div>", unsafe_allow_html=True)
        if outcome.kept_note:
            st.caption(outcome.kept_note)
