"""The operator console's state at its edges: a page that connects again after every page had gone,
and the secrets the errors and messages it shows may hold."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
from aiohttp import web

from gateway.console.routes import Console
from gateway.testing import RecordingAdapter, make_config
from platforms.base import Inbound
from tests.polling import until

JSON = {"Content-Type": "application/json"}


@contextlib.asynccontextmanager
async def console_served(console: Console) -> AsyncIterator[str]:
    """``console``'s routes on a free loopback port, as the gateway's server mounts them."""
    app = web.Application()
    app.router.add_routes(list(console.web_routes()))

    async def end_streams(app: web.Application) -> None:
        await console.close_streams()

    app.on_shutdown.append(end_streams)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


async def next_state(response: aiohttp.ClientResponse) -> dict[str, Any]:
    lines: list[str] = []
    while True:
        line = (await response.content.readline()).decode().rstrip("\n")
        if line.startswith(":"):
            continue
        if line:
            lines.append(line)
        elif lines:
            assert lines[0] == "event: state"
            return json.loads(lines[1].removeprefix("data: "))


def a_dead_letter(gateway) -> int:
    inbound = Inbound(platform="chat", chat_id="c1", thread_id=None, user_id="u1", user_name=None,
                      text="please answer", event_id="ev-dead")
    gateway.store.inbox.accept(inbound, "turn-1")
    return gateway.store.inbox.set_aside("chat", "ev-dead")


async def test_a_page_that_connects_after_every_page_had_gone_is_told_when_the_state_goes_back(
        tmp_path, gateways) -> None:
    # The stream publishes a snapshot only when it differs from the last one published. That one was
    # kept from before every page went: a page that came back meanwhile got a newer one (a dead letter),
    # and when the state went back (the letter dismissed from that very page) nothing was sent, so the
    # letter stayed on the page, its Dismiss button disabled, until something else changed.
    gateway = await gateways(make_config(tmp_path), [RecordingAdapter()])
    console = Console(gateway, interval=0.05, keep_alive=0.05)
    async with console_served(console) as url, aiohttp.ClientSession() as http:
        async with http.get(f"{url}/console/api/events") as response:
            await next_state(response)  # at once
            assert (await next_state(response))["outbox"]["dead_letters"] == []  # the refresher's first look
        await until(lambda: console._refresher is None)  # every page has gone: nobody is shown anything
        letter = a_dead_letter(gateway)
        async with http.get(f"{url}/console/api/events") as response:
            assert [d["id"] for d in (await next_state(response))["outbox"]["dead_letters"]] == [letter]
            async with http.post(f"{url}/console/api/dead-letters/{letter}/dismiss", data="{}",
                                 headers=JSON) as dismissed:
                assert dismissed.status == 200
            async with asyncio.timeout(5):  # looked at every 0.05 s: it comes at once, or never
                while (await next_state(response))["outbox"]["dead_letters"]:
                    pass


BOT_TOKEN = "7012345678:AAHc0ns0le-n0t-a-real-t0ken-at-all-x9"
ERROR_WITH_TOKEN = f"TelegramNetworkError: POST http://127.0.0.1:8081/bot{BOT_TOKEN}/sendMessage: reset"


async def test_the_console_never_shows_a_secret_an_error_or_a_message_holds(tmp_path, gateways) -> None:
    # The log masks secrets in these very errors (`gateway.logging.redact`), and `/agents` in the chat
    # does in a child's; the console showed them as stored: a bot token in an SDK's URL, in a page
    # anyone the console's token is shared with can read.
    gateway = await gateways(make_config(tmp_path), [RecordingAdapter()])
    inbound = Inbound(platform="chat", chat_id="c1", thread_id=None, user_id="u1", user_name=None,
                      text=f"my token is {BOT_TOKEN}", event_id="ev-dead")
    gateway.store.inbox.accept(inbound, "turn-1")
    gateway.store.inbox.failed("chat", "ev-dead", ERROR_WITH_TOKEN)
    gateway.store.inbox.set_aside("chat", "ev-dead")
    gateway.store.db.write(
        "INSERT INTO gateway_outbox (key, platform, chat_id, kind, op, text, silent, sequence, status, created_at,"
        " last_error) VALUES ('t-1:reply', 'chat', 'c1', 'reply', 'send', ?, 0, 0, 'failed', ?, ?)",
        (f"set TELEGRAM_TOKEN={BOT_TOKEN}", gateway.clock.time(), ERROR_WITH_TOKEN))
    console = Console(gateway)
    async with console_served(console) as url, aiohttp.ClientSession() as http:
        async with http.get(f"{url}/console/api/state") as response:
            text = await response.text()
            seen = json.loads(text)
    assert BOT_TOKEN.partition(":")[2] not in text
    [letter] = seen["outbox"]["dead_letters"]
    [failed] = seen["outbox"]["failed_messages"]
    masked = "TelegramNetworkError: POST http://127.0.0.1:8081/bot***/sendMessage: reset"
    assert letter["error"] == failed["error"] == masked
    assert (letter["text"], failed["text"]) == ("my token is ***", "set TELEGRAM_TOKEN=***")
