"""An answer labelled ``application/json`` whose body is no JSON: a proxy's 502 page sent with the wrong
Content-Type, a body cut short. discord.py parsed it before looking at the status and raised a
``JSONDecodeError``, which the adapter reported as a bad request: the part was dropped, never sent again,
though nothing said the platform refused it. It is a `NetworkError` (whether the call was carried out is
unknown), which the outbox tries again, looking for the post first; a real 400 of Discord's JSON stays a
`BadRequest`. The real discord.py client against the loopback fake."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.outbox import Outbox
from gateway.store import GatewayStore
from platforms.base import BadRequest, CommandSpec, Inbound, NetworkError, Outbound
from platforms.discord import DiscordAdapter
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads, running_discord

MESSAGES = "POST /channels/{channel_id}/messages"
EDIT = "PATCH /channels/{channel_id}/messages/{message_id}"
FOLLOW_UP = "POST /webhooks/{application_id}/{token}"
USER = 42
JSON = {"Content-Type": "application/json"}
PROXY_PAGE = "<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"
WAIT = 5.0

fake = fake_discord()

UNREADABLE = pytest.mark.parametrize(("status", "text", "after"), [
    (502, PROXY_PAGE, False),
    (503, "", False),  # empty: no JSON either, to discord.py
    (200, '{"id": "1', True),  # cut short: the message was posted all the same
], ids=["502-page", "503-empty", "200-cut-short"])


running = running_discord(commands=(CommandSpec("stop", "stop"),))


@UNREADABLE
async def test_a_post_answered_with_a_body_that_is_no_json_is_a_network_error(
        fake: FakeDiscord, running: tuple[DiscordAdapter, list[Inbound]], status: int, text: str,
        after: bool) -> None:
    adapter, _ = running
    channel = fake.dm_channel(USER)
    fake.fail_next(MESSAGES, status, headers=JSON, text=text, after=after)
    with pytest.raises(NetworkError):
        await adapter.send(Outbound(channel, None, "hello", idempotency_key="t1:0"))


@UNREADABLE
async def test_an_edit_answered_with_a_body_that_is_no_json_is_a_network_error(
        fake: FakeDiscord, running: tuple[DiscordAdapter, list[Inbound]], status: int, text: str,
        after: bool) -> None:
    adapter, _ = running
    channel = fake.dm_channel(USER)
    sent = await adapter.send(Outbound(channel, None, "working", idempotency_key="t1:0"))
    fake.fail_next(EDIT, status, headers=JSON, text=text, after=after)
    with pytest.raises(NetworkError):
        await adapter.edit(channel, None, sent.message_id, "done")
    await adapter.edit(channel, None, sent.message_id, "done")  # the outbox's next try
    assert [m.content for m in fake.bot_messages(channel)] == ["done"]


async def test_a_follow_up_answered_with_a_200_cut_short_is_a_network_error(
        fake: FakeDiscord, running: tuple[DiscordAdapter, list[Inbound]]) -> None:
    """Through discord.py's webhook code (an answer to a command), which parses the body the same way."""
    adapter, got = running
    fake.push_interaction("stop", USER)
    await fake.wait_for(lambda: got)
    [command] = got
    await adapter.send(Outbound(command.chat_id, None, "Stopped.", idempotency_key="c1:0",
                                reply_token=command.reply_token))
    fake.fail_next(FOLLOW_UP, 200, headers=JSON, text='{"id": "1', after=True)
    with pytest.raises(NetworkError):
        await adapter.send(Outbound(command.chat_id, None, "More.", idempotency_key="c2:0",
                                    reply_token=command.reply_token))


async def test_a_real_400_of_discords_json_is_still_a_bad_request(
        fake: FakeDiscord, running: tuple[DiscordAdapter, list[Inbound]]) -> None:
    adapter, _ = running
    fake.fail_next(MESSAGES, 400, code=50006, message="Cannot send an empty message")
    with pytest.raises(BadRequest):
        await adapter.send(Outbound(fake.dm_channel(USER), None, "hello", idempotency_key="t1:0"))


@UNREADABLE
async def test_the_outbox_sends_a_part_answered_with_no_json_once(
        fake: FakeDiscord, tmp_path: Path, status: int, text: str, after: bool) -> None:
    """Tried again rather than dropped; one posted though its answer was cut short is found by its nonce,
    not posted twice."""
    adapter = adapter_for(fake)
    await adapter.start(_ignore)
    store = GatewayStore(tmp_path / "state.db")
    outbox = Outbox(store.outbox, {"discord": adapter})
    await outbox.start()
    channel = fake.dm_channel(USER)
    try:
        fake.fail_next(MESSAGES, status, headers=JSON, text=text, after=after)
        outbox.enqueue("discord", channel, None, "hello", kind="final", key="t1")
        sent = await outbox.wait_sent("t1:0", timeout=WAIT)
    finally:
        await outbox.close()
        store.close()
        await adapter.stop()
        await join_heartbeat_threads()
    assert [(m.id, m.content) for m in fake.bot_messages(channel)] == [(sent, "hello")]


async def _ignore(_inbound: Inbound) -> None:
    return None
