"""When `SlackAdapter` acknowledges a slash command: Slack never sends one again and keeps it in no
history, so the acknowledgement must not leave before the gateway has recorded the command (a crash in
between would lose it without a word: Slack shows its user an error only for a command it was not
acknowledged for). bolt sends the acknowledgement once the listener returns (``process_before_response``),
which waits for the sink, up to ``sink_timeout``, within Slack's 3 s. And a stop must not tell a user to
send again a command the gateway is recording: it would be answered twice, once after the next start."""

from __future__ import annotations

import asyncio
import logging
import time

from aiohttp import web

from platforms.base import CommandSpec, Inbound
from platforms.fakes.slack import FakeSlack
from platforms.not_recorded import NOT_TAKEN
from platforms.slack import SlackAdapter
from platforms.slack_commands import MAY_BE_TAKEN
from tests.platforms.test_slack_adapter import SECRET, mounted
from tests.polling import until
from tests.sqlite_errors import full_disk

COMMANDS = [CommandSpec("new", "New session")]
DM = "DU1"  # the fake's DM channel with user U1
GRACE = 5.0
NOT_TAKEN_NEW = NOT_TAKEN.format(command="/new")


def socket_adapter(fake: FakeSlack, **kw: float) -> SlackAdapter:
    # Pings 10 s apart: none of the client's own crosses the barrier's (`acks_so_far`).
    return SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base,
                        ping_interval=10.0, **kw)


async def acks_so_far(fake: FakeSlack, adapter: SlackAdapter) -> int:
    """How many acknowledgements the fake has had, counting every one the client sent before this call: a
    ping goes after them on the same WebSocket, and the fake reads its frames in order, so by the time
    its pong is back it has read them all."""
    client = adapter._socket.client
    marker = float(time.time_ns())
    await client.current_session.ping(f"sdk-ping-pong:{marker}".encode())
    await until(lambda: client.last_ping_pong_time == marker, 5.0)
    return len(fake.acks)


def not_taken_answers(fake: FakeSlack) -> list[str]:
    """The "Not taken" answers the user saw: through the response URL, or in the acknowledgement."""
    return [e["text"] for e in fake.ephemeral if e["text"] == NOT_TAKEN_NEW]


async def test_a_command_over_socket_mode_is_acknowledged_only_once_the_gateway_has_it() -> None:
    acked_before_recorded: list[int] = []
    recorded: list[Inbound] = []

    async def sink(inbound: Inbound) -> None:
        acked_before_recorded.append(await acks_so_far(fake, adapter))
        recorded.append(inbound)

    async with FakeSlack() as fake:
        adapter = socket_adapter(fake)
        await adapter.start(sink, COMMANDS)
        try:
            await fake.push_slash_command("/new", "U1", DM)
            await fake.wait_for(lambda: fake.acks)
            assert acked_before_recorded == [0] and [i.text for i in recorded] == ["/new"]
            assert [(a.payload or {}).get("text") for a in fake.acks] == [None]  # acked empty, answered after
        finally:
            await adapter.stop()


async def test_a_command_over_http_is_answered_200_only_once_the_gateway_has_it() -> None:
    answered_before_recorded: list[bool] = []
    recorded: list[Inbound] = []

    async def sink(inbound: Inbound) -> None:
        try:  # a loopback answer takes a few ms: one sent as the command came would be in by now
            await fake.wait_for(lambda: fake.http_results, timeout=0.05)
            answered_before_recorded.append(True)
        except TimeoutError:
            answered_before_recorded.append(False)
        recorded.append(inbound)

    async with FakeSlack() as fake:
        adapter = SlackAdapter(bot_token=fake.bot_token, mode="http", signing_secret=SECRET, api_base=fake.api_base)
        async with mounted(adapter) as url:
            fake.events_url, fake.signing_secret = url, SECRET
            await adapter.start(sink, COMMANDS)
            try:
                await fake.push_slash_command("/new", "U1", DM)
                assert answered_before_recorded == [False] and [i.text for i in recorded] == ["/new"]
                assert [(r.status, r.text) for r in fake.http_results] == [(200, "")]
            finally:
                await adapter.stop()


async def test_a_command_the_gateway_is_slow_to_record_is_acknowledged_in_time_and_taken_once(caplog) -> None:
    # A locked database, say: acknowledged after ``sink_timeout`` all the same, or Slack shows the user an
    # error; recorded once the sink returns, and not answered "Not taken".
    release = asyncio.Event()
    recorded: list[Inbound] = []

    async def sink(inbound: Inbound) -> None:
        await release.wait()
        recorded.append(inbound)

    async with FakeSlack() as fake:
        adapter = socket_adapter(fake, sink_timeout=0.2)
        await adapter.start(sink, COMMANDS)
        try:
            with caplog.at_level(logging.WARNING, logger="platforms.slack"):
                await fake.push_slash_command("/new", "U1", DM)
                await fake.wait_for(lambda: fake.acks)
            assert recorded == []
            assert any("slack sink slow for command:" in r.getMessage() for r in caplog.records)
            release.set()
            await until(lambda: recorded)
        finally:
            await adapter.stop()
        assert [i.text for i in recorded] == ["/new"] and not_taken_answers(fake) == []


async def test_a_stop_lets_a_command_being_recorded_finish_rather_than_tell_its_user_to_send_it_again() -> None:
    # The stop cancelled the hand-over at once and answered "Not taken: send /new again", though the gateway's
    # sink records an event first and only then routes it: the command ran after the next start as well, and
    # again once the user sent it again.
    recorded: list[Inbound] = []
    routed: list[Inbound] = []

    async with FakeSlack() as fake:
        adapter = socket_adapter(fake, sink_timeout=0.2)

        async def sink(inbound: Inbound) -> None:
            recorded.append(inbound)
            client = adapter._socket.client
            tasks = (client.message_processor, client.current_session_monitor, client.message_receiver)
            while not adapter._stopping or not all(t is None or t.done() for t in tasks):
                await asyncio.sleep(0)  # routing (/new's own work) until the stop has closed Socket Mode
            for _ in range(20):  # and a little past that: the stop then goes on at once
                await asyncio.sleep(0)
            routed.append(inbound)

        await adapter.start(sink, COMMANDS)
        try:
            await fake.push_slash_command("/new", "U1", DM)
            await fake.wait_for(lambda: fake.acks)  # acknowledged after sink_timeout, the sink still routing
            await adapter.stop_within(GRACE)
        finally:
            await adapter.stop()
        assert [i.text for i in routed] == ["/new"] and not_taken_answers(fake) == []


async def test_a_command_a_stop_finds_still_being_handed_over_is_answered_it_may_come_after_the_restart() -> None:
    # One the gateway has not returned by the end of the stop's time may be recorded (the sink records first,
    # then routes), and then answered after the next start: not told "Not taken" (`test_slack_command_stops`).
    async def sink(inbound: Inbound) -> None:
        await asyncio.Event().wait()

    async with FakeSlack() as fake:
        adapter = socket_adapter(fake, sink_timeout=0.2)
        await adapter.start(sink, COMMANDS)
        try:
            await fake.push_slash_command("/new", "U1", DM)
            await fake.wait_for(lambda: fake.acks)
            await adapter.stop_within(0.3)
        finally:
            await adapter.stop()
        assert [e["text"] for e in fake.ephemeral] == [MAY_BE_TAKEN.format(command="/new")]


async def test_a_command_the_store_refuses_at_the_stop_is_answered_not_taken_without_waiting_out_the_grace() -> None:
    # Handed over again and again while the store refuses it: once the stop begins, the next refusal ends it.
    tries = 0

    async def refusing(inbound: Inbound) -> None:
        nonlocal tries
        tries += 1
        raise full_disk()

    async with FakeSlack() as fake:
        adapter = socket_adapter(fake)
        await adapter.start(refusing, COMMANDS)
        try:
            await fake.push_slash_command("/new", "U1", DM)
            await until(lambda: tries >= 1)
            loop = asyncio.get_running_loop()
            began = loop.time()
            await adapter.stop_within(GRACE)
            assert loop.time() - began < GRACE - 1.0  # the next try comes within 0.5 s, then 1 s
        finally:
            await adapter.stop()
        assert not_taken_answers(fake) == [NOT_TAKEN_NEW]


async def test_a_command_over_http_a_stop_finds_being_recorded_is_answered_200_not_cut_off() -> None:
    # The stop cancelled its listener: no answer at all, and Slack showed the user an error for a command the
    # gateway had recorded, and answered. (Slack never sends a command again: nor does the fake.)
    recorded: list[Inbound] = []

    async with FakeSlack() as fake:
        adapter = SlackAdapter(bot_token=fake.bot_token, mode="http", signing_secret=SECRET, api_base=fake.api_base)

        async def sink(inbound: Inbound) -> None:
            recorded.append(inbound)
            while not adapter._stopping:
                await asyncio.sleep(0)
            for _ in range(20):  # past the point where the stop cancelled the listeners
                await asyncio.sleep(0)

        async with mounted(adapter) as url:
            fake.events_url, fake.signing_secret = url, SECRET
            await adapter.start(sink, COMMANDS)
            try:
                pushing = asyncio.ensure_future(fake.push_slash_command("/new", "U1", DM))
                await until(lambda: recorded)
                await adapter.stop_within(GRACE)
                await pushing
            finally:
                await adapter.stop()
        assert [(r.status, r.text) for r in fake.http_results] == [(200, "")] and not_taken_answers(fake) == []


async def test_the_fake_never_sends_a_slash_command_again_whose_request_got_no_answer() -> None:
    # It did, on a connection error, as it retries events: a test then passed on a delivery Slack never makes.
    posts = 0

    async def cut(request: web.Request) -> web.StreamResponse:
        nonlocal posts
        posts += 1
        assert request.transport is not None
        request.transport.close()  # no answer at all, as from a process that died
        return web.Response()

    app = web.Application()
    app.router.add_post("/slack/events", cut)
    runner = web.AppRunner(app, handle_signals=False)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    try:
        async with FakeSlack(events_url=f"http://{host}:{port}/slack/events", signing_secret=SECRET,
                             http_retry_delays=(0.0,)) as fake:
            await fake.push_slash_command("/new", "U1", DM)
            await fake.push_event({"type": "message", "channel": DM, "channel_type": "im", "user": "U1",
                                   "ts": "1.1", "text": "hi"})
    finally:
        await runner.cleanup()
    assert posts == 1 + 2  # the command once; the event, and Slack's retry of it
