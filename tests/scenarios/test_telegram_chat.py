"""End to end on Telegram: the real aiogram client in `TelegramAdapter` talks to the loopback
`FakeTelegram` Bot API over HTTP, with the real `Gateway` (sessions, commands, outbox) behind it.

What the chat sees is read from the fake: ``fake.messages[chat]`` (what the bot has in each
chat, with its edits) and ``fake.calls`` (every Bot API request, in order).
"""

from __future__ import annotations

import asyncio
import io
import logging
import re
from collections.abc import AsyncIterator

import pytest

from agent import ModelRequest
from agent.models.factory import build_model
from agent.models.scripted import ScriptedModel
from gateway.app import Gateway
from gateway.host import AgentHost
from gateway.logging import setup_logging
from gateway.questions import question_text
from gateway.server import Server
from gateway.testing import make_config, settled, start_gateway
from platforms.base import utf16_length
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter
from tests.asking_model import CHOICES, asking_parent
from tests.hanging_children import children_hanging, delegating_parent, hanging_child

BOT = "sb_gateway_test_bot"  # not the fake's default: the adapter must learn it from getMe
LIST = "Compare these:\n- apples\n- pears"
EVERYONE = {"telegram": {"allow_all": True}}
NOT_MODIFIED = ("Bad Request: message is not modified: specified new message content and reply markup are "
                "exactly the same as a current content and reply markup of the message")


# -- fixtures and helpers ------------------------------------------------------------


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(username=BOT) as fake:
        yield fake


class Gateways:
    """Starts gateways with a TelegramAdapter pointed at the fake; stops what is left at the end."""

    def __init__(self, fake: FakeTelegram, tmp_path) -> None:
        self.fake = fake
        self.tmp_path = tmp_path
        self.running: list[Gateway] = []

    def config(self, **sections):
        """Gateway configuration on this test's state dir; telegram stays ``enabled: false``
        in it, as the tests build the adapter themselves."""
        return make_config(self.tmp_path, **sections)

    def adapter(self, **kw) -> TelegramAdapter:
        return TelegramAdapter(self.fake.token, api_base=self.fake.base_url, polling_timeout=10, **kw)

    async def start(self, config, *, model=None, script=None) -> Gateway:
        gateway = await start_gateway(config, [self.adapter()], model=model, script=script)
        self.running.append(gateway)
        await self.fake.wait_for(lambda: self.fake.calls_to("getUpdates"))  # polling is live
        return gateway

    async def quiet(self) -> None:
        """Nothing more will arrive: the adapter confirmed every update, and every gateway settled."""
        await self.fake.wait_for(lambda: not self.fake.pending)
        for gateway in self.running:
            await settled(gateway)

    async def stop(self, gateway: Gateway) -> None:
        self.running.remove(gateway)
        await gateway.stop(grace=0)


@pytest.fixture
async def gateways(fake: FakeTelegram, tmp_path) -> AsyncIterator[Gateways]:
    started = Gateways(fake, tmp_path)
    yield started
    for gateway in list(started.running):
        await started.stop(gateway)


class WithLatency:
    """A model answering after ``seconds``, as a real one does. The demo model answers at once,
    and a turn that ends within an event-loop tick or two cancels its typing loop before the
    first sendChatAction is on the wire (cosmetic: the reply is already there)."""

    def __init__(self, model, seconds: float = 0.05) -> None:
        self._model, self._seconds = model, seconds

    def __getattr__(self, name: str):
        return getattr(self._model, name)

    async def complete(self, request: ModelRequest):
        await asyncio.sleep(self._seconds)
        return await self._model.complete(request)


def texts(fake: FakeTelegram, chat: int | str = 42) -> list[str]:
    return [m["text"] for m in fake.messages[str(chat)]]


def method_names(fake: FakeTelegram) -> list[str]:
    return [name for name, _ in fake.calls]


def slow_script(seconds: float = 0.45, text: str = "finished") -> dict:
    return {"parent": [[{"sleep": seconds, "text": text}]]}


# -- 1. a private-chat turn ----------------------------------------------------------


async def test_private_inline_turn_types_then_sends_one_reply(fake, gateways):
    config = gateways.config(platforms=EVERYONE, display={"interim_assistant_messages": False})
    await gateways.start(config, model=WithLatency(build_model(config.model)))
    fake.push_message(42, LIST, username="alice")
    await fake.wait_for(lambda: fake.messages["42"])
    await gateways.quiet()
    (reply,) = texts(fake)
    assert "apples" in reply and "pears" in reply
    names = method_names(fake)
    assert "sendChatAction" in names and names.index("sendChatAction") < names.index("sendMessage")
    assert fake.calls_to("sendChatAction")[0] == {"chat_id": "42", "action": "typing"}
    assert not fake.messages["42"][0]["silent"]


async def test_private_background_turn_acknowledges_then_sends_the_results(fake, gateways):
    # interim messages on is Telegram's own tier: leaving the setting out must give background
    config = gateways.config(platforms=EVERYONE)
    gateway = await gateways.start(config, model=WithLatency(build_model(config.model)))
    fake.push_message(42, LIST)
    await fake.wait_for(lambda: len(fake.messages["42"]) >= 2)
    await gateways.quiet()
    ack, results = texts(fake)
    assert "Started 2 subagent" in ack
    assert "apples: completed" in results and "pears: completed" in results
    names = method_names(fake)
    assert "sendChatAction" in names and names.index("sendChatAction") < names.index("sendMessage")
    assert next(iter(gateway.sessions)).mode == "background"


# -- 2. long-running notices ---------------------------------------------------------


async def test_notice_is_sent_silently_once_then_edited_in_place_and_none_after_the_reply(fake, gateways):
    config = gateways.config(platforms=EVERYONE, agent={"gateway_notify_interval": 0.1},
                             display={"progress": "off"})
    await gateways.start(config, script=slow_script())
    fake.push_message(42, "work slowly")
    await fake.wait_for(lambda: "finished" in texts(fake))
    await gateways.quiet()
    notice, reply = fake.messages["42"]
    # Edits of one message go a second apart: the progress edits of this half-second turn were
    # coalesced, and the notice ends as its one-line outcome.
    assert notice["silent"] and notice["text"].startswith("✓ Done in") and notice["edits"]
    assert reply["text"] == "finished" and not reply["silent"]
    sends = fake.calls_to("sendMessage")
    assert len(sends) == 2 and sends[0]["disable_notification"] == "true"
    assert "disable_notification" not in sends[1]
    edits = fake.calls_to("editMessageText")
    assert [e["message_id"] for e in edits] == [str(notice["message_id"])] * len(edits)
    assert [e["text"] for e in edits] == notice["edits"]
    calls = fake.calls
    reply_at = max(i for i, (name, _) in enumerate(calls) if name == "sendMessage")
    after = [params["text"] for name, params in calls[reply_at + 1:] if name == "editMessageText"]
    assert after in ([], [notice["text"]])  # after the reply, at most the notice's one-line outcome


# -- 3. /stop and /new as bot commands -----------------------------------------------


@pytest.mark.parametrize(("command", "confirmation"), [
    ("/stop", "Stopped the running turn and 2 subagents"),
    ("/new", "Started a new session and ended 2 subagents"),
])
async def test_command_during_a_hanging_inline_delegation_gives_one_confirmation_and_nothing_more(
        fake, gateways, command, confirmation):
    config = gateways.config(platforms=EVERYONE, display={"interim_assistant_messages": False})
    model = ScriptedModel({"parent": delegating_parent, "leaf": hanging_child})
    gateway = await gateways.start(config, model=model)
    fake.push_message(42, "please delegate this")
    await children_hanging(model)
    assert texts(fake) == []  # inline: nothing before the final reply
    session = next(iter(gateway.sessions))
    delegating_session = session.session_id
    fake.push_message(42, command)
    await fake.wait_for(lambda: fake.messages["42"])
    await gateways.quiet()
    (reply,) = texts(fake)  # one confirmation; nothing from the stopped turn or its children
    assert reply.startswith(confirmation)
    children = gateway.host.children
    assert session.running is None and not children.children(delegating_session)
    assert [c.state.value for c in children.recent(delegating_session)] == ["INTERRUPTED", "INTERRUPTED"]


async def test_new_after_a_finished_turn_confirms(fake, gateways):
    config = gateways.config(platforms=EVERYONE)
    await gateways.start(config, script={"parent": [[{"text": "hello"}]]})
    fake.push_message(42, "hi")
    await fake.wait_for(lambda: texts(fake) == ["hello"])
    fake.push_message(42, "/new")
    await fake.wait_for(lambda: len(texts(fake)) == 2)
    assert texts(fake)[1] == "Started a new session. Delegation here is background."
    commands = [c["command"] for c in fake.commands]
    assert commands[:6] == ["stop", "new", "agents", "retry", "delegation", "help"]  # the bot's command menu


async def test_new_with_text_and_a_question_the_model_asks_answered_by_number(fake, gateways):
    def parent(request: ModelRequest) -> dict:
        last = request.messages[-1]
        if last["role"] == "tool":
            return {"text": f"booked: {last['content']}"}
        return {"tool_calls": [{"name": "clarify", "arguments": {"question": f"Which day for {last['content']}?",
                                                                  "choices": ["Monday", "Friday"]}}]}

    config = gateways.config(platforms=EVERYONE)
    gateway = await gateways.start(config, model=ScriptedModel({"parent": parent}))
    fake.push_message(42, "/new the dentist")  # a new session whose first message is the rest
    await fake.wait_for(lambda: len(texts(fake)) == 2)
    assert texts(fake)[0].startswith("Started a new session")
    assert texts(fake)[1] == ("❓ Which day for the dentist?\n\n1. Monday\n2. Friday\n\n"
                              "Answer with your next message (a number picks an option); I wait 10 min.")
    fake.push_message(42, "2")
    await fake.wait_for(lambda: len(texts(fake)) == 3)
    await gateways.quiet()
    assert texts(fake)[2] == "booked: Friday"
    assert next(iter(gateway.sessions)).generation == 2


@pytest.mark.parametrize("stop", ["/stop@{bot}", "/stop@{bot}, please"])  # not a bot named "{bot},"
async def test_stop_addressed_to_the_bot_by_name_in_a_group(fake, gateways, stop):
    config = gateways.config(platforms=EVERYONE, display={"interim_assistant_messages": False})
    model = ScriptedModel({"parent": delegating_parent, "leaf": hanging_child})
    await gateways.start(config, model=model)
    bot = fake.bot_user["username"]  # what getMe told the adapter
    group = dict(chat_type="supergroup", user_id=5, username="bob")
    fake.push_message(-100, f"@{bot} please delegate this", **group)
    await children_hanging(model)
    fake.push_message(-100, "/stop@some_other_bot", **group)  # not ours: ignored
    fake.push_message(-100, stop.format(bot=bot), **group)
    await fake.wait_for(lambda: fake.messages["-100"])
    await gateways.quiet()
    (reply,) = texts(fake, -100)
    assert reply.startswith("Stopped the running turn and 2 subagents")


# -- 4. group filtering ----------------------------------------------------------------


async def test_group_message_gets_no_reply_and_a_mention_gets_one(fake, gateways):
    config = gateways.config(platforms=EVERYONE)
    model = ScriptedModel({"parent": [[{"text": "hello group"}], [{"text": "a second answer"}]]})
    await gateways.start(config, model=model)
    group = dict(chat_type="supergroup", user_id=5, username="bob")
    fake.push_message(-100, "just chatting among ourselves", **group)
    fake.push_message(-100, f"hey @{BOT} what's up?", **group)
    await fake.wait_for(lambda: fake.messages["-100"])
    await gateways.quiet()
    assert texts(fake, -100) == ["hello group"]
    assert len(model.requests) == 1
    said = [str(m["content"]) for m in model.requests[0].messages if m["role"] == "user"]
    assert len(said) == 1 and "what's up" in said[0]


async def test_an_answer_quoting_a_message_aiogram_cannot_read_arrives_once(fake, gateways):
    # Telegram's answer to the reply holds the message it quotes, here one forwarded from a hidden
    # account, without the sender_user_name aiogram requires (aiogram#1840): the unreadable answer was
    # taken for a lost one, and the outbox sent the reply again at every retry.
    config = gateways.config(platforms=EVERYONE)
    await gateways.start(config, script={"parent": [[{"text": "it says hi"}]]})
    update = fake.message_update(-100, f"@{BOT} what does this say?", chat_type="supergroup", user_id=5)
    update["message"]["forward_origin"] = {"type": "hidden_user", "date": 1422450181}
    fake.push_update(update)
    await fake.wait_for(lambda: fake.messages["-100"])
    await gateways.quiet()
    [reply] = fake.messages["-100"]
    assert reply["text"] == "it says hi" and reply["reply_to"] == update["message"]["message_id"]


# -- 5. splitting to 4,096 UTF-16 units ------------------------------------------------


def long_reply() -> str:
    prose = " ".join(f"Point {i} 😀🚀 matters ✨." for i in range(120))  # astral emoji: 2 UTF-16 units each
    code = "\n".join(f"    value_{i} = compute({i})  # 🔧 step {i}" for i in range(110))
    tail = "\n\n".join(f"Paragraph {i}: 🎉 done with part {i}." for i in range(40))
    return f"{prose}\n\n```python\n{code}\n```\n\n{tail}"


def strip_fences(text: str) -> str:
    return "".join(re.sub(r"^```\w*$", "", text, flags=re.MULTILINE).split())


async def test_a_long_reply_is_split_to_the_utf16_limit_with_balanced_fences(fake, gateways):
    text = long_reply()
    assert len(text) >= 6000 and utf16_length(text) > 2 * 4096
    config = gateways.config(platforms=EVERYONE)
    await gateways.start(config, script={"parent": [[{"text": text}]]})
    fake.push_message(42, "write a lot")
    await fake.wait_for(lambda: texts(fake) and texts(fake)[-1].endswith("part 39."))
    await gateways.quiet()
    parts = texts(fake)
    assert len(parts) >= 3
    assert all(utf16_length(p) <= 4096 for p in parts)
    assert all(len(re.findall(r"^```", p, flags=re.MULTILINE)) % 2 == 0 for p in parts)  # each renders alone
    assert strip_fences("\n".join(parts)) == strip_fences(text)  # nothing lost, nothing reordered
    assert len(fake.calls_to("sendMessage")) == len(parts)  # none refused as too long


# -- 6. 429 on send and on edit ----------------------------------------------------------


async def test_429_on_send_is_retried_after_retry_after_and_the_reply_arrives_once(fake, gateways):
    config = gateways.config(platforms=EVERYONE)
    await gateways.start(config, script={"parent": [[{"text": "patience pays"}]]})
    fake.fail_next("sendMessage", 429, retry_after=1)
    fake.push_message(42, "hi")
    await fake.wait_for(lambda: fake.calls_to("sendMessage"))
    refused_at = asyncio.get_running_loop().time()
    await fake.wait_for(lambda: fake.messages["42"])
    waited = asyncio.get_running_loop().time() - refused_at
    await gateways.quiet()
    assert texts(fake) == ["patience pays"]
    assert waited >= 0.9
    assert [c["text"] for c in fake.calls_to("sendMessage")] == ["patience pays"] * 2


async def test_429_on_a_notice_edit_delays_the_notice_never_the_reply(fake, gateways):
    config = gateways.config(platforms=EVERYONE, agent={"gateway_notify_interval": 0.1},
                             display={"progress": "off"})
    await gateways.start(config, script=slow_script())
    fake.fail_next("editMessageText", 429, retry_after=1)
    fake.push_message(42, "work slowly")
    await fake.wait_for(lambda: "finished" in texts(fake))
    await gateways.quiet()
    notice, reply = fake.messages["42"]  # no fallback message: the edit went through in place
    assert notice["silent"] and reply["text"] == "finished"
    edits = fake.calls_to("editMessageText")
    assert len(edits) == len(notice["edits"]) + 1  # one refused, then retried after Retry-After
    assert notice["text"].startswith("✓ Done in")
    names = method_names(fake)
    assert names.index("editMessageText") > max(i for i, n in enumerate(names) if n == "sendMessage")
    assert len(fake.calls_to("sendMessage")) == 2


@pytest.mark.parametrize(("status", "description", "arrived"), [
    (403, "Forbidden: bot was blocked by the user", []),
    (400, "Bad Request: can't parse entities: Unsupported start tag \"p\" at byte offset 0", ["**bold** reply"]),
])
async def test_a_reply_telegram_refuses_is_one_warning_not_two(fake, gateways, caplog, status, description,
                                                                  arrived):
    # The adapter warned of the refusal, and the outbox of the part it failed; a formatting Telegram
    # refused (the part then sent as plain text) was a warning of the refusal and one of the fallback.
    caplog.set_level(logging.INFO)
    await gateways.start(gateways.config(platforms=EVERYONE), script={"parent": [[{"text": "**bold** reply"}]]})
    fake.fail_next("sendMessage", status, description=description)
    fake.push_message(42, "hi")
    await fake.wait_for(lambda: fake.calls_to("sendMessage"))
    await gateways.quiet()
    assert texts(fake) == arrived
    [warning] = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert "chat 42" in warning and description.partition(": ")[2] in warning, warning  # Telegram's words


# -- 7. "message is not modified" ------------------------------------------------------------


async def test_message_is_not_modified_counts_as_a_successful_edit(fake, gateways):
    config = gateways.config(platforms=EVERYONE, agent={"gateway_notify_interval": 0.1},
                             display={"progress": "off"})
    await gateways.start(config, script=slow_script())
    fake.fail_next("editMessageText", 400, description=NOT_MODIFIED)
    fake.push_message(42, "work slowly")
    await fake.wait_for(lambda: "finished" in texts(fake))
    await gateways.quiet()
    notice, reply = fake.messages["42"]  # no fallback new message for the "failed" edit
    assert notice["text"].startswith("⏳") and reply["text"] == "finished"
    assert len(fake.calls_to("sendMessage")) == 2
    edits = fake.calls_to("editMessageText")
    assert len(edits) == 1 and notice["edits"] == []  # answered "not modified": done, no retry, no fallback


# -- 8. a redelivered update after a polling restart --------------------------------------------


async def test_update_served_again_after_a_restart_is_dropped_by_the_inbox(fake, gateways):
    config = gateways.config(platforms=EVERYONE)
    first = await gateways.start(config, script={"parent": [[{"text": "answered once"}]]})
    polls = len(fake.calls_to("getUpdates"))
    # The poll after the handover, which would carry the confirming offset, never reaches the fake;
    # aiogram backs off ~1 s before trying again, and we stop the process in that window.
    fake.drop_next("getUpdates")
    update_id = fake.push_message(42, "hello")
    await fake.wait_for(lambda: texts(fake) == ["answered once"] and len(fake.calls_to("getUpdates")) > polls)
    await gateways.stop(first)
    assert [u["update_id"] for u in fake.pending] == [update_id]  # never confirmed

    model = ScriptedModel({"parent": [[{"text": "answered twice"}]]})
    await gateways.start(config, model=model)  # same state dir: the inbox remembers the update
    await fake.wait_for(lambda: not fake.pending)  # served again, then confirmed
    assert fake.calls_to("getUpdates")[-1]["offset"] == str(update_id + 1)
    await gateways.quiet()
    assert texts(fake) == ["answered once"]
    assert model.requests == []


async def test_a_busy_chat_logs_no_line_per_update_at_the_default_level(fake, gateways):
    root = logging.getLogger()
    level, stream = root.level, io.StringIO()
    handler = setup_logging("INFO", stream=stream)
    try:
        # Queued, each answered: by default a message interrupts the turn before it.
        await gateways.start(gateways.config(platforms=EVERYONE, display={"busy_input_mode": "queue"}),
                             script={"parent": lambda request: {"text": "ok"}})
        for i in range(3):
            fake.push_message(42, f"message {i}")
        await fake.wait_for(lambda: texts(fake) == ["ok"] * 3)
        await gateways.quiet()
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
    # aiogram says "Update id=… is handled. Duration … ms" at INFO for every update: a line per
    # message fills the disk of a busy bot. At DEBUG it is back, for whoever looks for it.
    assert "Update id=" not in stream.getvalue()
    debug = setup_logging("DEBUG", stream=io.StringIO())
    try:
        assert logging.getLogger("aiogram.event").isEnabledFor(logging.INFO)
    finally:
        root.removeHandler(debug)
        root.setLevel(level)


# -- 9. webhook mode ------------------------------------------------------------------------


async def test_webhook_mode_on_the_gateway_server_checks_the_secret(fake, gateways):
    config = gateways.config(platforms=EVERYONE)
    model = ScriptedModel({"parent": [[{"text": "hooked"}], [{"text": "should never run"}]]})
    adapter = gateways.adapter(mode="webhook", webhook_url="http://127.0.0.1/telegram",
                               webhook_secret="s3cret_token-1")
    gateway = Gateway(AgentHost(config, model=model), [adapter])
    server = Server(gateway, "127.0.0.1", 0)  # mounts the adapter's route, /telegram
    await server.start()
    adapter.webhook_url = f"{server.url}/telegram"  # now that the server has its port
    try:
        await gateway.start()
        gateways.running.append(gateway)
        assert fake.webhook_url == adapter.webhook_url and fake.webhook_secret == "s3cret_token-1"
        assert not fake.calls_to("getUpdates")

        assert await fake.deliver_webhook(fake.message_update(42, "via webhook")) == 200
        await fake.wait_for(lambda: fake.messages["42"])
        assert texts(fake) == ["hooked"]

        assert await fake.deliver_webhook(fake.message_update(42, "let me in"), secret="wrong") == 401
        assert await fake.deliver_webhook(fake.message_update(42, "let me in"), secret=None) == 401
        await gateways.quiet()
        assert texts(fake) == ["hooked"]
        assert len(model.requests) == 1
    finally:
        await server.stop()


# -- 10. access control --------------------------------------------------------------------------


async def test_a_stranger_gets_one_polite_refusal_and_the_model_is_never_called(fake, gateways):
    config = gateways.config(platforms={"telegram": {"allowed_users": ["friend"]}})
    model = ScriptedModel({"parent": [[{"text": "hi friend"}]]})
    await gateways.start(config, model=model)
    fake.push_message(999, "hello?", username="stranger")
    await fake.wait_for(lambda: fake.messages["999"])
    await gateways.quiet()
    (refusal,) = texts(fake, 999)
    assert refusal.startswith("Sorry") and "only answers people" in refusal and "999" in refusal
    assert model.requests == []
    fake.push_message(42, "hello", username="Friend")  # usernames match case-insensitively
    await fake.wait_for(lambda: fake.messages["42"])
    assert texts(fake) == ["hi friend"]
    assert len(model.requests) == 1
    assert texts(fake, 999) == [refusal]


async def test_an_anonymous_group_admin_is_refused_naming_the_group_and_answered_once_it_is_allowed(
        fake, gateways):
    # No user id comes with an anonymous admin's message: the group is the sender, and the refusal
    # names the id that allows it (only the group's admins can write as the group).
    model = ScriptedModel({"parent": [[{"text": "hello admins"}]]})
    gateway = await gateways.start(gateways.config(platforms={"telegram": {"allowed_users": ["friend"]}}), model=model)
    fake.push_message(-1001234, f"@{BOT} status?", chat_type="supergroup", sender_chat=-1001234)
    await fake.wait_for(lambda: fake.messages["-1001234"])
    await gateways.quiet()
    (refusal,) = texts(fake, -1001234)
    assert refusal.startswith("Sorry") and "(-1001234)" in refusal and model.requests == []
    await gateways.stop(gateway)
    await gateways.start(gateways.config(platforms={"telegram": {"allowed_users": [-1001234]}}), model=model)
    fake.push_message(-1001234, f"@{BOT} status?", chat_type="supergroup", sender_chat=-1001234)
    await fake.wait_for(lambda: len(fake.messages["-1001234"]) == 2)
    assert texts(fake, -1001234) == [refusal, "hello admins"]


# -- 11. the progress card ---------------------------------------------------------------------


async def test_a_card_appears_only_for_a_slow_turn_and_ends_as_one_line(fake, gateways):
    config = gateways.config(platforms=EVERYONE, display={"progress_delay": 0.2})
    # Slow past the second Telegram asks between two messages to a chat: the card waits that long after "quick".
    model = ScriptedModel({"parent": [[{"text": "quick"}], [{"sleep": 1.6, "text": "slow answer"}]]})
    await gateways.start(config, model=model)
    fake.push_message(42, "fast, please")
    await fake.wait_for(lambda: texts(fake) == ["quick"])
    fake.push_message(42, "take your time")
    await fake.wait_for(lambda: "slow answer" in texts(fake))
    await gateways.quiet()
    quick, card, slow = fake.messages["42"]
    assert card["silent"] and card["edits"] == [card["text"]] and card["text"].startswith("✓ Done in")
    assert fake.calls_to("sendMessage")[1]["text"].startswith("⏳ Thinking")


async def test_a_429_storm_on_card_edits_never_delays_the_reply(fake, gateways):
    config = gateways.config(platforms=EVERYONE, display={"progress_delay": 0.1})
    script = {"parent": [[{"sleep": 0.3, "tool_calls": [{"name": "list_files", "arguments": {}}]},
                          {"sleep": 0.3, "text": "the answer"}]]}
    await gateways.start(config, script=script)
    for _ in range(5):
        fake.fail_next("editMessageText", 429, retry_after=30)
    fake.push_message(42, "work")
    await fake.wait_for(lambda: fake.calls_to("editMessageText"))
    refused_at = asyncio.get_running_loop().time()
    await fake.wait_for(lambda: "the answer" in texts(fake))
    assert asyncio.get_running_loop().time() - refused_at < 5  # not the 30 s the card edits must wait
    card, answer = fake.messages["42"]
    assert answer["text"] == "the answer" and card["text"].startswith("⏳")  # the card waits; the answer did not


PROGRESS_SOON = {  # the card after 0.1 s, or the long-running notice after 0.1 s
    "card": {"display": {"progress_delay": 0.1}},
    "notice": {"display": {"progress": "off"}, "agent": {"gateway_notify_interval": 0.1}},
}


@pytest.mark.parametrize("progress", PROGRESS_SOON)
async def test_progress_that_had_not_got_out_when_the_turn_ended_is_never_sent(fake, gateways, progress):
    config = gateways.config(platforms=EVERYONE, **PROGRESS_SOON[progress])
    await gateways.start(config, script={"parent": [[{"sleep": 0.4, "text": "the answer"}]]})
    fake.fail_next("sendMessage", 429, retry_after=1)  # the progress message's first send
    fake.push_message(42, "work")
    await fake.wait_for(lambda: fake.calls_to("sendMessage"))
    assert fake.calls_to("sendMessage")[0]["text"].startswith("⏳")
    await fake.wait_for(lambda: texts(fake) == ["the answer"])
    await gateways.quiet()  # past the second the 429 asked for: no "⏳", no "✓ Done" after the answer
    assert texts(fake) == ["the answer"] and not fake.calls_to("editMessageText")
    assert len(fake.calls_to("sendMessage")) == 2


async def test_a_card_withdrawn_at_the_turns_end_stays_unsent_after_a_restart(fake, gateways):
    config = gateways.config(platforms=EVERYONE, **PROGRESS_SOON["card"])
    first = await gateways.start(config, script={"parent": [[{"sleep": 0.4, "text": "the answer"}]]})
    fake.fail_next("sendMessage", 429, retry_after=2)
    fake.push_message(42, "work")
    await fake.wait_for(lambda: texts(fake) == ["the answer"])
    await fake.wait_for(lambda: not fake.pending)
    await gateways.stop(first)  # while the card still waits out its 429

    await gateways.start(config, script={"parent": [[{"text": "never asked"}]]})
    await gateways.quiet()
    assert texts(fake) == ["the answer"] and not fake.calls_to("editMessageText")
    assert len(fake.calls_to("sendMessage")) == 2


# -- a backlog read after an outage -----------------------------------------------------------


async def test_a_message_telegram_held_while_the_gateway_was_down_is_answered_with_a_note(fake, gateways):
    """Telegram keeps a bot's updates for a day; after a restart the gateway reads the backlog.
    A message sent five hours ago is answered with a note first, dated by the message itself
    (the gateway itself only just received it)."""
    update = fake.message_update(42, "is the build green?")
    update["message"]["date"] -= 5 * 3600
    fake.push_update(update)
    fake.push_message(42, "and now?")  # sent just now: no note
    config = gateways.config(platforms=EVERYONE, display={"busy_input_mode": "queue"})
    await gateways.start(config, script={"parent": [[{"text": "yes"}], [{"text": "still"}]]})
    await fake.wait_for(lambda: len(fake.messages["42"]) == 3)
    await gateways.quiet()
    assert texts(fake) == ["⏱ Answering your message from 5 h ago: “is the build green?”", "yes", "still"]


# -- questions the model asks (clarify) ------------------------------------------------


def handled(gateway, update_id: int) -> bool:
    """The gateway has dealt with this update: settled it (an answer), or queued it for a turn."""
    event = f"{gateway.adapters['telegram'].bot.id}:{update_id}"  # Telegram numbers each bot's on its own
    waiting = any(item.event is not None and item.event.event_id == event
                  for session in gateway.sessions for item in session.queue)
    return waiting or gateway.store.inbox.settled("telegram", event)


async def test_a_message_sent_while_the_question_is_still_being_sent_is_not_its_answer(fake: FakeTelegram,
                                                                                       gateways):
    # The user cannot answer a question that is not in the chat yet: what they write meanwhile
    # is a message of its own, handled as the busy mode says (here: after the turn).
    config = gateways.config(platforms=EVERYONE, display={"busy_input_mode": "queue"})
    gateway = await gateways.start(config, model=ScriptedModel({"parent": asking_parent}))
    fake.fail_next("sendMessage", 429, retry_after=1)
    fake.push_message(42, "please deploy the app")
    await fake.wait_for(lambda: fake.calls_to("sendMessage"))  # the question's first try: 429
    fake.hold("sendMessage")  # and its retry still under way
    meanwhile = fake.push_message(42, "also, is the CI green?")
    await fake.wait_for(lambda: handled(gateway, meanwhile))
    fake.release("sendMessage")
    await fake.wait_for(lambda: texts(fake))
    assert texts(fake) == [question_text("Which environment?", CHOICES, 600)]
    fake.push_message(42, "1")
    await fake.wait_for(lambda: len(texts(fake)) == 3)
    await gateways.quiet()
    assert texts(fake)[1:] == ["deploying to: staging", "plain answer to also, is the CI green?"]


async def test_in_a_group_the_question_asks_for_a_reply_and_any_members_reply_answers_it(fake, gateways):
    # The bot hears only what is addressed to it in a group: "your next message" went unheard.
    config = gateways.config(platforms=EVERYONE)
    await gateways.start(config, model=ScriptedModel({"parent": asking_parent}))
    bot = fake.bot_user["username"]
    fake.push_message(-100, f"@{bot} please deploy the app", chat_type="supergroup", user_id=5, username="bob")
    await fake.wait_for(lambda: texts(fake, -100))
    assert texts(fake, -100) == ["❓ Which environment?\n\n1. staging\n2. production\n\n"
                                 "Reply to this message to answer (a number picks an option); I wait 10 min."]
    fake.push_message(-100, "1", chat_type="supergroup", user_id=6, username="carol")  # not for the bot
    fake.push_message(-100, "2", chat_type="supergroup", user_id=6, username="carol", reply_to_bot=True)
    await fake.wait_for(lambda: len(texts(fake, -100)) == 2)
    await gateways.quiet()
    assert texts(fake, -100)[1] == "deploying to: [@carol] production"  # the model reads who answered


async def test_a_question_still_waiting_to_be_sent_when_its_turn_is_stopped_is_never_sent(fake: FakeTelegram,
                                                                                         gateways):
    # Sent after the stop, it would ask for an answer nothing waits for any more.
    config = gateways.config(platforms=EVERYONE)
    gateway = await gateways.start(config, model=ScriptedModel({"parent": asking_parent}))
    fake.fail_next("sendMessage", 429, retry_after=3)
    fake.push_message(42, "please deploy the app")
    await fake.wait_for(lambda: fake.calls_to("sendMessage"))  # the question's first try: 429, again in 3 s
    stop = fake.push_message(42, "/stop")
    await fake.wait_for(lambda: gateway.store.inbox.settled("telegram", f"{fake.bot_user['id']}:{stop}"))
    await fake.wait_for(lambda: texts(fake), timeout=10)
    await gateways.quiet()
    assert texts(fake) == ["Stopped the running turn."]


async def test_an_answer_to_the_question_seen_before_a_restart_answers_it_while_it_waits_to_be_asked_again(
        fake: FakeTelegram, gateways):
    # Run again after the restart, the turn asks the same question again, and a 429 holds that back;
    # the user answers the question in the chat. Taken for a message of its own, the answer stopped
    # the turn (its question never sent) and reached the model as a bare "2".
    question = question_text("Which environment?", CHOICES, 600)
    config = gateways.config(platforms=EVERYONE)  # busy_input_mode: interrupt, the default
    gateway = await gateways.start(config, model=ScriptedModel({"parent": asking_parent}))
    fake.push_message(42, "please deploy the app")
    await fake.wait_for(lambda: texts(fake) == [question])
    await gateways.stop(gateway)  # the turn runs again after the restart, and asks again
    fake.fail_next("sendMessage", 429, retry_after=1)
    gateway = await gateways.start(config, model=ScriptedModel({"parent": asking_parent}))
    await fake.wait_for(lambda: [c["text"] for c in fake.calls_to("sendMessage")] == [question, question])
    answer = fake.push_message(42, "2")  # while the question asked again waits out the 429
    await fake.wait_for(lambda: handled(gateway, answer))
    await fake.wait_for(lambda: any(t.startswith(("deploying", "plain")) for t in texts(fake)))
    await gateways.quiet()
    assert texts(fake)[1:] == [question, "deploying to: production"]
