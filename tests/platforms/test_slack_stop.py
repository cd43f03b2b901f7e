"""A stop of `SlackAdapter` keeps to the time the gateway gives it (`stop_within`) while Slack does not
answer its last calls: the close of a half-open Socket Mode WebSocket, the answers to commands it took but
had not handed over, those answers and its placeholders' deletions together. (The deletions alone:
`tests/scenarios/test_slack_stop.py`.) That stop ends intake only: the adapter sends until `close`."""

from __future__ import annotations

import asyncio
import logging

import pytest

from platforms.base import LAST_CALLS_FLOOR, CommandSpec, Inbound, NetworkError, Outbound
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from tests.sqlite_errors import full_disk

GRACE = 1.0
SLACK = 1.5
"""Room for the last calls' floor (`platforms.base.LAST_CALLS_FLOOR`) on a loaded 2-core machine."""
MARGIN = 0.7
"""Room for a loaded 2-core machine past the grace and the last calls' floor."""
DM = "DU1"  # the fake's DM channel with user U1


def adapter_of(fake: FakeSlack, ping_interval: float = 0.2) -> SlackAdapter:
    return SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base,
                        ping_interval=ping_interval)


class Refusing:
    """A sink the store refuses until the stop: what it is handed is not taken."""

    def __init__(self) -> None:
        self.tries = 0

    async def __call__(self, inbound: Inbound) -> None:
        self.tries += 1
        raise full_disk()


async def test_a_stop_whose_answers_to_commands_not_taken_slack_does_not_take_keeps_to_its_grace() -> None:
    # Those answers had 3 s of their own, past the grace, when Slack was slow to take them.
    refusing = Refusing()
    async with FakeSlack() as fake:
        adapter = adapter_of(fake)
        await adapter.start(refusing, [CommandSpec("new", "New session")])
        answering = fake.hold("response_url")
        try:
            await fake.push_slash_command("/new", "U1", DM)
            await fake.wait_for(lambda: refusing.tries >= 1)
            loop = asyncio.get_running_loop()
            began = loop.time()
            await adapter.stop_within(GRACE)
            assert loop.time() - began < GRACE + SLACK
            assert fake.calls_to("response_url")  # tried, within the grace
        finally:
            answering.set()
            await adapter.stop()


async def test_a_stop_on_a_half_open_socket_keeps_to_its_grace() -> None:
    # Closing the WebSocket waited 10 s (aiohttp's ws_close) for Slack to answer its close frame: on a
    # connection whose peer is gone (no answer, no FIN) that was how long the stop took.
    taken: list[Inbound] = []

    async def sink(inbound: Inbound) -> None:
        taken.append(inbound)

    async with FakeSlack(ack_timeout=0.5) as fake:
        # Pings far apart: the client does not find the connection dead, and reconnect, before the stop.
        adapter = adapter_of(fake, ping_interval=10.0)
        await adapter.start(sink)
        await fake.wait_for(lambda: fake.open_connections)
        fake.stall()
        await fake.push_dm("U1", "into the void")  # sent into the dead connection: never acked
        loop = asyncio.get_running_loop()
        began = loop.time()
        await adapter.stop_within(GRACE)
        assert loop.time() - began < GRACE + LAST_CALLS_FLOOR + MARGIN
        await adapter.close()
        assert taken == []

        # Nothing lost: Slack sends the event it was not acked for again, to the next start's connection.
        again = adapter_of(fake, ping_interval=10.0)
        await again.start(sink)
        try:
            await fake.wait_for(lambda: [i.text for i in taken] == ["into the void"])
        finally:
            await again.stop()


async def test_a_stop_whose_deletions_and_answers_slack_does_not_take_ends_a_floor_past_its_grace() -> None:
    # The deletions, then the answers, each had a floor of their own: with the grace spent (0 here), a
    # Slack that took neither held the stop two floors past it.
    left: list[tuple[str, str | None]] = []
    refusing = Refusing()
    async with FakeSlack() as fake:
        adapter = adapter_of(fake)
        adapter.bind_indicators_left(lambda chat, thread: left.append((chat, thread)))
        await adapter.start(refusing, [CommandSpec("new", "New session")])
        answering, deleting = fake.hold("response_url"), fake.hold("chat.delete")
        try:
            await adapter.typing(DM, None)  # a placeholder shown, as while a turn runs
            await fake.push_slash_command("/new", "U1", DM)
            await fake.wait_for(lambda: refusing.tries >= 1)
            loop = asyncio.get_running_loop()
            began = loop.time()
            await adapter.stop_within(0)
            assert loop.time() - began < LAST_CALLS_FLOOR + MARGIN
            assert fake.calls_to("response_url") and fake.calls_to("chat.delete")  # both tried, within the floor
            assert left == [(DM, None)]  # not deleted: the next start deletes it
        finally:
            answering.set()
            deleting.set()
            await adapter.stop()


async def test_an_acknowledgement_the_closing_socket_cannot_send_is_one_line_not_an_error(caplog) -> None:
    # slack_sdk logged an event handed over as the stop closed the WebSocket as a failed listener, at ERROR
    # with a traceback, though nothing failed: Slack sends an event it was not acknowledged for again.
    async with FakeSlack() as fake:
        adapter = adapter_of(fake)
        handed = asyncio.Event()

        async def sink(inbound: Inbound) -> None:
            handed.set()
            while not socket.closed:  # taken once the stop has begun to close the connection
                await asyncio.sleep(0)

        await adapter.start(sink)
        socket = adapter._socket.client
        await fake.push_dm("U1", "handed over as the stop begins")
        await handed.wait()
        with caplog.at_level(logging.DEBUG):
            await adapter.stop_within(GRACE)
            await adapter.close()
        assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
        assert "an acknowledgement did not go out as the Socket Mode connection closed: Slack sends its event " \
               "again" in [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]


async def test_after_its_stop_the_adapter_still_sends_until_it_is_closed() -> None:
    # The stop closed the Web API client with Socket Mode: the reply of a turn ending within the gateway's
    # grace was refused ("slack adapter not started") and held until the next start.
    taken: list[Inbound] = []

    async def sink(inbound: Inbound) -> None:
        taken.append(inbound)

    async with FakeSlack() as fake:
        adapter = adapter_of(fake)
        await adapter.start(sink)
        try:
            await adapter.stop_within(GRACE)
            await fake.wait_for(lambda: not fake.open_connections)  # intake ended: no event comes in
            await fake.push_dm("U1", "too late")
            await adapter.typing(DM, None)  # no placeholder any more: no stop is left to delete it
            await adapter.send(Outbound(DM, None, "the reply"))
        finally:
            await adapter.close()
        with pytest.raises(NetworkError, match="slack adapter not started"):
            await adapter.send(Outbound(DM, None, "after the close"))
        assert [c.params.get("text") for c in fake.calls_to("chat.postMessage")] == ["the reply"]
        assert taken == []
