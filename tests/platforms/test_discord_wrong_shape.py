"""A 2xx answer of valid JSON that is no message: ``{}``, a list, a bare string (a proxy in between, an API
that changed). discord.py raised building its Message of it (``KeyError: 'id'``, ``TypeError``), which the
adapter reported as a bad request: a post was dropped and never sent again although whatever answered said it
was done, and an edit was sent anew as a second message beside the one it had edited. Such an answer is now
read for the message's id, and taken as sent with it; without one it is a `NetworkError`, whether it was
carried out unknown: the outbox looks for the post by its nonce before it sends it again (one posted is
found, one not posted is sent), and makes the edit again, which changes nothing. The real discord.py client
against the loopback fake."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.outbox import Outbox
from gateway.store import GatewayStore
from platforms.base import BadRequest, CommandSpec, Inbound, NetworkError, Outbound, OutboundFile
from platforms.discord import DiscordAdapter
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads, running_discord

MESSAGES = "POST /channels/{channel_id}/messages"
EDIT = "PATCH /channels/{channel_id}/messages/{message_id}"
FOLLOW_UP = "POST /webhooks/{application_id}/{token}"
FIRST_ANSWER = "PATCH /webhooks/{application_id}/{token}/messages/{message_id}"
USER = 42
JSON = {"Content-Type": "application/json"}
WAIT = 5.0

fake = fake_discord()

NO_MESSAGE = pytest.mark.parametrize("body", ["{}", "[]", '"ok"', '{"id": "not a snowflake"}'],
                                     ids=["empty-object", "list", "string", "id-no-snowflake"])


running = running_discord(commands=(CommandSpec("stop", "stop"),))


@NO_MESSAGE
async def test_a_post_answered_200_with_json_that_is_no_message_is_a_network_error(
        fake: FakeDiscord, running: tuple[DiscordAdapter, list[Inbound]], body: str) -> None:
    adapter, _ = running
    fake.fail_next(MESSAGES, 200, headers=JSON, text=body, after=True)
    with pytest.raises(NetworkError, match="200"):
        await adapter.send(Outbound(fake.dm_channel(USER), None, "hello", idempotency_key="t1:0"))


async def test_a_post_answered_200_naming_the_message_id_is_sent(
        fake: FakeDiscord, running: tuple[DiscordAdapter, list[Inbound]]) -> None:
    """Discord made the message and said which: only the rest of its answer could not be read."""
    adapter, _ = running
    fake.fail_next(MESSAGES, 200, headers=JSON, text='{"id": "1234567890123456789", "type": "new"}', after=True)
    sent = await adapter.send(Outbound(fake.dm_channel(USER), None, "hello", idempotency_key="t1:0"))
    assert sent.message_id == "1234567890123456789"


async def test_a_file_answered_200_with_json_that_is_no_message_is_a_network_error(
        fake: FakeDiscord, running: tuple[DiscordAdapter, list[Inbound]], tmp_path: Path) -> None:
    adapter, _ = running
    path = tmp_path / "report.txt"
    path.write_bytes(b"data")
    fake.fail_next(MESSAGES, 200, headers=JSON, text="{}", after=True)
    with pytest.raises(NetworkError):
        await adapter.send_file(Outbound(fake.dm_channel(USER), None, "here", idempotency_key="f1:0"),
                                OutboundFile(path=str(path), name="report.txt", size=4))


@NO_MESSAGE
async def test_an_edit_answered_200_with_json_that_is_no_message_is_a_network_error(
        fake: FakeDiscord, running: tuple[DiscordAdapter, list[Inbound]], body: str) -> None:
    adapter, _ = running
    channel = fake.dm_channel(USER)
    sent = await adapter.send(Outbound(channel, None, "working", idempotency_key="t1:0"))
    fake.fail_next(EDIT, 200, headers=JSON, text=body, after=True)
    with pytest.raises(NetworkError):
        await adapter.edit(channel, None, sent.message_id, "done")


async def test_a_real_bad_request_is_still_one(
        fake: FakeDiscord, running: tuple[DiscordAdapter, list[Inbound]]) -> None:
    """A refusal before any answer (discord.py's own checks) is no 2xx taken for one."""
    adapter, _ = running
    channel = fake.dm_channel(USER)
    await adapter.send(Outbound(channel, None, "hello", idempotency_key="t1:0"))  # a 2xx read in full first
    fake.fail_next(MESSAGES, 400, code=50006, message="Cannot send an empty message")
    with pytest.raises(BadRequest):
        await adapter.send(Outbound(channel, None, "again", idempotency_key="t2:0"))


async def test_answers_to_a_command_answered_200_with_json_that_is_no_message_are_network_errors(
        fake: FakeDiscord, running: tuple[DiscordAdapter, list[Inbound]]) -> None:
    """Through discord.py's webhook code: the first answer (replacing "thinking…") and a follow-up."""
    adapter, got = running
    fake.push_interaction("stop", USER)
    await fake.wait_for(lambda: got)
    [command] = got
    fake.fail_next(FIRST_ANSWER, 200, headers=JSON, text="{}", after=True)
    with pytest.raises(NetworkError):
        await adapter.send(Outbound(command.chat_id, None, "Stopped.", idempotency_key="c1:0",
                                    reply_token=command.reply_token))
    await adapter.send(Outbound(command.chat_id, None, "Stopped.", idempotency_key="c1:0",
                                reply_token=command.reply_token))  # the outbox's next try: the same edit
    fake.fail_next(FOLLOW_UP, 200, headers=JSON, text="[]", after=True)
    with pytest.raises(NetworkError):
        await adapter.send(Outbound(command.chat_id, None, "More.", idempotency_key="c2:0",
                                    reply_token=command.reply_token))


@pytest.mark.parametrize("posted", [True, False], ids=["posted", "not-posted"])
async def test_the_outbox_sends_a_part_answered_200_with_no_message_once(
        fake: FakeDiscord, tmp_path: Path, posted: bool) -> None:
    """Posted (Discord's answer mangled on its way back): found by its nonce, not posted again, and settled
    with its real id; not posted (the answer was not Discord's): sent again. Once in the chat either way."""
    adapter = adapter_for(fake)
    await adapter.start(_ignore)
    store = GatewayStore(tmp_path / "state.db")
    outbox = Outbox(store.outbox, {"discord": adapter})
    await outbox.start()
    channel = fake.dm_channel(USER)
    try:
        fake.fail_next(MESSAGES, 200, headers=JSON, text="{}", after=posted)
        outbox.enqueue("discord", channel, None, "hello", kind="final", key="t1")
        sent = await outbox.wait_sent("t1:0", timeout=WAIT)
    finally:
        await outbox.close()
        store.close()
        await adapter.stop()
        await join_heartbeat_threads()
    assert [(m.id, m.content) for m in fake.bot_messages(channel)] == [(sent, "hello")]


async def test_the_outbox_does_not_send_an_edit_answered_200_with_no_message_as_a_new_message(
        fake: FakeDiscord, tmp_path: Path) -> None:
    adapter = adapter_for(fake)
    await adapter.start(_ignore)
    store = GatewayStore(tmp_path / "state.db")
    outbox = Outbox(store.outbox, {"discord": adapter})
    await outbox.start()
    channel = fake.dm_channel(USER)
    try:
        outbox.enqueue("discord", channel, None, "working", kind="final", key="t1")
        first = await outbox.wait_sent("t1:0", timeout=WAIT)
        fake.fail_next(EDIT, 200, headers=JSON, text="{}", after=True)
        [edit] = outbox.enqueue_edit("discord", channel, None, "t1:0", "done", key="e1")
        edited = await outbox.wait_sent(edit, timeout=WAIT)
    finally:
        await outbox.close()
        store.close()
        await adapter.stop()
        await join_heartbeat_threads()
    assert edited == first
    assert [(m.id, m.content) for m in fake.bot_messages(channel)] == [(first, "done")]


async def _ignore(_inbound: Inbound) -> None:
    return None
