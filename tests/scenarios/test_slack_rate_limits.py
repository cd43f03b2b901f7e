"""A busy Slack channel stays inside Slack's rate limits, end to end: one member's thread fans out a
background batch of ten subagents whose card changes as each one finishes, another member asks
questions in a thread of their own meanwhile, and the results come back as an answer long enough
to be split. The fake enforces Slack's limits (chat.postMessage one a second per channel, threads
included; chat.update and chat.delete 50 a minute) on the gateway's own fake clock, answering 429
with ``Retry-After`` as Slack does.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import AsyncIterator

import aiohttp
import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.testing import make_config, settled, start_gateway
from platforms.fakes._slack_limits import TIERS, Window
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from tests.clock_steps import run_clock, run_clock_until
from tests.scenarios.test_telegram_flood import (
    GOALS,
    QUESTIONS,
    child,
    final_answer,
    parent,
)

CHANNEL = "C1"


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as fake:
        yield fake


def busiest(stamps: list[float], seconds: float) -> int:
    return max(sum(1 for t in stamps if end - seconds < t <= end) for end in stamps)


async def test_a_fan_out_in_a_busy_channel_gets_no_429_and_every_answer_whole_and_in_order(fake, tmp_path):
    clock = FakeClock(autojump=False)
    limits = fake.enforce_rate_limits(clock)
    config = make_config(tmp_path, platforms={"slack": {"allow_all": True}}, display={"progress_delay": 1.0})
    model = ScriptedModel({"parent": parent, "leaf": child})
    adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base)
    gateway = await start_gateway(config, [adapter], model=model, clock=clock)
    try:
        await fake.wait_for(lambda: fake.open_connections)
        thread = (await fake.push_mention(CHANNEL, "U1", "please fan out over the sources"))["event"]["ts"]
        for goal in GOALS:
            await model.reached(goal)
        said = lambda: [m for m in fake.messages.get((CHANNEL, thread), []) if m.get("bot_id")]  # noqa: E731
        await run_clock_until(fake, clock, lambda: any("0 of 10 done" in m["text"] for m in said()))
        card = next(m for m in said() if "0 of 10 done" in m["text"])
        bob = None
        for n, goal in enumerate(GOALS):
            if n % 2:  # bob asks meanwhile, in a thread of his own, while the card keeps changing
                if bob is None:
                    bob = (await fake.push_mention(CHANNEL, "U2", QUESTIONS[0]))["event"]["ts"]
                else:
                    await fake.push_message(CHANNEL, "U2", QUESTIONS[n // 2], thread_ts=bob)
            await run_clock(fake, clock, 5.0)
            model.release(goal)
        parts = lambda: [m["text"] for m in said() if m["text"].startswith("Finding")]  # noqa: E731
        await run_clock_until(fake, clock, lambda: len(parts()) > 1 and gateway.quiet, timeout=30.0)
        await run_clock(fake, clock, 10.0)
        await settled(gateway)

        assert limits.refused == []  # not one 429
        answers = [m["text"] for m in said() if m is not card]
        assert answers[0] == "On it: ten subagents are surveying the sources."
        assert answers[1:] == parts() and len(parts()) > 1  # nothing else, nothing twice
        assert "".join(parts()).replace("\n", "") == final_answer().replace("\n", "")  # whole, in order
        bobs = [m["text"] for m in fake.messages.get((CHANNEL, bob), []) if m.get("bot_id")]
        assert bobs == [f"Answer to {q!r}" for q in QUESTIONS]
        assert card["text"].startswith("✓ Done in")
        posts = [c.at for c in limits.calls if c.method == "chat.postMessage"]
        updates = [c.at for c in limits.calls if c.method == "chat.update"]
        print(f"\n{len(posts)} posts, {len(updates)} updates; busiest second {busiest(posts, 1.0)} posts, "
              f"busiest minute {busiest(updates, 60.0)} updates")
    finally:
        await gateway.stop(grace=0)


async def test_a_channel_refused_with_retry_after_is_not_written_to_again_before_it(fake, tmp_path):
    """Slack may refuse sooner than its one a second (a burst, the workspace's limit): its
    ``Retry-After`` then holds the whole channel, every thread of it, and nothing is lost or doubled."""
    clock = FakeClock(autojump=False)
    limits = fake.enforce_rate_limits(clock, per_channel=Window(1, 3.0))
    config = make_config(tmp_path, platforms={"slack": {"allow_all": True}})
    # A channel's message reaches the model with who wrote it ("[user U0] question 0"): answer the question.
    model = ScriptedModel({"parent": lambda request: {
        "text": "re: " + re.sub(r"^\[user U\w+\] ", "", request.messages[-1]["content"])}})
    adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base)
    gateway = await start_gateway(config, [adapter], model=model, clock=clock)
    try:
        await fake.wait_for(lambda: fake.open_connections)
        threads = [(await fake.push_mention(CHANNEL, f"U{n}", f"question {n}"))["event"]["ts"] for n in range(4)]
        answers = lambda: [[m["text"] for m in fake.messages.get((CHANNEL, t), []) if m.get("bot_id")]  # noqa: E731
                           for t in threads]
        await run_clock_until(fake, clock, lambda: answers() == [[f"re: question {n}"] for n in range(4)] and gateway.quiet)
        await run_clock(fake, clock, 5.0)
        await settled(gateway)

        assert answers() == [[f"re: question {n}"] for n in range(4)]  # each once
        assert limits.refused  # the fake refused sooner than the gateway's pacing expects
        posts = [c.at for c in limits.calls if c.method == "chat.postMessage"]
        for refusal in limits.refused:  # nothing written to the channel before its Retry-After
            assert not [at for at in posts if refusal.at < at < refusal.at + refusal.retry_after]
        assert len(limits.refused) <= len(posts)  # one refusal per post at most: never asked again too soon
    finally:
        await gateway.stop(grace=0)


def _quick_or_slow(request) -> dict:
    said = str(request.messages[-1]["content"])
    return {"wait": "slow", "text": "slow answer"} if "slow" in said else {"text": "quick answer"}


async def test_a_placeholder_right_after_a_message_in_its_channel_waits_its_turn(fake, tmp_path):
    # The `_working…_` placeholder counted in the channel's one a second but did not wait for it:
    # a turn starting right after an answer in the channel drew a 429 for its placeholder.
    clock = FakeClock(autojump=False)
    limits = fake.enforce_rate_limits(clock)
    config = make_config(tmp_path, platforms={"slack": {"allow_all": True}})
    model = ScriptedModel({"parent": _quick_or_slow})
    adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base)
    gateway = await start_gateway(config, [adapter], model=model, clock=clock)
    try:
        await fake.wait_for(lambda: fake.open_connections)
        said = lambda thread: [m["text"] for m in fake.messages.get((CHANNEL, thread), [])  # noqa: E731
                               if m.get("bot_id")]
        quick = (await fake.push_mention(CHANNEL, "U1", "a quick one"))["event"]["ts"]
        await run_clock_until(fake, clock, lambda: "quick answer" in said(quick))
        slow = (await fake.push_mention(CHANNEL, "U2", "a slow one"))["event"]["ts"]  # within a second of it
        await model.reached("slow")
        await run_clock_until(fake, clock, lambda: said(slow) == ["_working…_"])
        model.release("slow")
        await run_clock_until(fake, clock, lambda: said(slow) == ["slow answer"] and gateway.quiet)
        await settled(gateway)

        assert limits.refused == []  # not one 429
        assert said(quick) == ["quick answer"]
    finally:
        await gateway.stop(grace=0)


CHANNELS = [f"C{n}" for n in range(1, 13)]
TASKS = 6


def _fan_parent(request) -> dict:
    last = request.messages[-1]
    said = str(last["content"])
    if last["role"] == "tool":
        return {"text": "On it."}
    if "Background delegation results" in said:
        return {"text": "All done."}
    channel = re.search(r"fan out in (C\d+)", said).group(1)
    return {"tool_calls": [{"name": "delegate_task", "arguments": {
        "tasks": [{"goal": f"{channel} survey {n}"} for n in range(TASKS)]}}]}


def _fan_child(request) -> dict:
    return {"wait": request.metadata["goal"], "text": "notes"}


async def fan_out_cards(fake: FakeSlack, tmp_path, channels: list[str], *, before_release=None):
    """Each of ``channels`` asks for a fan-out of `TASKS` subagents, whose live progress cards change as
    one subagent of every channel finishes at once, then the next; ``before_release`` is awaited once
    every card shows. Returns the fake's rate limits and each channel's bot messages, once all is said."""
    clock = FakeClock(autojump=False)
    limits = fake.enforce_rate_limits(clock)
    config = make_config(tmp_path, platforms={"slack": {"allow_all": True}}, display={"progress_delay": 1.0},
                         lifecycle={"max_running": len(channels) * TASKS})
    model = ScriptedModel({"parent": _fan_parent, "leaf": _fan_child})
    adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base)
    gateway = await start_gateway(config, [adapter], model=model, clock=clock)
    try:
        await fake.wait_for(lambda: fake.open_connections)
        threads = {c: (await fake.push_mention(c, "U1", f"please fan out in {c}"))["event"]["ts"] for c in channels}
        said = lambda c: [m for m in fake.messages.get((c, threads[c]), []) if m.get("bot_id")]  # noqa: E731
        for channel in channels:
            for n in range(TASKS):
                await model.reached(f"{channel} survey {n}")
        carded = lambda: all(any(f" of {TASKS} done" in m["text"] for m in said(c)) for c in channels)  # noqa: E731
        await run_clock_until(fake, clock, carded, timeout=30.0)
        if before_release is not None:
            await before_release()
        for n in range(TASKS):
            for channel in channels:
                model.release(f"{channel} survey {n}")
            await run_clock(fake, clock, 2.0)
        done = lambda: all(said(c) and said(c)[-1]["text"] == "All done." for c in channels)  # noqa: E731
        await run_clock_until(fake, clock, lambda: done() and gateway.quiet, timeout=60.0)
        await run_clock(fake, clock, 10.0)
        await settled(gateway)
        return limits, {c: [m["text"] for m in said(c)] for c in channels}
    finally:
        await gateway.stop(grace=0)


def assert_cards_done_once(said: dict[str, list[str]]) -> None:
    """Every channel's card ends with its final text, and each of its other messages went once, in order."""
    for texts in said.values():
        [card] = [t for t in texts if f" of {TASKS} done" in t or t.startswith("✓ Done in")]
        assert card.startswith("✓ Done in") and [t for t in texts if t != card] == ["On it.", "All done."]


async def test_a_fan_out_over_many_channels_gets_no_429_from_the_workspace_wide_limits(fake, tmp_path):
    # Every channel's live progress card changes as its subagents finish. chat.update is counted per
    # workspace (50 a minute), not per channel: paced per channel only, twelve cards drew 429s.
    limits, said = await fan_out_cards(fake, tmp_path, CHANNELS)

    assert limits.refused == []  # not one 429
    assert_cards_done_once(said)
    updates = [c.at for c in limits.calls if c.method == "chat.update"]
    assert busiest(updates, 60.0) <= 50


CROWD = [f"C{n}" for n in range(100, 156)]
"""More channels than Slack takes chat.delete calls a minute (50, per workspace)."""


def _held_in_its_channel(request) -> dict:
    channel = re.search(r"hold on in (C\d+)", str(request.messages[-1]["content"])).group(1)
    return {"wait": channel, "text": f"done in {channel}"}


async def placeholders_deleted(fake: FakeSlack, tmp_path, channels: list[str], **limits_kw):
    """Each of ``channels`` asks something the model holds, so its `_working…_` placeholder shows; then
    every turn ends at once and the placeholders are deleted. Returns the fake's rate limits (made with
    ``limits_kw``) and each channel's bot messages, once all is said."""
    clock = FakeClock(autojump=False)
    limits = fake.enforce_rate_limits(clock, **limits_kw)
    config = make_config(tmp_path, platforms={"slack": {"allow_all": True}})
    model = ScriptedModel({"parent": _held_in_its_channel})
    adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base)
    gateway = await start_gateway(config, [adapter], model=model, clock=clock)
    try:
        await fake.wait_for(lambda: fake.open_connections)
        threads = {c: (await fake.push_mention(c, "U1", f"hold on in {c}"))["event"]["ts"] for c in channels}
        said = lambda c: [m["text"] for m in fake.messages.get((c, threads[c]), []) if m.get("bot_id")]  # noqa: E731
        for channel in channels:
            await model.reached(channel)
        await run_clock_until(fake, clock, lambda: all(said(c) == ["_working…_"] for c in channels), timeout=60.0)
        for channel in channels:
            model.release(channel)
        await run_clock_until(fake, clock, lambda: all(said(c) == [f"done in {c}"] for c in channels) and gateway.quiet,
                              timeout=120.0)
        await settled(gateway)
        return limits, {c: said(c) for c in channels}
    finally:
        await gateway.stop(grace=0)


async def test_placeholders_deleted_in_more_channels_than_slack_takes_a_minute_get_no_429(fake, tmp_path):
    # chat.delete is Tier 3 like chat.update, counted per workspace: turns ending together in 56
    # channels deleted their placeholders at once, and every one past the 50th drew a 429.
    limits, said = await placeholders_deleted(fake, tmp_path, CROWD)

    assert limits.refused == []  # not one 429
    assert all(said[c] == [f"done in {c}"] for c in CROWD)
    deletions = [c.at for c in limits.calls if c.method == "chat.delete"]
    assert len(deletions) == len(CROWD) and busiest(deletions, 60.0) <= 50


FEW = CHANNELS[:4]


async def spend_the_workspaces_updates(fake: FakeSlack) -> None:
    """Another process of the same Slack app (a script, a second gateway) edits a message in C0 until
    Slack refuses: for a while chat.update is refused in every channel of the workspace."""
    async with aiohttp.ClientSession() as session:
        client = AsyncWebClient(token=fake.bot_token, base_url=fake.api_base, session=session, retry_handlers=[])
        ts = (await client.chat_postMessage(channel="C0", text="status"))["ts"]
        for n in itertools.count():
            try:
                await client.chat_update(channel="C0", ts=ts, text=f"status {n}")
            except SlackApiError as exc:
                assert exc.response.status_code == 429
                return


async def test_a_429_on_chat_update_holds_every_channels_cards_until_retry_after(fake, tmp_path):
    # chat.update is counted per workspace: a 429 on one channel's card held only that channel, and
    # every other channel's card spent a call of its own to learn the same, drawing a 429 each.
    limits, said = await fan_out_cards(fake, tmp_path, FEW, before_release=lambda: spend_the_workspaces_updates(fake))

    # One card edit learnt that chat.update is out; no other channel asked to learn the same.
    [refusal] = [r for r in limits.refused if r.channel in FEW]
    assert refusal.method == "chat.update"
    updates = [c.at for c in limits.calls if c.method == "chat.update" and c.channel in FEW]
    assert not [at for at in updates if refusal.at <= at < refusal.at + refusal.retry_after]
    assert_cards_done_once(said)


async def test_a_429_on_a_placeholders_deletion_holds_every_channels_deletions_until_retry_after(fake, tmp_path):
    # chat.delete is counted per workspace too: a placeholder's deletion refused in one channel let the
    # next channel's deletion go 1.2 s later, into the same 429, and the next, each drawing one.
    tight = Window(2, 5.0)  # what Slack had left of the workspace's chat.delete calls: it refuses the third
    limits, said = await placeholders_deleted(fake, tmp_path, FEW, tiers={**TIERS, "chat.delete": tight})

    assert all(said[c] == [f"done in {c}"] for c in FEW)
    assert limits.refused and {r.method for r in limits.refused} == {"chat.delete"}  # Slack did refuse one
    deletions = [c.at for c in limits.calls if c.method == "chat.delete"]
    for refusal in limits.refused:  # and no channel asked again before its Retry-After
        assert not [r for r in limits.refused if refusal.at < r.at < refusal.at + refusal.retry_after]
        assert not [at for at in deletions if refusal.at < at < refusal.at + refusal.retry_after]
    assert len(deletions) == len(FEW)  # every placeholder deleted once
