"""The handles of the Slack users messages mention, for the model: ``<@U0123>`` read as ``@alice``
(`platforms.slack_text`).

A mention carries the user's id alone, which tells the model nobody. ``users.info`` (the ``users:read`` bot
scope) gives the user's ``name``: their username, unique in the workspace and set when the account was made,
which its user cannot change (Slack's SCIM API, which calls it ``userName``: "cannot be updated once it is
created"). Never their display name or real name, which anyone may set to another member's: read as ``@alice``,
a stranger who named themselves alice would pass for her, as on Discord (`platforms.discord_inbound.named`). A
deactivated user (``deleted``) and a bot user have one too.

Looked up as a message comes, before it is handed on, for at most `LOOKUP_TIMEOUT` all told (a live message no
later than `ACK_BUDGET` after its request came): a mention whose handle is not known by then stays as Slack wrote
it, and the lookup goes on for the next message. One lookup per user at a time, `IN_FLIGHT` at most; each answer
is kept `KEEP_SECONDS`, at most `REMEMBERED` of them, a user Slack does not find (or will not show) as having
none; the bot's own handle (``auth.test``'s) for good. A failure all of Slack shares (a rate limit, an outage,
no answer in time) pauses the lookups, for its ``Retry-After`` or `PAUSE_SECONDS`; a refusal of the method
(``missing_scope``) ends them until the next start. Each is warned of once (`RepeatedWarnings`), never per
message, and no message waits on it. No lookup without ``users:read`` among the scopes the token lists at start:
the start warns of it (`platforms.slack_scopes`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from platforms import slack_scopes
from platforms.base import DeliveryError, Forbidden, NetworkError, RateLimited, Unauthorized
from platforms.repeated_warnings import RepeatedWarnings

log = logging.getLogger("platforms.slack")

SCOPE = "users:read"
LOOKUP_TIMEOUT = 1.0
"""Seconds a message waits for the handles of the users it mentions, all told: within the ack's time."""
ACK_BUDGET = 1.5
"""Seconds after its request came (``came``) past which a live message no longer waits for them, as for its files
(`platforms.slack_files.DESCRIBE_TIMEOUT`): a Slack Connect file read for 1.5 s then a lookup for 1 s held its ack
2.5 s, past the 2 s the adapter acks by, and a request queued for its signature check past 3 s."""
IN_FLIGHT = 20
"""Lookups under way at once, all messages together; a mention past them stays as Slack wrote it. A message
mentioning 300 users made 300 calls at once: a Tier 4 method's minute at a stroke, and every connection of the
adapter's HTTP session (100), the replies of every chat queued behind them for as long as Slack took."""
_METHOD_REFUSED = ("missing_scope", "not_allowed_token_type")
"""Refusals of ``users.info`` itself, for every user: the lookups end until the next start."""
KEEP_SECONDS = 3600.0
"""A username changes only by an admin's hand: an hour old, it is looked up again."""
REMEMBERED = 10_000
PAUSE_SECONDS = 30.0
"""How long the lookups rest after a failure all of Slack shares that names no ``Retry-After``."""


class Names:
    """Users' handles by id, looked up with ``look_up(user_id)`` (``users.info``, errors translated:
    `platforms.slack_calls.WebApi.call`), each lookup a task of ``background``'s (ended by the adapter's stop)."""

    def __init__(self, look_up: Callable[[str], Awaitable[Any]], *,
                 background: Callable[[Awaitable[None]], asyncio.Future[None]] = asyncio.ensure_future,
                 monotonic: Callable[[], float] = time.monotonic, timeout: float = LOOKUP_TIMEOUT,
                 keep: float = KEEP_SECONDS, remembered: int = REMEMBERED) -> None:
        self._look_up, self._background, self._monotonic = look_up, background, monotonic
        self._timeout, self._keep, self._remembered = timeout, keep, remembered
        self._known: OrderedDict[str, tuple[str | None, float]] = OrderedDict()
        """Each user's handle (None: Slack shows none) and until when (``monotonic``) it is kept."""
        self._asking: dict[str, asyncio.Future[None]] = {}
        self._own: dict[str, str] = {}
        """The bot's own handle, by its id: known from the start, kept for good (not looked up again)."""
        self._on = False
        self._resting_until = 0.0
        self._warn = RepeatedWarnings(log, clock=monotonic)

    def start(self, headers: Mapping[str, str] | None, own: tuple[str, str]) -> None:
        """At each start: look users up if the token may (its scopes, as ``auth.test``'s ``headers`` list them);
        ``own``, the bot's user id and handle, is known already."""
        self._on, self._resting_until = slack_scopes.holds(headers, SCOPE), 0.0
        self._own = {own[0]: own[1]} if own[1] else {}

    async def of(self, users: Iterable[str], came: float | None = None) -> dict[str, str]:
        """The handles of ``users`` known within `LOOKUP_TIMEOUT`, and no later than `ACK_BUDGET` after ``came``
        (the event loop's clock: when a live message's request came), by id; those not known are left out.
        Never raises but for a cancellation."""
        users = set(users)
        now = self._monotonic()
        unknown = [user for user in users if user not in self._own and self._kept(user, now) is None]
        if unknown and self._on and now >= self._resting_until:
            asked = [self._asking[user] for user in unknown if user in self._asking]
            room = max(IN_FLIGHT - len(self._asking), 0)
            asked += [self._ask(user) for user in [user for user in unknown if user not in self._asking][:room]]
            loop = asyncio.get_running_loop()
            wait = self._timeout if came is None else min(self._timeout, came + ACK_BUDGET - loop.time())
            if asked and wait > 0:
                _, late = await asyncio.wait(asked, timeout=wait)
                if late and wait >= self._timeout:  # Slack slow; not a wait the ack's time cut short
                    self._rest(PAUSE_SECONDS, "Slack did not answer users.info within %g s", self._timeout)
        now = self._monotonic()
        named = {user: kept[0] for user in users if (kept := self._kept(user, now)) is not None and kept[0]}
        return {**named, **{user: name for user, name in self._own.items() if user in users}}

    def _kept(self, user: str, now: float) -> tuple[str | None, float] | None:
        """``user``'s handle and until when it is kept, unless it is past then or was never looked up."""
        known = self._known.get(user)
        return known if known is not None and now < known[1] else None

    def _ask(self, user: str) -> asyncio.Future[None]:
        self._asking[user] = self._background(self._ask_slack(user))
        return self._asking[user]

    async def _ask_slack(self, user: str) -> None:
        try:
            answer = await self._look_up(user)
        except RateLimited as exc:
            self._rest(exc.retry_after, "users.info is rate limited (%s)", exc)
        except Forbidden as exc:
            if not any(code in str(exc) for code in _METHOD_REFUSED):
                # This user's alone (an org-wide app not granted their workspace): the next user may well be named.
                log.debug("slack: no handle for user %s: %s", user, exc)
                self._remember(user, None)
                return
            self._on = False
            self._warn.warning("off", "slack: Slack refused users.info (%s): the users messages mention reach the"
                               " model as ids (<@U0123>) until the next start; the app needs the %s scope", exc,
                               SCOPE)
        except (NetworkError, Unauthorized) as exc:  # the token refused: the platform is down meanwhile
            self._rest(PAUSE_SECONDS, "users.info failed (%s)", exc)
        except DeliveryError as exc:  # user_not_found, user_not_visible: this user alone
            log.debug("slack: no handle for user %s: %s", user, exc)
            self._remember(user, None)
        else:
            found = answer.get("user")
            name = found.get("name") if isinstance(found, dict) else None
            self._remember(user, name.strip() if isinstance(name, str) and name.strip() else None)
        finally:
            self._asking.pop(user, None)

    def _rest(self, seconds: float, why: str, *args: object) -> None:
        self._resting_until = max(self._resting_until, self._monotonic() + seconds)
        self._warn.warning("rest", "slack: " + why + "; the users messages mention reach the model as ids (<@U0123>)"
                           " for %.0f s", *args, seconds)

    def _remember(self, user: str, name: str | None) -> None:
        self._known[user] = (name, self._monotonic() + self._keep)
        self._known.move_to_end(user)
        while len(self._known) > self._remembered:
            self._known.popitem(last=False)
