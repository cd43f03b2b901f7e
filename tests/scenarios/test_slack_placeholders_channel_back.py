"""A channel lost to the bot mid-turn (archived, or the bot removed from it) stops the turn, and Slack refuses the
deletion of its `_working…_` placeholder there: once the bot may write there again (unarchived, added back, or a
message to the bot there), that placeholder is deleted, not left reading "working" above the next answers; after a
restart too, in a channel still archived then.

`FakeSlack` over Socket Mode, the real slack-bolt client inside `SlackAdapter`, the real `Gateway`
(`platforms.slack_placeholders`)."""

from __future__ import annotations

import re

import pytest

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from gateway.testing import make_config, settled, start_gateway
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from tests.scenarios.test_slack_chat import PLACEHOLDER, slack_chat  # noqa: F401  (the fixture)
from tests.scenarios.test_slack_edits import acked


def gated_echo() -> ScriptedModel:
    """Echoes each message without its sender; one starting with "slow" waits at a gate named by its text."""
    def parent(request: ModelRequest) -> dict:
        text = re.sub(r"^\[user U\w+\] ", "", str(request.messages[-1]["content"]))
        return {"wait": text, "text": f"re: {text}"} if text.startswith("slow") else {"text": f"re: {text}"}
    return ScriptedModel({"parent": parent})


def adapter_for(fake: FakeSlack) -> SlackAdapter:
    return SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base, ping_interval=0.2)


def bot_texts(fake: FakeSlack, channel: str, thread: str) -> list[str]:
    return [m.get("text", "") for m in fake.messages.get((channel, thread), []) if m.get("bot_id")]


async def lose(fake, how: str, channel: str) -> None:
    if how == "archived":
        await fake.archive(channel)
    elif how == "removed":
        await fake.remove_bot(channel)
    else:  # a private channel: Slack answers channel_not_found to a bot no longer in it
        await fake.remove_bot(channel, private=True, events=("group_left",))


async def back(fake, how: str, channel: str) -> None:
    if how == "archived":
        await fake.unarchive(channel)
    else:
        await fake.add_bot(channel, private=how == "removed privately")


@pytest.mark.parametrize("how", ["archived", "removed", "removed privately"])
async def test_a_placeholder_slack_refused_to_delete_in_a_lost_channel_is_deleted_once_the_bot_is_back(
        slack_chat, how):  # noqa: F811
    model = gated_echo()
    chat = await slack_chat(llm=model)
    fake, gateway = chat.fake, chat.gateway
    thread = (await fake.push_mention("C2", "U1", "slow alice"))["event"]["ts"]
    await model.reached("slow alice")
    await fake.wait_for(lambda: chat.bot_texts("C2", thread) == [PLACEHOLDER])
    await lose(fake, how, "C2")
    await acked(fake)
    # The turn is stopped, and its placeholder's deletion refused: the channel takes nothing.
    await fake.wait_for(lambda: fake.calls_to("chat.delete"))
    await settled(gateway)
    assert chat.bot_texts("C2", thread) == [PLACEHOLDER]

    await back(fake, how, "C2")  # its event alone: nobody has written there yet
    await acked(fake)
    await fake.wait_for(lambda: chat.bot_texts("C2", thread) == [], timeout=5)
    await fake.push_message("C2", "U1", "still there?", thread_ts=thread)
    await fake.wait_for(lambda: chat.bot_texts("C2", thread) == ["re: still there?"], timeout=5)
    await settled(gateway)


async def test_without_the_event_a_message_to_the_bot_in_the_channel_deletes_that_placeholder(
        slack_chat):  # noqa: F811
    # An app not subscribed to member_joined_channel: the first message to the bot there says it is back.
    model = gated_echo()
    chat = await slack_chat(llm=model)
    fake, gateway = chat.fake, chat.gateway
    thread = (await fake.push_mention("C2", "U1", "slow alice"))["event"]["ts"]
    await model.reached("slow alice")
    await fake.wait_for(lambda: chat.bot_texts("C2", thread) == [PLACEHOLDER])
    await fake.remove_bot("C2")
    await acked(fake)
    await fake.wait_for(lambda: fake.calls_to("chat.delete"))
    await settled(gateway)
    await fake.add_bot("C2", event=False)

    other = (await fake.push_mention("C2", "U2", "hello again"))["event"]["ts"]
    await fake.wait_for(lambda: chat.bot_texts("C2", other) == ["re: hello again"], timeout=5)
    await fake.wait_for(lambda: chat.bot_texts("C2", thread) == [], timeout=5)
    await settled(gateway)


async def test_after_a_restart_a_placeholder_in_a_channel_still_archived_is_deleted_once_it_is_unarchived(tmp_path):
    config = make_config(tmp_path, platforms={"slack": {"allow_all": True}})
    model = gated_echo()
    async with FakeSlack() as fake:
        gateway = await start_gateway(config, [adapter_for(fake)], model=model)
        try:
            await fake.wait_for(lambda: fake.open_connections)
            thread = (await fake.push_mention("C2", "U1", "slow alice"))["event"]["ts"]
            await model.reached("slow alice")
            await fake.wait_for(lambda: bot_texts(fake, "C2", thread) == [PLACEHOLDER])
            await fake.archive("C2")
            await acked(fake)
            await fake.wait_for(lambda: fake.calls_to("chat.delete"))
            await settled(gateway)
        finally:
            await gateway.stop(grace=0)
        assert bot_texts(fake, "C2", thread) == [PLACEHOLDER]

        gateway = await start_gateway(config, [adapter_for(fake)], model=gated_echo())
        try:
            await fake.wait_for(lambda: len(fake.calls_to("chat.delete")) == 2)  # the start's clean-up, refused
            await settled(gateway)
            assert bot_texts(fake, "C2", thread) == [PLACEHOLDER]
            await fake.unarchive("C2")
            await fake.wait_for(lambda: bot_texts(fake, "C2", thread) == [], timeout=5)
        finally:
            await gateway.stop(grace=0)


async def test_a_placeholder_whose_deletion_fails_for_now_once_the_bot_is_back_is_deleted_in_a_moment(
        slack_chat):  # noqa: F811
    # Slack answers the deletion tried as the bot is added back with a 5xx (an outage of a moment): it is tried again
    # shortly, as any placeholder's deletion, not left reading "working" until the next restart.
    model = gated_echo()
    chat = await slack_chat(llm=model)
    fake, gateway = chat.fake, chat.gateway
    thread = (await fake.push_mention("C2", "U1", "slow alice"))["event"]["ts"]
    await model.reached("slow alice")
    await fake.wait_for(lambda: chat.bot_texts("C2", thread) == [PLACEHOLDER])
    await fake.remove_bot("C2")
    await acked(fake)
    await fake.wait_for(lambda: fake.calls_to("chat.delete"))
    await settled(gateway)

    fake.fail_next("chat.delete", "internal_error", status=503)
    await fake.add_bot("C2")
    await acked(fake)
    await fake.wait_for(lambda: len(fake.calls_to("chat.delete")) == 2)
    await fake.wait_for(lambda: chat.bot_texts("C2", thread) == [], timeout=5)
    await settled(gateway)


async def test_a_start_does_not_say_it_deleted_a_placeholder_slack_refused_to_delete_in_an_archived_channel(
        tmp_path, caplog):
    config = make_config(tmp_path, platforms={"slack": {"allow_all": True}})
    model = gated_echo()
    async with FakeSlack() as fake:
        gateway = await start_gateway(config, [adapter_for(fake)], model=model)
        try:
            await fake.wait_for(lambda: fake.open_connections)
            thread = (await fake.push_mention("C2", "U1", "slow alice"))["event"]["ts"]
            await model.reached("slow alice")
            await fake.wait_for(lambda: bot_texts(fake, "C2", thread) == [PLACEHOLDER])
            await fake.archive("C2")
            await acked(fake)
            await fake.wait_for(lambda: fake.calls_to("chat.delete"))
            await settled(gateway)
        finally:
            await gateway.stop(grace=0)

        caplog.set_level("INFO", logger="platforms.slack")
        gateway = await start_gateway(config, [adapter_for(fake)], model=gated_echo())
        try:
            await fake.wait_for(lambda: len(fake.calls_to("chat.delete")) == 2)  # the start's clean-up, refused
            await settled(gateway)
            assert bot_texts(fake, "C2", thread) == [PLACEHOLDER]
            assert not [r for r in caplog.records if "deleted 1 placeholder" in r.getMessage()]
        finally:
            await gateway.stop(grace=0)
