"""The bundled MiniLM embedder: shape, unit rows, meaning, caching, process-wide instance."""

from __future__ import annotations

import numpy as np
import pytest

from cns_core.config import ConfigError
from cns_core.models import ModelUnavailableError, get_embedder
from cns_core.models import embeddings as embeddings_module
from cns_core.models.embeddings import MiniLMEmbedder

TEXTS = [
    "A man is playing a guitar on stage.",
    "Someone performs music with a guitar.",
    "The central bank raised interest rates by half a point.",
    "A man is playing a guitar on stage.",
]


@pytest.fixture(scope="module")
def embedder():
    return get_embedder()


@pytest.fixture(scope="module")
def vectors(embedder) -> np.ndarray:
    return embedder.encode(TEXTS)


def test_rows_are_unit_vectors_of_384_dimensions(embedder, vectors):
    assert embedder.dim == 384 and embedder.name == "minilm"
    assert vectors.shape == (len(TEXTS), 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_paraphrases_are_closer_than_unrelated_text(vectors):
    sim = vectors @ vectors.T
    assert sim[0, 1] > 0.5
    assert sim[0, 1] > sim[0, 2] + 0.3
    np.testing.assert_allclose(vectors[0], vectors[3], atol=1e-6)


def test_order_and_batching_do_not_change_vectors(embedder, vectors):
    fresh = MiniLMEmbedder(batch_size=1, cache_size=10)
    fresh._model = embedder._load()  # share the loaded weights; exercise batching and cache here
    again = fresh.encode(list(reversed(TEXTS)))
    np.testing.assert_allclose(again[::-1], vectors, atol=1e-5)


def test_cache_serves_repeats_and_stays_bounded(embedder):
    small = MiniLMEmbedder(cache_size=2)
    calls: list[list[str]] = []
    model = embedder._load()

    class Counting:
        def encode(self, texts, **kwargs):
            calls.append(list(texts))
            return model.encode(texts, **kwargs)

    small._model = Counting()
    small.encode(["one text", "two text", "one text"])
    assert calls == [["one text", "two text"]]        # a repeat inside one call is embedded once
    small.encode(["two text"])
    assert len(calls) == 1                             # served from the cache
    small.encode(["three text"])
    assert len(small._cache) == 2                      # oldest entry evicted
    small.encode(["one text"])
    assert calls[-1] == ["one text"]


def test_empty_input(embedder):
    assert embedder.encode([]).shape == (0, 384)


def test_process_wide_instance(embedder):
    assert get_embedder() is embedder


def test_unknown_backend_names_the_setting(monkeypatch):
    monkeypatch.setattr(embeddings_module, "_default", None)
    monkeypatch.setenv("CNS_EMBEDDING_BACKEND", "word2vec")
    with pytest.raises(ModelUnavailableError, match="embedding backend: unknown backend 'word2vec'.*CNS_EMBEDDING_BACKEND"):
        get_embedder()


def test_bad_numeric_override_names_the_variable(monkeypatch):
    from cns_core.models.nli import nli_settings

    monkeypatch.setenv("CNS_NLI_BATCH_SIZE", "lots")
    with pytest.raises(ConfigError, match="CNS_NLI_BATCH_SIZE='lots': expected int"):
        nli_settings()
