"""TelegramAdapter: the real aiogram client against FakeTelegram over loopback HTTP."""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import AsyncIterator

import pytest
from aiogram import Bot
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer
from aiohttp import web

from platforms.base import (
    Adapter,
    BadRequest,
    CommandSpec,
    DeliveryError,
    EditUnsupported,
    Forbidden,
    Inbound,
    MessageTooLong,
    NetworkError,
    NotFound,
    Outbound,
    RateLimited,
    Unauthorized,
)
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter
from tests.platforms.telegram_webhook import webhook_adapter
from tests.sqlite_errors import full_disk

BOT = "switchboard_bot"
COMMANDS = [CommandSpec("stop", "Stop the current turn"), CommandSpec("new", "Start a new session")]


class Sink:
    """Records what the adapter hands to the gateway."""

    def __init__(self) -> None:
        self.inbound: list[Inbound] = []

    async def __call__(self, inbound: Inbound) -> None:
        self.inbound.append(inbound)

    def texts(self) -> list[str]:
        return [i.text for i in self.inbound]


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(username=BOT) as fake:
        yield fake


@pytest.fixture
async def adapter(fake: FakeTelegram) -> AsyncIterator[TelegramAdapter]:
    adapter = TelegramAdapter(fake.token, api_base=fake.base_url)
    yield adapter
    await adapter.stop()


@pytest.fixture
async def sink(adapter: TelegramAdapter) -> Sink:
    sink = Sink()
    await adapter.start(sink, COMMANDS)
    return sink


async def test_protocol_surface(adapter: TelegramAdapter) -> None:
    assert isinstance(adapter, Adapter)
    assert adapter.name == "telegram"
    assert (adapter.text_limit, adapter.typing_interval) == (4096, 4.0)
    assert adapter.tier.interim_assistant_messages and adapter.tier.long_running_notifications is True
    assert adapter.tier.messaging
    assert adapter.measure("a😀") == 3
    assert adapter.web_routes() == []


async def test_start_registers_commands_and_clears_webhook(fake: FakeTelegram, sink: Sink) -> None:
    assert fake.commands == [
        {"command": "stop", "description": "Stop the current turn"},
        {"command": "new", "description": "Start a new session"},
    ]
    methods = [name for name, _ in fake.calls]
    assert methods[:4] == ["getMe", "setMyCommands", "getWebhookInfo", "deleteWebhook"]
    await fake.wait_for(lambda: fake.calls_to("getUpdates"))


async def test_private_message_becomes_one_inbound(fake: FakeTelegram, sink: Sink) -> None:
    update = fake.message_update(42, "hello there", user_id=42, username="alice")
    update_id = fake.push_update(update)
    await fake.wait_for(lambda: sink.inbound)
    assert sink.inbound == [
        Inbound(
            platform="telegram",
            chat_id="42",
            thread_id=None,
            user_id="42",
            user_name="alice",
            text="hello there",
            event_id=f"{fake.bot_user['id']}:{update_id}",  # Telegram numbers each bot's updates on its own
            is_command=False,
            is_private=True,
            sent_at=sink.inbound[0].sent_at,
            message_id=str(update["message"]["message_id"]),  # what an answer may quote (a group's does)
        )
    ]
    sent_at = sink.inbound[0].sent_at  # the message's date: whole seconds, by Telegram's clock
    assert sent_at is not None and sent_at == int(sent_at) and abs(sent_at - time.time()) < 60


async def test_private_command(fake: FakeTelegram, sink: Sink) -> None:
    fake.push_message(42, "/new")
    await fake.wait_for(lambda: sink.inbound)
    assert (sink.inbound[0].text, sink.inbound[0].is_command) == ("/new", True)


async def test_group_messages_only_when_addressed(fake: FakeTelegram, sink: Sink) -> None:
    group = dict(chat_type="supergroup", user_id=5, username="bob")
    fake.push_message(-100, "just chatting", **group)
    fake.push_message(-100, f"hey @{BOT} what's up", **group)
    fake.push_message(-100, f"@{BOT.upper()} shouting", **group)  # usernames are case-insensitive
    fake.push_message(-100, f"@{BOT}2 is another bot", **group)
    fake.push_message(-100, "answering you", reply_to_bot=True, **group)
    fake.push_message(-100, f"/stop@{BOT} now", **group)
    fake.push_message(-100, "/stop@other_bot", **group)
    fake.push_message(-100, "/new", **group)
    fake.push_message(-100, "look", entities=[{"type": "text_mention", "offset": 0, "length": 4,
                                                "user": {"id": 123456, "is_bot": True, "first_name": "S"}}], **group)
    fake.push_message(42, "sentinel")  # handled in order: once it is here, so is everything before it
    await fake.wait_for(lambda: "sentinel" in sink.texts())
    assert sink.texts() == [
        f"hey @{BOT} what's up",
        f"@{BOT.upper()} shouting",
        "answering you",
        "/stop now",
        "/new",
        "look",
        "sentinel",
    ]
    stop = sink.inbound[3]
    assert (stop.is_command, stop.is_private, stop.chat_id, stop.user_id) == (True, False, "-100", "5")


async def test_a_command_ends_where_telegram_ends_it(fake: FakeTelegram, sink: Sink) -> None:
    # Telegram's bot_command entity ends at the first character a username cannot hold: "/stop@bot," is
    # /stop for @bot, where "bot," was taken for another bot's name and the message dropped. The
    # punctuation goes too: the gateway reads a command up to the first space.
    group = dict(chat_type="supergroup", user_id=5, username="bob")
    fake.push_message(-100, f"/stop@{BOT}, please", **group)
    fake.push_message(-100, "/stop@other_bot, please", **group)
    fake.push_message(-100, "/new.", **group)  # bare, and one of ours
    fake.push_message(-100, "/stop@ab", **group)  # no username that short: no command, and not addressed to us
    fake.push_message(42, f"/new@{BOT}.")
    fake.push_message(42, f"/new@{BOT}: plan the trip")
    fake.push_message(42, "sentinel")
    await fake.wait_for(lambda: "sentinel" in sink.texts())
    assert sink.texts() == ["/stop please", "/new", "/new", "/new plan the trip", "sentinel"]
    assert [i.is_command for i in sink.inbound] == [True, True, True, True, False]


async def test_a_message_sent_on_behalf_of_a_chat_comes_from_that_chat(fake: FakeTelegram, sink: Sink) -> None:
    """Telegram puts one of its own accounts in ``from`` of a message written as a chat (an
    anonymous admin: GroupAnonymousBot, a bot; as a channel: Channel_Bot) and the chat in
    ``sender_chat``: that chat is the sender, whose id access rules can name. A linked channel's post
    Telegram copies into its discussion group was written to the channel, not to the bot."""
    group = dict(chat_type="supergroup")
    fake.push_message(-100, f"@{BOT} from an anonymous admin", sender_chat=-100, **group)
    fake.push_message(-100, f"@{BOT} written as my channel", sender_chat=-200, **group)
    fake.push_message(-100, f"New post! Ask @{BOT}", sender_chat=-200, automatic_forward=True, **group)
    from_a_bot = fake.message_update(-100, f"@{BOT} from another bot", user_id=7, **group)
    from_a_bot["message"]["from"]["is_bot"] = True
    fake.push_update(from_a_bot)
    fake.push_message(42, "sentinel")
    await fake.wait_for(lambda: "sentinel" in sink.texts())
    assert [(i.text, i.chat_id, i.user_id) for i in sink.inbound] == [
        (f"@{BOT} from an anonymous admin", "-100", "-100"),
        (f"@{BOT} written as my channel", "-100", "-200"),
        ("sentinel", "42", "42"),
    ]


async def test_another_bots_bare_command_in_a_group_is_not_for_us(
    fake: FakeTelegram, adapter: TelegramAdapter
) -> None:
    """Telegram hands a group's bare commands (``/weather``, no ``@bot``) to the bot that spoke last
    there: one of another bot's is not this bot's to answer, unless addressed to it."""
    sink = Sink()
    await adapter.start(sink, [*COMMANDS, CommandSpec("new", "", aliases=("reset",))])
    group = dict(chat_type="supergroup", user_id=5, username="bob")
    fake.push_message(-100, "/weather Lisbon", **group)
    fake.push_message(-100, "/reset", **group)  # an alias the gateway reads as /new
    fake.push_message(-100, f"/weather@{BOT} Lisbon", **group)
    fake.push_message(-100, f"/weather @{BOT}", **group)
    fake.push_message(-100, "/weather, as you said", reply_to_bot=True, **group)
    fake.push_message(42, "/weather Porto")  # a private chat is all for the bot
    await fake.wait_for(lambda: "/weather Porto" in sink.texts())
    assert sink.texts() == ["/reset", "/weather Lisbon", f"/weather @{BOT}", "/weather, as you said",
                            "/weather Porto"]


async def test_mention_entity_after_emoji_uses_utf16_offsets(fake: FakeTelegram, sink: Sink) -> None:
    fake.push_message(-100, f"😀😀 @{BOT}", chat_type="group", entities=None)
    await fake.wait_for(lambda: sink.inbound)
    assert sink.inbound[0].text == f"😀😀 @{BOT}"


async def test_forum_topic_sets_thread_and_reply_goes_there(
    fake: FakeTelegram, adapter: TelegramAdapter, sink: Sink
) -> None:
    fake.push_message(-100, f"@{BOT} in a topic", chat_type="supergroup", thread_id=77)
    await fake.wait_for(lambda: sink.inbound)
    assert sink.inbound[0].thread_id == "77"
    await adapter.send(Outbound(chat_id="-100", thread_id="77", text="answer"))
    assert fake.calls_to("sendMessage")[-1]["message_thread_id"] == "77"
    assert fake.messages["-100"][-1]["thread_id"] == 77


async def test_send_notice_silently_and_edit_in_place(fake: FakeTelegram, adapter: TelegramAdapter) -> None:
    reply = await adapter.send(Outbound(chat_id="42", thread_id=None, text="the answer"))
    notice = await adapter.send(Outbound(chat_id="42", thread_id=None, text="working… 1 min", kind="notice", silent=True))
    await adapter.edit("42", None, notice.message_id, "working… 2 min")
    reply_rec, notice_rec = fake.messages["42"]
    assert (reply_rec["message_id"], reply_rec["silent"]) == (int(reply.message_id), False)
    assert (notice_rec["message_id"], notice_rec["silent"]) == (int(notice.message_id), True)
    assert notice_rec["text"] == "working… 2 min" and notice_rec["edits"] == ["working… 2 min"]
    assert "parse_mode" not in fake.calls_to("sendMessage")[0]  # plain text by default
    assert fake.calls_to("sendMessage")[1]["disable_notification"] == "true"


async def test_edit_not_modified_is_success(fake: FakeTelegram, adapter: TelegramAdapter) -> None:
    sent = await adapter.send(Outbound(chat_id="42", thread_id=None, text="same"))
    await adapter.edit("42", None, sent.message_id, "same")
    assert len(fake.calls_to("editMessageText")) == 1
    assert fake.messages["42"][0]["edits"] == []


async def test_failed_edits_raise_delivery_errors(fake: FakeTelegram, adapter: TelegramAdapter) -> None:
    with pytest.raises(NotFound):
        await adapter.edit("42", None, "999", "gone")
    sent = await adapter.send(Outbound(chat_id="42", thread_id=None, text="old"))
    fake.fail_next("editMessageText", 400, description="Bad Request: message can't be edited")
    with pytest.raises(EditUnsupported) as caught:
        await adapter.edit("42", None, sent.message_id, "new")
    assert isinstance(caught.value, DeliveryError)
    assert (caught.value.method, caught.value.chat_id) == ("editMessageText", "42")


@pytest.mark.parametrize("method", ["sendMessage", "editMessageText"])
async def test_429_becomes_rate_limited(fake: FakeTelegram, adapter: TelegramAdapter, method: str) -> None:
    sent = await adapter.send(Outbound(chat_id="42", thread_id=None, text="first"))
    fake.fail_next(method, 429, retry_after=7)
    with pytest.raises(RateLimited) as caught:
        if method == "sendMessage":
            await adapter.send(Outbound(chat_id="42", thread_id=None, text="second"))
        else:
            await adapter.edit("42", None, sent.message_id, "second")
    assert caught.value.retry_after == 7.0
    assert caught.value.method == method


@pytest.mark.parametrize(
    ("status", "description", "error"),
    [
        (403, "Forbidden: bot was blocked by the user", Forbidden),
        (400, "Bad Request: chat not found", NotFound),
        (400, "Bad Request: message is too long", MessageTooLong),
        (500, "Internal Server Error", NetworkError),
        (502, "Bad Gateway", NetworkError),
    ],
)
async def test_bot_api_errors_are_translated_and_polling_goes_on(
    fake: FakeTelegram,
    adapter: TelegramAdapter,
    sink: Sink,
    caplog: pytest.LogCaptureFixture,
    status: int,
    description: str,
    error: type[DeliveryError],
) -> None:
    fake.fail_next("sendMessage", status, description=description)
    with caplog.at_level(logging.DEBUG, logger="platforms.telegram"), pytest.raises(error):
        await adapter.send(Outbound(chat_id="42", thread_id=None, text="hi"))
    [logged] = [r for r in caplog.records if "sendMessage" in r.getMessage() and "42" in r.getMessage()]
    # A failure every chat shares is warned of; a chat's own is the outbox's to say, as it fails the part.
    assert logged.levelno == (logging.WARNING if error is NetworkError else logging.DEBUG)
    fake.push_message(42, "still listening?")
    await fake.wait_for(lambda: sink.inbound)
    assert sink.texts() == ["still listening?"]


async def test_a_failure_every_chat_shares_is_warned_of_once_a_chats_own_is_left_to_the_outbox(
    fake: FakeTelegram, adapter: TelegramAdapter, caplog: pytest.LogCaptureFixture
) -> None:
    """The Bot API down: every chat's retries fail alike, and one warning says so, not one per call. A
    chat's own refusal fails the part, which the outbox warns of: a warning here was the same one again."""
    caplog.set_level(logging.DEBUG, logger="platforms.telegram")
    for chat in ("41", "42", "43"):
        fake.fail_next("sendMessage", 502, description="Bad Gateway")
        with pytest.raises(NetworkError):
            await adapter.send(Outbound(chat_id=chat, thread_id=None, text="hi"))
    for chat in ("44", "45"):
        fake.fail_next("sendMessage", 403, description="Forbidden: bot was blocked by the user")
        with pytest.raises(Forbidden):
            await adapter.send(Outbound(chat_id=chat, thread_id=None, text="hi"))
    logged = [(r.levelno, r.getMessage().split(" failed")[0]) for r in caplog.records if " failed: " in r.getMessage()]
    assert logged == [(logging.WARNING, "telegram sendMessage to chat 41"),
                      (logging.DEBUG, "telegram sendMessage to chat 44"), (logging.DEBUG, "telegram sendMessage to chat 45")]
    # Telegram's description starts with the kind already: said once, not "failed: Forbidden: Forbidden: ...".
    blocked = "telegram sendMessage to chat 45 failed: Forbidden: bot was blocked by the user"
    assert caplog.records[-1].getMessage() == blocked


async def test_a_failed_call_to_no_chat_names_no_chat(
    fake: FakeTelegram, adapter: TelegramAdapter, caplog: pytest.LogCaptureFixture
) -> None:
    # setMyCommands at start concerns the bot, not a chat: its warning said "to chat None".
    caplog.set_level(logging.WARNING, logger="platforms.telegram")
    fake.fail_next("setMyCommands", 400, description="Bad Request: BOT_COMMAND_INVALID")
    await adapter.start(Sink(), COMMANDS)  # the commands still work when typed
    [warning] = [r.getMessage() for r in caplog.records if "setMyCommands" in r.getMessage()]
    assert warning.startswith("telegram setMyCommands failed: BadRequest: ") and "chat" not in warning


async def test_polling_survives_a_failing_get_updates(fake: FakeTelegram, sink: Sink) -> None:
    # aiogram backs off ~1 s after a failed poll: the one slow test here.
    await fake.wait_for(lambda: fake.calls_to("getUpdates"))
    fake.fail_next("getUpdates", 500)  # the poll after the one now waiting
    fake.push_message(42, "before the outage")
    await fake.wait_for(lambda: sink.inbound)
    polls = len(fake.calls_to("getUpdates"))  # the failing poll was sent right after the handover
    fake.push_message(42, "after the outage")
    await fake.wait_for(lambda: len(sink.inbound) == 2)
    assert len(fake.calls_to("getUpdates")) > polls
    assert sink.texts() == ["before the outage", "after the outage"]


async def test_a_long_poll_that_never_returns_is_given_up_and_polling_goes_on(fake: FakeTelegram) -> None:
    """A getUpdates lost in a dead connection ends at the session timeout plus the polling timeout
    (60 s + 30 s by default; 1 s + 1 s here), and the next poll gets what was sent meanwhile."""
    bot = Bot(fake.token, session=AiohttpSession(api=TelegramAPIServer.from_base(fake.base_url), timeout=1))
    adapter, sink = TelegramAdapter(fake.token, bot=bot, polling_timeout=1), Sink()
    fake.hang_next("getUpdates")
    await adapter.start(sink)
    try:
        fake.push_message(42, "sent while the poll hung")
        await fake.wait_for(lambda: sink.inbound, timeout=8)
        assert sink.texts() == ["sent while the poll hung"] and len(fake.calls_to("getUpdates")) >= 2
    finally:
        await adapter.stop()


async def test_network_drop_on_send_is_network_error(fake: FakeTelegram, adapter: TelegramAdapter) -> None:
    fake.drop_next("sendMessage")
    with pytest.raises(NetworkError):
        await adapter.send(Outbound(chat_id="42", thread_id=None, text="lost"))
    await adapter.send(Outbound(chat_id="42", thread_id=None, text="next one works"))
    assert [m["text"] for m in fake.messages["42"]] == ["next one works"]


async def test_4096_utf16_units_is_the_limit(fake: FakeTelegram, adapter: TelegramAdapter) -> None:
    full = "😀" * 2048  # 2048 characters, 4096 UTF-16 code units
    assert adapter.measure(full) == adapter.text_limit
    await adapter.send(Outbound(chat_id="42", thread_id=None, text=full))
    assert fake.messages["42"][0]["text"] == full
    with pytest.raises(MessageTooLong):
        await adapter.send(Outbound(chat_id="42", thread_id=None, text=full + "!"))


async def test_typing_sends_chat_action_and_never_raises(fake: FakeTelegram, adapter: TelegramAdapter) -> None:
    await adapter.typing("42", None)
    fake.fail_next("sendChatAction", 429, retry_after=3)
    await adapter.typing("-100", "9")
    await adapter.idle("42", None)
    assert fake.calls_to("sendChatAction") == [
        {"chat_id": "42", "action": "typing"},
        {"chat_id": "-100", "action": "typing", "message_thread_id": "9"},
    ]


async def test_typing_refused_all_turn_long_is_one_warning(
        fake: FakeTelegram, adapter: TelegramAdapter, caplog: pytest.LogCaptureFixture) -> None:
    # A group where the bot may no longer write refuses every typing refresh (each ~3 s, for the whole
    # turn): one warning per refresh. The first is logged, the others counted (platforms.repeated_warnings).
    caplog.set_level(logging.WARNING, logger="platforms.telegram")
    for _ in range(5):
        fake.fail_next("sendChatAction", 403, description="Forbidden: bot was kicked from the group chat")
        await adapter.typing("-100", None)
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 1 and "sendChatAction" in warned[0] and "-100" in warned[0] and "Forbidden" in warned[0]
    fake.fail_next("sendMessage", 403, description="Forbidden: bot was kicked from the group chat")
    with pytest.raises(Forbidden):
        await adapter.send(Outbound(chat_id="-100", thread_id=None, text="hi"))  # the outbox warns of a reply's
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 1


async def test_writes_to_an_upgraded_group_go_to_its_supergroup_once_each(
        fake: FakeTelegram, adapter: TelegramAdapter) -> None:
    before = await adapter.send(Outbound(chat_id="-4001", thread_id=None, text="card", kind="notice", silent=True))
    supergroup = str(fake.upgrade_group(-4001))
    answer = await adapter.send(Outbound(chat_id="-4001", thread_id=None, text="the answer"))
    assert answer.message_id == f"{supergroup}:1"
    await adapter.typing("-4001", None)
    later = await adapter.send(Outbound(chat_id="-4001", thread_id=None, text="later", kind="notice", silent=True))
    await adapter.edit("-4001", None, later.message_id, "later, edited")
    await adapter.delete("-4001", None, answer.message_id)
    assert [(m["text"], m["silent"]) for m in fake.messages[supergroup]] == [("later, edited", True)]
    for change in (adapter.edit("-4001", None, before.message_id, "done"),
                   adapter.delete("-4001", None, before.message_id)):
        with pytest.raises(EditUnsupported, match=f"stayed in chat -4001, upgraded to the supergroup {supergroup}"):
            await change
    assert [m["text"] for m in fake.messages["-4001"]] == ["card"]  # it stays as it was
    refused = [(name, params["chat_id"]) for name, params in fake.calls if params.get("chat_id") == "-4001"]
    assert refused == [("sendMessage", "-4001"), ("sendMessage", "-4001")]  # the card, then the refused answer


async def test_a_message_left_in_an_upgraded_group_cannot_be_deleted_or_edited(
        fake: FakeTelegram, adapter: TelegramAdapter) -> None:
    """Deleting it is what tells the adapter (Telegram refuses with the supergroup's id), and
    an edit then fails without asking Telegram."""
    before = await adapter.send(Outbound(chat_id="-4001", thread_id=None, text="card"))
    supergroup = str(fake.upgrade_group(-4001))
    with pytest.raises(EditUnsupported):
        await adapter.delete("-4001", None, before.message_id)
    with pytest.raises(EditUnsupported):
        await adapter.edit("-4001", None, before.message_id, "done")
    assert [name for name, _ in fake.calls] == ["sendMessage", "deleteMessage"]
    sent = await adapter.send(Outbound(chat_id="-4001", thread_id=None, text="done"))
    assert sent.message_id == f"{supergroup}:1" and len(fake.calls_to("sendMessage")) == 2


class Moves:
    """Where the adapter stores the chats that moved (the gateway's store, in the gateway); can refuse."""

    def __init__(self, refusals: int = 0) -> None:
        self.stored: list[tuple[str, str]] = []
        self.refusals = refusals

    async def __call__(self, old: str, new: str) -> None:
        if self.refusals:
            self.refusals -= 1
            raise OSError("database or disk is full")
        self.stored.append((old, new))


def in_group(fake: FakeTelegram, chat: int, text: str, chat_type: str) -> int:
    return fake.push_message(chat, f"@{BOT} {text}", chat_type=chat_type, user_id=5, username="bob")


async def test_the_supergroup_of_an_upgraded_group_is_handed_over_as_the_group(fake: FakeTelegram) -> None:
    """The upgrade's two service messages tell the adapter, which has the move stored (once,
    and before it acts on it: the first refusal to store it is tried again)."""
    adapter, sink, moves = TelegramAdapter(fake.token, api_base=fake.base_url), Sink(), Moves(refusals=1)
    adapter.bind_chat_moves({}, moves)
    await adapter.start(sink)
    try:
        in_group(fake, -4001, "before", "group")
        supergroup = fake.upgrade_group(-4001)
        fake.push_upgrade_updates(-4001)
        in_group(fake, supergroup, "after", "supergroup")
        await fake.wait_for(lambda: len(sink.inbound) == 2)
        assert [(i.chat_id, i.text) for i in sink.inbound] == [("-4001", f"@{BOT} before"),
                                                               ("-4001", f"@{BOT} after")]
        assert moves.stored == [("-4001", str(supergroup))]
        await adapter.send(Outbound(chat_id="-4001", thread_id=None, text="answer"))
        assert [m["text"] for m in fake.messages[str(supergroup)]] == ["answer"]
        assert fake.calls_to("sendMessage") == [{"chat_id": str(supergroup), "text": "answer"}]  # none refused
    finally:
        await adapter.stop()


async def test_moves_stored_before_a_restart_are_known_at_once(fake: FakeTelegram) -> None:
    supergroup = fake.upgrade_group(-4001)
    adapter, sink, moves = TelegramAdapter(fake.token, api_base=fake.base_url), Sink(), Moves()
    adapter.bind_chat_moves({"-4001": str(supergroup)}, moves)
    await adapter.start(sink)
    try:
        in_group(fake, supergroup, "still there?", "supergroup")
        await fake.wait_for(lambda: sink.inbound)
        assert sink.inbound[0].chat_id == "-4001"
        await adapter.send(Outbound(chat_id="-4001", thread_id=None, text="yes"))
        assert fake.calls_to("sendMessage") == [{"chat_id": str(supergroup), "text": "yes"}]
        assert moves.stored == []
    finally:
        await adapter.stop()


async def test_a_move_learned_from_a_refused_send_is_stored_before_the_send_goes_there(fake: FakeTelegram) -> None:
    adapter, moves = TelegramAdapter(fake.token, api_base=fake.base_url), Moves()
    supergroup = str(fake.upgrade_group(-4001))
    sends_when_stored: list[int] = []

    async def store(old: str, new: str) -> None:
        sends_when_stored.append(len(fake.calls_to("sendMessage")))
        await moves(old, new)

    adapter.bind_chat_moves({}, store)
    try:
        await adapter.send(Outbound(chat_id="-4001", thread_id=None, text="answer"))
        assert moves.stored == [("-4001", supergroup)] and sends_when_stored == [1]  # only the refused one yet
        assert [m["text"] for m in fake.messages[supergroup]] == ["answer"]
    finally:
        await adapter.stop()


async def test_typing_never_raises_even_when_the_upgrade_it_learns_cannot_be_stored(fake: FakeTelegram) -> None:
    adapter, moves = TelegramAdapter(fake.token, api_base=fake.base_url), Moves(refusals=1)
    supergroup = str(fake.upgrade_group(-4001))
    adapter.bind_chat_moves({}, moves)
    try:
        await adapter.typing("-4001", None)  # refused, and the move not stored
        await adapter.typing("-4001", None)  # refused again: stored now, and shown there
        assert moves.stored == [("-4001", supergroup)]
        assert [p["chat_id"] for p in fake.calls_to("sendChatAction")] == ["-4001", "-4001", supergroup]
    finally:
        await adapter.stop()


async def test_markup_rejected_falls_back_to_plain_text(fake: FakeTelegram) -> None:
    adapter = TelegramAdapter(fake.token, api_base=fake.base_url, parse_mode="HTML")
    try:
        fake.fail_next("sendMessage", 400, description="Bad Request: can't parse entities: Unsupported start tag")
        sent = await adapter.send(Outbound(chat_id="42", thread_id=None, text="a **b**"))
    finally:
        await adapter.stop()
    first, second = fake.calls_to("sendMessage")
    assert first["parse_mode"] == "HTML" and "parse_mode" not in second
    assert fake.messages["42"][0]["message_id"] == int(sent.message_id)


@pytest.mark.parametrize("text", ["```\n```", "**\u200b**"])
async def test_a_part_that_renders_to_nothing_is_sent_as_written(fake: FakeTelegram, text: str) -> None:
    # Only an empty code block rendered as <pre></pre>: "Bad Request: message text is empty", a part lost.
    adapter = TelegramAdapter(fake.token, api_base=fake.base_url, parse_mode="HTML")
    try:
        await adapter.send(Outbound(chat_id="42", thread_id=None, text=text))
    finally:
        await adapter.stop()
    assert fake.messages["42"][0]["text"] == text


@pytest.mark.parametrize(("text", "shown"), [
    ("R&amp;D and &lt;tag&gt;", "R&D and <tag>"),  # entities, as Markdown (and Discord, Slack) read them
    ("a < b & c > d", "a < b & c > d"),  # nothing to format: plain text
])
async def test_a_part_with_only_entities_to_render_shows_them_as_characters(
        fake: FakeTelegram, text: str, shown: str) -> None:
    adapter = TelegramAdapter(fake.token, api_base=fake.base_url, parse_mode="HTML")
    try:
        await adapter.send(Outbound(chat_id="42", thread_id=None, text=text))
    finally:
        await adapter.stop()
    assert fake.messages["42"][0]["text"] == shown


@pytest.mark.parametrize("text", ["\u200b", " \u00a0\n\u2003\ufeff"])
async def test_invisible_characters_alone_are_refused_as_empty_as_telegram_does(
        fake: FakeTelegram, adapter: TelegramAdapter, text: str) -> None:
    with pytest.raises(BadRequest, match="message text is empty"):
        await adapter.send(Outbound(chat_id="42", thread_id=None, text=text))


async def test_unconfirmed_update_is_redelivered_after_restart(fake: FakeTelegram) -> None:
    received: list[Inbound] = []
    hold = asyncio.Event()

    async def stuck_sink(inbound: Inbound) -> None:
        received.append(inbound)
        await hold.wait()  # the process "dies" while the update is being handed over

    first = TelegramAdapter(fake.token, api_base=fake.base_url)
    await first.start(stuck_sink)
    update_id = fake.push_message(42, "did you get this?")
    await fake.wait_for(lambda: received)
    await first.stop()
    assert [u["update_id"] for u in fake.pending] == [update_id]  # never confirmed

    second = TelegramAdapter(fake.token, api_base=fake.base_url)
    sink = Sink()
    await second.start(sink)
    try:
        await fake.wait_for(lambda: sink.inbound)
        assert sink.inbound[0].event_id == received[0].event_id == f"{fake.bot_user['id']}:{update_id}"
        await fake.wait_for(lambda: not fake.pending)  # the next poll confirmed it
        assert fake.calls_to("getUpdates")[-1]["offset"] == str(update_id + 1)
    finally:
        await second.stop()


async def test_stop_is_idempotent_and_restartable(fake: FakeTelegram, adapter: TelegramAdapter) -> None:
    sink = Sink()
    await adapter.start(sink)
    await adapter.stop()
    await adapter.stop()
    await adapter.start(sink)
    fake.push_message(42, "again")
    await fake.wait_for(lambda: sink.inbound)


async def test_start_fails_cleanly_on_a_refused_token(fake: FakeTelegram) -> None:
    adapter = TelegramAdapter("999:WRONG", api_base=fake.base_url)
    with pytest.raises(Unauthorized):
        await adapter.start(Sink())
    await adapter.stop()


# -- webhook mode ------------------------------------------------------------------


@pytest.fixture
async def webhook(fake: FakeTelegram) -> AsyncIterator[tuple[TelegramAdapter, Sink]]:
    """A webhook-mode adapter mounted on a test aiohttp server, as the gateway mounts it."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    adapter = TelegramAdapter(
        fake.token,
        api_base=fake.base_url,
        mode="webhook",
        webhook_url=f"http://127.0.0.1:{port}/telegram",
        webhook_secret="s3cret_token-1",
    )
    app = web.Application()
    app.add_routes(adapter.web_routes())
    runner = web.AppRunner(app)
    await runner.setup()
    await web.SockSite(runner, sock).start()
    sink = Sink()
    await adapter.start(sink, COMMANDS)
    try:
        yield adapter, sink
    finally:
        await adapter.stop()
        await runner.cleanup()


async def test_webhook_registers_url_and_secret(fake: FakeTelegram, webhook: tuple[TelegramAdapter, Sink]) -> None:
    adapter, _ = webhook
    assert fake.webhook_url == adapter.webhook_url and fake.webhook_url.endswith("/telegram")
    assert fake.webhook_secret == "s3cret_token-1"
    assert fake.calls_to("setWebhook")[0]["allowed_updates"] == '["edited_message", "message", "my_chat_member"]'
    assert fake.commands and not fake.calls_to("getUpdates")


async def test_webhook_with_the_right_secret_delivers(fake: FakeTelegram, webhook: tuple[TelegramAdapter, Sink]) -> None:
    _, sink = webhook
    update = fake.message_update(42, "/stop@switchboard_bot")
    assert await fake.deliver_webhook(update) == 200
    assert [(i.text, i.event_id, i.is_command) for i in sink.inbound] == [
        ("/stop", f"{fake.bot_user['id']}:{update['update_id']}", True)]


async def test_webhook_with_a_secret_that_is_not_utf8_is_refused_not_a_crash(
    fake: FakeTelegram, webhook: tuple[TelegramAdapter, Sink], caplog: pytest.LogCaptureFixture
) -> None:
    adapter, sink = webhook
    port = int(adapter.webhook_url.rsplit(":", 1)[1].split("/")[0])
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"POST /telegram HTTP/1.1\r\nHost: bot\r\nConnection: close\r\nContent-Type: application/json\r\n"
                 b"X-Telegram-Bot-Api-Secret-Token: \xff\xfe\r\nContent-Length: 2\r\n\r\n{}")
    async with asyncio.timeout(5):
        reply = await reader.read()
    writer.close()
    assert reply.startswith(b"HTTP/1.1 401 ")
    assert sink.inbound == [] and not [r for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.mark.parametrize("secret", ["wrong", None, ""])
async def test_webhook_without_the_right_secret_is_refused(
    fake: FakeTelegram, webhook: tuple[TelegramAdapter, Sink], secret: str | None
) -> None:
    _, sink = webhook
    assert await fake.deliver_webhook(fake.message_update(42, "let me in"), secret=secret) == 401
    assert sink.inbound == []


async def test_webhook_refusals_are_one_warning_not_one_each(
    fake: FakeTelegram, webhook: tuple[TelegramAdapter, Sink], caplog: pytest.LogCaptureFixture
) -> None:
    # A stranger posting to the webhook (from any number of addresses) wrote a warning per request.
    caplog.set_level(logging.WARNING, logger="platforms.telegram")
    for n in range(5):
        assert await fake.deliver_webhook(fake.message_update(42, f"let me in {n}"), secret="wrong") == 401
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 1 and "refused a request without the right secret token" in warned[0]


async def test_webhook_after_stop_asks_telegram_to_retry(
    fake: FakeTelegram, webhook: tuple[TelegramAdapter, Sink]
) -> None:
    adapter, sink = webhook
    await adapter.stop()
    assert await fake.deliver_webhook(fake.message_update(42, "later")) == 503
    assert sink.inbound == []


async def test_webhook_holds_only_a_young_supergroups_first_message_and_only_until_its_wait_is_over(
    fake: FakeTelegram, webhook: tuple[TelegramAdapter, Sink]
) -> None:
    adapter, sink = webhook
    adapter.upgrade_wait.wait = 0.0  # no upgrade is coming here: the wait has nothing to wait for
    first = fake.message_update(-1007, "/new", chat_type="supergroup")  # message 1 of a brand-new supergroup
    assert await fake.deliver_webhook(first) == 200
    adapter.upgrade_wait.wait = 60.0  # a message held now would time the test out
    assert await fake.deliver_webhook(fake.message_update(-1007, "/stop", chat_type="supergroup")) == 200
    old = fake.message_update(-1008, "/stop", chat_type="supergroup")
    old["message"]["message_id"] = 5000  # a supergroup with that many messages was not upgraded just now
    assert await fake.deliver_webhook(old) == 200
    assert [(i.chat_id, i.text) for i in sink.inbound] == [("-1007", "/new"), ("-1007", "/stop"), ("-1008", "/stop")]
    assert adapter.upgrade_wait.held == 0


def test_webhook_mode_needs_a_url() -> None:
    with pytest.raises(ValueError, match="webhook_url"):
        TelegramAdapter("1:x", mode="webhook")


async def test_an_update_the_sink_failed_to_record_is_handed_over_again(
    fake: FakeTelegram, caplog: pytest.LogCaptureFixture
) -> None:
    received: list[Inbound] = []

    async def flaky_sink(inbound: Inbound) -> None:
        received.append(inbound)
        if len(received) == 1:
            raise full_disk()  # the gateway could not record it

    adapter = TelegramAdapter(fake.token, api_base=fake.base_url)
    await adapter.start(flaky_sink)
    try:
        update_id = fake.push_message(42, "do not lose me")
        await fake.wait_for(lambda: len(received) == 2)
        assert [i.event_id for i in received] == [f"{fake.bot_user['id']}:{update_id}"] * 2
        await fake.wait_for(lambda: not fake.pending)  # confirmed only once recorded
    finally:
        await adapter.stop()


@pytest.mark.parametrize("mode", ["polling", "webhook"])
async def test_an_update_the_gateway_fails_on_for_another_reason_is_dropped_not_retried_forever(
    fake: FakeTelegram, caplog: pytest.LogCaptureFixture, mode: str
) -> None:
    # A bug one odd message trips would fail at every try, holding up every message after it.
    received: list[str] = []

    async def sink(inbound: Inbound) -> None:
        if inbound.text == "odd":
            raise ValueError("a bug this message trips")
        received.append(inbound.text)

    if mode == "polling":
        adapter = TelegramAdapter(fake.token, api_base=fake.base_url)
        await adapter.start(sink)
    with caplog.at_level(logging.ERROR, logger="platforms.telegram"):
        try:
            if mode == "polling":
                fake.push_message(42, "odd")
                fake.push_message(42, "next")
                await fake.wait_for(lambda: received == ["next"] and not fake.pending)
            else:
                async with webhook_adapter(fake, sink=sink):
                    assert await fake.deliver_webhook(fake.message_update(42, "odd")) == 200
                    assert await fake.deliver_webhook(fake.message_update(42, "next")) == 200
                assert received == ["next"]
        finally:
            if mode == "polling":
                await adapter.stop()
    (error,) = [r for r in caplog.records if "refused update" in r.getMessage()]
    assert error.exc_info is not None and "dropped" in error.getMessage()


async def test_an_error_echoing_the_api_url_never_shows_the_token(caplog: pytest.LogCaptureFixture) -> None:
    async def loop_forever(request: web.Request) -> web.Response:
        raise web.HTTPFound(str(request.url))  # a misconfigured proxy in front of the Bot API

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", loop_forever)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    token = "123456:TOPSECRET"  # short enough that no log redaction pattern would catch it
    adapter = TelegramAdapter(token, api_base=f"http://127.0.0.1:{runner.addresses[0][1]}")
    try:
        with caplog.at_level(logging.WARNING, logger="platforms.telegram"), pytest.raises(NetworkError) as caught:
            await adapter.send(Outbound(chat_id="42", thread_id=None, text="hi"))
    finally:
        await adapter.stop()
        await runner.cleanup()
    assert "TooManyRedirects" in str(caught.value) and "/bot***/sendMessage" in str(caught.value)
    assert "TOPSECRET" not in str(caught.value)
    assert caplog.records and not any("TOPSECRET" in r.getMessage() for r in caplog.records)


async def test_stopping_mid_batch_leaves_the_updates_not_handed_over_unconfirmed(fake: FakeTelegram) -> None:
    recorded: list[str] = []
    entered, hold = asyncio.Event(), asyncio.Event()

    async def slow_sink(inbound: Inbound) -> None:
        entered.set()
        await hold.wait()  # the gateway is committing the first update when the stop begins
        recorded.append(inbound.event_id)

    adapter = TelegramAdapter(fake.token, api_base=fake.base_url)
    await adapter.start(slow_sink)
    first = fake.push_message(42, "one")
    second = fake.push_message(42, "two")  # same batch
    await asyncio.wait_for(entered.wait(), 5)
    stopping = asyncio.ensure_future(adapter.stop())
    await asyncio.sleep(0)
    hold.set()
    await asyncio.wait_for(stopping, 5)
    assert recorded == [f"{fake.bot_user['id']}:{first}"]
    assert [u["update_id"] for u in fake.pending] == [first, second]  # Telegram serves "two" again


async def test_the_people_of_busy_groups_leave_nothing_behind_in_memory(fake: FakeTelegram, sink: Sink,
                                                                        adapter: TelegramAdapter) -> None:
    # aiogram keeps a state record for each (chat, user) it sees unless the adapter turns its
    # per-user state off: in a group whose members chat all day that grew for good.
    for user in range(1, 1001):
        fake.push_message(-100 - user % 10, f"chatting {user}", chat_type="supergroup", user_id=user, username=None)
    fake.push_message(42, "sentinel")
    await fake.wait_for(lambda: "sentinel" in sink.texts())
    assert sink.texts() == ["sentinel"]
    assert len(adapter._dp.storage.storage) == 0  # type: ignore[attr-defined]


async def test_a_token_telegram_refuses_in_webhook_mode_is_down_until_a_call_succeeds(
        fake: FakeTelegram, webhook: tuple[TelegramAdapter, Sink], caplog: pytest.LogCaptureFixture) -> None:
    # A webhook has no connection to watch: the platform stayed 'no_connection' (healthy) while every
    # reply was refused 401, and nothing but a debug line said so.
    adapter, _ = webhook
    token = fake.token
    fake.token = "999999:the-new-one-from-botfather"  # the old one answers 401 Unauthorized
    with caplog.at_level(logging.WARNING):
        for _ in range(3):
            with pytest.raises(Unauthorized):
                await adapter.send(Outbound(chat_id="42", thread_id=None, text="hello"))
    state = adapter.connection()
    assert state.status == "down" and "platforms.telegram.token" in (state.reason or "")
    assert token not in (state.reason or "") and token.split(":")[1] not in caplog.text
    assert len([r for r in caplog.records if r.levelno >= logging.WARNING]) == 1  # not once per reply
    fake.token = token  # taken again
    await adapter.send(Outbound(chat_id="42", thread_id=None, text="hello"))
    assert adapter.connection().status == "no_connection"
