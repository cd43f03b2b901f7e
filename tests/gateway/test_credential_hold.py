"""A platform that refuses the bot's credentials holds its sends instead of failing them
(`gateway.credential_hold`): the real Slack, Telegram and Discord SDKs against their loopback fakes."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

import pytest

from agent.testing import FakeClock
from gateway.credential_hold import FIRST_PROBE
from gateway.outbox import Outbox
from gateway.store import GatewayStore
from platforms.base import Adapter
from platforms.fakes._waiting import wait_until
from platforms.fakes.discord import FakeDiscord
from platforms.fakes.slack import FakeSlack
from platforms.fakes.telegram import FakeTelegram
from platforms.slack import SlackAdapter
from platforms.telegram import TelegramAdapter
from tests.discord_client import adapter_for, join_heartbeat_threads
from tests.platforms.sink import Sink

WAIT = 5.0


@dataclass
class Platform:
    """A started adapter on its fake, and what a test does to the fake."""

    adapter: Adapter
    chats: tuple[str, str]
    revoke: Callable[[], None]
    """The platform refuses the bot's token from now on, in every chat (revoked, rotated, reset)."""
    restore: Callable[[], None]
    texts: Callable[[str], list[str]]
    """What the bot has in a chat, in order."""
    refuse_in: Callable[[str], None]
    """The next send to this chat is refused for that chat alone (kicked, blocked)."""
    logger: str
    fake: FakeSlack | FakeTelegram | FakeDiscord


@contextlib.asynccontextmanager
async def slack() -> AsyncIterator[Platform]:
    async with FakeSlack() as fake:
        adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base)
        await adapter.start(Sink(), [])
        try:
            yield Platform(
                adapter, ("C1", "C2"),
                revoke=lambda: setattr(fake, "bot_token_revoked", True),
                restore=lambda: setattr(fake, "bot_token_revoked", False),
                texts=lambda chat: [m["text"] for m in fake.messages.get((chat, None), []) if m.get("bot_id")],
                refuse_in=lambda chat: fake.fail_next("chat.postMessage", "not_in_channel"),
                logger="platforms.slack", fake=fake)
        finally:
            await adapter.stop()


@contextlib.asynccontextmanager
async def telegram() -> AsyncIterator[Platform]:
    async with FakeTelegram() as fake:
        token = fake.token
        adapter = TelegramAdapter(token, api_base=fake.base_url)
        await adapter.start(Sink())
        try:
            yield Platform(
                adapter, ("42", "43"),
                revoke=lambda: setattr(fake, "token", "999999:a-new-token-from-botfather"),  # the old one: 401
                restore=lambda: setattr(fake, "token", token),
                texts=lambda chat: [m["text"] for m in fake.messages.get(chat, [])],
                refuse_in=lambda chat: fake.fail_next("sendMessage", 403, description="Forbidden: bot was blocked by"
                                                                                      " the user"),
                logger="platforms.telegram", fake=fake)
        finally:
            await adapter.stop()


@contextlib.asynccontextmanager
async def discord() -> AsyncIterator[Platform]:
    async with FakeDiscord() as fake:
        token = fake.token
        adapter = adapter_for(fake)
        await adapter.start(Sink(), [])
        try:
            yield Platform(
                adapter, (fake.dm_channel("111"), fake.dm_channel("222")),
                revoke=lambda: setattr(fake, "token", "a-reset-token"),  # REST answers the old one 401
                restore=lambda: setattr(fake, "token", token),
                texts=lambda chat: [m.content for m in fake.bot_messages(chat)],
                refuse_in=lambda chat: fake.fail_next(f"POST /channels/{chat}/messages", 403, code=50013,
                                                      message="Missing Permissions"),
                logger="platforms.discord", fake=fake)
        finally:
            await adapter.stop()
            await join_heartbeat_threads()


PLATFORMS = {"slack": slack, "telegram": telegram, "discord": discord}


@pytest.fixture(params=list(PLATFORMS))
async def platform(request) -> AsyncIterator[Platform]:
    async with PLATFORMS[request.param]() as platform:
        yield platform


async def sent(outbox: Outbox, clock: FakeClock, key: str) -> str | None:
    """``outbox.wait_sent(key)``, the clock moved on whenever a sender waits (a chat's turn to be
    written to again: Telegram's second between two messages, say)."""
    waiting = asyncio.ensure_future(outbox.wait_sent(key, timeout=WAIT))
    while not waiting.done():
        if clock.sleeping:
            clock.advance(1.0)
        await asyncio.sleep(0.01)
    return waiting.result()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(autojump=False)


@pytest.fixture
async def outbox(tmp_path, clock, platform) -> AsyncIterator[tuple[Outbox, GatewayStore]]:
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    outbox = Outbox(store.outbox, {platform.adapter.name: platform.adapter}, clock=clock)
    await outbox.start()
    yield outbox, store
    await outbox.close()
    store.close()


async def test_replies_written_while_the_token_is_refused_go_out_once_in_order_when_it_is_taken_again(
        platform, outbox, clock, caplog):
    outbox, store = outbox
    name, (one, two) = platform.adapter.name, platform.chats
    platform.revoke()
    with caplog.at_level(logging.DEBUG):
        outbox.enqueue(name, one, None, "first", kind="reply", key="a")
        outbox.enqueue(name, one, None, "second", kind="reply", key="b")
        outbox.enqueue(name, two, None, "other chat", kind="reply", key="c")
        refused = await wait_until(lambda: store.outbox.message("a:0").last_error, WAIT)
        # Refused for the token, each was failed at once (as Forbidden or BadRequest): all lost.
        assert refused.startswith("Unauthorized") and store.outbox.message("a:0").status == "pending"
        await clock.until_sleeping(2)  # both chats wait for the platform to take the token again
        assert [store.outbox.message(k).status for k in ("a:0", "b:0", "c:0")] == ["pending"] * 3
        platform.restore()
        clock.advance(FIRST_PROBE)
        for key in ("a:0", "b:0", "c:0"):
            assert await sent(outbox, clock, key) is not None
    assert platform.texts(one) == ["first", "second"] and platform.texts(two) == ["other chat"]
    said = [r.getMessage() for r in caplog.records
            if r.levelno >= logging.WARNING and r.name in ("gateway.outbox", platform.logger)]
    assert len(said) == 1 and "refuses the bot's credentials" in said[0]  # one line, not one per reply or try


async def test_a_reply_held_for_the_refused_token_is_not_marked_tried(platform, outbox, clock):
    # Only a part about to be sent is: marked, each held chat's first reply would be looked up after a
    # restart (Slack: one every 1.2 s), though the platform never saw it.
    outbox, store = outbox
    name, (one, two) = platform.adapter.name, platform.chats
    platform.revoke()
    outbox.enqueue(name, one, None, "first", kind="reply", key="a")
    await wait_until(lambda: store.outbox.message("a:0").last_error, WAIT)  # held from now on
    outbox.enqueue(name, two, None, "other chat", kind="reply", key="c")
    await clock.until_sleeping(2)  # both chats wait for the platform to take the token again
    assert [store.outbox.message(k).tried for k in ("a:0", "c:0")] == [True, False]


async def test_a_refusal_in_one_chat_still_fails_its_reply_at_once(platform, outbox, clock):
    outbox, store = outbox
    name, (one, _) = platform.adapter.name, platform.chats
    platform.refuse_in(one)
    outbox.enqueue(name, one, None, "refused here", kind="reply", key="a")
    outbox.enqueue(name, one, None, "next one", kind="reply", key="b")
    assert await sent(outbox, clock, "a:0") is None
    assert await sent(outbox, clock, "b:0") is not None
    assert store.outbox.message("a:0").status == "failed" and "Forbidden" in store.outbox.message("a:0").last_error
    assert platform.texts(one) == ["next one"] and all(s <= 1.0 for s in clock.sleeps)  # the chat's pace, no retry


@pytest.mark.parametrize("platform", ["slack"], indirect=True)
async def test_a_reply_held_all_night_is_not_given_up_and_goes_out_once_the_token_is_fixed(tmp_path, platform):
    clock = FakeClock()  # every wait passes at once
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    outbox = Outbox(store.outbox, {"slack": platform.adapter}, clock=clock, give_up_after={"slack": 120.0})
    await outbox.start()
    try:
        platform.revoke()
        written = clock.now
        outbox.enqueue("slack", "C1", None, "written at night", kind="reply", key="a")
        # An operator asleep, a probe a minute: some 480 real requests to the fake Slack, which took
        # WAIT (5 s) and more on a loaded 2-core machine (beside two CPU hogs).
        await wait_until(lambda: clock.now >= written + 8 * 3600 or store.outbox.message("a:0").status != "pending",
                         6 * WAIT)
        row = store.outbox.message("a:0")
        assert row.status == "pending" and row.last_error == "Unauthorized: chat.postMessage: token_revoked"
        assert len(clock.sleeps) < 8 * 70  # tried now and then, not in a loop
        platform.restore()
        assert await outbox.wait_sent("a:0", timeout=WAIT) is not None
        assert platform.texts("C1") == ["written at night"]
    finally:
        await outbox.close()
        store.close()


@pytest.mark.parametrize("platform", ["telegram"], indirect=True)
async def test_the_time_held_before_a_restart_still_does_not_count_toward_giving_up(tmp_path, platform, caplog):
    clock = FakeClock()
    clock.jump(86400.0)  # as on any machine: the monotonic clock counts from the boot, the wall clock from 1970
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    outbox = Outbox(store.outbox, {"telegram": platform.adapter}, clock=clock, give_up_after={"telegram": 120.0})
    await outbox.start()
    platform.revoke()
    written = clock.now
    outbox.enqueue("telegram", "42", None, "written at night", kind="reply", key="a")
    await wait_until(lambda: clock.now >= written + 3600 or store.outbox.message("a:0").status != "pending", WAIT)
    await outbox.close()  # stopped while held; the token fixed, the gateway started again later
    [(_, since, _)] = store.outbox.hold_periods("telegram")
    store.close()
    clock.advance(600)
    restarted = clock.time()
    caplog.set_level(logging.INFO, "gateway.outbox")
    platform.restore()
    # The first try after the restart meets an outage. Queued twice: the probe the first outbox had in
    # flight when it closed can still reach the fake (its handler runs once this test next yields, so
    # after the restore) and take the first 502; either way the new outbox meets at least one.
    platform.fake.fail_next("sendMessage", 502)
    platform.fake.fail_next("sendMessage", 502)
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    outbox = Outbox(store.outbox, {"telegram": platform.adapter}, clock=clock, give_up_after={"telegram": 120.0})
    await outbox.start()
    try:
        # Its 120 s were spent held (before, and while the gateway was down): it is tried again.
        assert await outbox.wait_sent("a:0", timeout=WAIT) is not None
        assert platform.texts("42") == ["written at night"]
        assert store.outbox.message("a:0").last_error.startswith("NetworkError")
        [ended] = [r.getMessage() for r in caplog.records if "takes the bot's credentials again" in r.getMessage()]
        held = float(ended.split(" after ")[1].split("s;")[0])
        assert restarted - since <= held <= clock.time() - since + 1  # the hold's time, the restart's included
    finally:
        await outbox.close()
        store.close()


@pytest.mark.parametrize("platform", ["slack"], indirect=True)
async def test_after_the_hold_other_failures_still_give_up_after_the_retry_window(tmp_path, platform):
    clock = FakeClock()
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    outbox = Outbox(store.outbox, {"slack": platform.adapter}, clock=clock, give_up_after={"slack": 120.0})
    await outbox.start()
    try:
        platform.revoke()
        written = clock.now
        outbox.enqueue("slack", "C1", None, "never taken", kind="reply", key="a")
        await wait_until(lambda: clock.now >= written + 1000 or store.outbox.message("a:0").status != "pending",
                         WAIT)
        platform.fake.fail_next("chat.postMessage", status=429, retry_after=30, times=100)
        platform.restore()
        assert await outbox.wait_sent("a:0", timeout=WAIT) is None
        row = store.outbox.message("a:0")
        assert row.status == "failed" and row.last_error.startswith("RateLimited")
        [(_, since, until)] = store.outbox.hold_periods("slack")  # held from the first refusal to the first 429
        assert since == written and until > written + 1000
        assert clock.now == pytest.approx(until + 120.0)
    finally:
        await outbox.close()
        store.close()


@pytest.mark.parametrize("platform", ["telegram"], indirect=True)
async def test_a_hold_of_a_platform_no_longer_configured_is_not_restored_nor_logged_at_each_start(
        tmp_path, platform, caplog):
    clock = FakeClock()
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    outbox = Outbox(store.outbox, {"telegram": platform.adapter}, clock=clock)
    await outbox.start()
    platform.revoke()
    outbox.enqueue("telegram", "42", None, "held", kind="reply", key="a")
    await wait_until(lambda: store.outbox.hold_periods("telegram"), WAIT)
    await outbox.close()
    store.close()
    caplog.set_level(logging.INFO, "gateway.outbox")
    for adapters in ({}, {}, {"telegram": platform.adapter}):  # Telegram taken out of the config, then back
        caplog.clear()
        store = GatewayStore(tmp_path / "state.db", clock=clock)
        outbox = Outbox(store.outbox, adapters, clock=clock)
        await outbox.start()
        held = [r for r in caplog.records if "when the gateway stopped" in r.getMessage()]
        await outbox.close()
        assert store.outbox.message("a:0").status == "pending"
        [(_, _, until)] = store.outbox.hold_periods("telegram")  # kept for its pending part
        assert until is None
        store.close()
        if not adapters:
            assert held == []
    assert [(r.levelno, r.getMessage()) for r in held] == [(logging.INFO, "outbox: telegram refused the bot's"
                                                            " credentials when the gateway stopped; its messages"
                                                            " are held until it takes them again")]


@pytest.mark.parametrize("platform", ["slack"], indirect=True)
async def test_only_the_time_held_is_excused_with_a_wall_clock_apart_from_the_monotonic_one(tmp_path, platform):
    clock = FakeClock()
    clock.jump(86400.0)  # as on any machine: the monotonic clock counts from the boot, the wall clock from 1970
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    outbox = Outbox(store.outbox, {"slack": platform.adapter}, clock=clock, give_up_after={"slack": 120.0})
    await outbox.start()
    try:
        platform.fake.fail_next("chat.postMessage", status=429, retry_after=30, times=2)  # 60 s that count
        platform.fake.fail_next("chat.postMessage", "token_revoked")  # held until the probe, 5 s later
        platform.fake.fail_next("chat.postMessage", status=429, retry_after=30, times=100)
        written, wall = clock.monotonic(), clock.time()
        outbox.enqueue("slack", "C1", None, "never taken", kind="reply", key="a")
        assert await outbox.wait_sent("a:0", timeout=WAIT) is None
        assert store.outbox.message("a:0").last_error.startswith("RateLimited")
        assert clock.monotonic() - written == pytest.approx(120 + FIRST_PROBE)  # not the 60 s before the hold too
        assert store.outbox.hold_periods("slack") == [("slack", wall + 60, wall + 60 + FIRST_PROBE)]
    finally:
        await outbox.close()
        store.close()


@pytest.mark.parametrize("platform", ["slack"], indirect=True)
async def test_a_hold_whose_end_went_unrecorded_excuses_nothing_after_the_next_start_takes_the_token(
        tmp_path, platform):
    # The store refused to record a hold's end (a full disk), and the platform refused the token again
    # later: two holds are journaled open at the stop, though one ended before the other began.
    clock = FakeClock()
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    outbox = Outbox(store.outbox, {"slack": platform.adapter}, clock=clock, give_up_after={"slack": 120.0})
    await outbox.start()
    platform.revoke()
    outbox.enqueue("slack", "C1", None, "first", kind="reply", key="a")
    await wait_until(lambda: store.outbox.hold_periods("slack"), WAIT)
    store.db.write("CREATE TRIGGER refuse BEFORE UPDATE ON gateway_credential_holds"
                   " BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END")
    platform.restore()
    assert await outbox.wait_sent("a:0", timeout=WAIT) is not None
    store.db.write("DROP TRIGGER refuse")
    platform.revoke()
    outbox.enqueue("slack", "C1", None, "second", kind="reply", key="b")
    await wait_until(lambda: len(store.outbox.hold_periods("slack")) == 2, WAIT)
    await outbox.close()
    store.close()
    platform.restore()
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    outbox = Outbox(store.outbox, {"slack": platform.adapter}, clock=clock, give_up_after={"slack": 120.0})
    await outbox.start()
    try:
        assert await outbox.wait_sent("b:0", timeout=WAIT) is not None  # the hold ends
        platform.fake.fail_next("chat.postMessage", status=429, retry_after=30, times=100)
        await clock.sleep(1.0)  # the channel's second after "second" (Slack's message a second) has passed
        written = clock.monotonic()
        outbox.enqueue("slack", "C1", None, "never taken", kind="reply", key="c")
        assert await outbox.wait_sent("c:0", timeout=WAIT) is None
        assert store.outbox.message("c:0").status == "failed"
        assert clock.monotonic() - written == pytest.approx(120.0)  # held no more: nothing excused
    finally:
        await outbox.close()
        store.close()


@pytest.mark.parametrize("platform", ["slack"], indirect=True)
async def test_two_holds_journaled_open_after_the_clock_stepped_back_still_end_together(tmp_path, platform):
    # A hold's end went unrecorded (a full disk), then NTP stepped the wall clock back before the platform
    # refused the token again: the second hold began before the first, which it could not close. Both
    # were on again at the next start, and the first stayed on in that process once the token was taken:
    # a part that failed after that was never given up.
    clock = FakeClock()
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    outbox = Outbox(store.outbox, {"slack": platform.adapter}, clock=clock, give_up_after={"slack": 120.0})
    await outbox.start()
    platform.revoke()
    outbox.enqueue("slack", "C1", None, "first", kind="reply", key="a")
    await wait_until(lambda: store.outbox.hold_periods("slack"), WAIT)
    store.db.write("CREATE TRIGGER refuse BEFORE UPDATE ON gateway_credential_holds"
                   " BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END")
    platform.restore()
    assert await outbox.wait_sent("a:0", timeout=WAIT) is not None
    store.db.write("DROP TRIGGER refuse")
    clock.jump(-3600)
    platform.revoke()
    outbox.enqueue("slack", "C1", None, "second", kind="reply", key="b")
    await wait_until(lambda: len(store.outbox.hold_periods("slack")) == 2, WAIT)
    assert [until for _, _, until in store.outbox.hold_periods("slack")] == [None, None]
    await outbox.close()
    store.close()
    platform.restore()
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    outbox = Outbox(store.outbox, {"slack": platform.adapter}, clock=clock, give_up_after={"slack": 120.0})
    await outbox.start()
    try:
        assert await outbox.wait_sent("b:0", timeout=WAIT) is not None  # the hold ends
        platform.fake.fail_next("chat.postMessage", status=429, retry_after=30, times=100)
        await clock.sleep(1.0)  # the channel's second after "second" (Slack's message a second) has passed
        written = clock.monotonic()
        outbox.enqueue("slack", "C1", None, "never taken", kind="reply", key="c")
        assert await outbox.wait_sent("c:0", timeout=WAIT) is None
        assert clock.monotonic() - written == pytest.approx(120.0)  # held no more: nothing excused
    finally:
        await outbox.close()
        store.close()
