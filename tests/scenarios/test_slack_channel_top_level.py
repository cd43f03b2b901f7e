"""What the slash commands typed at a Slack channel's top level say of the conversations that run in its threads,
through slack-bolt against the loopback fake with the real Gateway: a subagent named there that works in a thread,
the subagents a thread's turn ran that have finished, and the text after a ``/new``, which is answered at the top
level, where no conversation goes on (`test_commands_at_top_level` has the subagents at work)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.agents_command import NO_SUBAGENTS
from gateway.testing import make_config, start_gateway
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from tests.clock_steps import run_clock_until
from tests.hanging_children import children_hanging, delegating_parent, hanging_child

CHANNEL = "C1"


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    fake = await FakeSlack().start()
    yield fake
    await fake.close()


async def started(slack: FakeSlack, tmp_path, model: ScriptedModel, clock: FakeClock):
    adapter = SlackAdapter(bot_token=slack.bot_token, app_token=slack.app_token, api_base=slack.api_base,
                           ping_interval=0.2)
    config = make_config(tmp_path, platforms={"slack": {"allow_all": True}}, display={"progress": "off"})
    return await start_gateway(config, [adapter], model=model, clock=clock)


async def command(fake: FakeSlack, clock: FakeClock, name: str, text: str = "", channel: str = CHANNEL) -> str:
    """The ephemeral answer to a slash command typed in ``channel``, paced a second after the answer before."""
    before = len(fake.ephemeral)
    await fake.push_slash_command(name, "U2", channel, text)
    await run_clock_until(fake, clock, lambda: len(fake.ephemeral) > before)
    [answer] = fake.ephemeral[before:]
    return answer["text"]


def bot_texts(fake: FakeSlack, thread: str | None) -> list[str]:
    return [m.get("text", "") for m in fake.messages.get((CHANNEL, thread), []) if m.get("bot_id")]


async def test_agents_in_the_channel_says_where_a_threads_subagent_named_there_works_and_how_to_reach_it(
        slack, tmp_path):
    model = ScriptedModel({"parent": delegating_parent, "leaf": hanging_child})
    clock = FakeClock(autojump=False)  # the answers to one channel are paced a second apart, as its messages are
    gateway = await started(slack, tmp_path, model, clock)
    try:
        thread = (await slack.push_mention(CHANNEL, "U1", "please delegate this"))["event"]["ts"]
        await children_hanging(model)
        await run_clock_until(slack, clock, lambda: "I started the subagents." in bot_texts(slack, thread))
        session = gateway.sessions.find("slack", CHANNEL, thread)
        first, _ = (c.subagent_id for c in gateway.host.children.children(session.session_id))

        for action in ("stop", "log", "RETRY"):  # by its whole id, in any case
            assert await command(slack, clock, "/agents", f"{action} {first.upper()}") == (
                f"{first} is a subagent of a thread of this chat, which /agents here does not reach: send !agents "
                f"{action.lower()} {first} in that thread.")
        assert await command(slack, clock, "/agents", f"stop {first[-6:]}") == (  # a part of it, unique
            f"{first} is a subagent of a thread of this chat, which /agents here does not reach: send !agents stop "
            f"{first} in that thread.")
        assert len(gateway.host.children.children(session.session_id)) == 2  # not stopped from here

        # The top level with subagents of its own (a /new's text delegated): still said, not "No subagent … in this
        # session: /agents lists them."
        await command(slack, clock, "/new", "please delegate this too")
        top = gateway.sessions.find("slack", CHANNEL, None)
        await run_clock_until(slack, clock, lambda: len(gateway.host.children.children(top.session_id)) == 2)
        assert await command(slack, clock, "/agents", f"stop {first}") == (
            f"{first} is a subagent of a thread of this chat, which /agents here does not reach: send !agents stop "
            f"{first} in that thread.")

        await slack.push_message(CHANNEL, "U1", f"!agents stop {first}", thread_ts=thread)  # as the answer says
        await run_clock_until(slack, clock, lambda: any(t.startswith(f"Stopping {first}")
                                                        for t in bot_texts(slack, thread)))
        await run_clock_until(slack, clock, lambda: len(gateway.host.children.children(session.session_id)) == 1)
        listing = await command(slack, clock, "/agents")
        assert listing.count("[hang]") == 2 and first not in listing  # the top level's own two
        assert listing.endswith("\n1 subagent works and 1 ran in 1 thread of this chat, which /agents here does not "
                                "reach: send !agents in that thread to list them.")
    finally:
        await gateway.stop(grace=0)


async def test_agents_in_the_channel_counts_the_subagents_that_ran_in_its_threads(slack, tmp_path):
    def parent(request: ModelRequest) -> dict:  # delegates once: the results' message names delegate_task too
        asked = request.messages[-1]["content"] == "[user U1] please delegate this"
        return delegating_parent(request) if asked or request.messages[-1]["role"] == "tool" else {"text": "all done"}

    def child(request: ModelRequest) -> dict:
        return {"text": f"done with {request.metadata.get('goal')}"}

    model = ScriptedModel({"parent": parent, "leaf": child})
    clock = FakeClock(autojump=False)
    gateway = await started(slack, tmp_path, model, clock)
    try:
        thread = (await slack.push_mention(CHANNEL, "U1", "please delegate this"))["event"]["ts"]
        await run_clock_until(slack, clock, lambda: "all done" in bot_texts(slack, thread))  # the results' answer
        session = gateway.sessions.find("slack", CHANNEL, thread)
        assert not gateway.host.children.children(session.session_id)

        ran = ("2 subagents ran in 1 thread of this chat, which /agents here does not reach: send !agents in that "
               "thread to list them.")
        assert await command(slack, clock, "/agents") == f"No subagents here. {ran}"
        assert await command(slack, clock, "/agents", "all") == f"No subagents here. {ran}"
        assert await command(slack, clock, "/agents", "log first") == f"No subagents here. {ran}"

        # A DM has no threads: as it was.
        assert await command(slack, clock, "/agents", channel=slack.dm_channel("U2")) == NO_SUBAGENTS
    finally:
        await gateway.stop(grace=0)


async def test_new_with_text_in_the_channel_says_that_its_answer_starts_no_conversation(slack, tmp_path):
    seen: list[list[str]] = []

    def parent(request: ModelRequest) -> dict:
        seen.append([str(m["content"]) for m in request.messages if m["role"] == "user"])
        return {"text": f"answer {len(seen)}"}

    clock = FakeClock(autojump=False)
    gateway = await started(slack, tmp_path, ScriptedModel({"parent": parent}), clock)
    try:
        answer = await command(slack, clock, "/new", "plan the trip")
        assert answer.endswith(
            " What you wrote after /new is answered at this channel's top level, where no conversation goes on: a "
            "reply to that answer is not read as part of it. To talk it over, mention me with it in the channel: "
            "the thread that starts goes on with it.")
        # Where it said: at the top level, and a reply in the answer's thread (mentioned) is a conversation anew.
        await run_clock_until(slack, clock, lambda: bot_texts(slack, None) == ["answer 1"])
        top = slack.messages[(CHANNEL, None)][-1]["ts"]
        await slack.push_mention(CHANNEL, "U2", "and the hotels?", thread_ts=top)
        await run_clock_until(slack, clock, lambda: len(seen) == 2)
        assert [text.endswith("plan the trip") for text in seen[1]] == [False]

        # /new alone, and in a DM (a conversation of its own) with text, say nothing of it.
        assert "after /new" not in await command(slack, clock, "/new")
        assert "after /new" not in await command(slack, clock, "/new", "hello", slack.dm_channel("U2"))
    finally:
        await gateway.stop(grace=0)
