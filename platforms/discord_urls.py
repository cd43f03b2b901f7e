"""The one place that points discord.py at a REST base and gateway other than discord.com's.

discord.py has no public option for either URL. It reads them from two class
attributes, and this module is the only code in the project that touches them:

    discord.http.Route.BASE                         read each time a Route is built: every REST call,
                                                    interaction callbacks and webhook follow-ups
    discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY read when a socket opens without a resume URL
                                                    (the first connect, and after an invalid session)

Both are class attributes, so an override is **process-wide**: one Discord REST
base and gateway per process. `claim` refuses a second claim for different URLs
instead of silently redirecting another adapter's traffic, and the last
`release` restores discord.py's defaults.

`check` verifies the assumptions above against the installed discord.py and
raises `DiscordInternalsChanged`, naming the version, when an upgrade broke them.
It runs on every `claim`, i.e. at adapter start.
"""

from __future__ import annotations

import inspect
import warnings
from typing import Any

import yarl

with warnings.catch_warnings():
    # discord.py imports the stdlib `audioop` for voice, which Switchboard never uses;
    # Python 3.11 and 3.12 warn on that import. Nothing else is silenced.
    warnings.filterwarnings("ignore", "'audioop' is deprecated", DeprecationWarning)
    import discord
    import discord.gateway
    import discord.http
    import discord.webhook.async_

DEFAULT_API_BASE = "https://discord.com/api/v10"
VERIFIED_WITH = "2.7.1"


class DiscordInternalsChanged(RuntimeError):
    """The installed discord.py no longer reads its URLs where this module redirects them."""


def check() -> None:
    """Raise `DiscordInternalsChanged` if redirecting discord.py's URLs would silently not work."""
    route, socket = discord.http.Route, discord.gateway.DiscordWebSocket
    problems: list[str] = []
    if not isinstance(getattr(route, "BASE", None), str):
        problems.append("discord.http.Route.BASE is gone")
    else:
        probe = type("_Probe", (route,), {"BASE": "http://probe.invalid/api"})
        if probe("GET", "/users/@me").url != "http://probe.invalid/api/users/@me":
            problems.append("Route no longer builds its URL from Route.BASE")
    if getattr(discord.webhook.async_, "Route", None) is not route:
        problems.append("interaction and webhook calls no longer use discord.http.Route")
    if not isinstance(getattr(socket, "DEFAULT_GATEWAY", None), yarl.URL):
        problems.append("DiscordWebSocket.DEFAULT_GATEWAY is gone")
    else:
        from_client = inspect.unwrap(socket.from_client.__func__)
        if "DEFAULT_GATEWAY" not in from_client.__code__.co_names:
            problems.append("DiscordWebSocket.from_client no longer reads DEFAULT_GATEWAY")
    if not inspect.iscoroutinefunction(getattr(discord.http.HTTPClient, "get_bot_gateway", None)):
        problems.append("HTTPClient.get_bot_gateway is gone")
    if problems:
        raise DiscordInternalsChanged(
            f"discord.py {discord.__version__} cannot be redirected to another api_base/gateway_url "
            f"({'; '.join(problems)}); platforms/discord_urls.py was verified with discord.py "
            f"{VERIFIED_WITH} and needs updating"
        )


class UrlOverride:
    """A live claim on discord.py's URLs; `release` it when the client is closed."""

    def __init__(self, api_base: str) -> None:
        self.api_base = api_base
        self.gateway_url: str | None = None
        self._released = False

    def set_gateway(self, url: str) -> None:
        """Point new gateway sockets at ``url`` (resumes use the URL that READY named)."""
        current = _current_gateway()
        others = [h for h in _holders if h is not self and h.gateway_url is not None]
        if others and current != url:
            raise RuntimeError(f"another Discord client in this process already uses gateway {current}")
        self.gateway_url = url
        discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(url)

    def release(self) -> None:
        """Idempotent. The last holder restores discord.py's own defaults."""
        if self._released:
            return
        self._released = True
        _holders.remove(self)
        if not _holders:
            discord.http.Route.BASE = _saved["base"]
            discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = _saved["gateway"]


_holders: list[UrlOverride] = []
_saved: dict[str, Any] = {}


def _current_gateway() -> str:
    return str(discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY)


def claim(api_base: str) -> UrlOverride:
    """Send discord.py's REST calls to ``api_base`` until the returned override is released.

    Raises `DiscordInternalsChanged` (see `check`), or RuntimeError when another live
    claim in this process uses a different base.
    """
    check()
    api_base = api_base.rstrip("/")
    if _holders and _holders[0].api_base != api_base:
        raise RuntimeError(
            f"another Discord client in this process already uses api_base {_holders[0].api_base}; "
            "discord.py keeps one REST base per process"
        )
    if not _holders:
        _saved.update(base=discord.http.Route.BASE, gateway=discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY)
    override = UrlOverride(api_base)
    _holders.append(override)
    discord.http.Route.BASE = api_base
    return override


async def fetch_gateway_url(client: discord.Client) -> str:
    """The gateway URL the REST API names (``GET /gateway/bot``), for a logged-in client."""
    _shards, url, _limits = await client.http.get_bot_gateway()
    return url
