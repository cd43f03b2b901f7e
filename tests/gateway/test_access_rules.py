"""Who may talk to the gateway (`gateway.access`), and how often a stranger is told not
(`gateway.refusals`), through the gateway's intake."""

from __future__ import annotations

from agent.models.scripted import ScriptedModel
from gateway.testing import RecordingAdapter, make_config, settled


async def test_a_stranger_repeating_a_telegram_command_in_a_group_is_refused_once(tmp_path, gateways):
    # A Telegram command is a message the whole group sees: answered as a slash command is (always),
    # the bot quoted every "/help" a stranger sent with a refusal.
    chat = RecordingAdapter("telegram")
    model = ScriptedModel({"parent": [[{"text": "never"}]]})
    config = make_config(tmp_path, platforms={"telegram": {"enabled": False, "allowed_users": ["42"]}})
    gateway = await gateways(config, [chat], model=model)
    for text in ("/help", "/help@bot", "/stop", "/new let me in", "/agents stop sa-1"):
        await chat.say(text, user="999", chat="-100123", private=False, message_id="7")
    await chat.wait_for(lambda: chat.messages)
    await settled(gateway)
    assert gateway.store.inbox.unfinished() == []  # every one handled: the first refused, the others dropped
    assert len(chat.messages) == 1 and "only answers people" in chat.texts()[0]
    assert model.requests == [] and len(gateway.sessions) == 0


async def test_spaces_around_an_allowed_entry_do_not_lock_its_user_out(tmp_path, gateways):
    # ``ADMIN_ID=42 `` in an env file (or its Windows line end) made the entry "42 ", which no id is.
    chat = RecordingAdapter("telegram")
    config = make_config(tmp_path, platforms={"telegram": {"enabled": False, "allowed_users": ["42 ", "\tada\r"]}})
    await gateways(config, [chat], script={"parent": [[{"text": "hi 42"}], [{"text": "hi ada"}]]})
    await chat.say("hello", user="42", name=None)
    await chat.wait_for(lambda: chat.messages)
    await chat.say("hello", user="43", name="Ada")
    await chat.wait_for(lambda: len(chat.messages) == 2)
    assert chat.texts() == ["hi 42", "hi ada"]
