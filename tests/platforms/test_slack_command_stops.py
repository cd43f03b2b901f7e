"""What a stop of `SlackAdapter` tells the user of a slash command it cuts off, and what is logged of one
whose acknowledgement the closing Socket Mode connection could not send.

The gateway's sink records a command before it routes it, and the next start handles every event
recorded and not settled: a command whose hand-over is still under way when the stop's time runs out
may have been recorded, and then is answered after the restart. Answered "Not taken: send it again",
its user was told no and then got an answer (twice, once they sent it again)."""

from __future__ import annotations

import asyncio
import logging

from platforms.base import CommandSpec, Inbound
from platforms.fakes.slack import FakeSlack
from platforms.not_recorded import MAY_BE_TAKEN, NOT_TAKEN
from platforms.slack import SlackAdapter
from tests.platforms.test_slack_adapter import SECRET, mounted
from tests.polling import until
from tests.sqlite_errors import full_disk

COMMANDS = [CommandSpec("new", "New session")]
DM = "DU1"  # the fake's DM channel with user U1
NOT_TAKEN_NEW = NOT_TAKEN.format(command="/new")
MAY_BE_TAKEN_NEW = MAY_BE_TAKEN.format(command="/new")


def socket_adapter(fake: FakeSlack, **kw: float) -> SlackAdapter:
    return SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base,
                        ping_interval=10.0, **kw)


def answers(fake: FakeSlack) -> list[str]:
    return [e["text"] for e in fake.ephemeral]


class RecordsThenRoutes:
    """The gateway's sink as it behaves when routing a command takes long (its chat's earlier event still
    being handled, a slow commit): the command is in the inbox at once, the sink returns much later."""

    def __init__(self) -> None:
        self.inbox: list[Inbound] = []
        self.routed = asyncio.Event()

    async def __call__(self, inbound: Inbound) -> None:
        self.inbox.append(inbound)
        await self.routed.wait()


async def test_a_command_whose_hand_over_a_stop_cuts_off_is_not_answered_not_taken() -> None:
    sink = RecordsThenRoutes()
    async with FakeSlack() as fake:
        adapter = socket_adapter(fake, sink_timeout=0.2)
        await adapter.start(sink, COMMANDS)
        try:
            await fake.push_slash_command("/new", "U1", DM)
            await fake.wait_for(lambda: fake.acks)  # after sink_timeout, the sink still routing
            await adapter.stop_within(0.3)
        finally:
            await adapter.stop()
        assert [i.text for i in sink.inbox] == ["/new"]  # recorded: the next start answers it
        assert answers(fake) == [MAY_BE_TAKEN_NEW]


async def test_a_command_over_http_whose_hand_over_a_stop_cuts_off_before_its_answer_is_not_answered_not_taken(
) -> None:
    # Cut off before Slack was answered for it (within ``sink_timeout``): Slack shows its user an error, and the
    # stop's answer must not then say it was not taken.
    sink = RecordsThenRoutes()
    async with FakeSlack() as fake:
        adapter = SlackAdapter(bot_token=fake.bot_token, mode="http", signing_secret=SECRET, api_base=fake.api_base,
                               sink_timeout=5.0)
        async with mounted(adapter) as url:
            fake.events_url, fake.signing_secret = url, SECRET
            await adapter.start(sink, COMMANDS)
            try:
                pushing = asyncio.ensure_future(fake.push_slash_command("/new", "U1", DM))
                await until(lambda: sink.inbox)
                await adapter.stop_within(0.3)
                await asyncio.gather(pushing, return_exceptions=True)
            finally:
                await adapter.stop()
        assert answers(fake) == [MAY_BE_TAKEN_NEW]


async def test_a_command_a_stop_cuts_off_between_two_refused_hand_overs_is_still_answered_not_taken() -> None:
    # The store refused it, and the stop came while it waited to be handed over again: surely not recorded.
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
            await adapter.stop_within(0)  # within the 0.5 s before the next try
        finally:
            await adapter.stop()
        assert tries == 1 and answers(fake) == [NOT_TAKEN_NEW]


async def test_a_command_cut_off_is_logged_as_maybe_answered_after_the_restart(caplog) -> None:
    sink = RecordsThenRoutes()
    async with FakeSlack() as fake:
        adapter = socket_adapter(fake, sink_timeout=0.2)
        await adapter.start(sink, COMMANDS)
        try:
            await fake.push_slash_command("/new", "U1", DM)
            await fake.wait_for(lambda: fake.acks)
            with caplog.at_level(logging.INFO, logger="platforms.slack"):
                await adapter.stop_within(0.3)
        finally:
            await adapter.stop()
        lines = [r.getMessage() for r in caplog.records if r.name == "platforms.slack"]
        assert not any("telling the user to send it again" in line for line in lines)
        assert any(line.startswith("slack: /new from user U1 was still being handed over when the gateway stopped")
                   for line in lines)


async def test_a_command_acknowledgement_the_closing_socket_cannot_send_is_not_said_to_come_again(caplog) -> None:
    # The line said "Slack sends its event again" for a slash command too, which Slack never sends again.
    async with FakeSlack() as fake:
        adapter = socket_adapter(fake)
        handed = asyncio.Event()

        async def sink(inbound: Inbound) -> None:
            handed.set()
            while not socket.closed:  # recorded once the stop has begun to close the connection
                await asyncio.sleep(0)

        await adapter.start(sink, COMMANDS)
        socket = adapter._socket.client
        await fake.push_slash_command("/new", "U1", DM)
        await handed.wait()
        with caplog.at_level(logging.DEBUG):
            await adapter.stop_within(5.0)
            await adapter.close()
        assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
        infos = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
        assert not any("Slack sends its event again" in line for line in infos)
        assert any(line.startswith("the acknowledgement of /new from user U1 did not go out as the Socket Mode"
                                   " connection closed: Slack never sends a slash command again, and may show its"
                                   " user an error; the gateway has it and answers it") for line in infos)
        assert answers(fake) == []  # recorded: not told it was not taken
