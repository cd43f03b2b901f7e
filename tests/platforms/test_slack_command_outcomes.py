"""What the user of a Slack slash command sees when its hand-over ends otherwise than recorded: cut off by a
stop after the gateway answered it, or failed on by the gateway (a bug, not a full disk). The real
slack-bolt / slack-sdk clients on the loopback FakeSlack, over Socket Mode and HTTP.

- The gateway's sink records a command, then routes it, and routing may answer it (`/new`, `/stop`) before
  the sink returns. A stop that cut the sink off then told the user, below that answer, that the command
  "may still be answered once it is back. If no answer comes …, send it again": a `/new` answered "New
  session started." seemed not to have run. Slack shows each ``response_url`` answer as a message of its
  own (a slash command has no original message to replace).
- A command the sink failed on before recording it (`platforms.not_recorded.storage_refusal` false) was
  logged and dropped, acknowledged empty: Slack shows nothing for that, so its user got no answer at all."""

from __future__ import annotations

import asyncio
import logging

import pytest

from platforms.base import CommandSpec, Inbound, Outbound
from platforms.fakes.slack import FakeSlack
from platforms.not_recorded import MAY_BE_TAKEN
from platforms.slack import SlackAdapter
from platforms.slack_commands import NOT_HANDLED
from tests.platforms.test_slack_adapter import SECRET, mounted

COMMANDS = [CommandSpec("new", "New session")]
DM = "DU1"  # the fake's DM channel with user U1
NOT_HANDLED_NEW = NOT_HANDLED.format(command="/new")


def socket_adapter(fake: FakeSlack, **kw: float) -> SlackAdapter:
    return SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base,
                        ping_interval=10.0, **kw)


def answers(fake: FakeSlack) -> list[str]:
    return [e["text"] for e in fake.ephemeral]


def reply(command: Inbound, text: str) -> Outbound:
    return Outbound(command.chat_id, None, text, kind="command", idempotency_key="c1:0",
                    reply_token=command.reply_token)


async def test_a_command_answered_before_a_stop_cuts_its_hand_over_off_is_told_nothing_more() -> None:
    async with FakeSlack() as fake:
        adapter = socket_adapter(fake, sink_timeout=0.2)
        routed: list[Inbound] = []

        async def answers_then_routes_on(inbound: Inbound) -> None:
            await adapter.send(reply(inbound, "New session started."))
            routed.append(inbound)
            await asyncio.Event().wait()  # the rest of the routing, which the stop cuts off

        await adapter.start(answers_then_routes_on, COMMANDS)
        try:
            await fake.push_slash_command("/new", "U1", DM)
            await fake.wait_for(lambda: routed and fake.acks)
            await adapter.stop_within(0.3)
        finally:
            await adapter.stop()
        assert answers(fake) == ["New session started."]


async def test_a_command_whose_answer_is_on_its_way_as_a_stop_cuts_it_off_is_told_nothing_more() -> None:
    async with FakeSlack() as fake:
        adapter = socket_adapter(fake, sink_timeout=0.2)
        answering: list[asyncio.Future[object]] = []
        release = fake.hold("response_url")

        async def answer_under_way(inbound: Inbound) -> None:
            answering.append(asyncio.ensure_future(adapter.send(reply(inbound, "Stopped."))))
            await asyncio.Event().wait()

        await adapter.start(answer_under_way, COMMANDS)
        try:
            await fake.push_slash_command("/new", "U1", DM)
            await fake.wait_for(lambda: fake.calls_to("response_url") and fake.acks)
            await adapter.stop_within(0.3)  # its own answers, held too, given up at its grace
            release.set()
            await asyncio.wait_for(answering[0], 5)
        finally:
            await adapter.stop()
        assert [c.params["text"] for c in fake.calls_to("response_url")] == ["Stopped."]
        assert answers(fake) == ["Stopped."]


async def test_a_command_cut_off_before_any_answer_is_still_told_it_may_come() -> None:
    async with FakeSlack() as fake:
        adapter = socket_adapter(fake, sink_timeout=0.2)
        routed: list[Inbound] = []

        async def routes_on(inbound: Inbound) -> None:
            routed.append(inbound)
            await asyncio.Event().wait()

        await adapter.start(routes_on, COMMANDS)
        try:
            await fake.push_slash_command("/new", "U1", DM)
            await fake.wait_for(lambda: routed and fake.acks)
            await adapter.stop_within(0.3)
        finally:
            await adapter.stop()
        assert answers(fake) == [MAY_BE_TAKEN.format(command="/new")]


class Bug(Exception):
    pass


@pytest.mark.parametrize("slow", [False, True], ids=["before the ack", "after the ack"])
async def test_a_command_the_gateway_fails_on_is_answered_that_it_could_not_be_handled(
        slow: bool, caplog: pytest.LogCaptureFixture) -> None:
    release = asyncio.Event()

    async def failing(inbound: Inbound) -> None:
        if slow:  # past sink_timeout: acknowledged first
            await release.wait()
        raise Bug("the command trips a bug")

    async with FakeSlack() as fake:
        adapter = socket_adapter(fake, sink_timeout=0.2)
        await adapter.start(failing, COMMANDS)
        try:
            with caplog.at_level(logging.INFO, logger="platforms.slack"):
                await fake.push_slash_command("/new", "U1", DM, "plan a trip")
                await fake.wait_for(lambda: fake.acks)
                release.set()
                await fake.wait_for(lambda: answers(fake))
        finally:
            await adapter.stop()
        assert answers(fake) == [NOT_HANDLED_NEW]
        [shown] = fake.ephemeral  # before the ack, in the ack itself (no call a stop could cut off)
        assert shown["response_type"] == "ephemeral" and shown["via"] == ("response_url" if slow else "ack")
    lines = [r for r in caplog.records if r.name == "platforms.slack"]
    [traceback] = [r.exc_info[1] for r in lines if r.exc_info]  # the bug's, once
    assert isinstance(traceback, Bug)
    assert any(r.getMessage() == "slack: /new from user U1 was dropped, the gateway failing on it; telling the user"
               for r in lines)


async def test_a_command_the_gateway_fails_on_over_http_is_answered_that_it_could_not_be_handled() -> None:
    async def failing(inbound: Inbound) -> None:
        raise Bug("the command trips a bug")

    async with FakeSlack() as fake:
        adapter = SlackAdapter(bot_token=fake.bot_token, mode="http", signing_secret=SECRET, api_base=fake.api_base)
        async with mounted(adapter) as url:
            fake.events_url, fake.signing_secret = url, SECRET
            await adapter.start(failing, COMMANDS)
            try:
                await fake.push_slash_command("/new", "U1", DM)
                await fake.wait_for(lambda: answers(fake))
            finally:
                await adapter.stop()
        assert answers(fake) == [NOT_HANDLED_NEW]
