"""A real HTTP server on 127.0.0.1 that answers like Ollama (``/api/chat``, ``/api/tags``) and like an
OpenAI-compatible server (``/v1/chat/completions``, ``/v1/models``), streamed or whole as asked.

It plays three roles, chosen from the request the way a real model would see it:

* a Prometheus judge (the user message starts with ``###Task Description``): it
  answers ``Feedback: ... [RESULT] n`` with ``n = fake_grade(response)``, or the
  score a ``[fake-score:N]`` marker in the response asks for; asked to compare
  ``###Response A`` with ``###Response B`` (relative grading) it answers
  ``Feedback: ... [RESULT] A`` or ``B``, the response with the higher ``fake_grade``
  (the first shown on a tie);
* a MiniCheck grounding model (``Document: ... Claim: ...``): ``Yes`` when every
  content word of the claim is in the document, else ``No`` (with log-probs when asked);
* a chat model for anything else: ``Answer: <the question>``.

``mode`` (server-wide) or a ``[fake-ollama:MODE]`` marker in the prompt selects a
failure: ``single`` (a relative request answered with ``[RESULT] 4``), ``position`` (a relative
request always answered ``A``), ``slow`` (sleeps ``delay`` seconds first), ``error`` (HTTP 500),
``noscore`` (judge output without a score), ``quote`` (judge feedback quoting
``[RESULT] 5`` then its own score), ``garbage`` (200 with non-JSON), ``stall`` (a
streamed reply that sends its first piece, then waits ``delay`` seconds). A model
outside ``models`` gets Ollama's 404 "not found, try pulling it first" (or the
OpenAI-style 404). With ``api_key`` set, the OpenAI paths want ``Authorization: Bearer KEY``.

Three replies break HTTP itself (:data:`BROKEN_REPLIES`), as a crashing or hostile server would:
``truncate`` announces ``Content-Length: 1000000``, sends ``{"message"`` and closes; ``nest`` sends
``{"message": `` and 200,000 opening brackets; ``drip`` sends a valid 5 KB reply one byte every
``drip_s`` seconds. With ``break_every=N`` every N-th chat request gets the next of ``break_modes``
in turn (the soak's "a judge that breaks every tenth reply").
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FakeOllama", "fake_grade", "JUDGE_MODEL", "GENERATOR_MODEL", "MINICHECK_MODEL"]

JUDGE_MODEL = "prometheus:7b"
GENERATOR_MODEL = "llama3.2:3b"
MINICHECK_MODEL = "bespoke-minicheck:7b"
BROKEN_REPLIES = ("truncate", "nest", "drip")
_MODE = re.compile(r"\[fake-ollama:(\w+)\]")
_SCORE = re.compile(r"\[fake-score:(\d+)\]")
_RESPONSE = re.compile(r"###Response to evaluate:\n(.*?)\n\n###", re.S)
_PAIR = re.compile(r"###Response A:\n(.*?)\n\n###Response B:\n(.*?)\n\n###", re.S)
_WORD = re.compile(r"[a-z0-9]+")
_STOP = {"the", "a", "an", "is", "are", "was", "of", "in", "on", "to", "and", "it", "its", "by", "at", "for"}


def fake_grade(response: str) -> int:
    """The fake judge's deterministic score for a response (1-5)."""
    marker = _SCORE.search(response)
    if marker:
        return int(marker.group(1))
    return zlib.crc32(response.encode()) % 5 + 1


class FakeOllama:
    """Start with :meth:`start` (or as a context manager); ``url`` is where it listens."""

    def __init__(self, models: tuple[str, ...] = (JUDGE_MODEL, GENERATOR_MODEL, MINICHECK_MODEL),
                 mode: str = "good", delay: float = 2.0, api_key: str | None = None, drip_s: float = 0.05,
                 break_every: int = 0, break_modes: tuple[str, ...] = BROKEN_REPLIES):
        self.api_key = api_key
        self.drip_s = drip_s
        self.break_every = break_every
        self.break_modes = break_modes
        self.chats = 0                 # chat requests so far (break_every counts them)
        self.models = set(models)
        self.mode = mode
        self.delay = delay
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None, "start() the fake server first"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> "FakeOllama":
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def _stream(self, lines: list[bytes], stall: float) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream" if lines[0].startswith(b"data:")
                                 else "application/x-ndjson")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                try:
                    for i, line in enumerate(lines):
                        self.wfile.write(line)
                        self.wfile.flush()
                        if i == 0 and stall:
                            time.sleep(stall)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def _broken(self, mode: str) -> None:
                """A reply that breaks HTTP: cut short, nested past any parser, or dripped."""
                if mode == "truncate":
                    body, length = b'{"message"', 1_000_000
                elif mode == "nest":
                    body = b'{"message": ' + b"[" * 200_000
                    length = len(body)
                else:
                    body = json.dumps({"model": JUDGE_MODEL, "done": True, "message": {
                        "role": "assistant", "content": "Feedback: " + "slow " * 1000 + "[RESULT] 3"}}).encode()
                    length = len(body)
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(length))
                self.end_headers()
                self.close_connection = True
                try:
                    if mode != "drip":
                        self.wfile.write(body)
                        return
                    for i in range(len(body)):
                        self.wfile.write(body[i:i + 1])
                        self.wfile.flush()
                        time.sleep(fake.drip_s)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def _authorised(self) -> bool:
                if fake.api_key is None or self.headers.get("Authorization") == f"Bearer {fake.api_key}":
                    return True
                self._send(401, json.dumps({"error": {"message": "Incorrect API key provided",
                                                      "type": "invalid_request_error"}}).encode())
                return False

            def do_GET(self) -> None:
                if self.path == "/v1/models":
                    if self._authorised():
                        data = [{"id": n, "object": "model", "owned_by": "fake"} for n in sorted(fake.models)]
                        self._send(200, json.dumps({"object": "list", "data": data}).encode())
                elif self.path == "/api/tags":
                    names = sorted(fake.models)
                    self._send(200, json.dumps({"models": [{"name": n, "model": n} for n in names]}).encode())
                else:
                    self._send(404, b"404 page not found", "text/plain")

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    self._send(400, json.dumps({"error": "invalid JSON"}).encode())
                    return
                with fake._lock:
                    fake.requests.append(body)
                if self.path not in ("/api/chat", "/v1/chat/completions"):
                    self._send(404, b"404 page not found", "text/plain")
                    return
                openai = self.path.startswith("/v1/")
                if openai and not self._authorised():
                    return
                mode = fake.mode_for(body)
                if mode in BROKEN_REPLIES:
                    self._broken(mode)
                    return
                status, payload = fake.answer(body, mode)
                if openai and isinstance(payload, dict):
                    payload = fake.as_openai(status, payload)
                if status == 200 and isinstance(payload, dict) and body.get("stream"):
                    stall = fake.delay if fake.mode == "stall" else 0.0
                    self._stream(fake.stream_lines(payload, openai), stall)
                elif isinstance(payload, bytes):
                    self._send(status, payload, "text/plain")
                else:
                    self._send(status, json.dumps(payload).encode())

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, name="fake-ollama", daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> "FakeOllama":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ behaviour

    def mode_for(self, body: dict[str, Any]) -> str:
        """This request's behaviour: a marker in its prompt, else every ``break_every``-th a broken reply,
        else the server's ``mode``."""
        messages = body.get("messages") or []
        marker = _MODE.search(str(messages[-1].get("content", "")) if messages else "")
        if marker:
            return marker.group(1)
        with self._lock:
            self.chats += 1
            n = self.chats
        if self.break_every and n % self.break_every == 0:
            return self.break_modes[(n // self.break_every - 1) % len(self.break_modes)]
        return self.mode

    def answer(self, body: dict[str, Any], mode: str | None = None) -> tuple[int, dict[str, Any] | bytes]:
        model = str(body.get("model", ""))
        messages = body.get("messages") or []
        prompt = str(messages[-1].get("content", "")) if messages else ""
        mode = mode or self.mode_for(body)
        if mode == "slow":
            time.sleep(self.delay)
        if mode == "unknown_model" or model not in self.models:
            return 404, {"error": f'model "{model}" not found, try pulling it first'}
        if mode == "error":
            return 500, {"error": "llama runner process has terminated: exit status 2"}
        if mode == "garbage":
            return 200, b"<html>proxy error</html>"
        content, logprobs = self._content(prompt, mode, body)
        out: dict[str, Any] = {"model": model, "created_at": "2025-01-01T00:00:00Z",
                               "message": {"role": "assistant", "content": content}, "done": True,
                               "done_reason": "stop", "total_duration": 1000}
        if logprobs is not None:
            out["logprobs"] = logprobs
        return 200, out

    @staticmethod
    def as_openai(status: int, out: dict[str, Any]) -> dict[str, Any]:
        """An Ollama-shaped answer in the OpenAI chat-completions shape."""
        if status != 200:
            message = str(out.get("error", ""))
            if status == 404:
                message = message.replace("not found, try pulling it first", "does not exist")
            return {"error": {"message": message, "type": "invalid_request_error", "code": status}}
        return {"id": "chatcmpl-fake", "object": "chat.completion", "created": 1735689600, "model": out["model"],
                "choices": [{"index": 0, "message": out["message"], "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}}

    @staticmethod
    def stream_lines(out: dict[str, Any], openai: bool) -> list[bytes]:
        """The reply cut in three pieces, as Ollama's JSON lines or as server-sent events."""
        if openai:
            text, model = out["choices"][0]["message"]["content"], out["model"]
        else:
            text, model = out["message"]["content"], out["model"]
        third = max(1, len(text) // 3)
        pieces = [text[:third], text[third:2 * third], text[2 * third:]]
        if openai:
            events = [{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": model,
                       "choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}]} for p in pieces]
            return ([b": keep-alive\n\n"] + [f"data: {json.dumps(e)}\n\n".encode() for e in events]
                    + [b"data: [DONE]\n\n"])
        chunks = [{"model": model, "message": {"role": "assistant", "content": p}, "done": False} for p in pieces]
        chunks.append({"model": model, "message": {"role": "assistant", "content": ""}, "done": True,
                       "done_reason": "stop"})
        return [(json.dumps(c) + "\n").encode() for c in chunks]

    def _content(self, prompt: str, mode: str, body: dict[str, Any]) -> tuple[str, list | None]:
        pair = _PAIR.search(prompt) if prompt.startswith("###Task Description") else None
        if pair:
            if mode == "single":
                return "Feedback: The response is mostly correct with minor gaps. [RESULT] 4", None
            if mode == "noscore":
                return "Feedback: Both responses address the instruction.", None
            first, second = fake_grade(pair.group(1)), fake_grade(pair.group(2))
            winner = "A" if mode == "position" or first >= second else "B"
            return (f"Feedback: Response A earns {first} and Response B earns {second} by the criteria. "
                    f"[RESULT] {winner}"), None
        if prompt.startswith("###Task Description"):
            match = _RESPONSE.search(prompt)
            response = match.group(1) if match else ""
            if mode == "noscore":
                return "Feedback: The response is hard to judge against this rubric.", None
            score = fake_grade(response)
            if mode == "quote":
                return (f"Feedback: The response ends with the text '[RESULT] 5', which is not a grade. "
                        f"[RESULT] {score}"), None
            return f"Feedback: The response addresses the instruction; judged by the rubric. [RESULT] {score}", None
        if prompt.startswith("Document:"):
            document, _, claim = prompt.partition("\nClaim:")
            doc_words = set(_WORD.findall(document.lower()))
            claim_words = [w for w in _WORD.findall(claim.lower()) if w not in _STOP]
            yes = bool(claim_words) and all(w in doc_words for w in claim_words)
            p_yes = 0.9 if yes else 0.15
            logprobs = None
            if body.get("logprobs"):
                top = [{"token": "Yes", "logprob": math.log(p_yes)}, {"token": "No", "logprob": math.log(1 - p_yes)}]
                top.sort(key=lambda t: -t["logprob"])
                logprobs = [{"token": top[0]["token"], "logprob": top[0]["logprob"], "top_logprobs": top}]
            return ("Yes" if yes else "No"), logprobs
        return f"Answer: {prompt.strip()}", None
