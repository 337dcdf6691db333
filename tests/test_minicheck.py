"""The ``ollama-minicheck`` NLI backend against the fake Ollama server."""

from __future__ import annotations

import numpy as np
import pytest

from cns_core.config import ConfigError, load_config
from cns_core.models import ModelUnavailableError, get_nli_backend
from cns_core.agents.ollama import minicheck_nli as from_config
from cns_core.models.minicheck import MiniCheckNLI
from fake_ollama import MINICHECK_MODEL
from judge_loop_helpers import fake_ollama, free_port, ollama  # noqa: F401  (fixtures)

DOC = "The Eiffel Tower is in Paris and was completed in 1889."
PAIRS = [(DOC, "The Eiffel Tower is in Paris."), (DOC, "The Eiffel Tower is in Rome."), (DOC, "completed 1889")]


def backend(url: str, **kwargs) -> MiniCheckNLI:
    cfg = {"ollama_minicheck": {"url": url, "model": MINICHECK_MODEL, "timeout": 2, **kwargs}}
    return from_config(cfg)


def test_yes_and_no_become_nli_rows_from_logprobs(ollama):
    probs = backend(ollama.url).predict(PAIRS)
    assert probs.shape == (3, 3) and np.allclose(probs.sum(axis=1), 1.0, atol=1e-6)
    assert probs[0, 0] == pytest.approx(0.9, abs=1e-6) and probs[2, 0] == pytest.approx(0.9, abs=1e-6)
    assert probs[1, 0] == pytest.approx(0.15, abs=1e-6)
    assert probs[1, 2] == pytest.approx(0.85 * 0.3, abs=1e-6) and probs[1, 1] > probs[1, 2]
    sent = ollama.requests[-1]
    assert sent["model"] == MINICHECK_MODEL and sent["logprobs"] is True and sent["options"]["temperature"] == 0
    assert sent["messages"][0]["content"].startswith(f"Document: {DOC}\nClaim: ")


def test_plain_answers_use_the_configured_probability(ollama, monkeypatch):
    nli = backend(ollama.url, yes_probability=0.8, contradiction_share=1.0)
    monkeypatch.setattr(type(ollama), "_content", lambda self, prompt, mode, body: (
        ("Yes" if "Paris." in prompt.split("Claim:")[1] else "No"), None))
    probs = nli.predict(PAIRS[:2])
    assert probs[0].tolist() == pytest.approx([0.8, 0.0, 0.2]) and probs[1].tolist() == pytest.approx([0.2, 0.0, 0.8])


def test_repeated_pairs_are_asked_once(ollama):
    nli = backend(ollama.url)
    nli.predict(PAIRS + PAIRS)
    nli.predict(PAIRS[:1])
    assert len(ollama.requests) == 3
    assert nli.predict([]).shape == (0, 3)


@pytest.mark.parametrize("mode, problem", [("error", "HTTP 500"), ("unknown_model", "ollama pull"),
                                           ("garbage", "non-JSON")])
def test_failures_are_model_unavailable(ollama, mode, problem):
    ollama.mode = mode
    with pytest.raises(ModelUnavailableError, match=problem):
        backend(ollama.url).predict(PAIRS[:1])


def test_check_and_unreachable_server(ollama):
    backend(ollama.url).check()
    with pytest.raises(ModelUnavailableError, match="not pulled"):
        from_config({"ollama_minicheck": {"url": ollama.url, "model": "other-model"}}).check()
    with pytest.raises(ModelUnavailableError, match="ollama-minicheck backend: cannot reach"):
        backend(f"http://127.0.0.1:{free_port()}").predict(PAIRS[:1])


def test_bad_settings_name_the_key():
    with pytest.raises(ConfigError, match="yes_probability"):
        from_config({"ollama_minicheck": {"yes_probability": 0.2}})
    with pytest.raises(ConfigError, match="url"):
        from_config({"ollama_minicheck": {"url": "localhost:11434"}})
    with pytest.raises(ConfigError, match="timeout"):
        from_config({"ollama_minicheck": {"timeout": "soon"}})


def test_the_registry_builds_it_from_models_yaml(ollama, monkeypatch):
    monkeypatch.setenv("CNS_OLLAMA_URL", ollama.url)
    monkeypatch.setenv("CNS_MINICHECK_MODEL", MINICHECK_MODEL)
    nli = get_nli_backend("ollama-minicheck")
    assert isinstance(nli, MiniCheckNLI) and nli.client.url == ollama.url
    assert load_config("models")["nli"]["ollama_minicheck"]["model"] == "bespoke-minicheck"
    assert nli.predict(PAIRS[:1])[0, 0] == pytest.approx(0.9, abs=1e-6)
