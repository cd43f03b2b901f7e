"""`OpenAIModel`: any OpenAI-compatible chat-completions endpoint via the official SDK.

Works with api.openai.com, OpenRouter, vLLM, llama.cpp and Ollama (set
``model.base_url``). Retries with backoff are the SDK's job: it retries 408, 409,
429, 5xx, connect timeouts and connection errors ``max_retries`` times, honouring
``retry-after-ms`` / ``retry-after`` (up to 120 s; waited up to a quarter longer, at random, so calls refused
together do not all come back together) and ``x-should-retry``, for as long as
a call's retry budget lasts (`_retry_budget`); an answer that does not come in time (also
when a proxy between says so: 408, 504, 524), and a 429 for an account out of credit, are
not asked for again, and a request the machine slept through is given up as a connection
error, asked again (`_AskOnceClient`). With ``model.max_concurrent_requests`` set, a request waits for one
of that many slots for its server before it is sent (`_request_slots`).
What reaches us is final, and `_translate_error` turns it into one `ModelError`.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import email.utils
import json
import logging
import math
import os
import re
import ssl
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

import openai
from openai import AsyncOpenAI, DefaultAsyncHttpxClient

try:
    import httpx2 as httpx  # the HTTP client of openai 3
except ImportError:  # openai 1 and 2
    import httpx

from agent._clock import SYSTEM_CLOCK, Clock
from agent._context_window import stated_window
from agent._errors import BODY_TOO_LARGE, TOOLS_NOT_SET_UP, ModelError, exceeds_context, model_failure_text
from agent._model import ModelRequest, ModelResponse, ToolCall, Usage
from agent._steer_note import STEER_NOTE
from agent.models._alternation import alternating
from agent.models._error_pages import is_web_page, page_text, refuses_the_network
from agent.models._outage import (
    ANSWERED,
    FAILED,
    LIMITED,
    UNREACHABLE,
    UNTOLD,
    ServerOutage,
    admitted,
    credential_of,
    limit_of,
    model_outage_of,
    outage_of,
    settle,
    waiting,
)
from agent.models._request_slots import RequestSlots
from agent.models._retry_budget import CALL, GAVE_UP, PROBE_NOT_AGAIN, RetryBudget, begin
from agent.models._suspend import expire_after_suspend, lost_after
from agent.models._text_tool_calls import TextCall, calls_in_text, offered_names
from agent.settings import ModelSettings, api_key_problem, base_url_of

log = logging.getLogger("agent.models")

PLACEHOLDER_API_KEY = "not-set"
"""Sent when neither ``model.api_key`` nor ``$OPENAI_API_KEY`` is set.

The SDK refuses to build a client without a key, but local servers (Ollama,
llama.cpp) ignore it; a real provider answers 401, which surfaces as ``auth``.
"""


class OpenAIModel:
    """A `Model` backed by ``AsyncOpenAI.chat.completions.create`` (non-streaming).

    ``complete`` raises `ModelError` after the SDK's own retries, with the SDK's
    exception in ``__cause__``; its message never contains the API key, nor a password written
    into ``base_url`` (as written, or as the Basic credentials the SDK sends for it).
    Cancelling ``complete`` cancels the in-flight HTTP request (the connection
    is dropped) and re-raises `asyncio.CancelledError` untouched.

    The API key comes from ``settings.api_key``, else ``env["OPENAI_API_KEY"]``
    (``env`` defaults to `os.environ`), else `PLACEHOLDER_API_KEY`. The server is
    `agent.settings.base_url_of`: ``settings.base_url``, else ``env["OPENAI_BASE_URL"]``, else
    OpenAI's own API. ``settings.max_concurrent_requests`` bounds the requests in flight to that server at once
    (`agent.models._request_slots`), unless ``client`` is given. ``clock`` tells a suspend (`agent.models._suspend`),
    unless ``client`` is given;
    a test's `FakeClock` must be a manual one (``autojump=False``): the watcher looks every few seconds
    for as long as a request runs, which an autojump clock turns into a spin.
    """

    def __init__(
        self,
        settings: ModelSettings,
        *,
        client: AsyncOpenAI | None = None,
        env: Mapping[str, str] | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ):
        self.name = settings.name
        self.context_window = settings.context_window
        self.supports_vision = settings.supports_vision
        self._temperature = settings.temperature
        env = os.environ if env is None else env
        api_key = settings.api_key or env.get("OPENAI_API_KEY") or PLACEHOLDER_API_KEY
        base_url = base_url_of(settings, env)  # its password scrubbed too, also from $OPENAI_BASE_URL
        self._owns_client = client is None
        # Told on every request, as a wrong key is: a turn must not crash on a header no client can
        # encode, nor retry a newline the SDK reports as a connection error.
        self._key_problem = api_key_problem(settings, env) if client is None else None
        if client is None:
            client = _sdk_client(api_key, base_url, timeout=settings.timeout_seconds, max_retries=settings.max_retries,
                                 clock=clock, max_in_flight=settings.max_concurrent_requests)
        self._client = client
        # The SDK imports its resource modules on first attribute access; do it
        # here rather than block the event loop inside the first `complete`.
        self._completions = client.chat.completions
        # An injected client may carry its own key; scrub both from error text.
        # Longest first, so a key that contains the other is scrubbed whole.
        keys = {k for k in (api_key, getattr(client, "api_key", None), *_url_credentials(base_url))
                if isinstance(k, str) and len(k) >= 4}
        self._secrets = tuple(sorted(keys - {PLACEHOLDER_API_KEY}, key=len, reverse=True))
        self._named = _named(self.name, base_url)
        self._server = _without_credentials(base_url)  # whose outage this model's calls share (`_outage`)
        self._credential = credential_of(str(getattr(client, "api_key", None) or api_key), *_url_credentials(base_url))
        self._clock = clock
        self._behind_most = settings.timeout_seconds  # a call that may not wait, behind the turns held (`admitted`)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return await _with_text_calls(await self._answer(request), offered_names(request.tools), request.messages)

    async def _answer(self, request: ModelRequest) -> ModelResponse:
        messages = request.messages if self.supports_vision else _without_pictures(request.messages)
        # Strict chat templates (vLLM, llama.cpp) refuse a conversation whose roles do not alternate.
        kwargs: dict[str, Any] = {"model": self.name, "messages": alternating(messages)}
        if request.tools:
            kwargs["tools"] = list(request.tools)
            kwargs["tool_choice"] = "auto"
        if self._temperature is not None:
            kwargs["temperature"] = self._temperature
        if self._key_problem is not None:
            raise ModelError(model_failure_text("auth", self._key_problem), kind="auth")
        server, model = outage_of(self._server), model_outage_of(self._server, self.name)
        circuits = (server, model, limit_of(self._server, self._credential, self.name))
        # A turn that may wait for its server or model down (`_outage.admitted`): most calls have none, and wait only
        # behind the turns that did, as they resume.
        wait, resumed, answered = waiting(), [], False

        def waits_again(probes: tuple[ServerOutage, ...]) -> bool:
            # Down under it, or still down (a probe): its turn waits for it to come back. Not a probe that told its
            # circuit nothing (a proxy's 504, a read timeout: `UNTOLD`), the next probe due at once: sent again and
            # again, nothing moving it on, it ends as before.
            return wait is not None and (server.down_since is not None or model.down_since is not None) and not any(
                probed.down_since is not None and probed.next_probe <= self._clock.monotonic() for probed in probes)

        try:
            while True:
                probes = await admitted(circuits, self._clock, wait, resumed, self._behind_most)
                budget = RetryBudget(probe=bool(probes), circuits=circuits)
                token = CALL.set(budget)
                try:
                    try:
                        completion = await self._completions.create(**kwargs)
                    except UnicodeEncodeError:  # a lone surrogate in the conversation: rare, so mended only then
                        kwargs["messages"] = _mend_surrogates(kwargs["messages"])
                        completion = await self._completions.create(**kwargs)
                # JSON/Unicode decode errors escape the SDK unwrapped when a server sends a broken body with a
                # JSON content type (RecursionError: one nested too deep); an encode error still there after
                # mending is in no message (a header).
                except (openai.OpenAIError, json.JSONDecodeError, UnicodeError, RecursionError) as exc:
                    pictures = any(_holds_picture(message.get("content")) for message in kwargs["messages"])
                    error = _translate_error(exc, self._secrets, self._named, pictures=pictures, gave_up=budget.spent,
                                             not_again=PROBE_NOT_AGAIN if budget.probe else GAVE_UP)
                    if not isinstance(exc, _RetryNotSent):  # else the request that failed last was told of no outcome
                        settle(*circuits, _outcome(exc, error), error, self._clock, probes)
                    if waits_again(probes):
                        continue
                    # Taken for down while the call ran: it ends as a call not sent now does, refused by the circuit
                    # down by now (its own failure may have taken the server for down too). Unless its own failure
                    # showed the server up again (a 5xx of the server's own words, which is that model's). Counted
                    # as one not sent, as its chat is told: the turn's failure is left out of the log for the
                    # outage's end's count.
                    if (down := budget.down_now()) is not None:
                        down.not_sent += 1
                        raise down.held(self._clock) from exc
                    raise error from exc
                finally:
                    CALL.reset(token)
                    for probed in probes:
                        probed.probe_ended()
                try:
                    response = _to_response(completion, fallback_model=self.name, secrets=self._secrets,
                                            named=self._named)
                except ModelError as exc:  # a failure the server reported in a 200 body, or an answer malformed
                    settle(*circuits, _outcome(exc, exc), exc, self._clock, probes)
                    if waits_again(probes):  # OpenRouter's upstream failing: as a 5xx in its own words
                        continue
                    raise
                break
            settle(*circuits, ANSWERED, None, self._clock, probes)
            answered = True
            if wait is not None:
                wait.going()
            return response
        finally:
            for circuit in resumed:
                circuit.resume_ended(answered)

    async def aclose(self) -> None:
        """Close the HTTP client if this model created it. Idempotent."""
        if self._owns_client:
            await self._client.close()


def _sdk_client(api_key: str, base_url: str, *, timeout: float, max_retries: int, clock: Clock,
                max_in_flight: int | None = None) -> AsyncOpenAI:
    """The SDK's client for ``base_url``, asking through `_AskOnceClient`, ``max_in_flight`` requests at once at most
    with every other client of that server and bound (None: no bound).

    A user and password written into ``base_url`` (a proxy with basic auth) are sent as the Basic
    credentials the HTTP client would send for them, but the URL the SDK is given has none: the HTTP
    client logs every URL it requests (``HTTP Request: POST http://…``, INFO), and a password from
    ``$OPENAI_BASE_URL`` is no setting the gateway's log redaction knows of."""
    parts = urlsplit(base_url)
    user, password = unquote(parts.username or ""), unquote(parts.password or "")
    auth = None
    if user or password:  # as httpx reads credentials from a URL, and the Basic header it then sends
        auth = httpx.BasicAuth(user, password)
        base_url = urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
    limits = httpx.Timeout(timeout, connect=min(timeout, CONNECT_TIMEOUT))
    slots = None if max_in_flight is None else RequestSlots(base_url, max_in_flight)
    return AsyncOpenAI(api_key=api_key, base_url=base_url, timeout=limits, max_retries=max_retries,
                       http_client=_AskOnceClient(timeout=limits, clock=clock, auth=auth, max_retries=max_retries,
                                                  slots=slots))


CONNECT_TIMEOUT = 10.0
"""Seconds to open a connection (TCP and TLS) at most, as the SDK's own default bounds it: a server no packet
reaches (a firewall that drops them, a VPN that is down) is not waited for the whole ``timeout``, and the
SDK asks again, the server never having had the request."""


_GAVE_UP_WAITING = frozenset({408, 504, 524})
"""Statuses of a server or proxy between that stopped waiting for the answer: LiteLLM's and OpenRouter's
408 for an upstream that took too long, a 504 Gateway Timeout (nginx in front of vLLM), Cloudflare's 524."""


class _AskOnceClient(DefaultAsyncHttpxClient):
    """The SDK's HTTP client, except that it asks again only where asking again can help.

    An answer which does not come in time is not asked for again: the server had the whole
    request and may still be writing, and billing, the answer, so a retry pays twice and, for an
    answer that just takes longer, times out the same way. (The SDK passes its own errors on
    without retrying them.) The timeout bounds the whole request, not only each wait for a byte.
    So is one a proxy between gave up waiting for (`_GAVE_UP_WAITING`), unless the server says
    ``x-should-retry: true``: the model behind it may still be writing that answer.
    A 429 that says the account is out of credit (``insufficient_quota``) is marked
    ``x-should-retry: false``, which the SDK obeys: no wait tops the account up.
    Connection errors (a connection not opened within `CONNECT_TIMEOUT`, or the timeout if less, too), other 429s
    and 5xx are still retried.

    A request the machine was suspended through for longer than `_suspend.lost_after` its timeout
    is dropped as a connection error (``httpx.ReadError``), which the SDK retries: its answer can
    no longer come, though the connection does not say so, and the server is no longer making it.
    A response's body is watched only when read here (not streamed), as the SDK reads its answers.

    Within a model call (`_retry_budget.CALL`), a failure the SDK would ask again after a wait that ends past
    the call's retry budget is not asked again: a response is marked ``x-should-retry: false``, a connection
    error raised as the SDK's own error, which it passes on (``max_retries``: the SDK's, to know its last try).
    A ``Retry-After`` it asks again after is made up to a quarter longer, at random (`RetryBudget.spread`).
    Nor is a failure asked again, nor a retry sent, once the call's server, model or key is taken for down since
    it was sent (`RetryBudget.refuses`; `_RetryNotSent`): the call ends as a call not sent then does. A failure in
    the server's own words (`_in_own_words`) shows it answering: its server's circuit refuses no retry of it.

    With ``slots``, each request (each retry anew) is sent once it holds a slot, and frees it with its response,
    read whole, as the SDK reads its answers: the SDK's wait before a retry holds none. Its timeout, and its
    call's retry budget, count from then; the wait for a slot counts against neither, or the bound would bring
    about the very timeouts it is there to spare."""

    def __init__(self, *, timeout: httpx.Timeout, clock: Clock = SYSTEM_CLOCK, auth: httpx.Auth | None = None,
                 max_retries: int = 0, slots: RequestSlots | None = None) -> None:
        super().__init__(timeout=timeout, auth=auth)
        self._timeout = timeout.read  # the whole request's bound (`send`)
        self._clock = clock
        self._lost_after = lost_after(self._timeout)
        self._max_retries = max_retries
        self._slots = slots

    async def send(self, request: httpx.Request, **kwargs: Any) -> httpx.Response:
        if self._slots is None:
            return await self._send(request, **kwargs)
        _refuse_retry(request)  # else it waited for a slot behind every other call, to be refused then
        async with self._slots.held(CALL.get(), self._clock):
            return await self._send(request, **kwargs)

    async def _send(self, request: httpx.Request, **kwargs: Any) -> httpx.Response:
        budget = CALL.get()
        _refuse_retry(request)
        begin(budget, self._clock)
        try:
            response = await self._send_bounded(request, **kwargs)
        except (httpx.RequestError, ssl.SSLError) as exc:  # what the SDK asks again after
            if budget is None or not budget.stops(request.headers, None, self._clock, self._max_retries):
                raise
            if isinstance(exc, httpx.TimeoutException):  # a connection not opened in time
                raise openai.APITimeoutError(request=request) from exc
            raise openai.APIConnectionError(request=request) from exc
        if response.status_code == 429 and _error_code(response.content) in _QUOTA_CODES:
            response.headers["x-should-retry"] = "false"
        elif response.status_code == 500 and _NO_JINJA.search(_error_message(response)):
            response.headers["x-should-retry"] = "false"  # every request offers tools: each meets it again
        elif response.status_code in _GAVE_UP_WAITING and "x-should-retry" not in response.headers:
            response.headers["x-should-retry"] = "false"
        elif budget is not None and response.status_code >= 400 and _sdk_asks_again(response):
            wait = _retry_after(response.headers)
            if budget.stops(request.headers, wait, self._clock, self._max_retries, answered=_in_own_words(response)):
                response.headers["x-should-retry"] = "false"
            elif (spread := budget.spread(request.headers, wait, self._clock, self._max_retries)) is not None:
                response.headers["retry-after-ms"] = repr(spread * 1000)  # read before ``retry-after``
        return response

    async def _send_bounded(self, request: httpx.Request, **kwargs: Any) -> httpx.Response:
        # httpx's read timeout is between two bytes: a server trickling whitespace would hold a request
        # for ever. ``bound`` counts on the loop's monotonic clock, which a suspend stops, as httpx's
        # does: a suspend is `expire_after_suspend`'s to tell.
        traced = request.extensions.get("trace")
        opening = request.extensions["trace"] = _Opening(traced)
        try:
            async with asyncio.timeout(self._timeout) as bound, asyncio.timeout(None) as cutoff:
                watch = asyncio.create_task(expire_after_suspend(cutoff, self._clock, self._lost_after))
                try:
                    response = await super().send(request, **kwargs)
                    if response.status_code == 429 or (response.status_code == 500 and _in_json_said(response)):
                        await response.aread()  # kept on the response: the SDK's own read gets the same bytes
                finally:
                    watch.cancel()
        except httpx.ReadTimeout as exc:
            raise openai.APITimeoutError(request=request) from exc
        except TimeoutError:
            if bound.expired():
                if opening.now:  # as httpx's own connect timeout would, which is this bound at 10 s or less
                    opened = f"no connection opened in {self._timeout:g} s"
                    raise httpx.ConnectTimeout(opened, request=request) from None
                raise openai.APITimeoutError(request=request) from None
            if not cutoff.expired():
                raise
            lost = f"no answer after the machine was suspended for over {self._lost_after:.0f} s: taken for lost"
            log.warning("model server request: %s", lost)  # the SDK's error says only "Connection error."
            raise httpx.ReadError(lost, request=request) from None
        finally:
            request.extensions["trace"] = traced
            if traced is None:
                del request.extensions["trace"]
        return response


class _RetryNotSent(openai.APIConnectionError):
    """A call's retry not sent, its server, model or key having been taken for down while the SDK waited to send it
    (`RetryBudget.refuses`): an error of the SDK's own, which it passes on without asking again."""


def _refuse_retry(request: httpx.Request) -> None:
    """Raise `_RetryNotSent` for ``request`` if it is a retry its model call's circuits refuse."""
    budget = CALL.get()
    if budget is not None and budget.refuses(request.headers):
        raise _RetryNotSent(message="a retry not sent: the model server was taken for down", request=request)


_OPENING_STEPS = frozenset({"connect_tcp", "connect_unix_socket", "start_tls", "setup_socks5_connection"})
"""The steps of opening a connection (httpcore's ``trace`` events ``connection.connect_tcp.started``, …); through
an HTTPS proxy, its ``CONNECT`` request's too, which the proxy answers once it reached the server."""

_AFTER_STEPS = frozenset({"response_closed", "close", "retry"})
"""Steps that tell nothing of where a request is: a request's end, its connection's, a wait before connecting again."""


class _Opening:
    """Whether a request's connection is being opened, as the HTTP client's ``trace`` extension tells it (passed on
    to ``then``, a trace the request had): one whose whole bound passes meanwhile never reached the server, which
    is not answering (`_outcome`), not slow to answer, and the SDK asks again. A connection taken from the pool
    has no such step."""

    __slots__ = ("now", "_then")

    def __init__(self, then: Any) -> None:
        self.now = False
        self._then = then

    async def __call__(self, event: str, info: dict[str, Any]) -> None:
        step, _, stage = event.rpartition(".")
        step = step.rpartition(".")[2]
        # A step's failure leaves it as it began: the bound cancelling the step is traced as one, and a tunnel's
        # CONNECT as closed, before it reaches `_send_bounded`.
        if stage == "started" and step not in _AFTER_STEPS:
            self.now = step in _OPENING_STEPS or getattr(info.get("request"), "method", None) == b"CONNECT"
        elif stage == "complete" and step not in _AFTER_STEPS:
            self.now = False
        if self._then is not None:
            await self._then(event, info)


def _sdk_asks_again(response: httpx.Response) -> bool:
    """Whether the SDK asks again after ``response``, an error, while it has retries left: as the server marks it
    (``x-should-retry``), else a 408, 409, 429 or 5xx (a ``Retry-After`` past two minutes aside: `_retry_budget`)."""
    said = response.headers.get("x-should-retry")
    if said in ("true", "false"):
        return said == "true"
    return response.status_code in (408, 409, 429) or response.status_code >= 500


def _in_own_words(response: httpx.Response) -> bool:
    """Whether ``response``, an error, shows its server answering (`_outcome`: a 4xx, a 5xx in JSON), not a proxy's
    page, nor no body, for a server that is not."""
    if response.status_code < 500:
        return True
    try:
        return isinstance(json.loads(response.content), (Mapping, list))
    except (ValueError, RecursionError, httpx.ResponseNotRead):
        return False


def _in_json_said(response: httpx.Response) -> bool:
    """Whether ``response`` says its body is JSON: a server's own error (llama-server's 500 refusing tools,
    `_NO_JINJA`), read whole before the SDK asks again; a proxy's page is not."""
    return "json" in response.headers.get("content-type", "")


def _error_message(response: httpx.Response) -> str:
    """``error.message`` of ``response``'s body, OpenAI-shaped, or ``error`` itself where it is a string
    (``{"error": "…"}``, `_without_jinja`); ``""`` when there is none or it was not read."""
    try:
        error = json.loads(response.content).get("error")
    except (ValueError, AttributeError, RecursionError, httpx.ResponseNotRead):  # not JSON, nor an object; too deep
        return ""
    message = error.get("message") if isinstance(error, Mapping) else error
    return message if isinstance(message, str) else ""


def _error_code(body: bytes) -> str | None:
    """``error.code`` of an OpenAI-shaped error body, None when there is none."""
    try:
        error = json.loads(body).get("error")
    except (ValueError, AttributeError, RecursionError):  # not JSON, not an object, nested too deep
        return None
    code = error.get("code") if isinstance(error, Mapping) else None
    return code if isinstance(code, str) else None


def _named(model: str, base_url: str) -> str:
    """``model 'm' at https://host/v1``: the server without the credentials, query or fragment a URL may hold."""
    return f"model {model!r} at {_without_credentials(base_url)}"


def _without_credentials(base_url: str) -> str:
    parts = urlsplit(base_url)
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2], query="", fragment=""))


_NAMED_KINDS = frozenset({"auth", "not_found", "blocked"})
"""Failures an operator cures at one model's settings, which a server's words do not name: a route of the
delegation plugin may have a server and key of its own, and a 404 for a ``base_url`` without ``/v1`` says
only ``Not Found``."""


def _translate_error(exc: BaseException, secrets: tuple[str, ...], named: str | None = None, *,
                     pictures: bool = False, gave_up: bool = False, not_again: str = GAVE_UP) -> ModelError:
    """The one place SDK failures become `ModelError` (see `agent._errors` for kinds); ``named``
    (`_named`) is added to the text of a failure of `_NAMED_KINDS`. ``pictures``: the request held one,
    so a 400 that speaks of an image is that picture's (`bad_image`), not the request's (`bad_request`).
    ``gave_up``: the call's retry budget kept the SDK from asking again (`_retry_budget`), so the failure
    is a passing one, and its text says why it was not asked again (``not_again``)."""
    status = getattr(exc, "status_code", None)
    retry_after = None
    # Order matters: APITimeoutError subclasses APIConnectionError, and the
    # auth/rate-limit classes subclass APIStatusError.
    if isinstance(exc, openai.APITimeoutError):
        kind = "timeout"
    elif isinstance(exc, openai.APIConnectionError):
        kind = "connection"
    elif isinstance(exc, (openai.AuthenticationError, openai.PermissionDeniedError)):
        # A 403 is also how OpenAI refuses a country it does not serve, and how a firewall in front of a
        # provider (Cloudflare's block page) refuses a network: no key cures either. Another web page is a
        # proxy's in front of the server, refusing a wrong or missing key.
        kind = "blocked" if exc.status_code == 403 and (
            exc.code in _REGION_CODES or refuses_the_network(exc.body, exc.response.headers)) else "auth"
    elif isinstance(exc, openai.APIStatusError):
        retry_after = _retry_after(exc.response.headers)
        kind = _permanent_kind(exc.status_code, exc.code) or (
            "bad_request" if exc.status_code == 500 and _without_jinja(exc)
            else "rate_limited" if isinstance(exc, openai.RateLimitError)
            else "timeout" if exc.status_code in _GAVE_UP_WAITING
            else "server_error" if exc.status_code >= 500 or gave_up or _asked_again(exc)
            else "bad_image" if pictures and exc.status_code in (400, 422) and _about_a_picture(exc)
            else "bad_request")
    elif isinstance(exc, UnicodeEncodeError):  # a request no client can send: asking again cannot help
        kind = "bad_request"
    elif isinstance(exc, (openai.APIResponseValidationError, ValueError, RecursionError)):
        kind = "malformed"
    else:  # another OpenAIError: a client-side refusal that retrying won't fix
        kind = "bad_request"
    text = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    if isinstance(exc, json.JSONDecodeError) and named:  # a body said to be JSON that is not: what was it?
        text = f"{text}; the server sent: {_sent(exc.doc, secrets) or 'an empty body'} ({named})"
    if kind == "connection" and isinstance(exc.__cause__, _TOLD_CAUSES):
        # The SDK's text is "Connection error." whatever happened: the log must say what did.
        cause, said = exc.__cause__, str(exc.__cause__)[:_WORDS_KEPT]
        text = f"{text} ({type(cause).__name__}{': ' + said if said else ''})"
    if isinstance(exc, openai.APIStatusError):
        words = _server_words(exc.body, secrets)
        if words:
            text = f"{text} - {words[:_WORDS_KEPT]}"
        if kind == "auth" and is_web_page(exc.body):  # else the operator reads a page and no reason
            text = f"{text} (the server, or a proxy in front of it, refused the key with this page)"
        # Groq words such a refusal without saying so ("Please reduce the length of the messages"):
        # the code goes into the text, which is all that outlives the error (`exceeds_context`).
        if exc.code == "context_length_exceeded" and not exceeds_context(text):
            text = f"{text} (context_length_exceeded)"
        text = _with_window(text, exc.body)
        if exc.status_code == 413:  # a body limit (nginx's 1 MB: one inline photo), so it reads as too long
            sent = exc.response.request.headers.get("content-length", "")
            size = f": {int(sent):,} bytes sent" if sent.isdigit() else ""
            text = f"{text} ({BODY_TOO_LARGE}{size})"
    if named and kind in _NAMED_KINDS:
        text = f"{text} ({named})"
    if kind == "bad_request" and (fix := _tools_fix(text)) is not None:
        text = f"{text} ({TOOLS_NOT_SET_UP}: {fix})"
    if gave_up:
        text = f"{text} ({not_again})"
    text = _scrub(text, secrets)
    return ModelError(model_failure_text(kind, text), kind=kind, status=status, retry_after=retry_after)


_WORDS_KEPT = 1000
"""Characters of a server's error text kept: a plain-text body may be long (a web page is cut shorter, `_sent`)."""

_TOLD_CAUSES = (httpx.NetworkError, httpx.RemoteProtocolError, httpx.ProxyError)
"""Failures under a connection error whose text says what went wrong (refused, reset, closed mid-answer, a
proxy's refusal), and holds no request header: a `httpx.LocalProtocolError` may quote the key's header."""


_UNSENT_CAUSES = (httpx.LocalProtocolError, httpx.UnsupportedProtocol)
"""Failures under a connection error of a request the client could not send: no server was asked."""


def _in_json(exc: openai.APIStatusError) -> bool:
    """Whether the server wrote ``exc``'s body in JSON: the SDK keeps of ``{"error": "…"}`` (TGI's, Hugging Face's)
    the string alone, as it keeps a web page's or a proxy's plain text."""
    if isinstance(exc.body, (Mapping, list)):
        return True
    try:
        return isinstance(json.loads(exc.response.text), (Mapping, list))
    except (ValueError, RecursionError, httpx.ResponseNotRead):
        return False


def _outcome(exc: BaseException, error: ModelError) -> str:
    """What a call's failure ``exc``, translated to ``error``, tells of its server, model and key (`_outage`):
    `UNREACHABLE` only where the server is not answering, not where its answer is slow to come (a read timeout, the
    whole request's bound, a proxy's 408/504/524 `_GAVE_UP_WAITING`), nor where no request reached it; `FAILED`
    where the server answered, in words of its own, that the model failed."""
    if error.kind == "rate_limited":
        return LIMITED
    if error.kind == "timeout":  # the SDK's error says which only in its cause: httpx's ConnectTimeout, ReadTimeout…
        return UNREACHABLE if isinstance(exc.__cause__, httpx.ConnectTimeout) else UNTOLD
    if error.kind == "connection":
        return UNTOLD if isinstance(exc.__cause__, _UNSENT_CAUSES) else UNREACHABLE
    if error.kind == "server_error":
        # A 4xx the SDK asked again (409) is an answer; a 5xx refusing one as too long too; so is a 200 body's error
        # with no code: nothing says the server, or the model, is down.
        if (error.status or 0) < 500 or error.context_exceeded:
            return ANSWERED
        # A 5xx in the server's own JSON (a 200 body's error is in it too) is one model's: OpenRouter's and LiteLLM's
        # 502/503 are one upstream's. A proxy's or load balancer's page, or no body, says the server is not answering.
        return FAILED if not isinstance(exc, openai.APIStatusError) or _in_json(exc) else UNREACHABLE
    if isinstance(exc, (UnicodeEncodeError, openai.OpenAIError)) and not isinstance(exc, openai.APIError):
        return UNTOLD  # a request no client can send (a header): the SDK refused it before sending
    if isinstance(exc, RecursionError):  # a request nested too deep to encode, or an answer too deep to decode
        return UNTOLD
    return ANSWERED


def _server_words(body: object, secrets: tuple[str, ...] = ()) -> str | None:
    """What a server said in an error body that the SDK leaves out of its message, which takes only
    ``error.message``: a bare string (LM Studio's ``{"error": "…"}``), a list of errors (Gemini's
    OpenAI-compatible endpoint), or a body that is not JSON (a web page's title and the start of its text).
    ``secrets`` are scrubbed before any of it is cut: a key cut in two is matched by no mask."""
    if isinstance(body, str):
        if is_web_page(body):
            title, words = (_scrub_quoted(part, secrets) for part in page_text(_scrub(body, secrets)))
            title = f"a web page titled '{_sent(title, secrets)}'" if title else "a web page"
            return f"{title}: {_sent(words, secrets)}" if words else title
        return _scrub(body.strip(), secrets) or None
    if not isinstance(body, list):
        return None
    words = []
    for item in body:
        error = item.get("error", item) if isinstance(item, Mapping) else item
        message = error.get("message") if isinstance(error, Mapping) else error
        if isinstance(message, str) and message:
            words.append(message)
    return _scrub("; ".join(words), secrets) or None


def _error_in_body(error: Any, secrets: tuple[str, ...], named: str | None = None) -> ModelError | None:
    """The failure a server reported in a 200 body (``{"error": {"message", "code"}}``), if any;
    ``named`` as `_translate_error` adds it.

    OpenRouter and proxies like it commit to 200 before the upstream model runs, so what fails
    after that rides the body; its numeric ``code`` stands in for the status line."""
    if isinstance(error, str):
        error = {"message": error}
    if not isinstance(error, Mapping):
        return None
    code = error.get("code")
    status = code if isinstance(code, int) and not isinstance(code, bool) and 400 <= code <= 599 else None
    kind = _permanent_kind(status, code) or (
        "rate_limited" if status == 429 else "auth" if status in (401, 403)
        else "timeout" if status in _GAVE_UP_WAITING
        # A 409 is a conflict that passes (a lock timeout), as the status line's is (`_asked_again`).
        else "bad_request" if status is not None and status < 500 and status != 409
        else "server_error")  # no usable code: the server still says it failed
    text = _with_window(str(error.get("message") or "no message"), error)
    if named and kind in _NAMED_KINDS:
        text = f"{text} ({named})"
    return ModelError(model_failure_text(kind, _scrub(text, secrets)), kind=kind, status=status)


def _with_window(text: str, error: object) -> str:
    """``text``, a refusal's as too long, with the window its error object names in a field of its own
    (llama.cpp's ``exceed_context_size_error``: "the request exceeds the available context size, try increasing
    it", ``n_ctx`` beside it) added in LM Studio's words (``n_ctx: 4096``), which `stated_window` reads: only the
    text outlives the error, and without the window a pasted log too long for it alone read as a conversation
    grown too long (send /new), and every later session was refused once before it compacted."""
    window = error.get("n_ctx") if isinstance(error, Mapping) else None
    if (isinstance(window, int) and not isinstance(window, bool) and window > 0 and exceeds_context(text)
            and stated_window(text) is None):
        return f"{text} (n_ctx: {window})"
    return text


_QUOTA_CODES = frozenset({"insufficient_quota", "billing_hard_limit_reached"})
_FILTER_CODES = frozenset({"content_filter", "content_policy_violation"})
_REGION_CODES = frozenset({"unsupported_country_region_territory"})


def _permanent_kind(status: int | None, code: object) -> str | None:
    """``not_found``, ``quota``, ``content_filter`` or ``blocked`` for a failure no retry cures, by the
    status and the ``error.code`` of OpenAI's error body (Azure's filter, OpenRouter's 402); else None."""
    if code in _QUOTA_CODES or status == 402:
        return "quota"
    if code in _FILTER_CODES:
        return "content_filter"
    if code in _REGION_CODES:
        return "blocked"
    if status == 404:
        return "not_found"
    return None


_NO_JINJA = re.compile(r"\b(tools|tool_choice) param requires --jinja flag")
"""llama-server's words, with a 500, for a request that offers tools (or names a ``tool_choice``) while its chat
templates are not Jinja's (``--no-jinja``, or a build older than ``--jinja`` as the default, started without it): no
failing server, which asking again, or waiting for it to come back, would cure."""

_TOOLS_REFUSALS = (
    (re.compile(r"--enable-auto-tool-choice"),
     "start vLLM with --enable-auto-tool-choice and the --tool-call-parser of the model's format "
     "(hermes for Qwen2.5 and Hermes, llama3_json for Llama 3.1 to 3.3, mistral for Mistral)"),
    (re.compile(r"\bdoes not support tools\b"),
     "set model.name to a model that takes tools (Ollama lists them at https://ollama.com/search?c=tools)"),
    (_NO_JINJA, "start llama-server with --jinja, not --no-jinja"),
)
"""A self-hosted server's refusal of any request that offers tools, and what the operator fixes: vLLM's 400 '"auto"
tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set' (tool_choice sent or not), Ollama's
400 "registry.ollama.ai/library/gemma3:4b does not support tools", llama-server's 500 (`_NO_JINJA`)."""


def _without_jinja(exc: openai.APIStatusError) -> bool:
    """Whether ``exc`` is llama-server's refusal of tools (`_NO_JINJA`), its ``error`` an object (llama-server's own
    shape) or the words alone (``{"error": "…"}``, the shape LM Studio and some proxies answer in), which the SDK
    leaves out of its message."""
    return _NO_JINJA.search(f"{exc.message} {_server_words(exc.body) or ''}") is not None


def _tools_fix(text: str) -> str | None:
    """What to fix where ``text``, a 400's, is a server's refusal of tools (`_TOOLS_REFUSALS`), else None."""
    return next((fix for refusal, fix in _TOOLS_REFUSALS if refusal.search(text)), None)


def _asked_again(exc: openai.APIStatusError) -> bool:
    """Whether the SDK asks again after ``exc``, a 4xx: a 409 (a lock timeout), or one its server marks
    ``x-should-retry: true``. Still failing once the retries are spent, it is the server's passing state, not a
    request the model cannot take (``bad_request``: "trying again will not help")."""
    return exc.status_code == 409 or exc.response.headers.get("x-should-retry") == "true"


_UNREADABLE_PICTURE = re.compile(
    r"\b(unsupported|invalid|valid|unreadable|corrupt\w*|decode|identify|process|load|download)\b[^.]{0,30}"
    r"\bimage( file| data)?\b|\bimage( file| data)?\b[^.]{0,30}\b(unsupported|invalid|not valid|unreadable|corrupt)",
    re.IGNORECASE)
"""How servers word a picture they cannot read, where no ``error.code`` says so: OpenAI's "You uploaded an
unsupported image", vLLM's "cannot identify image file", Gemini's "Provided image is not valid", llama.cpp's
"failed to load image", Anthropic's "Could not process image". Not "image_url is only supported by certain
models": that is ``model.supports_vision`` set for a model without vision, a setting's fault."""


def _about_a_picture(exc: openai.APIStatusError) -> bool:
    """Whether a 400 refuses a picture the server cannot read (its format, its bytes, a URL it could not
    fetch), by OpenAI's ``error.code`` (``invalid_image_format``, ``image_parse_error``, ``invalid_image_url``)
    or the server's words."""
    if isinstance(exc.code, str) and "image" in exc.code:
        return True
    words = f"{exc.message} {_server_words(exc.body) or ''}"
    return _UNREADABLE_PICTURE.search(words) is not None


def _holds_picture(content: Any) -> bool:
    return isinstance(content, list) and any(_is_picture(part) for part in content)


def _url_credentials(base_url: str | None) -> tuple[str, ...]:
    """The password in ``http://user:password@host/v1``, or a token given as the user name alone
    (``http://sk-…@proxy/v1``), as written, decoded, and as the ``Basic`` credentials the HTTP client sends
    it in: a server that echoes a request may echo those."""
    parts = urlsplit(base_url or "")
    if parts.password is None and not parts.username:
        return ()
    user, password = unquote(parts.username or ""), unquote(parts.password or "")
    written = (parts.password, password) if parts.password is not None else (parts.username or "", user)
    return (*written, base64.b64encode(f"{user}:{password}".encode()).decode())


def _scrub(text: str, secrets: tuple[str, ...]) -> str:
    for secret in secrets:
        text = text.replace(secret, "[redacted]")
    return text


_BREAKS = "[\\s\u00ad\u200b-\u200d\u2060\ufeff]*"
"""What may stand between two characters of a secret quoted from a web page (`_scrub_quoted`)."""


def _scrub_quoted(words: str, secrets: tuple[str, ...]) -> str:
    """``words``, a web page's as quoted (`page_text`), with ``secrets`` masked where the page's tags split one:
    each tag stripped became a space (``sk-abc<b>def</b>`` reads ``sk-abc def``), which no mask of the page
    itself matched, so a secret is matched here with spaces anywhere in it, and the invisible marks a page breaks
    a long word with (``&shy;``, a zero-width space or joiner: no whitespace), which a reader of the log misses."""
    for secret in secrets:
        if spaced := _BREAKS.join(re.escape(char) for char in secret if not char.isspace()):
            words = re.sub(spaced, "[redacted]", words)
    return words


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asked us to wait, read the way the SDK reads them."""
    for header, divisor in (("retry-after-ms", 1000), ("retry-after", 1)):
        value = headers.get(header)
        if value is not None:
            try:
                return max(0.0, float(value) / divisor)
            except ValueError:
                pass
    value = headers.get("retry-after")
    try:
        parsed = email.utils.parsedate_tz(value) if value else None
        return None if parsed is None else max(0.0, email.utils.mktime_tz(parsed) - time.time())
    except (TypeError, ValueError, OverflowError, OSError):  # a date no clock has (year 99999): no hint
        return None


PICTURE_NOT_SHOWN = "[a picture, not shown: this model reads no images]"
"""Sent to a model without vision in place of each picture of an earlier message (one at an http(s) URL names it)."""


def _without_pictures(messages: Sequence[Mapping[str, Any]]) -> Sequence[Mapping[str, Any]]:
    """``messages`` as a model without vision is sent them: each ``image_url`` part a `PICTURE_NOT_SHOWN` text part,
    and a message left with text parts alone its texts joined by a blank line. The pictures came while the
    configuration named a vision model; a text-only server (vLLM, Ollama) refuses every request that holds one,
    and the stored conversation keeps them for a vision model configured again. ``messages`` itself (no copy)
    when none holds a picture, as most conversations do."""
    sent: list[Mapping[str, Any]] | None = None
    for at, message in enumerate(messages):
        content = message.get("content")
        if isinstance(content, list) and any(_is_picture(part) for part in content):
            if sent is None:
                sent = list(messages)
            told = [{"type": "text", "text": _picture_note(part)} if _is_picture(part) else part for part in content]
            if all(isinstance(part, Mapping) and part.get("type") == "text" for part in told):
                told = "\n\n".join(text for part in told if (text := str(part.get("text") or "")))
            sent[at] = {**message, "content": told}
    return messages if sent is None else sent


def _is_picture(part: Any) -> bool:
    return isinstance(part, Mapping) and part.get("type") == "image_url"


def _picture_note(part: Mapping[str, Any]) -> str:
    image = part.get("image_url")
    url = image.get("url") if isinstance(image, Mapping) else image
    if isinstance(url, str) and url[:8].lower().startswith(("http://", "https://")):  # a tool may fetch it
        return PICTURE_NOT_SHOWN.replace("a picture", f"a picture at {url}", 1)
    return PICTURE_NOT_SHOWN  # a data URL: never pasted, it would flood the context


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
"""JSON may escape half of a UTF-16 pair (``"\\ud83d"``, a server cutting an emoji in two); Python
decodes it to a lone surrogate that no UTF-8 encoder accepts: the next request, the chat's
platform and the database would each fail on it."""


def _mend(text: str) -> str:
    return _LONE_SURROGATE.sub("\ufffd", text)


def _mend_surrogates(value: Any) -> Any:
    """A copy of ``value`` (messages, JSON-shaped) with every lone surrogate replaced by U+FFFD."""
    if isinstance(value, str):
        return _mend(value)
    if isinstance(value, Mapping):
        return {k: _mend_surrogates(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_mend_surrogates(v) for v in value]
    return value


_LONE_THINK_END = re.compile(r"^[ \t]*</think>", re.MULTILINE)


def _without_reasoning(text: str) -> str:
    """``text`` without the ``<think>…</think>`` block it starts with, if any (all of it when the
    block is never closed). DeepSeek-R1, Qwen3 and their kind reason in that block, which servers
    without a reasoning parser (vLLM's default, llama.cpp's ``--reasoning-format none``) leave in
    ``content``: it is not the answer, and neither the chat nor the next request should get it.
    Where the chat template opened the block in the prompt (DeepSeek-R1's distills, QwQ), the answer
    holds only its end: what comes before a ``</think>`` that begins a line, with no ``<think>``
    before it, is that reasoning (a ``</think>`` quoted within a line or in a code block is left as it is)."""
    start = len(text) - len(text.lstrip())
    if not text.startswith("<think>", start):
        lone = _LONE_THINK_END.search(text) if "</think>" in text else None
        # Inside a ``` block left open it is an answer showing the tag (asked about these models), not the
        # reasoning's end: taken for one, all of the answer before it was dropped.
        if lone is None or "<think>" in text[:lone.start()] or text.count("```", 0, lone.start()) % 2:
            return text
        return text[lone.end():].lstrip()
    end = text.find("</think>", start)
    return "" if end < 0 else text[end + len("</think>"):].lstrip()


def _malformed(what: str, named: str | None = None) -> ModelError:
    # In `model_failure_text`'s shape, as every failure: a child's error outlives it as this text alone, which
    # the chat is told of as a failed model call only when its kind can be read back from it.
    where = f" ({named})" if named else ""
    return ModelError(model_failure_text("malformed", f"model response malformed: {what}{where}"), kind="malformed")


_SENT_KEPT = 200
"""Characters quoted of an answer that is no chat completion: enough to tell a web page (a ``base_url`` at a
web UI, a captive portal) or a proxy's words, not the whole page."""


def _sent(body: str, secrets: tuple[str, ...]) -> str:
    """The start of ``body``, a server's answer that is not a chat completion, on one line."""
    text = " ".join(_scrub(body, secrets).split())
    return text if len(text) <= _SENT_KEPT else text[:_SENT_KEPT] + "…"


def _to_response(completion: Any, *, fallback_model: str, secrets: tuple[str, ...],
                 named: str | None = None) -> ModelResponse:
    # The SDK builds its models without validation, so any field may be missing
    # (None) or of the wrong type; and a non-JSON body arrives as a plain str.
    if isinstance(completion, str):  # what the SDK returns for a body whose type is not JSON's
        raise _malformed(f"not JSON: {_sent(completion, secrets) or 'an empty body'}", named)
    choices = getattr(completion, "choices", None)
    if not isinstance(choices, list) or not choices:
        raise _error_in_body(getattr(completion, "error", None), secrets, named) or _malformed("no choices", named)
    message = getattr(choices[0], "message", None)
    if message is None:
        raise _malformed("choice has no message")
    text = getattr(message, "content", None)
    if isinstance(text, list):
        text = _text_of_parts(text)
    if text is not None and not isinstance(text, str):
        raise _malformed("message content is not a string")
    if text is not None:
        text = _without_reasoning(_mend(text))
    refusal = getattr(message, "refusal", None)
    if not (text or "").strip() and isinstance(refusal, str) and refusal.strip():
        text = _mend(refusal)  # OpenAI's models say why they will not answer there, with no content
    finish_reason = getattr(choices[0], "finish_reason", None)
    filtered = finish_reason == "content_filter"
    if filtered and not (text or "").strip() and not message.tool_calls:  # its reasoning alone is no answer
        raise ModelError(model_failure_text("content_filter", "the provider's content filter withheld the answer"),
                         kind="content_filter")
    tool_calls = tuple(_to_tool_call(tc, i) for i, tc in enumerate(getattr(message, "tool_calls", None) or ()))
    model = getattr(completion, "model", None)
    return ModelResponse(
        text=text,
        tool_calls=tool_calls,
        usage=_to_usage(getattr(completion, "usage", None)),
        cost_usd=_cost(getattr(completion, "usage", None)),
        model=_mend(model) if isinstance(model, str) and model else fallback_model,  # kept, logged, labelled
        truncated=finish_reason == "length",
        reasoning=_reasoning(message),
        filtered=filtered,
    )


async def _with_text_calls(response: ModelResponse, offered: frozenset[str],
                           asked: Sequence[Mapping[str, Any]]) -> ModelResponse:
    """``response`` with the calls of ``offered`` tools a server without a parser for the model's format left in its
    text, but for one the user pasted into the message the model answers (``asked``'s latest)."""
    if response.tool_calls or not response.text or response.filtered:
        return response
    found = await _calls_in_text(response.text, offered, _latest_user_text(asked))
    if found is None:
        return response
    text, calls = found
    # Mended as a native call's are: JSON's escapes make lone surrogates (half of an emoji's "\\ud83d").
    tool_calls = tuple(ToolCall(id=_mend(call.id or f"call_{i}_{call[0]}"), name=call[0], arguments=_mend(call[1]))
                       for i, call in enumerate(calls))
    return dataclasses.replace(response, text=text, tool_calls=tool_calls)


async def _calls_in_text(text: str, offered: frozenset[str], quoted: str) -> tuple[str | None, list[TextCall]] | None:
    """`calls_in_text`, read in one of `_READERS` where it may take long: its guard against a call the user pasted
    reads the whole of ``quoted``, and a message made to be slow (a webhook takes a megabyte) took a second, every
    chat, heartbeat and timer of the gateway held meanwhile. Cancelled (a /stop) while it waits for a thread, it is
    never read; once read, the thread reads on to the end, and its result is dropped.

    Read here, the loop not left, for a short answer and message (`_TEXT_READ_HERE`, `_QUOTED_READ_HERE`), and for a
    short answer that holds no calls, whatever the message: the answer after most turns, which has no guard to run."""
    if len(text) <= _TEXT_READ_HERE:
        if len(quoted) <= _QUOTED_READ_HERE:
            return calls_in_text(text, offered, quoted)
        if calls_in_text(text, offered) is None:  # with ``quoted`` none either: its guard only refuses calls
            return None
    return await asyncio.get_running_loop().run_in_executor(_READERS, calls_in_text, text, offered, quoted)


_TEXT_READ_HERE = 4096
_QUOTED_READ_HERE = 256
"""Characters of the answer and of the user's message `_calls_in_text` reads without leaving the event loop: 4 ms of
CPU at most for an answer of calls that long and a message made to be slow, 12 ms for one of 512 characters (the
guard's work allowed has a floor of 2 M characters read, whatever the message's length); read without the message,
to tell whether it holds calls, such an answer took about a millisecond."""

# The process's own, as `agent._image_fit`'s: the loop's default executor has few threads (6 with two cores), which
# tools, file stores and sends share, and a paste sent to many chats at once would take them all, each for a second;
# more threads reading at once would also take the interpreter's lock from the event loop more often.
_READERS = ThreadPoolExecutor(2, thread_name_prefix="text-calls")


def _latest_user_text(messages: Sequence[Mapping[str, Any]]) -> str:
    """What the user wrote last in ``messages``: the last user message's text (its text parts, where it has
    pictures), or a message steered in after it, which the session writes behind a tool's result
    (`STEER_NOTE`); else ``""``."""
    for message in reversed(messages):
        content = message.get("content")
        text = _text_of_parts(content) if isinstance(content, list) else content if isinstance(content, str) else ""
        if message.get("role") == "user":
            return text
        if message.get("role") == "tool" and (at := text.rfind(f"\n\n{STEER_NOTE}\n")) >= 0:
            return text[at:]
    return ""


def _text_of_parts(parts: list[Any]) -> str:
    """The answer in a ``content`` that is a list of parts, as Mistral's reasoning models (Magistral) send it:
    its ``text`` parts, joined; a ``thinking`` part is the model's reasoning, not the answer."""
    texts = (part.get("text") for part in parts if isinstance(part, Mapping) and part.get("type") == "text")
    return "".join(text for text in texts if isinstance(text, str))


_REASONING_FIELDS = ("reasoning_content", "reasoning")
"""Where servers put a model's reasoning apart from its answer: DeepSeek, vLLM and llama.cpp's reasoning
parsers use the first, OpenRouter and Ollama the second."""


def _reasoning(message: Any) -> tuple[str, str] | None:
    """(field, text) of the reasoning the server sent in a field of its own: sent back with the tool
    calls it came with (DeepSeek's thinking mode demands it), never to the chat."""
    for field in _REASONING_FIELDS:
        text = getattr(message, field, None)  # the SDK keeps unknown fields as extra attributes
        if isinstance(text, str):
            return field, _mend(text)
    return None


def _to_tool_call(tool_call: Any, index: int) -> ToolCall:
    function = getattr(tool_call, "function", None)
    name = getattr(function, "name", None)
    arguments = getattr(function, "arguments", None)
    call_id = getattr(tool_call, "id", None)
    if not isinstance(name, str) or not name:
        raise _malformed("tool call without a function name")
    if arguments is None:  # vLLM and Ollama send null (or nothing) for a call of a tool without parameters
        arguments = "{}"
    elif isinstance(arguments, dict):
        # Some OpenAI-compatible servers send the arguments as the object itself, not as its JSON.
        arguments = json.dumps(arguments, ensure_ascii=False)
    elif not isinstance(arguments, str):
        raise _malformed(f"tool call {name!r} arguments are not a string")
    if not isinstance(call_id, str) or not call_id:
        # Some local servers omit ids; the result still needs one to pair with its call.
        call_id = f"call_{index}_{name}"
    # Invalid JSON in `arguments` is passed through: the loop tells the model.
    return ToolCall(id=_mend(call_id), name=_mend(name), arguments=_mend(arguments))


def _to_usage(usage: Any) -> Usage:
    def count(field: str) -> int:
        value = getattr(usage, field, None)
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0

    return Usage(prompt_tokens=count("prompt_tokens"), completion_tokens=count("completion_tokens"))


def _cost(usage: Any) -> float | None:
    # OpenRouter reports ``usage.cost`` (USD); the SDK keeps unknown fields as
    # extra attributes of its model.
    # A NaN or a negative cost counts as none reported: added up, a NaN made the session's and every later
    # turn's cost NaN, and a negative one took dollars off what was spent.
    cost = getattr(usage, "cost", None)
    if isinstance(cost, (int, float)) and not isinstance(cost, bool) and 0 <= cost < math.inf:
        return float(cost)
    return None
