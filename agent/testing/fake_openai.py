"""`FakeOpenAIServer`: a loopback OpenAI-compatible server for tests.

Point any OpenAI client (ours, the official SDK, curl) at ``server.base_url``
and script what it answers::

    async with FakeOpenAIServer() as server:
        server.push_tool_calls([{"name": "search", "arguments": '{"q": "x"}'}])
        server.push_text("done", usage={"prompt_tokens": 12, "completion_tokens": 3})
        ...  # run the code under test against server.base_url
        assert server.requests[0]["tools"]

Replies are consumed in order, one per ``POST /v1/chat/completions``; when the
queue is empty the server answers ``default_text``. Where several clients share
one server and their order is not fixed (children running in parallel),
``respond_with(fn)`` answers by the request's content instead. Served: non-streaming chat
completions, ``GET /v1/models`` and ``POST /v1/audio/transcriptions`` (speech to
text: `push_transcription` scripts the next transcript, `transcriptions` records
what was sent). It binds 127.0.0.1 on a free port.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import json
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web


@dataclass(frozen=True, slots=True)
class _Reply:
    status: int = 200
    body: Any = None
    """A JSON-able object, or a str sent verbatim."""
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0
    """Seconds to wait before answering; ``inf`` waits until the server closes."""


class FakeOpenAIServer:
    """Scripted chat-completions server; see the module docstring.

    ``api_key``: when set, requests without ``Authorization: Bearer <api_key>``
    get a 401 (and still consume no scripted reply). ``requests`` holds every
    chat-completions request body received, in order, including rejected ones,
    and ``authorizations`` their ``Authorization`` headers (None when absent);
    ``dropped`` the indexes in ``requests`` of those whose client went away
    before they were answered (a timeout, a cancelled call).
    ``close`` releases handlers that are still delaying or hanging, so it
    returns promptly; it is idempotent.

    ``context_window``: when set, a request whose messages come to more tokens than
    this (counted as the ``usage`` is, a character of their JSON a quarter token) is
    refused as OpenAI refuses it (400, ``context_length_exceeded``) and consumes no
    scripted reply: a small local server behind a larger ``model.context_window``.
    With ``context_refusal="llama.cpp"`` it is refused as llama-server refuses it: 400,
    ``exceed_context_size_error``, a message that names no number, and the window in ``n_ctx``.

    A request whose ``tool`` messages do not answer the assistant message right before them,
    one for each of its ``tool_calls``, is refused with OpenAI's 400 and its words: a
    conversation saved that way would be refused on every later call too.

    ``max_request_bytes``: a larger request body is refused with 413 before it is
    recorded; OpenAI takes up to 50 MB per request, a gateway in front of another
    provider often less (5 MB per image behind Anthropic-compatible ones).

    ``strict_alternation``: refuse, as vLLM serving a model with Mistral's chat template does
    (400, ``BadRequestError``), a request whose messages after an optional first system message
    do not alternate user/assistant starting with a user message, tool results and assistant
    messages with tool calls left out of the count; or that holds a system message anywhere
    else. OpenAI takes both; Mistral, Mixtral, Devstral and Gemma templates do not.

    ``tools_refusal``: ``"vllm"`` or ``"ollama"`` refuses any request that offers tools as that server does when not
    set up for them (400): vLLM started without ``--enable-auto-tool-choice``, an Ollama model without tool support.
    """

    def __init__(
        self,
        *,
        api_key: str | None = None,
        default_text: str = "ok",
        models: Sequence[str] = ("fake-model",),
        default_transcript: str = "(fake transcript)",
        context_window: int | None = None,
        max_request_bytes: int = 50 * 1024 * 1024,
        strict_alternation: bool = False,
        context_refusal: str = "openai",
        tools_refusal: str | None = None,
    ):
        if tools_refusal not in (None, "vllm", "ollama"):
            raise ValueError(f"tools_refusal: {tools_refusal!r} is not 'vllm' nor 'ollama'")
        self.tools_refusal = tools_refusal
        self.context_refusal = context_refusal
        self.max_request_bytes = max_request_bytes
        self.strict_alternation = strict_alternation
        self.api_key = api_key
        self.context_window = context_window
        self.default_text = default_text
        self.models = tuple(models)
        self.requests: list[Any] = []
        self.dropped: list[int] = []
        self.default_transcript = default_transcript
        self.transcriptions: list[dict[str, Any]] = []
        """Every transcription request: ``model``, ``language``, ``filename``, ``content_type``
        and ``audio`` (the bytes of the uploaded file)."""
        self._transcripts: deque[_Reply] = deque()
        self.authorizations: list[str | None] = []
        self._replies: deque[_Reply] = deque()
        self._responder: Callable[[Any], Any] | None = None
        self._ids = itertools.count(1)
        self._runner: web.AppRunner | None = None
        self._closing = asyncio.Event()
        self._changed = asyncio.Event()
        """Set as a request arrives or is dropped, for `wait_for`."""
        self._port: int | None = None

    @property
    def base_url(self) -> str:
        if self._port is None:
            raise RuntimeError("FakeOpenAIServer is not started")
        return f"http://127.0.0.1:{self._port}/v1"

    async def start(self) -> None:
        app = web.Application(client_max_size=self.max_request_bytes)
        app.router.add_post("/v1/chat/completions", self._chat_completions)
        app.router.add_get("/v1/models", self._list_models)
        app.router.add_post("/v1/audio/transcriptions", self._transcribe)
        # handler_cancellation: a client that gives up (timeout, cancel) frees its handler.
        self._runner = web.AppRunner(app, handler_cancellation=True, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self._port = self._runner.addresses[0][1]

    async def close(self) -> None:
        self._closing.set()
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()

    async def __aenter__(self) -> FakeOpenAIServer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # -- scripting -------------------------------------------------------

    def push_text(self, text: str | None, *, usage: Mapping[str, Any] | None = None) -> None:
        """Answer the next request with an assistant message. ``usage`` may carry extras like ``cost``."""
        self._replies.append(_Reply(body=_Completion(text, None, usage)))

    def push_tool_calls(
        self,
        calls: Sequence[Mapping[str, Any]],
        *,
        text: str | None = None,
        usage: Mapping[str, Any] | None = None,
    ) -> None:
        """Answer with tool calls: ``{"name", "arguments", "id"?}`` each.

        Values pass through unchecked (a missing name, non-string arguments) so
        tests can script malformed calls; ``arguments`` defaults to ``"{}"``.
        """
        self._replies.append(_Reply(body=_Completion(text, list(calls), usage)))

    def push_error(self, status: int, body: Any = None, headers: Mapping[str, str] | None = None) -> None:
        """Answer with an HTTP error, e.g. ``push_error(429, headers={"retry-after": "0.01"})``.

        The SDK treats ``retry-after: 0`` as "no hint" and backs off ~0.5 s;
        a small positive value keeps retry tests fast.

        ``body`` defaults to an OpenAI-shaped ``{"error": {...}}`` object.
        """
        if body is None:
            body = {"error": {"message": f"fake error {status}", "type": "fake_error", "param": None, "code": None}}
        self._replies.append(_Reply(status=status, body=body, headers=dict(headers or {})))

    def respond_with(self, fn: Callable[[Any], Mapping[str, Any] | None | Awaitable[Mapping[str, Any] | None]]
                     | None) -> None:
        """Answer each request with ``fn(body)`` (the parsed request body) before looking at the
        queue: ``{"text": ...}``, ``{"tool_calls": [...], "text"?: ...}`` (as `push_tool_calls`),
        ``{"hang": True}``, each with optional ``usage``; None falls through to the queue. ``fn``
        may be async: the request waits for it, as for a model that takes its time (until the test
        lets it answer). ``respond_with(None)`` removes it."""
        self._responder = fn

    async def _from_responder(self, body: Any) -> _Reply | None:
        if self._responder is None:
            return None
        spec = self._responder(body)
        if inspect.isawaitable(spec):
            spec = await spec
        if spec is None:
            return None
        if spec.get("hang"):
            return _Reply(delay=float("inf"))
        calls = spec.get("tool_calls")
        return _Reply(body=_Completion(spec.get("text"), list(calls) if calls else None, spec.get("usage")))

    def push_delay(self, seconds: float, text: str | None = None) -> None:
        """Wait ``seconds``, then answer with ``text`` (default text when None)."""
        self._replies.append(_Reply(body=_Completion(text, None, None, default=text is None), delay=seconds))

    def push_hang(self) -> None:
        """Never answer; the handler ends when the client disconnects or the server closes."""
        self._replies.append(_Reply(delay=float("inf")))

    def push_raw(self, body: Any, *, status: int = 200, content_type: str = "application/json") -> None:
        """Answer with exactly ``body`` (JSON-encoded unless a str), for malformed-response tests."""
        self._replies.append(_Reply(status=status, body=_Raw(body, content_type)))

    def push_transcription(self, text: str | None = None, *, status: int = 200, delay: float = 0.0) -> None:
        """Answer the next transcription with ``text``, or with an HTTP error ``status``, after
        ``delay`` seconds (``inf``: not before the server closes)."""
        body = {"text": text} if status == 200 else {
            "error": {"message": f"fake error {status}", "type": "fake_error", "param": None, "code": None}}
        self._transcripts.append(_Reply(status=status, body=body, delay=delay))

    async def wait_for(self, predicate: Callable[[], bool], timeout: float = 5.0) -> None:
        """Return once ``predicate()`` is true, checking it again as each request (a transcription
        too) arrives and as each is dropped; TimeoutError after ``timeout`` seconds."""
        async with asyncio.timeout(timeout):
            while not predicate():
                self._changed.clear()
                if predicate():
                    return
                await self._changed.wait()

    # -- handlers --------------------------------------------------------

    async def _transcribe(self, request: web.Request) -> web.Response:
        form = await request.post()
        upload = form.get("file")
        record: dict[str, Any] = {k: v for k, v in form.items() if isinstance(v, str)}
        if upload is not None and not isinstance(upload, str):
            with upload.file:  # closed now: a handler cancelled while delaying would leave it open
                record.update(filename=upload.filename, content_type=upload.content_type, audio=upload.file.read())
        self.transcriptions.append(record)
        self._changed.set()
        if self.api_key is not None and request.headers.get("Authorization") != f"Bearer {self.api_key}":
            error = {"message": "Incorrect API key provided.", "type": "invalid_request_error", "code": "invalid_api_key"}
            return web.json_response({"error": error}, status=401)
        if upload is None or isinstance(upload, str) or not record.get("model"):
            error = {"message": "file and model are required", "type": "invalid_request_error", "code": None}
            return web.json_response({"error": error}, status=400)
        reply = self._transcripts.popleft() if self._transcripts else _Reply(body={"text": self.default_transcript})
        if reply.delay and await self._delayed_until_closing(reply.delay):
            return web.Response(status=503, text="fake server closing")
        return web.json_response(reply.body, status=reply.status)

    async def _chat_completions(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        try:
            body = json.loads(raw)
        except ValueError:
            body = raw.decode("utf-8", "replace")
        self.requests.append(body)
        self.authorizations.append(request.headers.get("Authorization"))
        self._changed.set()
        index = len(self.requests) - 1
        try:
            return await self._answer(request, body)
        except asyncio.CancelledError:  # handler_cancellation: the client closed the connection
            self.dropped.append(index)
            self._changed.set()
            raise

    async def _answer(self, request: web.Request, body: Any) -> web.StreamResponse:
        if self.api_key is not None and request.headers.get("Authorization") != f"Bearer {self.api_key}":
            error = {"message": "Incorrect API key provided.", "type": "invalid_request_error", "code": "invalid_api_key"}
            return web.json_response({"error": error}, status=401)
        if (refused := _unanswered_tool_calls(body)) is not None:
            return refused
        if self.strict_alternation and (refused := _roles_not_alternating(body)) is not None:
            return refused
        if (refused := self._over_context_window(body)) is not None:
            return refused
        if self.tools_refusal is not None and isinstance(body, dict) and body.get("tools"):
            return _tools_refused(self.tools_refusal, str(body.get("model")))
        reply = await self._from_responder(body)
        if reply is None:
            reply = self._replies.popleft() if self._replies else _Reply(body=_Completion(None, None, None, default=True))
        if reply.delay and await self._delayed_until_closing(reply.delay):
            return web.Response(status=503, text="fake server closing")
        model = body.get("model", self.models[0]) if isinstance(body, dict) else self.models[0]
        if isinstance(reply.body, _Completion):
            return web.json_response(self._completion_json(reply.body, model, body), headers=reply.headers)
        if isinstance(reply.body, _Raw):
            payload = reply.body.body if isinstance(reply.body.body, str) else json.dumps(reply.body.body)
            return web.Response(status=reply.status, text=payload, content_type=reply.body.content_type)
        if isinstance(reply.body, str):
            return web.Response(status=reply.status, text=reply.body, headers=reply.headers)
        return web.json_response(reply.body, status=reply.status, headers=reply.headers)

    def _over_context_window(self, body: Any) -> web.Response | None:
        if self.context_window is None:
            return None
        tokens = _prompt_tokens(body)
        if tokens <= self.context_window:
            return None
        if self.context_refusal == "llama.cpp":
            error = {"code": 400, "message": "the request exceeds the available context size, try increasing it",
                     "type": "exceed_context_size_error", "n_prompt_tokens": tokens, "n_ctx": self.context_window}
            return web.json_response({"error": error}, status=400)
        error = {"message": f"This model's maximum context length is {self.context_window} tokens. However, your "
                            f"messages resulted in {tokens} tokens. Please reduce the length of the messages.",
                 "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}
        return web.json_response({"error": error}, status=400)

    async def _delayed_until_closing(self, delay: float) -> bool:
        """Wait ``delay`` seconds (``inf``: for ever); True when the server began closing meanwhile."""
        try:
            await asyncio.wait_for(self._closing.wait(), None if delay == float("inf") else delay)
        except TimeoutError:
            pass
        return self._closing.is_set()

    async def _list_models(self, request: web.Request) -> web.Response:
        data = [{"id": m, "object": "model", "created": 0, "owned_by": "fake"} for m in self.models]
        return web.json_response({"object": "list", "data": data})

    def _completion_json(self, reply: _Completion, model: str, request_body: Any) -> dict[str, Any]:
        text = self.default_text if reply.default else reply.text
        message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None}
        if reply.tool_calls:
            message["tool_calls"] = [self._tool_call_json(call) for call in reply.tool_calls]
        usage = {
            "prompt_tokens": _prompt_tokens(request_body),
            "completion_tokens": len(text or "") // 4,
            **(reply.usage or {}),
        }
        usage.setdefault("total_tokens", usage["prompt_tokens"] + usage["completion_tokens"])
        return {
            "id": f"chatcmpl-fake-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": "tool_calls" if reply.tool_calls else "stop",
                }
            ],
            "usage": usage,
        }

    def _tool_call_json(self, call: Mapping[str, Any]) -> dict[str, Any]:
        function = {k: call[k] for k in ("name", "arguments") if k in call}
        function.setdefault("arguments", "{}")
        return {"id": call.get("id", f"call_fake_{next(self._ids)}"), "type": "function", "function": function}


def _unanswered_tool_calls(body: Any) -> web.Response | None:
    """OpenAI's 400 for a request whose tool messages do not pair with the tool calls before them."""
    messages = body.get("messages") if isinstance(body, dict) else None
    if not isinstance(messages, list):
        return None
    waiting: list[str] = []  # ids of the last assistant message's calls not answered yet
    caller = 0
    for index, message in enumerate([*messages, {"role": "end"}]):
        role = message.get("role") if isinstance(message, dict) else None
        if role == "tool":
            if message.get("tool_call_id") not in waiting:
                return _invalid(f"messages.[{index}].role", "Invalid parameter: messages with role 'tool' must be a "
                                "response to a preceeding message with 'tool_calls'.")
            waiting.remove(message.get("tool_call_id"))
            continue
        if waiting:
            return _invalid(f"messages.[{caller}].role", "An assistant message with 'tool_calls' must be followed by "
                            "tool messages responding to each 'tool_call_id'. The following tool_call_ids did not "
                            f"have response messages: {', '.join(waiting)}")
        calls = message.get("tool_calls") if role == "assistant" else None
        waiting = [c.get("id") for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []
        caller = index
    return None


def _roles_not_alternating(body: Any) -> web.Response | None:
    """vLLM's 400 for a request Mistral's chat template (the one that knows tools) raises on."""
    messages = body.get("messages") if isinstance(body, dict) else None
    if not isinstance(messages, list):
        return None
    if messages and isinstance(messages[0], dict) and messages[0].get("role") == "system":
        messages = messages[1:]
    checked = [m for m in messages if isinstance(m, dict) and m.get("role") not in ("tool", "tool_results")
               and m.get("tool_calls") is None]
    if any((m.get("role") == "user") != (index % 2 == 0) for index, m in enumerate(checked)):
        return _template_error("After the optional system message, conversation roles must alternate "
                               "user/assistant/user/assistant/...")
    if any(m.get("role") not in ("user", "assistant") for m in checked):
        return _template_error("Only user and assistant roles are supported, with the exception of an initial "
                               "optional system message!")
    return None


def _tools_refused(server: str, model: str) -> web.Response:
    """vLLM's 400 for tools offered to a server started without ``--enable-auto-tool-choice`` (whatever the
    ``tool_choice``), or Ollama's for a model whose template has no tools, in its OpenAI-compatible shape."""
    if server == "vllm":
        return _template_error('"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set')
    error = {"message": f"registry.ollama.ai/library/{model} does not support tools", "type": "api_error",
             "param": None, "code": None}
    return web.json_response({"error": error}, status=400)


def _template_error(message: str) -> web.Response:
    """How vLLM answers a request its chat template raised on (`create_error_response`)."""
    error = {"message": message, "type": "BadRequestError", "param": None, "code": 400}
    return web.json_response({"error": error}, status=400)


def _invalid(param: str, message: str) -> web.Response:
    error = {"message": message, "type": "invalid_request_error", "param": param, "code": None}
    return web.json_response({"error": error}, status=400)


def _prompt_tokens(request_body: Any) -> int:
    """A rough chars/4 count of a request's messages, so code that budgets tokens sees plausible numbers."""
    return len(json.dumps(request_body.get("messages", []) if isinstance(request_body, dict) else "")) // 4


@dataclass(frozen=True, slots=True)
class _Completion:
    text: str | None
    tool_calls: list[Mapping[str, Any]] | None
    usage: Mapping[str, Any] | None
    default: bool = False


@dataclass(frozen=True, slots=True)
class _Raw:
    body: Any
    content_type: str
