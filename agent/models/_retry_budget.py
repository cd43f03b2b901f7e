"""How long one model call may go on retrying: a bound the SDK's own retries do not have.

The SDK asks again ``model.max_retries`` times; each request may take ``model.timeout_seconds`` and each wait
before the next may be the two minutes a ``Retry-After`` asks for. With the defaults (2 retries, 120 s) a server
failing every request just before its timeout (a proxy's 502) and asking for two minutes' wait held the turn
3 × 120 + 2 × 120 s, ten minutes, to tell the chat "please try again"; more with more retries. So no retry
is begun, nor a wait before one, that would end past `RETRY_SECONDS` after the call began: the failure that
came last is raised instead. A call takes `RETRY_SECONDS` plus one request's timeout at most (four minutes
by default), whatever ``model.max_retries``.

Nor is a retry begun once the server the call was sent to is taken for down (or its model, or its API key held as
over its rate limit: `_outage`), unless the call is that circuit's probe, or the server answered the call since
in words of its own (a 429, a 5xx in JSON), which shows the server answering: the calls in flight as the server went
down took all their retries, twenty chats' twenty times two more requests, each after its wait, before the answer
a call not sent gets at once. The call ends as the circuit's refusal instead (`RetryBudget.refused`).
"""

from __future__ import annotations

import contextvars
import random
from collections.abc import Mapping
from typing import TYPE_CHECKING

from agent._clock import Clock
from agent.models._outage import SERVER

if TYPE_CHECKING:
    from agent.models._outage import ServerOutage

RETRY_SECONDS = 120.0
"""Seconds into a model call after which the SDK begins no retry (its wait before one counted)."""

_FIRST_BACKOFF, _MOST_BACKOFF, _MOST_RETRY_AFTER = 0.5, 8.0, 120.0
"""The SDK's waits: 0.5 s doubled per retry up to 8 s (less up to a quarter, at random), or a server's
``Retry-After`` up to two minutes; a longer one it does not wait for, nor ask again."""

_SPREAD = 0.25
"""A server's ``Retry-After`` is waited up to this much longer, at random (`RetryBudget.spread`)."""


class RetryBudget:
    """One model call's: when its retrying ends (from its first request), and whether it ended a retry."""

    __slots__ = ("until", "spent", "probe", "circuits", "refused", "heard")

    def __init__(self, *, probe: bool = False, circuits: tuple[ServerOutage, ...] = ()) -> None:
        self.until: float | None = None
        self.probe = probe
        """The call is a probe of a server known to be down, or of a key known to be limited (`_outage`): it is not
        asked again at all."""
        self.spent = False
        """A retry the SDK would have made was not: the failure raised is the one that came last."""
        self.circuits = circuits
        """The call's server, model and key circuits (`_outage`), all closed as it was sent, but for a probe's."""
        self.refused: ServerOutage | None = None
        """The circuit, taken for down while the call ran, that a retry of the call was not begun for: the call
        ends as a call not sent then does, where a circuit of it is still down by then (`down_now`)."""
        self.heard: tuple[tuple[ServerOutage, float], ...] = ()
        """The server circuits whose server answered the call's latest failed request in words of its own (a 429, a
        5xx in JSON) while taken for down, with since when: they refuse no retry of it (`stops`)."""

    def refuses(self, headers: Mapping[str, str]) -> bool:
        """Whether the request with ``headers``, about to be sent, is a retry that must not be: one of the call's
        circuits was taken for down while the SDK waited to send it, or while it waited for a request slot."""
        return _retries_taken(headers) > 0 and self._circuit_down()

    def _circuit_down(self) -> bool:
        """Whether one of the call's circuits is down, a probe's aside (never asked again: `stops`), and a server's
        that answered the call since (`heard`); marks which."""
        if self.probe:
            return False
        self.refused = next((circuit for circuit in self.circuits if circuit.down_since is not None
                             and (circuit, circuit.down_since) not in self.heard), None)
        return self.refused is not None

    def down_now(self) -> ServerOutage | None:
        """The first of the call's circuits down now, as `_outage.admit` reads them, where a retry of the call was
        refused (`refused`): a call not sent now is refused by that one. None where none is down any more, or no
        retry was refused."""
        if self.refused is None:
            return None
        return next((circuit for circuit in self.circuits if circuit.down_since is not None), None)

    def stops(self, headers: Mapping[str, str], retry_after: float | None, clock: Clock, max_retries: int, *,
              answered: bool = False) -> bool:
        """Whether the SDK, about to ask again the request sent with ``headers`` after a wait of ``retry_after``
        (the server's), or of its backoff when None, must not: the wait would end past the budget (marked spent
        then), or one of the call's circuits is down (marked `refused`). ``answered``: the failure is in words of
        the server's own, which show it answering: its server circuit, if down, refuses no retry of the call."""
        taken = _retries_taken(headers)
        if self.until is None or taken >= max_retries:  # no budget begun, or the SDK asks again no more anyway
            return False
        if retry_after is not None and retry_after > _MOST_RETRY_AFTER:  # neither
            return False
        if self.probe:
            self.spent = True
            return True
        # What the call's latest failure showed: a later one's not answering takes back an earlier answer's word.
        self.heard = tuple((circuit, circuit.down_since) for circuit in self.circuits
                           if answered and circuit.scope == SERVER and circuit.down_since is not None)
        if self._circuit_down():  # not spent: the call ends as the circuit's refusal
            return True
        wait = retry_after or min(_FIRST_BACKOFF * 2.0 ** taken, _MOST_BACKOFF)
        if clock.monotonic() + wait <= self.until:
            return False
        self.spent = True
        return True

    def spread(self, headers: Mapping[str, str], retry_after: float | None, clock: Clock,
               max_retries: int) -> float | None:
        """The wait to have the SDK make before it asks again the request sent with ``headers``, in place of
        ``retry_after``, the server's (`stops` having let it): up to `_SPREAD` longer, at random, but within two
        minutes (a longer one the SDK does not wait for, but fails the call) and the budget. None where the SDK
        asks no more (its last failure, raised with the server's own hint) or waits its own backoff, which it
        spreads itself.

        The SDK waits a ``Retry-After`` to the millisecond: the calls a busy provider refused together (a batch
        of subagents, chats that wrote at once) all asked again at the same moment, and met it busy again."""
        if (self.until is None or retry_after is None or not 0 < retry_after <= _MOST_RETRY_AFTER
                or _retries_taken(headers) >= max_retries):
            return None
        longest = min(retry_after * (1 + _SPREAD), _MOST_RETRY_AFTER, self.until - clock.monotonic())
        return retry_after + max(0.0, longest - retry_after) * random.random()


CALL: contextvars.ContextVar[RetryBudget | None] = contextvars.ContextVar("model_call_retry_budget", default=None)
"""The budget of the model call running in this context (set by `OpenAIModel.complete`, `Transcriber.transcribe`),
read by the HTTP client the SDK sends its requests through; None: no bound (another caller of the client)."""


def begin(budget: RetryBudget | None, clock: Clock) -> None:
    """Start ``budget`` at the call's first request."""
    if budget is not None and budget.until is None:
        budget.until = clock.monotonic() + RETRY_SECONDS


def _retries_taken(headers: Mapping[str, str]) -> int:
    """How many times the SDK asked before a request with ``headers``, as it tells the server
    (``x-stainless-retry-count``)."""
    try:
        return int(headers.get("x-stainless-retry-count", "0"))
    except ValueError:
        return 0


GAVE_UP = f"not asked again: a model call is retried for {RETRY_SECONDS:.0f} seconds at most"
"""Added to the text of a failure the budget kept from being asked again."""

PROBE_NOT_AGAIN = "not asked again: a probe of a model server that is down, or of an API key over its rate limit"
"""Added instead to the text of a probe's failure (`RetryBudget.probe`)."""
