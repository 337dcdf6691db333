"""MemoryService against the embedded client and a real ``chroma run`` server."""

from __future__ import annotations

import logging
import subprocess
import sys
import uuid

import pytest
from chromadb.api.types import DefaultEmbeddingFunction

from cns_core.memory import (
    CNSEmbeddingFunction,
    EngramFilters,
    MemoryService,
    MemoryStoreError,
    UnknownEngramError,
)
from cns_core.agents.pending import memory_counts
from judge_loop_helpers import chroma_server_url, free_port, lean_torch  # noqa: F401  (fixtures)

pytestmark = pytest.mark.usefixtures("lean_torch", "no_default_embedding")

FACTS = [
    ("What is the capital of France?", "Paris is the capital of France."),
    ("How many legs does a spider have?", "A spider has eight legs."),
    ("Who wrote Hamlet?", "William Shakespeare wrote Hamlet."),
]


@pytest.fixture(autouse=False)
def no_default_embedding(monkeypatch):
    """Chroma's default embedding function downloads a model: any call to it fails the test."""
    def refuse(self, input):
        raise AssertionError("Chroma's default embedding function was used")

    monkeypatch.setattr(DefaultEmbeddingFunction, "__call__", refuse)


@pytest.fixture(params=["embedded", "server"])
def memory(request, tmp_path, state_dir):
    name = f"engrams-{uuid.uuid4().hex[:8]}"
    if request.param == "server":
        return MemoryService(url=request.getfixturevalue("chroma_server_url"), collection=name)
    return MemoryService(path=tmp_path / "chroma", collection=name)


def write_facts(memory: MemoryService) -> list[str]:
    return memory.write_episodic_many([
        {"query": q, "answer": a, "session_id": "s1", "query_id": f"q{i}", "timestamp": 1_700_000_000 + i,
         "metadata": {"intent": "fact"}} for i, (q, a) in enumerate(FACTS)])


def test_write_episodic_stores_the_turn_under_its_query_id(memory):
    qid = memory.write_episodic("What is the capital of France?", "Paris.", "s1", "turn-1",
                                intent="geography", entities="France", turns=3, fresh=True)
    (engram,) = memory.get([qid])
    assert qid == "turn-1"
    assert (engram.query, engram.answer, engram.session_id) == ("What is the capital of France?", "Paris.", "s1")
    assert engram.metadata["type"] == "episodic"
    assert isinstance(engram.metadata["timestamp"], float)
    assert {k: engram.metadata[k] for k in ("intent", "entities", "turns", "fresh")} == {
        "intent": "geography", "entities": "France", "turns": 3, "fresh": True}
    assert engram.critic_score is None and not engram.graded


def test_write_without_query_id_uses_a_uuid(memory):
    qid = memory.write_episodic("Q?", "A.", "s1")
    assert uuid.UUID(qid).version == 4
    assert [e.id for e in memory.get([qid])] == [qid]


def test_update_engram_score_merges_and_keeps_every_key(memory):
    write_facts(memory)
    before = memory.get(["q1"])[0].metadata
    assert memory.update_engram_score("q1", 4, "Correct and brief.", judge_model="prometheus:7b", latency_s=2.5)
    (engram,) = memory.get(["q1"])
    assert engram.critic_score == 4 and engram.feedback == "Correct and brief."
    assert engram.metadata["type"] == "episodic"
    assert engram.metadata["critic_judge_model"] == "prometheus:7b"
    assert engram.metadata["critic_latency_s"] == 2.5
    assert all(engram.metadata[k] == v for k, v in before.items() if not k.startswith("critic_"))
    # the other engrams are untouched
    assert [e.critic_score for e in memory.get(["q0", "q2"])] == [None, None]


def test_update_of_an_unknown_id_is_a_logged_no_op(memory, caplog):
    with caplog.at_level(logging.WARNING, logger="cns_core.memory"):
        assert memory.update_engram_score("never-written", 3, "x") is False
    assert "never-written" in caplog.text
    assert memory.get(["never-written"]) == []


@pytest.mark.parametrize("score", [0, 6, 2.5, "4", True, None])
def test_bad_scores_are_refused_and_change_nothing(memory, score):
    write_facts(memory)
    with pytest.raises(ValueError, match="score"):
        memory.update_engram_score("q0", score, "x")
    assert memory.get(["q0"])[0].critic_score is None


def test_rewriting_a_turn_keeps_its_score(memory):
    write_facts(memory)
    memory.update_engram_score("q0", 5, "Exact.")
    memory.write_episodic(FACTS[0][0], FACTS[0][1], "s1", "q0", timestamp=1_700_000_000)
    assert memory.get(["q0"])[0].critic_score == 5


def _critique_of(qid: str, query: str, answer: str, score: int) -> dict:
    from cns_core.agents.messages import CritiqueMessage

    return CritiqueMessage(query_id=qid, query=query, answer=answer, score=score, feedback=f"on {answer}",
                           judge_model="j").memory_fields()


def test_a_grade_lands_only_on_the_answer_it_judged(memory):
    """Issue 71 item 5: two turns share a query id with different answers; the first answer's grade once
    landed on the engram holding the second, which was then never graded."""
    question = "At what temperature does water boil at sea level?"
    memory.write_episodic(question, "100 degrees Celsius.", "s", "boil")
    first = _critique_of("boil", question, "100 degrees Celsius.", 4)
    assert memory.record_critiques([first]) == ["applied"]
    memory.write_episodic(question, "90 degrees Celsius.", "s", "boil")      # another answer: ungraded again
    (engram,) = memory.get(["boil"])
    assert engram.answer == "90 degrees Celsius." and not engram.graded and engram.feedback in ("", None)
    assert "critic_judge_model" not in engram.metadata
    assert memory.record_critiques([first]) == ["stale"]                     # a late copy of the first grade
    assert not memory.get(["boil"])[0].graded and memory.pending_critiques() == []
    assert memory.record_critiques([_critique_of("boil", question, "90 degrees Celsius.", 2)]) == ["applied"]
    (engram,) = memory.get(["boil"])
    assert (engram.critic_score, engram.feedback) == (2, "on 90 degrees Celsius.")
    memory.write_episodic(question, "90 degrees Celsius.", "s", "boil")      # the same text again keeps it
    assert memory.get(["boil"])[0].critic_score == 2


def test_a_parked_grade_of_another_answer_is_not_applied(memory):
    question = "At what temperature does water boil at sea level?"
    assert memory.record_critiques([_critique_of("early", question, "100 degrees Celsius.", 4)]) == ["pending"]
    memory.write_episodic(question, "90 degrees Celsius.", "s", "early")
    assert not memory.get(["early"])[0].graded and memory.pending_critiques() == []
    memory.write_episodic(question, "Ninety.", "s", "later")                  # parked while a writer crashed:
    memory.park_critique("later", 3, "judged another text", answer_digest="0" * 32)
    assert memory.apply_pending() == 0 and not memory.get(["later"])[0].graded
    assert memory.pending_critiques() == []


def test_a_critique_before_its_engram_is_parked_and_survives_a_new_client(memory, tmp_path):
    assert memory.record_critiques([{"query_id": "early", "score": 2, "feedback": "Thin.", "judge_model": "j"}]) \
        == ["pending"]
    reopened = (MemoryService(url=memory.url, collection=memory.name) if memory.url
                else MemoryService(path=memory.path, collection=memory.name))
    assert [p["query_id"] for p in reopened.pending_critiques()] == ["early"]
    reopened.write_episodic("Late question?", "Late answer.", "s1", "early")
    (engram,) = reopened.get(["early"])
    assert (engram.critic_score, engram.feedback, engram.metadata["critic_judge_model"]) == (2, "Thin.", "j")
    assert reopened.pending_critiques() == []


def test_apply_pending_sweeps_critiques_whose_engram_appeared(memory):
    write_facts(memory)
    memory.park_critique("q2", 3, "Parked while the writer crashed.")
    assert memory.apply_pending() == 1
    assert memory.get(["q2"])[0].critic_score == 3
    assert memory.pending_critiques() == []
    assert memory.apply_pending() == 0


def test_search_episodic_finds_the_nearest_turn(memory):
    write_facts(memory)
    memory.write_episodic("What is the capital of Italy?", "Rome.", "s2", "other")
    hits = memory.search_episodic("Which city is France's capital?", k=2)
    assert hits[0].id == "q0"
    assert hits[0].distance is not None and hits[0].distance <= hits[1].distance
    assert [e.id for e in memory.search_episodic("capital city", k=5, where={"session_id": "s2"})] == ["other"]


def test_search_many_is_one_query_with_the_same_answers(memory):
    from cns_core.models import get_embedder

    write_facts(memory)
    texts = ["France's capital city", "eight-legged animals"]
    many = memory.search_episodic_many(texts, k=1)
    assert [[e.id for e in hits] for hits in many] == [["q0"], ["q1"]]
    vectors = get_embedder().encode(texts)
    assert [[e.id for e in hits] for hits in memory.search_episodic_many(texts, 1, embeddings=vectors)] == [["q0"], ["q1"]]
    with pytest.raises(ValueError, match="embeddings"):
        memory.search_episodic_many(texts, 1, embeddings=vectors[:1])


def test_quarantine_keeps_blocked_turns_out_until_released(memory):
    qid = memory.write_quarantined("Is the earth flat?", "Yes, it is flat.", "s1", "bad-1",
                                   reason="contradicts memory", coherence=0.12)
    assert memory.get([qid]) == [] and memory.count() == 0
    (held,) = memory.list_quarantined()
    assert (held.id, held.answer, held.metadata["quarantine_reason"]) == ("bad-1", "Yes, it is flat.",
                                                                          "contradicts memory")
    assert memory.record_critiques([{"query_id": "bad-1", "score": 1, "feedback": "False."}]) == ["pending"]
    assert memory.release_quarantined("bad-1") == "bad-1"
    (engram,) = memory.get(["bad-1"])
    assert (engram.critic_score, engram.metadata["type"], engram.metadata["coherence"]) == (1, "episodic", 0.12)
    assert "released_at" in engram.metadata and memory.count_quarantined() == 0
    counts = memory_counts(memory)        # issue 70 item 3: the release is said, one count everywhere
    assert (counts.quarantined, counts.released, counts.blocked) == (0, 1, 1)
    assert counts.quarantine_words() == "0 quarantined (1 blocked by the coherence hook, 1 released since)"
    with pytest.raises(UnknownEngramError, match="bad-1"):
        memory.release_quarantined("bad-1")
    with pytest.raises(UnknownEngramError):
        memory.discard_quarantined("nope")


def test_browse_pages_and_counts_on_the_server(memory):
    write_facts(memory)
    memory.update_engram_score("q1", 5, "ok")
    assert [e.id for e in memory.browse(order="newest")] == ["q2", "q1", "q0"]
    assert [e.id for e in memory.browse(EngramFilters(ungraded_only=True), order="oldest")] == ["q0", "q2"]
    assert [e.id for e in memory.browse(order="score", limit=2)] == ["q1", "q2"]
    assert memory.count(EngramFilters(min_score=5)) == 1
    assert [e.id for e in memory.browse(EngramFilters(contains="SPIDER"))] == ["q1"]


@pytest.mark.parametrize("bad, field", [
    (dict(metadata={"nested": {"a": 1}}), "nested"),
    (dict(metadata={"type": "other"}), "type"),
    (dict(metadata={"critic_score": 5}), "critic_score"),
    (dict(query="  "), "query"),
    (dict(query=7), "query"),
    (dict(timestamp="yesterday"), "timestamp"),
    (dict(timestamp=float("nan")), "timestamp"),
])
def test_bad_turns_name_the_field_and_write_nothing(bad, field, tmp_path):
    memory = MemoryService(path=tmp_path / "c", collection="engrams")
    turn = {"query": "Q?", "answer": "A.", "session_id": "s", "query_id": "x", **bad}
    with pytest.raises(ValueError, match=field):
        memory.write_episodic_many([{"query": "fine?", "answer": "yes", "session_id": "s"}, turn])
    assert memory.count() == 0


@pytest.mark.parametrize("kwargs, field", [
    (dict(min_score=0), "min_score"), (dict(max_score=6), "max_score"), (dict(min_score=4, max_score=2), "min_score"),
    (dict(ungraded_only=True, min_score=2), "ungraded_only"), (dict(since=10, until=5), "since"),
    (dict(since="monday"), "since"), (dict(contains=5), "contains"),
])
def test_bad_filters_are_refused(kwargs, field):
    with pytest.raises(ValueError, match=field):
        EngramFilters(**kwargs)


def test_bad_browse_arguments_are_refused(tmp_path):
    memory = MemoryService(path=tmp_path / "c", collection="engrams")
    for kwargs, field in [(dict(limit=0), "limit"), (dict(limit=10_000), "limit"), (dict(offset=-1), "offset"),
                          (dict(order="random"), "order"), (dict(order="relevance"), "relevance")]:
        with pytest.raises(ValueError, match=field):
            memory.browse(**kwargs)


def test_an_unreachable_server_is_a_clear_error(state_dir):
    with pytest.raises(MemoryStoreError, match="Chroma server"):
        MemoryService(url=f"http://127.0.0.1:{free_port()}")


def test_env_url_selects_the_http_client(chroma_server_url, monkeypatch, state_dir):
    monkeypatch.setenv("CNS_CHROMA_URL", chroma_server_url)
    memory = MemoryService(collection=f"env-{uuid.uuid4().hex[:6]}")
    assert memory.url == chroma_server_url and memory.path is None
    memory.write_episodic("Q?", "A.", "s")
    assert memory.count() == 1
    assert not any(state_dir.iterdir())    # nothing written locally


def test_default_location_is_the_state_dir(state_dir, monkeypatch):
    monkeypatch.delenv("CNS_CHROMA_URL", raising=False)
    monkeypatch.delenv("CNS_CHROMA_PATH", raising=False)
    memory = MemoryService()
    assert memory.path == state_dir / "chroma" and memory.path.is_dir()


def test_the_collection_reopens_with_our_embedding_function_in_a_new_process(tmp_path):
    memory = MemoryService(path=tmp_path / "c", collection="engrams")
    write_facts(memory)
    code = (
        "import chromadb\nfrom cns_core.memory import CNSEmbeddingFunction  # registers it\n"
        f"col = chromadb.PersistentClient(path={str(tmp_path / 'c')!r}).get_collection('engrams')\n"
        "ef = col.configuration['embedding_function']\n"
        "print(type(ef).__name__, ef.name(), ef.get_config()['backend'], col.count())\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**__import__("os").environ, "ANONYMIZED_TELEMETRY": "False"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["CNSEmbeddingFunction", CNSEmbeddingFunction.name(), "minilm", "3"]


@pytest.fixture(scope="module")
def graded_memory(tmp_path_factory, lean_torch):
    """150 engrams over ~two weeks (some sharing a timestamp), scored 1-5 or ungraded, two sessions."""
    import random

    rng = random.Random(7)
    memory = MemoryService(path=tmp_path_factory.mktemp("browse") / "c", collection="engrams")
    turns, scores = [], {}
    for i in range(150):
        ts = 1_700_000_000 + rng.randrange(0, 14 * 86400) if i % 10 else 1_700_500_000.0   # 15 ties
        turns.append({"query": f"Question {i} about {'rivers' if i % 3 else 'mountains'}?",
                      "answer": f"Answer {i}.", "session_id": f"s{i % 2}", "query_id": f"e{i:03d}",
                      "timestamp": ts})
        score = rng.choice([1, 2, 3, 4, 5, None])
        if score:
            scores[f"e{i:03d}"] = score
    memory.write_episodic_many(turns)
    memory.apply_scores([{"query_id": k, "score": v, "feedback": f"fb {k}"} for k, v in scores.items()])
    return memory


def brute_force(engrams, f: EngramFilters, order: str) -> list[str]:
    def keep(e):
        s = e.critic_score
        return ((f.min_score is None or (s is not None and s >= f.min_score))
                and (f.max_score is None or (s is not None and s <= f.max_score))
                and (not f.ungraded_only or s is None)
                and (f.since is None or e.timestamp >= f.since) and (f.until is None or e.timestamp <= f.until)
                and (f.session_id is None or e.session_id == f.session_id)
                and (f.contains is None or f.contains.lower() in f"{e.query}\n\n{e.answer}".lower()))
    rows = [e for e in engrams if keep(e)]
    if order == "oldest":
        rows.sort(key=lambda e: (e.timestamp, e.id))
    else:
        rows.sort(key=lambda e: (e.timestamp, e.id), reverse=True)
        if order == "score":
            rows.sort(key=lambda e: -(e.critic_score or 0))     # stable: newest first within a score
    return [e.id for e in rows]


@pytest.mark.parametrize("filters", [
    EngramFilters(), EngramFilters(min_score=3), EngramFilters(max_score=2), EngramFilters(ungraded_only=True),
    EngramFilters(since=1_700_300_000, until=1_700_900_000), EngramFilters(min_score=2, max_score=4, since=1_700_400_000),
    EngramFilters(contains="MOUNTAINS"), EngramFilters(session_id="s1", min_score=4),
], ids=lambda f: ",".join(f"{k}={v}" for k, v in vars(f).items() if v not in (None, False)) or "all")
@pytest.mark.parametrize("order", ["newest", "oldest", "score"])
@pytest.mark.parametrize("tuning", ["default", "tight"])
def test_browse_pages_equal_a_full_sort(graded_memory, filters, order, tuning):
    memory = graded_memory
    if tuning == "tight":   # tiny bands and steps, no direct sort: every probing branch is taken
        from cns_core.memory import memory_settings

        cfg = memory_settings()
        cfg["browse"] = {**cfg["browse"], "band_slack": 1, "first_step_s": 1, "direct_limit": 0}
        memory = MemoryService(path=graded_memory.path, collection="engrams", config=cfg)
    everything = memory.get([f"e{i:03d}" for i in range(150)])
    expected = brute_force(everything, filters, order)
    pages = []
    for offset in range(0, len(expected) + 29, 29):
        pages += [e.id for e in memory.browse(filters, offset=offset, limit=29, order=order)]
    assert pages == expected
    assert memory.count(filters) == len(expected)


def test_semantic_search_keeps_what_reaches_the_similarity_cut_off(graded_memory):
    """Issue 31 item 7: a search by meaning is a ranked list down to a cut-off, not the 200 nearest."""
    mountains = EngramFilters(similar_to="a question about mountains", min_similarity=0.6)
    hits = graded_memory.browse(mountains, limit=200, order="relevance")
    assert len(hits) == 50 == graded_memory.count(mountains)           # the 50 mountain questions of 150
    assert all("mountains" in h.query for h in hits)
    sims = [h.similarity for h in hits]
    assert sims == sorted(sims, reverse=True) and min(sims) >= 0.6
    assert [h.similarity for h in hits] == pytest.approx([1 - h.distance for h in hits])
    # the configured cut-off (memory.yaml browse.min_similarity) applies when the filter names none
    default = EngramFilters(similar_to="a question about mountains")
    assert graded_memory.min_similarity == 0.3
    assert all(h.similarity >= 0.3 for h in graded_memory.browse(default, limit=200, order="relevance"))
    assert graded_memory.count(EngramFilters(similar_to="a question about mountains", min_similarity=0.99)) == 0
    with pytest.raises(ValueError, match="min_similarity"):
        EngramFilters(similar_to="x", min_similarity=1.5)


def test_semantic_search_ranks_then_filters(graded_memory):
    hits = graded_memory.browse(EngramFilters(similar_to="a question about mountains", min_score=1), limit=10,
                                order="relevance")
    assert len(hits) == 10 and all(e.critic_score for e in hits)
    assert [h.distance for h in hits] == sorted(h.distance for h in hits)
    assert sum("mountains" in h.query for h in hits) >= 8
    by_time = graded_memory.browse(EngramFilters(similar_to="a question about mountains"), limit=50, order="newest")
    assert [h.timestamp for h in by_time] == sorted((h.timestamp for h in by_time), reverse=True)
