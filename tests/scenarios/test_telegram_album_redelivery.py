"""A Telegram album delivered again to a webhook, its items apart: the gateway recorded it (its
requests' answers were lost, say to a SIGKILL), and Telegram delivers each item again on its own,
more than the album's wait apart. Each item then gathers alone, under an event id of its own: the
inbox knows it by the ids of every item the album was made of (`Inbound.aliases`), so the album
is answered once. An item that was never part of a recorded album is still a message of its own."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from agent.models.scripted import ScriptedModel
from gateway.app import Gateway
from gateway.host import AgentHost
from gateway.server import Server
from gateway.testing import make_config, settled
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter
from tests.pictures import PNG  # decoded, without vision too: bytes that only start like one are listed as files


@contextlib.asynccontextmanager
async def webhook_gateway(fake: FakeTelegram, tmp_path, model: ScriptedModel) -> AsyncIterator[TelegramAdapter]:
    """A gateway on ``tmp_path``'s state directory, Telegram in webhook mode on its own server."""
    config = make_config(tmp_path, platforms={"telegram": {"allow_all": True}})
    adapter = TelegramAdapter(fake.token, api_base=fake.base_url, mode="webhook", webhook_url="http://127.0.0.1/tg",
                              webhook_secret="s3cret")
    gateway = Gateway(AgentHost(config, model=model), [adapter])
    server = Server(gateway, "127.0.0.1", 0)
    await server.start()
    adapter.webhook_url = f"{server.url}/tg"  # now that the server has its port
    try:
        await gateway.start()
        yield adapter
        await settled(gateway)
    finally:
        await gateway.stop(grace=0)
        await server.stop()


def texts(fake: FakeTelegram) -> list[str]:
    return [m["text"] for m in fake.messages["42"]]


def photos_seen(model: ScriptedModel) -> list[int]:
    """How many photos each of the user's messages in the conversation named (the scripted model sees
    no images: each is named by its path)."""
    said = [m for m in model.requests[-1].messages if m["role"] == "user"]
    return [str(m["content"]).count("[Image attached at") for m in said]


async def test_an_album_delivered_again_item_by_item_after_a_restart_is_answered_once(tmp_path):
    model = ScriptedModel({"parent": [[{"text": "got it"}], [{"text": "answered twice"}]]})
    async with FakeTelegram() as fake:
        updates = fake.album_updates(42, [PNG, PNG + b"2", PNG + b"3"], caption="compare these")
        async with webhook_gateway(fake, tmp_path, model):
            assert await asyncio.gather(*(fake.deliver_webhook(u) for u in updates)) == [200] * 3
            await fake.wait_for(lambda: fake.messages["42"])
        # Restarted on the same state (as after the SIGKILL that lost the 200s): Telegram delivers each
        # item again, the next only once the one before was answered, so each gathers alone.
        async with webhook_gateway(fake, tmp_path, model) as adapter:
            adapter.webhook_albums.wait = 0.0
            for update in updates:
                assert await fake.deliver_webhook(update) == 200
    assert texts(fake) == ["got it"]
    assert len(model.requests) == 1


async def test_an_item_of_the_album_never_recorded_with_it_is_a_message_of_its_own(tmp_path):
    model = ScriptedModel({"parent": [[{"text": "two photos"}], [{"text": "and a third"}]]})
    async with FakeTelegram() as fake:
        first = fake.album_updates(42, [PNG, PNG + b"2"], caption="compare these", media_group_id="g1")
        late = fake.album_updates(42, [PNG + b"3"], media_group_id="g1")  # came after the album was handed over
        async with webhook_gateway(fake, tmp_path, model) as adapter:
            assert await asyncio.gather(*(fake.deliver_webhook(u) for u in first)) == [200, 200]
            await fake.wait_for(lambda: fake.messages["42"])
            adapter.webhook_albums.wait = 0.0
            assert await fake.deliver_webhook(late[0]) == 200
            await fake.wait_for(lambda: len(fake.messages["42"]) == 2)
            assert await fake.deliver_webhook(first[1]) == 200  # a lost 200: delivered again, alone
    assert texts(fake) == ["two photos", "and a third"]
    assert photos_seen(model) == [2, 1]


async def test_an_album_delivered_again_with_an_item_never_recorded_loses_nothing(tmp_path):
    # The item that was not recorded (its request failed) comes again gathered with one that was:
    # the gateway cannot take the known item's photo out of the message, so it is answered again
    # with it, rather than dropping the new one.
    model = ScriptedModel({"parent": [[{"text": "two photos"}], [{"text": "two again"}]]})
    async with FakeTelegram() as fake:
        items = fake.album_updates(42, [PNG, PNG + b"2", PNG + b"3"], caption="compare these", media_group_id="g1")
        async with webhook_gateway(fake, tmp_path, model) as adapter:
            assert await asyncio.gather(*(fake.deliver_webhook(u) for u in items[:2])) == [200, 200]
            await fake.wait_for(lambda: fake.messages["42"])
            assert await asyncio.gather(*(fake.deliver_webhook(u) for u in items[1:])) == [200, 200]
            await fake.wait_for(lambda: len(fake.messages["42"]) == 2)
            adapter.webhook_albums.wait = 0.0
            for update in items:  # every one of them known now
                assert await fake.deliver_webhook(update) == 200
    assert texts(fake) == ["two photos", "two again"]
    assert photos_seen(model) == [2, 2]
