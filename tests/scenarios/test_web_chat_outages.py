"""The web chat page through outages, in a real headless chromium: the gateway away, a connection
that dies without a word, a reconnect, a reload, a tab closed with messages not sent yet.

The page talks to the adapter alone, with `Intake` standing in for the gateway: these tests steer the
server's timing (its keep-alive interval, a relay that goes silent, the history it answers), and what
they check is what reaches the gateway, in which order, and what the page shows. Every wait is for
something on the page or the network, never for time; the page's own long timers run on Playwright's
clock.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from itertools import groupby
from typing import Any

import pytest
import pytest_asyncio

from platforms.base import Outbound
from platforms.web import WebChatAdapter
from tests.web_client import Intake, open_chat, serve, type_message

pytestmark = pytest.mark.asyncio(loop_scope="session")  # the session's browser lives on that loop

SHOWN = "els => els.map(e => e.dataset.text)"
PENDING = "[data-role=user].pending"


def one_by_one(arrived: list[str]) -> list[str]:
    """The messages in the order their POSTs came, each once: one on its way when the page reconnects
    is posted again at once (the same key: one message to the gateway), so it may come twice in a row."""
    return [text for text, _ in groupby(arrived)]



@pytest_asyncio.fixture(loop_scope="session")
async def served(tmp_path) -> AsyncIterator[Any]:
    """``served(**adapter_kwargs)`` -> (adapter, intake, base url); all stopped after the test."""
    running: list[tuple[WebChatAdapter, Any]] = []

    async def start(**kw: Any) -> tuple[WebChatAdapter, Intake, str]:
        intake = Intake()
        adapter = WebChatAdapter(history_reader=intake.history, files_dir=tmp_path / "files", **kw)
        await adapter.start(intake.take)
        runner, base = await serve(adapter)
        running.append((adapter, runner))
        return adapter, intake, base

    yield start
    for adapter, runner in running:
        await adapter.stop()
        await runner.cleanup()


def reply(n: int) -> dict[str, Any]:
    return {"id": f"m{n}", "role": "assistant", "kind": "reply", "text": f"m{n}", "time": float(n), "edited": False}


# -- sending: one message at a time, in the order typed ------------------------------------------


async def test_messages_typed_while_the_gateway_is_away_reach_it_in_the_order_typed(served, page) -> None:
    _, intake, base = await served()
    await page.clock.install()  # the page's retries wait long without the test waiting
    await open_chat(page, f"{base}/chat?chat=c1")
    online, arrived = False, []

    async def network(route) -> None:
        if not online:
            await route.abort("internetdisconnected")
            return
        arrived.append(route.request.post_data_json["text"])
        await route.continue_()

    await page.route("**/chat/api/messages", network)
    async with page.expect_event("requestfailed"):
        await type_message(page, "first")
    for _ in range(4):  # each retry waits twice as long as the one before: the next is 8 s away
        async with page.expect_event("requestfailed"):
            await page.clock.fast_forward(10_000)
    await type_message(page, "second")  # a retry of its own, due in 0.5 s, would overtake the first
    await type_message(page, "/stop")  # a command keeps its place too
    online = True
    await page.clock.fast_forward(1_000)
    await page.clock.fast_forward(10_000)
    await page.wait_for_selector(PENDING, state="detached", timeout=5_000)
    # The clock outruns the keep-alives: the page counts its stream as dropped and reconnects meanwhile.
    assert one_by_one(arrived) == intake.texts == ["first", "second", "/stop"]
    assert await page.eval_on_selector_all("[data-role=user]", SHOWN) == ["first", "second", "/stop"]


async def test_a_reload_and_a_reconnect_send_what_waits_one_at_a_time_in_the_order_typed(served, page) -> None:
    adapter, intake, base = await served()
    await open_chat(page, f"{base}/chat?chat=c1")
    online, arrived, on_the_way, most = False, [], [], 0

    async def network(route) -> None:
        nonlocal most
        if not online:
            await route.abort("internetdisconnected")
            return
        text = route.request.post_data_json["text"]
        arrived.append(text)
        on_the_way.append(text)
        most = max(most, len(set(on_the_way)))  # a POST the page abandoned and its resend are one message
        answer = await route.fetch()  # the gateway has it
        on_the_way.remove(text)
        await route.fulfill(response=answer)

    await page.route("**/chat/api/messages", network)
    for text in ("one", "two", "three"):
        await type_message(page, text)
    await page.reload()  # the sends wait in the tab's sessionStorage
    await page.wait_for_selector("body[data-state=connected]")
    assert await page.eval_on_selector_all(PENDING, SHOWN) == ["one", "two", "three"]
    online = True
    await adapter.close_streams()  # the page reconnects: the gateway is back
    await page.wait_for_selector(PENDING, state="detached", timeout=10_000)
    assert (one_by_one(arrived), most) == (["one", "two", "three"], 1)
    assert intake.texts == ["one", "two", "three"]


async def test_a_send_that_gets_no_answer_is_sent_again_with_the_same_key(served, page) -> None:
    _, intake, base = await served()
    await page.clock.install()
    await open_chat(page, f"{base}/chat?chat=c1")
    keys: list[str] = []

    async def first_never_answered(route) -> None:  # as on a pooled connection that died without a word
        keys.append(route.request.post_data_json["key"])
        if len(keys) > 1:
            await route.continue_()

    await page.route("**/chat/api/messages", first_never_answered)
    async with page.expect_request("**/chat/api/messages"):
        await type_message(page, "hello")
    await page.clock.fast_forward(20_000)  # no answer this long: a network failure
    await page.wait_for_selector(PENDING, state="detached", timeout=5_000)
    assert len(keys) == 2 and len(set(keys)) == 1
    assert intake.texts == ["hello"]


async def test_closing_the_tab_with_a_message_not_sent_yet_asks_first(served, page) -> None:
    _, _, base = await served()
    await open_chat(page, f"{base}/chat?chat=c1")
    released = asyncio.Event()

    async def held_until_released(route) -> None:
        await released.wait()
        await route.continue_()

    await page.route("**/chat/api/messages", held_until_released)
    await type_message(page, "not sent yet")
    dialogs: asyncio.Queue[Any] = asyncio.Queue()
    page.on("dialog", dialogs.put_nowait)
    await page.close(run_before_unload=True)
    asked = await asyncio.wait_for(dialogs.get(), 5)
    assert asked.type == "beforeunload"
    await asked.dismiss()  # stay on the page
    page.remove_listener("dialog", dialogs.put_nowait)
    released.set()
    await page.wait_for_selector(PENDING, state="detached")
    async with page.expect_event("close", timeout=5_000):  # nothing left to lose: closed without asking
        await page.close(run_before_unload=True)


# -- receiving: a stream that dies without a word, a reconnect ------------------------------------


class Relay:
    """A TCP relay in front of the server that can go silent: the connections carrying the event stream
    then pass nothing either way, and are never closed, as through a proxy that hangs or across a NAT
    mapping forgotten (no FIN, no RST: nothing the browser could notice). ``stream``: how the event stream's
    request begins."""

    def __init__(self, port: int, stream: bytes = b"GET /chat/api/events") -> None:
        self._port = port
        self._stream = stream
        self._links: list[dict[str, Any]] = []
        self._server: asyncio.Server | None = None

    async def start(self) -> str:
        self._server = await asyncio.start_server(self._link, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    def go_silent(self) -> None:
        for link in self._links:
            link["silent"] = link["stream"]

    async def close(self) -> None:
        assert self._server is not None
        self._server.close()
        for link in self._links:
            for writer in link["writers"]:
                writer.close()
        await self._server.wait_closed()

    async def _link(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self._port)
        link = {"stream": False, "silent": False, "writers": (writer, up_writer)}
        self._links.append(link)
        await asyncio.gather(self._pump(reader, up_writer, link, self._stream), self._pump(up_reader, writer, link))

    @staticmethod
    async def _pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter, link: dict[str, Any],
                    stream: bytes | None = None) -> None:
        # Only what the browser asks marks a stream: the page's script, served, quotes its request in a comment,
        # and the idle connection that brought it went silent too, and took the page's next request.
        with contextlib.suppress(ConnectionError):
            while data := await source.read(65536):
                link["stream"] |= stream is not None and stream in data
                if not link["silent"]:
                    sink.write(data)
                    await sink.drain()
        sink.close()


async def test_a_stream_that_goes_silent_is_dropped_and_opened_again(served, page) -> None:
    adapter, intake, base = await served(keep_alive=0.2)  # the page gives up on 2.5 intervals of quiet: 0.5 s
    relay = Relay(int(base.rpartition(":")[2]))
    url = await relay.start()
    try:
        await open_chat(page, f"{url}/chat?chat=c1")
        async with page.expect_request("**/chat/api/events?*", timeout=3_000):  # a new stream
            relay.go_silent()
        intake.messages.append(reply(1))  # in the history, or live, whichever the new stream brings
        await adapter.send(Outbound("c1", None, "m1", kind="reply", idempotency_key="m1"))
        await page.wait_for_selector("[data-id=m1]", timeout=3_000)
        await page.wait_for_selector("body[data-state=connected]")
    finally:
        await relay.close()


async def test_a_reconnect_keeps_what_shows_before_the_history_and_drops_only_what_the_gateway_deleted(
        served, page) -> None:
    adapter, intake, base = await served(history_limit=4)
    intake.messages = [reply(n) for n in range(1, 8)]
    await open_chat(page, f"{base}/chat?chat=c1")
    assert await page.eval_on_selector_all("#messages > article", SHOWN) == ["m4", "m5", "m6", "m7"]
    await adapter.send(Outbound("c1", None, "m8", kind="reply", idempotency_key="m8"))
    intake.messages.append(reply(8))
    await page.wait_for_selector("[data-id=m8]")
    reconnect = asyncio.Event()

    async def held_until_released(route) -> None:
        await reconnect.wait()
        await route.continue_()

    await page.route("**/chat/api/events?*", held_until_released)
    await adapter.close_streams()
    await page.wait_for_selector("body[data-state=reconnecting]")
    intake.messages.remove(reply(7))  # deleted while the page was away
    intake.messages += [reply(9), reply(10)]  # the history now starts at m6: m4 and m5 are older, not gone
    reconnect.set()
    await page.wait_for_selector("[data-id=m10]")
    assert await page.eval_on_selector_all("#messages > article", SHOWN) == ["m4", "m5", "m6", "m8", "m9", "m10"]
