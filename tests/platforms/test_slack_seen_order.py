"""Slack's last-seen record (`platforms.slack_seen`) when Slack sends a conversation's messages out of
order: the real slack-bolt / slack-sdk clients on the loopback FakeSlack, a recording sink in the
gateway's place, and the record kept in a dict."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from platforms.base import Inbound
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from platforms.slack_catchup import Limits, conversation_key, ts_key, where_of
from platforms.slack_seen import just_before
from tests.sqlite_errors import full_disk

NO_PACE = Limits(pace=0.0)


class Gateway:
    """The Inbounds handed over and the newest message taken in per conversation; ``refusing``: texts
    the store refuses (a full disk)."""

    def __init__(self, last_seen: dict[tuple[str, str | None], str] | None = None) -> None:
        self.items: list[Inbound] = []
        self.refused: list[str] = []
        self.refusing: set[str] = set()
        self.last_seen: dict[tuple[str, str | None], str] = dict(last_seen or {})

    async def sink(self, inbound: Inbound) -> None:
        if inbound.text in self.refusing:
            self.refused.append(inbound.text)
            raise full_disk()
        self.items.append(inbound)

    def seen(self, conversation: str, ts: str) -> None:
        self.last_seen[where_of(conversation)] = ts

    def texts(self) -> list[str]:
        return [i.text for i in self.items]

    def taken(self) -> list[str]:
        """The texts as the gateway's inbox takes them: one read back and live too counts once, first."""
        return list({i.event_id: i.text for i in self.items}.values())

    async def start(self, fake: FakeSlack) -> SlackAdapter:
        adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base,
                               ping_interval=0.2, catch_up=NO_PACE, sink_timeout=1.0)
        adapter.bind_last_seen({conversation_key(where): ts for where, ts in self.last_seen.items()}, self.seen,
                               lambda conversation: self.last_seen.get(where_of(conversation)))
        await adapter.start(self.sink)
        return adapter


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with FakeSlack(ack_timeout=0.2, give_up_after=0.0) as fake:
        yield fake


async def push_older(fake: FakeSlack, channel: str, newer: dict[str, Any], text: str) -> dict[str, Any]:
    """A DM message sent just before ``newer`` whose event Slack delivers only now (it orders no events)."""
    older = {"type": "message", "channel": channel, "user": newer["user"], "text": text,
             "ts": just_before(newer["ts"])}
    messages = fake.messages[(channel, None)]
    messages.insert(messages.index(next(m for m in messages if m["ts"] == newer["ts"])), older)
    return await fake.push_event({**older, "channel_type": "im", "team": fake.team_id, "event_ts": older["ts"]})


async def test_an_older_message_slack_sent_late_and_the_store_refused_moves_the_record_back_before_it(fake):
    # The newer message was recorded first; the older one, refused before its ack, left the record past
    # it: a crash then (or Slack giving up on it) and the next start read after the newer one, never
    # handing it on.
    dm = fake.dm_channel("U1")
    gateway = Gateway()
    adapter = await gateway.start(fake)
    try:
        newer = (await fake.push_dm("U1", "newer"))["event"]
        await fake.wait_for(lambda: gateway.last_seen.get((dm, None)) == newer["ts"])
        gateway.refusing.add("older")
        older = (await push_older(fake, dm, newer, "older"))["event"]
        await fake.wait_for(lambda: len(gateway.refused) >= 2)  # refused, and handed over again
        at_crash = dict(gateway.last_seen)
        assert ts_key(at_crash[(dm, None)]) < ts_key(older["ts"])
        gateway.refusing.clear()
        await fake.wait_for(lambda: "older" in gateway.texts())
        # Taken at last: recorded past both again.
        await fake.wait_for(lambda: gateway.last_seen[(dm, None)] == newer["ts"])
        await fake.wait_for(lambda: all(e.acked or e in fake.given_up for e in fake.envelopes.values()))
    finally:
        await adapter.stop()
        await fake.wait_for(lambda: not fake.open_connections)

    crashed = Gateway(at_crash)  # the process died as the store refused the older message
    adapter = await crashed.start(fake)
    try:
        await fake.wait_for(lambda: "older" in crashed.texts())
    finally:
        await adapter.stop()


async def test_a_live_reply_in_a_thread_a_caught_up_mention_opens_waits_for_the_replies_missed_there(fake):
    # Handing the mention on put the bot in its thread: a live reply there came before the replies sent
    # there while the gateway was down, and moved the thread's record past them, so a stop or a crash
    # before the catch-up read the thread lost them for good.
    gateway = Gateway()
    adapter = await gateway.start(fake)
    try:
        await fake.push_mention("C1", "U1", "before")
        await fake.wait_for(lambda: ("C1", None) in gateway.last_seen)
    finally:
        await adapter.stop()
        await fake.wait_for(lambda: not fake.open_connections)
    question = (await fake.push_mention("C1", "U1", "a question while down"))["event"]["ts"]
    missed = (await fake.push_message("C1", "U1", "a reply while down", thread_ts=question))["event"]["ts"]

    handing_on, release = asyncio.Event(), asyncio.Event()
    sink = gateway.sink

    async def slow_question(inbound: Inbound) -> None:
        if inbound.text == "a question while down":
            handing_on.set()
            await release.wait()
        await sink(inbound)

    gateway.sink = slow_question  # type: ignore[method-assign]
    adapter = await gateway.start(fake)
    try:
        await asyncio.wait_for(handing_on.wait(), 5)
        live = await fake.push_message("C1", "U1", "a live reply", thread_ts=question)
        await fake.wait_for(lambda: acked(fake, live))  # acked after sink_timeout, waiting for the catch-up
        assert ts_key(gateway.last_seen.get(("C1", question), "0")) < ts_key(missed)
        release.set()
        await fake.wait_for(lambda: "a live reply" in gateway.texts())
        await fake.wait_for(lambda: ts_key(gateway.last_seen[("C1", question)]) >= ts_key(live["event"]["ts"]))
    finally:
        await adapter.stop()
    assert gateway.taken()[1:] == ["a question while down", "a reply while down", "a live reply"]


def acked(fake: FakeSlack, body: dict[str, Any]) -> bool:
    return any(envelope.acked for envelope in fake.envelopes.values() if envelope.payload is body)
