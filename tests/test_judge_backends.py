"""Both judge backends -- Ollama's API and any OpenAI-compatible server -- against a real HTTP server on
127.0.0.1 answering like each: the same Prometheus prompt and parser, whole and streamed replies, and every
failure (missing model, HTTP error, timeout, stalled stream, garbage, wrong key, nothing listening) as a
null score with its reason."""

from __future__ import annotations

import dataclasses

import pytest

from cns_core.agents.backends import make_chat_client
from cns_core.agents.chat import ChatBadResponse, ChatModelMissing, ChatTimeout, ChatUnreachable
from cns_core.agents.critic import CriticAgent
from cns_core.agents.messages import TurnMessage
from cns_core.agents.prometheus import critic_settings
from cns_core.agents.state_machine import CriticAction
from cns_core.views.judge_feed import judge_start_command
from fake_ollama import JUDGE_MODEL, fake_grade
from judge_loop_helpers import fake_ollama, free_port, ollama  # noqa: F401  (fixtures)

ANSWER = "Canberra is the capital of Australia."
BACKENDS = ["ollama", "openai"]


def settings_for(backend: str, server, **changes):
    url = server.url if backend == "ollama" else f"{server.url}/v1"
    return dataclasses.replace(critic_settings(), backend=backend, url=url, model=JUDGE_MODEL, timeout=1.0,
                               **changes)


def grade(settings, answer: str = ANSWER):
    critic = CriticAgent(settings=settings)
    critic.machine.fire(CriticAction.RECEIVE)
    turn = TurnMessage(query="What is the capital of Australia?", answer=answer, session_id="s", query_id="q1")
    return critic.grade(turn)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_both_backends_grade_with_the_same_prompt_and_parser(backend, stream, ollama):
    critique = grade(settings_for(backend, ollama, stream=stream))
    assert critique.error is None and critique.score == fake_grade(ANSWER)
    assert critique.feedback.startswith("The response addresses the instruction")
    (request,) = ollama.requests
    assert request["model"] == JUDGE_MODEL and request["stream"] is stream
    system, user = request["messages"]
    assert system["role"] == "system" and user["content"].startswith("###Task Description")
    assert f"###Response to evaluate:\n{ANSWER}\n" in user["content"]
    if backend == "openai":
        assert request["temperature"] == 0.0 and "options" not in request
    else:
        assert request["options"]["temperature"] == 0.0


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode, reason", [("unknown_model", "model_missing"), ("error", "http_error"),
                                          ("slow", "timeout"), ("garbage", "bad_response"),
                                          ("noscore", "unparseable")])
def test_failures_become_a_null_score_with_the_reason(backend, mode, reason, ollama):
    ollama.mode = mode
    critique = grade(settings_for(backend, ollama))
    assert critique.score is None and critique.error.startswith(f"{reason}:"), critique.error


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_stalled_stream_times_out(backend, ollama):
    ollama.mode, ollama.delay = "stall", 3.0
    critique = grade(settings_for(backend, ollama, stream=True))
    assert critique.score is None and critique.error.startswith("timeout:"), critique.error


@pytest.mark.parametrize("backend", BACKENDS)
def test_nothing_listening_is_unreachable_and_names_the_url(backend):
    url = f"http://127.0.0.1:{free_port()}" + ("/v1" if backend == "openai" else "")
    settings = dataclasses.replace(critic_settings(), backend=backend, url=url, timeout=1.0)
    critique = grade(settings)
    assert critique.score is None and critique.error.startswith("unreachable:") and url in critique.error


def test_the_openai_key_comes_from_the_named_environment_variable(ollama, monkeypatch):
    ollama.api_key = "sk-test-123"
    try:
        monkeypatch.setenv("CNS_TEST_JUDGE_KEY", "sk-test-123")
        cfg = {**_config(), "backend": "openai",
               "openai": {"base_url": f"{ollama.url}/v1", "model": JUDGE_MODEL, "api_key_env": "CNS_TEST_JUDGE_KEY"}}
        settings = dataclasses.replace(critic_settings(cfg), timeout=1.0)
        assert settings.api_key == "sk-test-123" and "sk-test" not in repr(settings)
        assert grade(settings).score == fake_grade(ANSWER)
        monkeypatch.setenv("CNS_TEST_JUDGE_KEY", "wrong")
        critique = grade(dataclasses.replace(critic_settings(cfg), timeout=1.0))
        assert critique.score is None and "HTTP 401" in critique.error and "api_key_env" in critique.error
    finally:
        ollama.api_key = None


@pytest.mark.parametrize("backend", BACKENDS)
def test_model_lists_of_both_apis(backend, ollama):
    client = make_chat_client(backend, ollama.url + ("/v1" if backend == "openai" else ""), 1.0)
    assert JUDGE_MODEL in client.list_models() and client.has_model(JUDGE_MODEL)
    assert not client.has_model("no-such-model")


def test_client_errors_are_typed(ollama):
    client = make_chat_client("openai", f"{ollama.url}/v1", 1.0)
    ollama.mode = "unknown_model"
    with pytest.raises(ChatModelMissing, match="openai.model"):
        client.chat(JUDGE_MODEL, [{"role": "user", "content": "hi"}])
    ollama.mode = "garbage"
    with pytest.raises(ChatBadResponse):
        client.chat(JUDGE_MODEL, [{"role": "user", "content": "hi"}])
    ollama.mode = "slow"
    with pytest.raises(ChatTimeout):
        client.chat(JUDGE_MODEL, [{"role": "user", "content": "hi"}], timeout=0.5)
    with pytest.raises(ChatUnreachable):
        make_chat_client("openai", f"http://127.0.0.1:{free_port()}/v1", 1.0).list_models()
    with pytest.raises(ValueError, match="judge backend 'tgi'"):
        make_chat_client("tgi", ollama.url, 1.0)


def test_backend_settings_and_the_start_command():
    cfg = _config()
    assert critic_settings({**cfg, "backend": "ollama"}).backend == "ollama"
    openai = critic_settings({**cfg, "backend": "openai", "openai": {"base_url": "http://127.0.0.1:8080/v1",
                                                                      "model": "prometheus-7b"}})
    assert (openai.url, openai.model, openai.api_key) == ("http://127.0.0.1:8080/v1", "prometheus-7b", None)
    assert judge_start_command(openai) == "vllm serve prometheus-7b --port 8080"
    ollama = critic_settings({**cfg, "backend": "ollama", "model": "prometheus:7b"})
    assert judge_start_command(ollama).startswith("ollama serve") and "ollama pull prometheus:7b" in \
        judge_start_command(ollama)
    from cns_core.config import ConfigError

    with pytest.raises(ConfigError, match="backend: 'tgi'"):
        critic_settings({**cfg, "backend": "tgi"})
    with pytest.raises(ConfigError, match="stream"):
        critic_settings({**cfg, "stream": "yes"})


def _config() -> dict:
    from cns_core.config import load_config

    return dict(load_config("critic"))
