"""Model servers known to be down, and API keys known to be over their rate limit: calls that would fail as the last
few did are not sent, but for a probe now and then.

While the provider (or a self-hosted vLLM or Ollama) is down, every model call used its retries, three requests by
default, for up to two minutes where a ``Retry-After`` asked for waits: twenty chats writing through a five-minute
outage sent the server three requests for each message, and each chat watched "typing…" for as long before it read
"try again in a moment". So once `DOWN_AFTER` calls in a row have failed in a way that shows the server is not
answering (`UNREACHABLE`), the server is *down*; once as many calls in a row of one model have failed in the server's
own words (`FAILED`), that model at that server is down; once as many calls in a row of one model with one API key
have been refused with a 429 (`LIMITED`), that model with that key is *limited*. Then a call sends nothing and fails
at once, its error of the kind the last failure had (its text holding `agent._errors.NOT_SENT` for a server or a
model down, so that the chat is told the model is unreachable); except one
call at a time, a *probe*, sent without retries once `PROBE_FIRST` seconds have passed (or the server's
``Retry-After``, if longer, up to `WAIT_MOST`), then twice as long after each probe that fails, up to `PROBE_MOST`.
A probe is a chat's own call, sent as it comes: nothing is sent while nobody asks. Its beginning and its end are
logged once each. A call already sent as its circuit opens is asked again no more (`_retry_budget.RetryBudget`):
it ends as a call not sent then does, its chat told the same.

What a call's outcome tells is the caller's to say, which knows its SDK's errors (`agent.models.openai`):

- `UNREACHABLE`: no connection (refused, reset, closed, not opened in time), a 5xx in no words of the server's own (a
  proxy's or load balancer's page, no body): counts against the server (its base URL, credentials aside), shared by
  every client of it, as `_request_slots` is: the parent's model, ``delegation.model``'s and a route's on one server
  learn it is down together.
- `FAILED`: a 5xx with the server's own JSON error, or a 200 body's error with a 5xx code: the server answered, of the
  one model asked (OpenRouter and LiteLLM put many providers' models behind one URL, and their 502/503 is one
  upstream's): counts against that model at that server (`model_outage_of`); three for a subagent's model had the
  parent's, answering fine there, held as a server down.
- `LIMITED`: a 429. Providers limit each key (OpenAI each model of a key's project) apart: it counts against that model
  with that key alone, known by a salted hash of the key (`credential_of`), never the key itself; one chat over its
  tokens a minute held the calls of ``delegation.model`` and of a route with a key of its own. The server answered.
- `ANSWERED`: an answer, or a refusal of the request itself (a 200 body's error with no code, too): both are up.
- `UNTOLD`: nothing reached the server (a request no client can send), or its answer was slow to come (a read timeout
  of a request it took, a proxy's 408/504/524 for one): it may be busy writing a long answer, and three long subagent
  calls had every chat's calls held. Neither counts nor ends anything.

A chat's turn may wait for its server, or its model, to come back rather than fail at once (`WaitWhenDown`, set
for the turn by the gateway, ``model.wait_when_down_seconds``): it waits for the probes' end (`ServerOutage.changed`),
sends the next probe itself when one is due (nobody else may ask), and once one is answered, the turns held resume
first come first served, one at first, then two more for each of theirs answered (`ServerOutage.release`): forty
chats held through an outage do not all ask a server at once that has just come back. A call made while turns still
wait there, the server back, waits its turn behind them as they do: the message of minute 9 was answered before
that of minute 1. A call that may not wait does too, failing as it would if the server is taken for down meanwhile,
but for no longer than its own request may take (``model.timeout_seconds``), then goes: a subagent's call, told
nothing, waited as long as the turns ahead were slow to be answered.

Kept in memory: a restart begins with every server taken for up.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import contextvars
import functools
import hashlib
import logging
import os
import weakref
from collections.abc import Awaitable, Callable, Iterator

from agent._clock import Clock
from agent._errors import NOT_SENT, ModelError, model_failure_kind, model_failure_text

log = logging.getLogger("agent.models")

DOWN_AFTER = 3
"""Model calls in a row, each after its own retries, that fail alike before a server is taken for down, or a key for
limited: a single chat's failure is no outage; three in a row, most often from several chats, are."""

ANSWERED, UNREACHABLE, FAILED, LIMITED, UNTOLD = "answered", "unreachable", "failed", "limited", "untold"
"""What a call's outcome tells of its server (see the module docstring)."""

PROBE_FIRST, PROBE_MOST = 10.0, 60.0
"""Seconds from a server taken for down to its first probe, and at most between two: doubled after each that fails,
so that recovery is noticed within a minute, at a request a minute."""

WAIT_MOST = 3600.0
"""Seconds of a ``Retry-After`` waited at most before the next probe: one of ``inf`` or a year held the server, or the
key, until a restart, and a probe an hour costs one request."""

_DETAIL_KEPT = 300
"""Characters of the last failure's text quoted in the error of a call not sent."""

_SHARED: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, ServerOutage]] = weakref.WeakKeyDictionary()
"""Per event loop, each server's (`gateway.metrics` reads it)."""

_MODELS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, str], ServerOutage]] = (
    weakref.WeakKeyDictionary())
"""Per event loop, each (server, model)'s."""

_LIMITS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, str, str], ServerOutage]] = (
    weakref.WeakKeyDictionary())
"""Per event loop, each (server, `credential_of` its key, model)'s."""

_SALT = os.urandom(16)
"""A hash of a key salted per process tells keys apart, and no key from a guess of it."""


def credential_of(*secrets: str) -> str:
    """What tells the credentials ``secrets`` (an API key, a base URL's password) apart from others in this process."""
    return hashlib.blake2b("\0".join(secrets).encode("utf-8", "surrogatepass"), key=_SALT, digest_size=16).hexdigest()


def outage_of(server: str) -> ServerOutage:
    """The `ServerOutage` of ``server`` (a base URL without credentials), shared in this event loop."""
    by_server = _SHARED.setdefault(asyncio.get_running_loop(), {})
    key = server.rstrip("/")
    outage = by_server.get(key)
    if outage is None:
        outage = by_server[key] = ServerOutage(key)
    return outage


def model_outage_of(server: str, model: str) -> ServerOutage:
    """The `ServerOutage` of ``model`` at ``server``: its failures in the server's own words (`FAILED`)."""
    by_model = _MODELS.setdefault(asyncio.get_running_loop(), {})
    key = (server.rstrip("/"), model)
    outage = by_model.get(key)
    if outage is None:
        outage = by_model[key] = ServerOutage(f"model {model!r} at {key[0]}", scope=MODEL)
    return outage


def limit_of(server: str, credential: str, model: str) -> ServerOutage:
    """The `ServerOutage` of ``model`` at ``server`` called with the key ``credential`` (`credential_of`): its 429s'."""
    by_key = _LIMITS.setdefault(asyncio.get_running_loop(), {})
    key = (server.rstrip("/"), credential, model)
    limit = by_key.get(key)
    if limit is None:
        limit = by_key[key] = ServerOutage(f"model {model!r} at {key[0]}", scope=KEY)
    return limit


def models_held(loop: asyncio.AbstractEventLoop) -> dict[tuple[str, str], tuple[bool, int]]:
    """Each (server, model) the models of ``loop`` have called, first called first: whether the model is taken for
    down there, and how many API keys' calls of it are held as over their rate limit (`gateway.metrics` reads it;
    never the keys)."""
    held = {pair: (outage.down_since is not None, 0) for pair, outage in _MODELS.get(loop, {}).items()}
    for (server, _, model), limit in _LIMITS.get(loop, {}).items():
        down, keys = held.get((server, model), (False, 0))
        held[server, model] = (down, keys + (limit.down_since is not None))
    return held


def admit(circuits: tuple[ServerOutage, ...], clock: Clock) -> tuple[ServerOutage, ...]:
    """Those of ``circuits`` a call is a probe of (none: it is sent as usual), each to be told `probe_ended` after it;
    raises the error of a call not sent (`ServerOutage.held`) instead."""
    if (holding := _holding(circuits, clock)) is not None:
        holding.not_sent += 1
        raise holding.held(clock)
    probes = tuple(circuit for circuit in circuits if circuit.down_since is not None)
    for circuit in probes:
        circuit.probing = True
    return probes


def _holding(circuits: tuple[ServerOutage, ...], clock: Clock) -> ServerOutage | None:
    """The first of ``circuits`` that refuses a call now (`admit`), if any."""
    return next((circuit for circuit in circuits if circuit.down_since is not None
                 and (circuit.probing or clock.monotonic() < circuit.next_probe)), None)


class WaitWhenDown:
    """A turn's leave to wait, up to ``seconds`` on ``clock`` in all from its first wait, for a server or a model
    down to come back (`admitted`), or behind the turns that did, as they resume; ``told(seconds)`` is called as it
    first waits for one down, with the seconds its wait has left then (less than ``seconds`` once it waited behind
    first: its chat, told the whole wait, read that its message failed seconds later). ``held(True)`` is called as
    its turn begins to wait for one down, ``held(False)`` as its call goes again, the server or model back
    (`going`): a turn that shows "typing…" meanwhile says it writes while it waits (its own probes are part of the
    wait, until one is answered). Its model calls alone wait, those made in the
    task it was set in: a subagent's, in a task of its own, fail at once, as its parent's tools expect."""

    __slots__ = ("seconds", "clock", "told", "held", "holding", "task", "until", "was_told")

    def __init__(self, seconds: float, clock: Clock, told: Callable[[float], object],
                 held: Callable[[bool], object] = lambda holding: None) -> None:
        self.seconds, self.clock, self.told, self.held = seconds, clock, told, held
        self.holding = False
        """Its turn waits (or sends a probe while it does): between ``held(True)`` and ``held(False)``."""
        self.task = asyncio.current_task()
        self.until: float | None = None
        """On ``clock``, once it first waited: when it waits no more."""
        self.was_told = False

    def start(self) -> None:
        """Its turn waits from now on: its bound runs from its first wait."""
        if self.until is None:
            self.until = self.clock.monotonic() + self.seconds

    def hold(self) -> None:
        """Its turn waits for a server or a model down from now on: its chat is told so once."""
        left = self.seconds if self.until is None else self.until - self.clock.monotonic()
        self.start()
        if not self.was_told:
            self.was_told = True
            self.told(left)
        if not self.holding:
            self.holding = True
            self.held(True)

    def going(self) -> None:
        """Its call goes as usual, or its probe was answered: its turn waits no more."""
        if self.holding:
            self.holding = False
            self.held(False)


_WAITING: contextvars.ContextVar[WaitWhenDown | None] = contextvars.ContextVar("waiting_when_down", default=None)


@contextlib.contextmanager
def waiting_when_down(seconds: float, clock: Clock, told: Callable[[float], object],
                      held: Callable[[bool], object] = lambda holding: None) -> Iterator[None]:
    """Within it, the model calls of the current task wait for a server or a model down (`WaitWhenDown`);
    ``seconds`` 0: none do."""
    token = _WAITING.set(WaitWhenDown(seconds, clock, told, held) if seconds > 0 else None)
    try:
        yield
    finally:
        _WAITING.reset(token)


def waiting() -> WaitWhenDown | None:
    """The `WaitWhenDown` of a model call made now, if it may wait."""
    wait = _WAITING.get()
    return wait if wait is not None and wait.task is asyncio.current_task() else None


async def admitted(circuits: tuple[ServerOutage, ...], clock: Clock, wait: WaitWhenDown | None,
                   resumed: list[ServerOutage], behind_most: float) -> tuple[ServerOutage, ...]:
    """`admit`, but a call held by a server or a model down (not by a key's rate limit: the server said how long)
    waits for it as ``wait`` lets it (None: not at all), and is then a probe or sent as usual; past ``wait``'s
    bound it is refused as `admit` refuses it, unless the circuit is up by then. A call of a circuit up whose turns
    held still wait to resume waits behind them, first come first served, ``wait`` or not (`ServerOutage.back`),
    but that of a turn that waited already; without ``wait``, ``behind_most`` seconds at most, then it goes.
    ``resumed`` is given each circuit whose place came (or whose probe it sends), to be told `resume_ended` after
    the call: one that went past its bound, or was stopped, holds no place of the few let go at a time. Sent as
    usual, its turn waits no more (`WaitWhenDown.going`); a probe's caller says so once it is answered."""
    until: float | None = None  # without ``wait``, once it waits behind: when it goes all the same
    while True:
        if (holding := _holding(circuits, clock)) is not None:
            # Past its bound (one that waited behind long ago, told nothing): refused untold that it waits.
            if wait is None or holding.scope == KEY or (
                    wait.until is not None and wait.until <= wait.clock.monotonic()):
                break
            wait.hold()
        # A turn that waited has had its place: its next calls (a tool's result sent on) do not wait again behind.
        # Nor does a call with its place behind one circuit wait behind another: two such, each the other's way,
        # waited for each other's end for ever.
        elif (wait is None or wait.until is None) and not resumed and (holding := next(
                (circuit for circuit in circuits if circuit.down_since is None and circuit.waiting), None)) is not None:
            if wait is not None:
                wait.start()
            else:
                until = clock.monotonic() + behind_most
        else:
            break
        if not await holding.back(clock, wait, until):
            break
        if holding not in resumed:
            resumed.append(holding)
    probes = admit(circuits, clock)
    if wait is not None and not probes:
        wait.going()
    return probes


def settle(server: ServerOutage, model: ServerOutage, limit: ServerOutage, outcome: str, error: ModelError | None,
           clock: Clock, probes: tuple[ServerOutage, ...]) -> None:
    """What a call's ``outcome`` (``error``: its failure, None for an answer) tells ``server``, ``model`` and
    ``limit``, the `outage_of`, `model_outage_of` and `limit_of` of the call; ``probes``: what `admit` said it
    probes. A failure tells nothing of the circuits it does not count against."""
    if outcome == UNREACHABLE:
        server.failed(error, clock, probe=server in probes)
    elif outcome != UNTOLD:
        server.answered(clock)
        if outcome == FAILED:
            model.failed(error, clock, probe=model in probes)
        elif outcome == LIMITED:
            limit.failed(error, clock, probe=limit in probes)
        else:
            model.answered(clock)
            limit.answered(clock)


SERVER, MODEL, KEY = "server", "model", "key"
"""What a `ServerOutage` holds the calls of: a server's, one model's there, one model's there with one API key."""

_PROBED = "until one sent every %.0f to %.0f s as a probe is answered"
_TAKEN = {
    SERVER: "model server %s taken for down after %d model calls in a row failed (the last: %s); calls are not sent "
            f"to it {_PROBED}",
    MODEL: f"%s taken for down after %d calls of it in a row failed (the last: %s); its calls are not sent {_PROBED} "
           "(other models' on the server are)",
    KEY: "%s: its API key is taken for over its rate limit after %d model calls in a row were refused (the last: %s); "
         f"calls with it are not sent {_PROBED}"}
_ENDED = {
    SERVER: "model server %s is answering again, after %.0f s down; %d model calls were not sent to it meanwhile",
    MODEL: "%s is answering again, after %.0f s down; %d calls of it were not sent meanwhile",
    KEY: "%s: its API key is no longer refused, after %.0f s over its rate limit; %d model calls were not sent with "
         "it meanwhile"}


class ServerOutage:
    """Whether one server is down, one model there (``scope`` `MODEL`), or one key of a model limited (`KEY`), and
    when it is asked again (see the module docstring)."""

    __slots__ = ("server", "scope", "failures", "down_since", "next_probe", "probe_wait", "probing", "not_sent",
                 "last", "waiting", "changed")

    def __init__(self, server: str, *, scope: str = SERVER) -> None:
        self.server = server
        """The server, or for a model or a key: ``model 'm' at <server>``."""
        self.scope = scope
        self.failures = 0
        """Calls in a row that failed as `settle` counts them."""
        self.down_since: float | None = None
        """Monotonic time it was taken for down; None while it is up."""
        self.next_probe = 0.0
        self.probe_wait = PROBE_FIRST
        self.probing = False
        """A probe is under way: other calls are not sent meanwhile."""
        self.not_sent = 0
        self.last: ModelError | None = None
        self.waiting: collections.deque[asyncio.Future[None]] = collections.deque()
        """The turns waiting for it to come back (`back`), first come first; each future set as its turn resumes."""
        self.changed = asyncio.Event()
        """Set, and replaced, as it is taken for down, a probe ends, or it comes back: what its waiters wait for."""

    def probe_ended(self) -> None:
        """A probe's call ended, however (a cancelled one too: the next call probes instead)."""
        self.probing = False
        self._changed()

    def answered(self, clock: Clock) -> None:
        """The server answered a call, or the key was not refused: it is up."""
        if self.down_since is not None:
            log.warning(_ENDED[self.scope], self.server, clock.monotonic() - self.down_since, self.not_sent)
            self.down_since = None
            self.release(1)
        self.failures, self.down_since, self.probe_wait, self.not_sent, self.last = 0, None, PROBE_FIRST, 0, None

    def _changed(self) -> None:
        if self.waiting:
            self.changed.set()
            self.changed = asyncio.Event()

    def release(self, count: int) -> None:
        """Let the first ``count`` turns waiting resume, while it is up."""
        while count > 0 and self.waiting and self.down_since is None:
            ticket = self.waiting.popleft()
            if not ticket.done():
                ticket.set_result(None)
                count -= 1

    def resume_ended(self, answered: bool) -> None:
        """A call that waited for it ended, ``answered`` or not (failed, stopped): the turns behind it resume, two
        for an answer, one else, as it stays up."""
        self.release(2 if answered else 1)

    async def back(self, clock: Clock, wait: WaitWhenDown | None, until: float | None = None) -> bool:
        """Wait, as a turn whose call it holds, or a call behind the turns it holds: True once the call may go (a
        probe is due; or it is up and the turn's place came, `release`), False once ``wait``'s bound passed, or
        without ``wait`` once it is taken for down or ``until`` (on ``clock``) passed. Stopped with its place come,
        it passes the place on."""
        ticket = asyncio.get_running_loop().create_future()
        self.waiting.append(ticket)
        went = False
        try:
            while not ticket.done():
                timers: list[Callable[[], Awaitable[object]]] = [self.changed.wait]
                bound, on = (until, clock) if wait is None else (wait.until, wait.clock)
                if bound is not None:
                    if (left := bound - on.monotonic()) <= 0:
                        return False
                    timers.append(functools.partial(on.sleep, left))
                if self.down_since is not None:
                    if wait is None:
                        return False
                    wait.hold()  # it came behind the turns held, and is held with them now
                    if not self.probing:
                        if (due := self.next_probe - clock.monotonic()) <= 0:
                            break
                        timers.append(functools.partial(clock.sleep, due))
                await _first(ticket, [timer() for timer in timers])
            went = True
            return True
        finally:
            if not ticket.done():
                ticket.cancel()
                self.waiting.remove(ticket)
            elif not went:
                self.release(1)

    def failed(self, error: ModelError, clock: Clock, *, probe: bool = False) -> None:
        """A call sent failed with ``error``, in the way this counts (``probe``: the call was a probe)."""
        now, self.last = clock.monotonic(), error
        self.failures += 1
        if self.down_since is not None:
            if not probe:  # a call sent before the server was taken for down: the probes keep their own pace
                self.next_probe = max(self.next_probe, now + (error.retry_after or 0.0))
                return
            self.probe_wait = min(self.probe_wait * 2, PROBE_MOST)
        elif self.failures >= DOWN_AFTER:
            self.down_since = now
            log.warning(_TAKEN[self.scope], self.server, self.failures, error, PROBE_FIRST, PROBE_MOST)
            self._changed()
        else:
            return
        self.next_probe = now + max(self.probe_wait, min(error.retry_after or 0.0, WAIT_MOST))

    def held(self, clock: Clock) -> ModelError:
        """The error of a call not sent: the last failure's kind, why, and how long it has been so."""
        assert self.last is not None and self.down_since is not None
        now = clock.monotonic()
        detail = str(self.last)
        if model_failure_kind(detail) is not None:
            detail = detail.split("): ", 1)[1]
        if len(detail) > _DETAIL_KEPT:
            detail = detail[:_DETAIL_KEPT] + "…"
        why, back = ((f"not sent: the API key is over its rate limit ({self.server}): {self.failures} calls in a row "
                      "were refused", "the limit is over") if self.scope == KEY
                     else (f"{NOT_SENT} for this model ({self.server}): {self.failures} calls of it in a row failed",
                           "it is back") if self.scope == MODEL
                     else (f"{NOT_SENT} ({self.server}): {self.failures} calls in a row failed", "it is back"))
        text = (f"{why}, for {now - self.down_since:.0f} s now; the next call is sent in "
                f"{max(0.0, self.next_probe - now):.0f} s to see whether {back} (the last failure: {detail})")
        retry_after = max(0.0, self.next_probe - now) if self.last.kind == "rate_limited" else None
        return ModelError(model_failure_text(self.last.kind, text), kind=self.last.kind, status=self.last.status,
                          retry_after=retry_after)


async def _first(ticket: asyncio.Future[None], waits: list[Awaitable[object]]) -> None:
    """Wait until ``ticket`` is done or one of ``waits`` ends; the others are cancelled (never ``ticket``)."""
    tasks = [asyncio.ensure_future(awaited) for awaited in waits]
    try:
        await asyncio.wait((ticket, *tasks), return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
