"""The bolt app the Slack adapter's listeners run in, authorized by the adapter's own ``auth.test``.

Given a token, bolt authorizes each request itself (``AsyncSingleTeamAuthorization``): it calls
``auth.test`` when the first event after a start comes, and keeps the answer. Should that one call
fail (a ``5xx``, a ``429``, a bot token revoked since the start), bolt answers Slack 200 with "your
installation with this app is no longer available. Please reinstall": the event is acknowledged, or
the slash command answered, no listener runs, and Slack never sends it again. The adapter checked
the token at start, so bolt gets that answer as its ``authorize``: no Web API call stands between
an event and the listeners. Nor does a bot token Slack refuses later turn events away: they are
taken in as ever, and the replies wait for the token (`platforms.slack_connection.BotToken`).
"""

from __future__ import annotations

from typing import Any

import aiohttp
from slack_bolt.async_app import AsyncApp
from slack_bolt.authorization import AuthorizeResult
from slack_sdk.web.async_client import AsyncWebClient

from platforms.proxies import proxy_for


def bolt_app(auth_test: Any, *, bot_token: str, base_url: str, session: aiohttp.ClientSession,
             signing_secret: str | None, http: bool) -> AsyncApp:
    """An app with no listener yet, authorizing every request with ``auth_test`` (the start's
    ``auth.test`` answer) and ``bot_token``. Its listeners run before the request is acknowledged
    (``process_before_response``); only HTTP mode's requests are checked for their signature."""
    authorized = AuthorizeResult.from_auth_test_response(auth_test_response=auth_test, bot_token=bot_token)

    async def authorize() -> AuthorizeResult:
        return authorized

    # No token of its own: `authorize` gives each request's client the bot token (and bolt warns at
    # every start of a token beside `authorize`, which it ignores).
    client = AsyncWebClient(base_url=base_url, session=session, retry_handlers=[])
    client.proxy = proxy_for(base_url)  # as the adapter's client: given None, slack-sdk took $HTTPS_PROXY for any URL
    return AsyncApp(client=client, authorize=authorize, signing_secret=signing_secret or "", name="switchboard",
                    process_before_response=True, request_verification_enabled=http)
