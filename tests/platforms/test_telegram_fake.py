"""FakeTelegram on its own: Bot API shapes, long polling, offsets, faults, webhook delivery, CLI."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiogram import Bot
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer
from aiogram.exceptions import TelegramBadRequest
from aiogram.types import ReplyParameters
from aiohttp import ClientSession, web

from platforms.fakes._telegram_replies import NOT_FOUND
from platforms.fakes.telegram import FakeTelegram

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram("42:TOKEN", username="test_bot") as fake:
        yield fake


async def call(http: ClientSession, fake: FakeTelegram, method: str, **params: Any) -> tuple[int, dict[str, Any]]:
    data = {k: str(v) for k, v in params.items()}
    async with http.post(f"{fake.base_url}/bot{fake.token}/{method}", data=data) as resp:
        return resp.status, await resp.json()


async def test_get_me_and_envelope(fake: FakeTelegram, http: ClientSession) -> None:
    status, body = await call(http, fake, "getMe")
    assert status == 200 and body["ok"] is True
    assert body["result"]["id"] == 42 and body["result"]["username"] == "test_bot"
    assert fake.calls == [("getMe", {})]


async def test_unknown_token_and_method(fake: FakeTelegram, http: ClientSession) -> None:
    async with http.post(f"{fake.base_url}/bot1:other/getMe") as resp:
        assert resp.status == 401
        assert await resp.json() == {"ok": False, "error_code": 401, "description": "Unauthorized"}
    status, body = await call(http, fake, "sendSticker", chat_id=1)
    assert (status, body["error_code"]) == (404, 404)


async def test_json_bodies_are_accepted_too(fake: FakeTelegram, http: ClientSession) -> None:
    async with http.post(f"{fake.base_url}/bot{fake.token}/sendMessage", json={"chat_id": 5, "text": "hi"}) as resp:
        assert (await resp.json())["result"]["text"] == "hi"
    assert fake.messages["5"][0]["text"] == "hi"


async def test_offsets_confirm_and_unconfirmed_updates_come_back(fake: FakeTelegram, http: ClientSession) -> None:
    first = fake.push_message(7, "one")
    second = fake.push_message(7, "two")
    _, body = await call(http, fake, "getUpdates")
    assert [u["update_id"] for u in body["result"]] == [first, second]
    _, body = await call(http, fake, "getUpdates")  # nothing confirmed: served again
    assert [u["update_id"] for u in body["result"]] == [first, second]
    _, body = await call(http, fake, "getUpdates", offset=second, limit=1)
    assert [u["update_id"] for u in body["result"]] == [second]
    _, body = await call(http, fake, "getUpdates", offset=second + 1)
    assert body["result"] == [] and fake.pending == []


async def test_long_poll_wakes_on_push_and_times_out(fake: FakeTelegram, http: ClientSession) -> None:
    loop = asyncio.get_running_loop()
    poll = asyncio.create_task(call(http, fake, "getUpdates", timeout=30))
    await fake.wait_for(lambda: fake.calls_to("getUpdates"))
    update_id = fake.push_message(7, "wake up")
    _, body = await asyncio.wait_for(poll, 2)
    assert [u["update_id"] for u in body["result"]] == [update_id]
    started = loop.time()
    _, body = await call(http, fake, "getUpdates", offset=update_id + 1, timeout=0)
    assert body["result"] == [] and loop.time() - started < 1


async def test_a_second_poller_ends_the_first_with_409(fake: FakeTelegram, http: ClientSession) -> None:
    first = asyncio.create_task(call(http, fake, "getUpdates", timeout=30))
    await fake.wait_for(lambda: fake.calls_to("getUpdates"))
    second = asyncio.create_task(call(http, fake, "getUpdates", timeout=30))
    status, body = await asyncio.wait_for(first, 2)
    assert status == 409 and "terminated by other getUpdates request" in body["description"]
    fake.push_message(7, "x")
    assert (await asyncio.wait_for(second, 2))[0] == 200


async def test_close_ends_waiting_polls_quickly() -> None:
    fake = await FakeTelegram().start()
    async with ClientSession() as http:
        poll = asyncio.create_task(call(http, fake, "getUpdates", timeout=30))
        await fake.wait_for(lambda: fake.calls_to("getUpdates"))
        await asyncio.wait_for(fake.close(), 2)
        _, body = await asyncio.wait_for(poll, 2)
    assert body["result"] == []


async def test_entities_are_derived_in_utf16(fake: FakeTelegram) -> None:
    update = fake.message_update(-5, "/stop@test_bot 😀 @someone", chat_type="group")
    assert update["message"]["entities"] == [
        {"type": "bot_command", "offset": 0, "length": 14},
        {"type": "mention", "offset": 18, "length": 8},
    ]
    assert "entities" not in fake.message_update(1, "plain", entities=[])["message"]


@pytest.mark.parametrize(("text", "commands"), [
    ("/stop@test_bot, please", ["/stop@test_bot"]),  # a username ends where its characters do
    ("/new.", ["/new"]),
    ("see /help or /start@test_bot", ["/help", "/start@test_bot"]),  # anywhere in the text
    ("/stop@ab /stop@ /stopé /a/b and/or </x>", []),  # a username of 2, none, a letter or a slash after it
    ("/" + "x" * 65, []),  # longer than 64
])
async def test_bot_commands_are_derived_as_telegram_finds_them(fake: FakeTelegram, text: str,
                                                               commands: list[str]) -> None:
    # As TDLib's match_bot_commands (td/telegram/MessageEntity.cpp).
    entities = fake.message_update(1, text)["message"].get("entities", [])
    assert [text[e["offset"]:e["offset"] + e["length"]] for e in entities if e["type"] == "bot_command"] == commands


async def test_reply_to_bot_points_at_the_bots_last_message(fake: FakeTelegram, http: ClientSession) -> None:
    await call(http, fake, "sendMessage", chat_id=-5, text="I said this")
    reply = fake.message_update(-5, "and I answer", chat_type="group", reply_to_bot=True)["message"]
    assert reply["reply_to_message"]["from"]["id"] == 42
    assert reply["reply_to_message"]["text"] == "I said this"
    assert reply["message_id"] > reply["reply_to_message"]["message_id"]


async def test_send_edit_delete_and_their_errors(fake: FakeTelegram, http: ClientSession) -> None:
    status, body = await call(http, fake, "sendMessage", chat_id=7, text="hello", disable_notification="true")
    message_id = body["result"]["message_id"]
    assert body["result"]["chat"] == {"id": 7, "type": "private", "first_name": "User"}
    assert fake.messages["7"][0]["silent"] is True
    _, body = await call(http, fake, "editMessageText", chat_id=7, message_id=message_id, text="hello")
    assert body["description"].startswith("Bad Request: message is not modified")
    _, body = await call(http, fake, "editMessageText", chat_id=7, message_id=message_id, text="bye")
    assert body["result"]["text"] == "bye" and fake.messages["7"][0]["edits"] == ["bye"]
    _, body = await call(http, fake, "editMessageText", chat_id=7, message_id=99, text="x")
    assert body["description"] == "Bad Request: message to edit not found"
    _, body = await call(http, fake, "sendMessage", chat_id=7, text="")
    assert body["description"] == "Bad Request: message text is empty"
    _, body = await call(http, fake, "sendMessage", chat_id=7, text="😀" * 2049)
    assert (body["error_code"], body["description"]) == (400, "Bad Request: message is too long")
    assert (await call(http, fake, "deleteMessage", chat_id=7, message_id=message_id))[1]["result"] is True
    assert fake.messages["7"] == []


@pytest.mark.parametrize(("href", "url"), [
    ("https://example.com/a", "https://example.com/a"),
    ("tg://resolve?domain=test_bot", "tg://resolve?domain=test_bot"),
    # Read as an http address, as TDLib reads it: user "mailto:help" at the web site example.com.
    ("mailto:help@example.com", "http://mailto:help@example.com/"),
    ("mailto:help@localhost", None),  # a host without a dot: no link
    ("ftp://example.com/f", None),  # a scheme other than http(s), tg or ton
    ("javascript:alert(1)", None),  # "alert(1)" read as a port
])
async def test_a_link_goes_where_telegram_sends_it_or_nowhere(fake: FakeTelegram, http: ClientSession, href: str,
                                                            url: str | None) -> None:
    # Telegram answers none of these with an error: a link it cannot read is plain text.
    status, body = await call(http, fake, "sendMessage", chat_id=7, text=f'<a href="{href}">write us</a>',
                              parse_mode="HTML")
    assert (status, body["result"]["text"]) == (200, "write us")
    assert [e["url"] for e in body["result"].get("entities", [])] == ([url] if url else [])


async def test_fail_next_has_bot_api_shape_and_is_one_shot(fake: FakeTelegram, http: ClientSession) -> None:
    fake.fail_next("sendMessage", 429, retry_after=3)
    status, body = await call(http, fake, "sendMessage", chat_id=7, text="x")
    assert status == 429
    assert body == {
        "ok": False,
        "error_code": 429,
        "description": "Too Many Requests: retry after 3",
        "parameters": {"retry_after": 3},
    }
    assert (await call(http, fake, "sendMessage", chat_id=7, text="x"))[0] == 200
    fake.fail_next("sendmessage", 403)  # method names are case-insensitive, as on Telegram
    assert (await call(http, fake, "sendMessage", chat_id=7, text="x"))[1]["description"] == (
        "Forbidden: bot was blocked by the user"
    )


async def test_an_upgraded_group_refuses_writes_with_the_supergroups_id(fake: FakeTelegram,
                                                                        http: ClientSession) -> None:
    _, body = await call(http, fake, "sendMessage", chat_id=-4001, text="before")
    written_before = body["result"]["message_id"]
    new = fake.upgrade_group(-4001)
    assert str(new).startswith("-100") and fake.upgraded == {"-4001": new}
    upgraded = {"ok": False, "error_code": 400,
                "description": "Bad Request: group chat was upgraded to a supergroup chat",
                "parameters": {"migrate_to_chat_id": new}}
    for method, params in (("sendMessage", {"text": "after"}), ("sendChatAction", {"action": "typing"}),
                           ("deleteMessage", {"message_id": written_before})):
        assert await call(http, fake, method, chat_id=-4001, **params) == (400, upgraded)
    _, body = await call(http, fake, "editMessageText", chat_id=-4001, message_id=written_before, text="changed")
    assert body["description"] == "Bad Request: message can't be edited"  # no migrate_to_chat_id for edits
    assert [m["text"] for m in fake.messages["-4001"]] == ["before"]  # nothing refused took effect
    _, body = await call(http, fake, "sendMessage", chat_id=new, text="there")
    assert body["result"]["chat"] == {"id": new, "type": "supergroup", "title": "Group -4001"}
    assert [m["text"] for m in fake.messages[str(new)]] == ["there"]


async def test_an_upgrade_is_announced_in_both_chats(fake: FakeTelegram, http: ClientSession) -> None:
    fake.message_update(-4001, "hello", chat_type="group")  # the group as the bot saw it
    new = fake.upgrade_group(-4001, supergroup_id=-1009)
    ids = fake.push_upgrade_updates(-4001, user_id=5, username="bob")
    _, body = await call(http, fake, "getUpdates")
    assert [u["update_id"] for u in body["result"]] == ids
    left, first = (u["message"] for u in body["result"])
    assert (left["chat"]["type"], left["migrate_to_chat_id"], left["from"]["id"]) == ("group", new, 5)
    assert (first["chat"]["id"], first["chat"]["type"], first["migrate_from_chat_id"]) == (new, "supergroup", -4001)
    assert first["message_id"] == 1 and first["chat"]["title"] == left["chat"]["title"] == "Group -4001"
    assert "text" not in left and "text" not in first


async def test_drop_next_before_and_after_processing(fake: FakeTelegram, http: ClientSession) -> None:
    fake.drop_next("sendMessage")
    fake.drop_next("sendMessage", after_processing=True)
    for _ in range(2):
        with pytest.raises(Exception, match="disconnected"):
            await call(http, fake, "sendMessage", chat_id=7, text="lost?")
    assert [m["text"] for m in fake.messages["7"]] == ["lost?"]  # the second one got through


async def test_held_calls_wait_for_release_then_answer_as_scripted(fake: FakeTelegram, http: ClientSession) -> None:
    fake.hold("sendMessage")
    fake.fail_next("sendMessage", 500)
    first = asyncio.ensure_future(call(http, fake, "sendMessage", chat_id=7, text="one"))
    await fake.wait_for(lambda: fake.calls_to("sendMessage"))
    second = asyncio.ensure_future(call(http, fake, "sendMessage", chat_id=7, text="two"))
    await fake.wait_for(lambda: len(fake.calls_to("sendMessage")) == 2)
    assert (await call(http, fake, "getMe"))[0] == 200  # other methods are not held
    assert not first.done() and not second.done() and not fake.messages["7"]
    fake.release("sendMessage")
    assert [(await first)[0], (await second)[0]] == [500, 200]
    assert (await call(http, fake, "sendMessage", chat_id=7, text="three"))[0] == 200  # no longer held
    assert [m["text"] for m in fake.messages["7"]] == ["two", "three"]


async def test_webhooks_block_polling_and_deliver_with_secret(fake: FakeTelegram, http: ClientSession) -> None:
    seen: list[tuple[str | None, dict[str, Any]]] = []

    async def receive(request: web.Request) -> web.Response:
        seen.append((request.headers.get("X-Telegram-Bot-Api-Secret-Token"), await request.json()))
        return web.json_response({})

    app = web.Application()
    app.router.add_post("/hook", receive)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        url = f"http://127.0.0.1:{runner.addresses[0][1]}/hook"
        _, body = await call(http, fake, "setWebhook", url=url, secret_token="bad secret!")
        assert body["error_code"] == 400
        assert (await call(http, fake, "setWebhook", url=url, secret_token="ok_1"))[1]["result"] is True
        status, body = await call(http, fake, "getUpdates")
        assert status == 409 and "webhook is active" in body["description"]
        update = fake.message_update(7, "hi")
        assert await fake.deliver_webhook(update) == 200
        assert await fake.deliver_webhook(update, secret=None) == 200
        assert seen == [("ok_1", update), (None, update)]
        assert (await call(http, fake, "getWebhookInfo"))[1]["result"]["url"] == url
        await call(http, fake, "deleteWebhook")
        assert fake.webhook_url is None and (await call(http, fake, "getUpdates"))[0] == 200
    finally:
        await runner.cleanup()


async def test_commands_roundtrip(fake: FakeTelegram, http: ClientSession) -> None:
    await call(http, fake, "setMyCommands", commands='[{"command": "stop", "description": "Stop"}]')
    assert (await call(http, fake, "getMyCommands"))[1]["result"] == [{"command": "stop", "description": "Stop"}]


async def test_control_routes(fake: FakeTelegram, http: ClientSession) -> None:
    async with http.post(f"{fake.base_url}/fake/push_message", json={"chat_id": 9, "text": "hey"}) as resp:
        update_id = (await resp.json())["result"]["update_id"]
    async with http.get(f"{fake.base_url}/fake/state") as resp:
        state = await resp.json()
    assert state["pending"][0]["update_id"] == update_id
    assert state["pending"][0]["message"]["text"] == "hey"


async def test_wait_for_times_out(fake: FakeTelegram) -> None:
    with pytest.raises(TimeoutError):
        await fake.wait_for(lambda: False, timeout=0.05)


async def test_command_line_serves_until_interrupted() -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "platforms.fakes.telegram", "--port", "0", "--token", "5:CLI",
        cwd=ROOT, stdout=asyncio.subprocess.PIPE, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        base_url = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode().strip()
        assert base_url.startswith("http://127.0.0.1:")
        async with ClientSession() as http, http.post(f"{base_url}/bot5:CLI/getMe") as resp:
            assert (await resp.json())["result"]["id"] == 5
    finally:
        proc.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(proc.wait(), 10) == 0


async def test_replies_as_telegram_takes_them_new_and_old_fields_alike(fake: FakeTelegram) -> None:
    bot = Bot(fake.token, session=AiohttpSession(api=TelegramAPIServer.from_base(fake.base_url)))
    try:
        update = fake.message_update(-100, "@test_bot how big?", chat_type="supergroup", user_id=5)
        fake.push_update(update)
        asked = update["message"]["message_id"]
        sent = await bot.send_message(-100, "big", reply_parameters=ReplyParameters(message_id=asked))
        assert sent.reply_to_message is not None and sent.reply_to_message.text == "@test_bot how big?"
        old = await bot.send_message(-100, "to my own", reply_to_message_id=sent.message_id)  # the older field
        assert old.reply_to_message is not None and old.reply_to_message.message_id == sent.message_id
        fake.delete_user_message(-100, asked)
        for gone in (ReplyParameters(message_id=asked), None):
            with pytest.raises(TelegramBadRequest, match="message to be replied not found"):
                await bot.send_message(-100, "lost", reply_parameters=gone,
                                       reply_to_message_id=None if gone else asked)
        anyway = await bot.send_message(-100, "anyway", reply_parameters=ReplyParameters(
            message_id=asked, allow_sending_without_reply=True))
        legacy = await bot.send_message(-100, "legacy", reply_to_message_id=asked, allow_sending_without_reply=True)
        assert anyway.reply_to_message is None and legacy.reply_to_message is None
        assert [(m["text"], m["reply_to"]) for m in fake.messages["-100"]] == [
            ("big", asked), ("to my own", sent.message_id), ("anyway", None), ("legacy", None)]
    finally:
        await bot.session.close()


async def test_reply_parameters_are_read_as_an_object_in_json_and_refused_when_garbled(
        fake: FakeTelegram, http: ClientSession) -> None:
    # Telegram takes a JSON body too, where reply_parameters is an object, not a JSON string.
    update = fake.message_update(-100, "@test_bot how big?", chat_type="supergroup", user_id=5)
    fake.push_update(update)
    asked = update["message"]["message_id"]
    url = f"{fake.base_url}/bot{fake.token}/sendMessage"
    async with http.post(url, json={"chat_id": -100, "text": "big", "reply_parameters": {"message_id": asked}}) as resp:
        assert resp.status == 200
        assert (await resp.json())["result"]["reply_to_message"]["message_id"] == asked
    fake.delete_user_message(-100, asked)
    async with http.post(url, json={"chat_id": -100, "text": "x", "reply_parameters": {"message_id": asked}}) as resp:
        assert (resp.status, (await resp.json())["description"]) == (400, NOT_FOUND)
    async with http.post(url, data={"chat_id": "-100", "text": "garbled", "reply_parameters": "{message_id"}) as resp:
        assert (resp.status, (await resp.json())["description"]) == (
            400, "Bad Request: can't parse reply parameters JSON object")
