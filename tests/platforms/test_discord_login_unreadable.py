"""A Discord login answered with something that is not Discord's JSON: a proxy's page labelled
``application/json`` (or a body cut short), or a page labelled as the HTML it is.

discord.py parses an answer labelled JSON before it looks at its status (``json.JSONDecodeError``), and indexes
an answer that is not JSON as if it were (``TypeError``, ``KeyError``): that escaped `DiscordAdapter.start` raw,
so the gateway stopped with a line naming neither Discord nor what failed. It is a `DiscordStartError` saying
the login's answer was not Discord's JSON, its line naming the API it asked; not a lasting failure (a proxy or an outage
mends by itself), so a supervisor starts the gateway again. The real discord.py client against the fake."""

from __future__ import annotations

import pytest

from gateway.config import config_from_mapping
from gateway.startup_errors import explain, lasting
from platforms.discord import DiscordStartError
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads
from tests.platforms.sink import Sink

PROXY_PAGE = "<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"
JSON = {"Content-Type": "application/json"}
HTML = {"Content-Type": "text/html"}

fake = fake_discord()


@pytest.mark.parametrize(("route", "status", "text", "headers"), [
    ("GET /users/@me", 502, PROXY_PAGE, JSON),
    ("GET /users/@me", 200, PROXY_PAGE, JSON),
    ("GET /users/@me", 200, '{"id": "1', JSON),  # cut short
    ("GET /users/@me", 200, PROXY_PAGE, HTML),  # discord.py hands the text on as the user's data
    ("GET /oauth2/applications/@me", 200, PROXY_PAGE, JSON),
    ("GET /gateway/bot", 200, PROXY_PAGE, HTML),
], ids=["502-page-as-json", "200-page-as-json", "cut-short", "html-page", "application-page", "gateway-url-page"])
async def test_a_login_answered_with_no_json_stops_the_start_with_a_line_saying_so(
        fake: FakeDiscord, route: str, status: int, text: str, headers: dict[str, str]) -> None:
    fake.fail_next(route, status, text=text, headers=headers, times=10)  # a 5xx is tried again by discord.py
    adapter = adapter_for(fake)
    try:
        with pytest.raises(DiscordStartError) as failed:
            await adapter.start(Sink())
    finally:
        await adapter.stop()  # idempotent after a failed start
        await join_heartbeat_threads()
    assert str(failed.value).startswith("cannot log in: its answer is not Discord's JSON"), failed.value
    assert fake.live_connections == 0
    config = config_from_mapping({"platforms": {"discord": {
        "enabled": True, "token": fake.token, "api_base": fake.api_base, "allow_all": True}}}).config
    line = explain(failed.value, config)
    assert line.startswith(f"platforms.discord.api_base: no working Discord API at {fake.api_base} (cannot log in:"
                           " its answer is not Discord's JSON"), line
    assert "not Discord's JSON" in line and "<html>" not in line
    assert not lasting(failed.value)  # exit 1: a supervisor starts it again
