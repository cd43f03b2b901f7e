"""The answer that the gateway could not handle a slash command (`NOT_HANDLED`: it failed on it, a bug not a full
disk, and dropped it) against a stop of the adapter. It was sent as background work, which the stop cancels: a
stop that came while it was on its way cut it off, and the user, shown nothing for the empty acknowledgement, got
nothing. Now one the gateway failed on before the acknowledgement is said in the acknowledgement itself (no call
of its own; slack-bolt's ``ack(text=...)``, over Socket Mode as over HTTP), and one it failed on after is an
answer the stop waits for within its time, as for its own answers. The real slack-bolt / slack-sdk clients on
the loopback FakeSlack."""

from __future__ import annotations

import asyncio

from platforms.base import CommandSpec, Inbound
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from platforms.slack_commands import NOT_HANDLED

COMMANDS = [CommandSpec("new", "New session")]
DM = "DU1"
NOT_HANDLED_NEW = NOT_HANDLED.format(command="/new")


class Bug(Exception):
    pass


def command_acked(fake: FakeSlack) -> bool:
    return any(e.type == "slash_commands" and e.acked for e in fake.envelopes.values())


def socket_adapter(fake: FakeSlack) -> SlackAdapter:
    return SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base,
                        ping_interval=10.0, sink_timeout=0.2)


async def test_a_command_failed_on_before_its_ack_is_told_so_in_the_ack_which_a_stop_cannot_cut_off() -> None:
    async def failing(inbound: Inbound) -> None:
        raise Bug("the command trips a bug")

    async with FakeSlack() as fake:
        release = fake.hold("response_url")  # an answer sent apart stays in flight until the stop
        adapter = socket_adapter(fake)
        await adapter.start(failing, COMMANDS)
        try:
            await fake.push_slash_command("/new", "U1", DM)
            await fake.wait_for(lambda: command_acked(fake))
            await adapter.stop_within(0.3)
            assert [(e["text"], e["via"]) for e in fake.ephemeral] == [(NOT_HANDLED_NEW, "ack")]
            assert fake.calls_to("response_url") == []
        finally:
            release.set()
            await adapter.stop()


async def test_a_command_failed_on_after_its_ack_is_told_so_though_a_stop_comes_as_the_answer_is_on_its_way() -> None:
    release_sink = asyncio.Event()

    async def failing_late(inbound: Inbound) -> None:
        await release_sink.wait()  # past sink_timeout: acknowledged first
        raise Bug("the command trips a bug")

    async with FakeSlack() as fake:
        release = fake.hold("response_url")
        adapter = socket_adapter(fake)
        await adapter.start(failing_late, COMMANDS)
        stop: asyncio.Future[None] | None = None
        try:
            await adapter.typing(DM, None)  # a placeholder: the stop deletes it as it sends its last answers
            await fake.wait_for(lambda: fake.calls_to("chat.postMessage"))
            await fake.push_slash_command("/new", "U1", DM)
            await fake.wait_for(lambda: command_acked(fake))  # not the placeholder's echo
            release_sink.set()
            await fake.wait_for(lambda: fake.calls_to("response_url"))  # the answer, on its way
            stop = asyncio.ensure_future(adapter.stop_within(5.0))
            await fake.wait_for(lambda: fake.calls_to("chat.delete"))  # the stop is past its background work
            release.set()
            await asyncio.wait_for(stop, 5.0)
            assert fake.hung_up == []
            assert [(e["text"], e["via"]) for e in fake.ephemeral] == [(NOT_HANDLED_NEW, "response_url")]
        finally:
            release.set()
            if stop is not None:
                await asyncio.gather(stop, return_exceptions=True)
            await adapter.stop()
