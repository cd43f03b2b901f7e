"""Model servers known to be down: calls to one that failed the last few are not sent, but for a probe now and then.

While the provider (or a self-hosted vLLM or Ollama) is down, every model call used its retries, three requests by
default, for up to two minutes where a ``Retry-After`` asked for waits: twenty chats writing through a five-minute
outage sent the server three requests for each message, and each chat watched "typing…" for as long before it read
"try again in a moment". So once `DOWN_AFTER` calls in a row to one server have failed in a way that may pass
(`PASSING`: connection errors, time-outs, 5xx, 429), the server is *down*: a call sends nothing and fails at once,
its error of the kind the last failure had and its text holding `agent._errors.NOT_SENT`; except one call at a time,
a *probe*, sent without retries once `PROBE_FIRST` seconds have passed (or the server's ``Retry-After``, if longer),
then twice as long after each probe that fails, up to `PROBE_MOST`. A probe is a chat's own call, sent as it comes:
nothing is sent to a server while nobody asks anything of it. Any answer of the server that is not such a failure (an
answer, or a refusal of the request itself) ends it. Its beginning and its end are logged once each.

Shared by every client of one server (its base URL, credentials aside), as `_request_slots` is: the parent's model,
``delegation.model``'s and a route's on one server learn it is down together. Kept in memory: a restart begins with
the server taken for up.
"""

from __future__ import annotations

import asyncio
import logging
import weakref

from agent._clock import Clock
from agent._errors import NOT_SENT, ModelError, model_failure_kind, model_failure_text

log = logging.getLogger("agent.models")

DOWN_AFTER = 3
"""Model calls in a row, each after its own retries, that fail in a way that may pass before a server is taken for down:
a single chat's failure is no outage; three in a row, most often from several chats, are."""

PASSING = frozenset({"connection", "timeout", "server_error", "rate_limited"})
"""`ModelError` kinds that say the server is unreachable, failing or refusing to take more; any other outcome is an
answer of a server that is up (a refusal of one request, of a key, of a picture)."""

PROBE_FIRST, PROBE_MOST = 10.0, 60.0
"""Seconds from a server taken for down to its first probe, and at most between two: doubled after each that fails,
so that recovery is noticed within a minute, at a request a minute."""

_DETAIL_KEPT = 300
"""Characters of the last failure's text quoted in the error of a call not sent."""

_SHARED: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, ServerOutage]] = weakref.WeakKeyDictionary()
"""Per event loop, each server's."""


def outage_of(server: str) -> ServerOutage:
    """The `ServerOutage` of ``server`` (a base URL without credentials), shared in this event loop."""
    by_server = _SHARED.setdefault(asyncio.get_running_loop(), {})
    key = server.rstrip("/")
    outage = by_server.get(key)
    if outage is None:
        outage = by_server[key] = ServerOutage(key)
    return outage


class ServerOutage:
    """Whether one server is down, and when it is asked again (see the module docstring)."""

    __slots__ = ("server", "failures", "down_since", "next_probe", "probe_wait", "probing", "not_sent", "last")

    def __init__(self, server: str) -> None:
        self.server = server
        self.failures = 0
        """Calls in a row that failed in a `PASSING` way."""
        self.down_since: float | None = None
        """Monotonic time it was taken for down; None while it is up."""
        self.next_probe = 0.0
        self.probe_wait = PROBE_FIRST
        self.probing = False
        """A probe is under way: other calls are not sent meanwhile."""
        self.not_sent = 0
        self.last: ModelError | None = None

    def admit(self, clock: Clock) -> bool | None:
        """How the next call goes: True sent as usual, False as a probe (no retries; `probe_ended` after it),
        None not at all (`held`)."""
        if self.down_since is None:
            return True
        if self.probing or clock.monotonic() < self.next_probe:
            self.not_sent += 1
            return None
        self.probing = True
        return False

    def probe_ended(self) -> None:
        """A probe's call ended, however (a cancelled one too: the next call probes instead)."""
        self.probing = False

    def answered(self, clock: Clock) -> None:
        """The server answered a call, other than with a `PASSING` failure: it is up."""
        if self.down_since is not None:
            log.warning("model server %s is answering again, after %.0f s down; %d model calls were not sent to it "
                        "meanwhile", self.server, clock.monotonic() - self.down_since, self.not_sent)
        self.failures, self.down_since, self.probe_wait, self.not_sent, self.last = 0, None, PROBE_FIRST, 0, None

    def failed(self, error: ModelError, clock: Clock, *, probe: bool = False) -> None:
        """A call sent to the server failed with ``error`` (``probe``: the call was a probe)."""
        if error.kind not in PASSING or error.context_exceeded:  # a 5xx refusing one request as too long too
            self.answered(clock)
            return
        now, self.last = clock.monotonic(), error
        self.failures += 1
        if self.down_since is not None:
            if not probe:  # a call sent before the server was taken for down: the probes keep their own pace
                self.next_probe = max(self.next_probe, now + (error.retry_after or 0.0))
                return
            self.probe_wait = min(self.probe_wait * 2, PROBE_MOST)
        elif self.failures >= DOWN_AFTER:
            self.down_since = now
            log.warning("model server %s taken for down after %d model calls in a row failed (the last: %s); calls "
                        "are not sent to it until one sent every %.0f to %.0f s as a probe is answered", self.server,
                        self.failures, error, PROBE_FIRST, PROBE_MOST)
        else:
            return
        self.next_probe = now + max(self.probe_wait, error.retry_after or 0.0)

    def held(self, clock: Clock) -> ModelError:
        """The error of a call not sent: the last failure's kind, `NOT_SENT` and how long it has been down."""
        assert self.last is not None and self.down_since is not None
        now = clock.monotonic()
        detail = str(self.last)
        if model_failure_kind(detail) is not None:
            detail = detail.split("): ", 1)[1]
        if len(detail) > _DETAIL_KEPT:
            detail = detail[:_DETAIL_KEPT] + "…"
        text = (f"{NOT_SENT} ({self.server}): {self.failures} calls in a row failed, for {now - self.down_since:.0f} s "
                f"now; the next call is sent in {max(0.0, self.next_probe - now):.0f} s to see whether it is back "
                f"(the last failure: {detail})")
        retry_after = max(0.0, self.next_probe - now) if self.last.kind == "rate_limited" else None
        return ModelError(model_failure_text(self.last.kind, text), kind=self.last.kind, status=self.last.status,
                          retry_after=retry_after)
