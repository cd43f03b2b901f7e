"""A user a Slack message mentions reaches the model by their username (``@alice``), not as the id Slack writes
(``<@U0ALICE>``), when the bot token holds ``users:read`` (`platforms.slack_names`): looked up with ``users.info``,
once per user, never by the display name anyone may set. Without the scope the start warns once and the mention
stays as Slack wrote it; so it does when the lookup fails, and the message goes on all the same. Live messages,
edits, forwards and a catch-up's read-backs alike. The real slack-bolt / slack-sdk against the loopback FakeSlack."""

from __future__ import annotations

import logging

import pytest

from platforms.fakes._slack_web_api import BOT_SCOPES
from platforms.fakes.slack import FakeSlack
from platforms.slack_catchup import Limits, conversation_key
from tests.platforms.sink import Sink
from tests.platforms.slack_client import fake_slack, slack_on

fake = fake_slack()

ALICE = "U0ALICE"
DM = "DU1"  # the fake's DM channel with user U1


class Edits:
    """The gateway's `MessageEdits.edited`: records each edit's text."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    async def __call__(self, platform: str, chat_id: str, thread_id: str | None, message_id: str, text: str) -> bool:
        self.texts.append(text)
        return True


def looked_up(fake: FakeSlack) -> list[str]:
    return [call.params.get("user") for call in fake.calls if call.method == "users.info"]


def warnings(caplog: pytest.LogCaptureFixture, word: str) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == "platforms.slack" and r.levelno == logging.WARNING and word in r.getMessage()]


async def test_a_mention_reaches_the_model_as_the_users_handle_never_their_display_name(fake: FakeSlack) -> None:
    fake.add_user(ALICE, "alice", display_name="bob", real_name="Bob Builder")  # she may call herself anything
    slack, sink, edits = slack_on(fake), Sink(), Edits()
    slack.bind_edits(edits)
    await slack.start(sink)
    try:
        ts = (await fake.push_dm("U1", f"ask <@{ALICE}> what she thinks"))["event"]["ts"]
        await fake.wait_for(lambda: sink.inbound)
        await fake.push_edit(DM, ts, f"ask <@{ALICE}> what she thinks now")
        shared = fake.shared_message("C9", "U2", f"<@{ALICE}> signed it off, cc <@{fake.bot_user_id}>", author="Grace")
        await fake.push_message(DM, "U1", "see this", channel_type="im", attachments=[shared])
        await fake.wait_for(lambda: len(sink.inbound) == 2 and edits.texts)
    finally:
        await slack.stop()
    assert sink.inbound[0].text == "ask @alice what she thinks"
    assert edits.texts == ["ask @alice what she thinks now"]
    # The bot's own handle is auth.test's: its mention where it addresses no one is read as any other.
    assert sink.inbound[1].text == "see this\n\nForwarded message from Grace:\n> @alice signed it off, cc @switchboard"
    assert looked_up(fake) == [ALICE]  # once: kept for the edit and the forward; the bot's own never asked


async def test_the_bots_own_mention_still_addresses_it_and_is_taken_out(fake: FakeSlack) -> None:
    fake.add_user(ALICE, "alice")
    slack, sink = slack_on(fake), Sink()
    await slack.start(sink)
    try:
        await fake.push_mention("C1", "U1", f"<@{ALICE}> needs the report")
        await fake.wait_for(lambda: sink.inbound)
    finally:
        await slack.stop()
    (inbound,) = sink.inbound
    assert (inbound.text, inbound.thread_id) == ("@alice needs the report", inbound.message_id)


async def test_two_messages_mentioning_one_user_make_one_lookup(fake: FakeSlack) -> None:
    fake.add_user(ALICE, "alice")
    slack, sink = slack_on(fake), Sink()
    await slack.start(sink)
    try:
        await fake.push_dm("U1", f"<@{ALICE}> wrote the spec")
        await fake.wait_for(lambda: sink.inbound)
        await fake.push_dm("U1", f"and <@{ALICE}> reviewed it")
        await fake.wait_for(lambda: len(sink.inbound) == 2)
    finally:
        await slack.stop()
    assert [i.text for i in sink.inbound] == ["@alice wrote the spec", "and @alice reviewed it"]
    assert looked_up(fake) == [ALICE]


async def test_without_users_read_mentions_stay_ids_and_the_start_warns_once(fake: FakeSlack, caplog) -> None:
    caplog.set_level(logging.WARNING, logger="platforms.slack")
    fake.bot_scopes = [s for s in BOT_SCOPES if s != "users:read"]
    fake.add_user(ALICE, "alice")
    slack, sink = slack_on(fake), Sink()
    await slack.start(sink)
    try:
        for text in (f"ask <@{ALICE}>", f"tell <@{ALICE}>"):
            await fake.push_dm("U1", text)
        await fake.wait_for(lambda: len(sink.inbound) == 2)
    finally:
        await slack.stop()
    assert sorted(i.text for i in sink.inbound) == [f"ask <@{ALICE}>", f"tell <@{ALICE}>"]
    assert looked_up(fake) == []
    assert warnings(caplog, "scope") == [
        "slack: the app lacks the users:read scope: the users a message mentions reach the model as ids (<@U0123>),"
        " not as their @names; add it under OAuth & Permissions and reinstall the app"]


@pytest.mark.parametrize("failure", [
    {"error": "ratelimited", "status": 429, "retry_after": 30},
    {"error": "internal_error", "status": 500},
    {"error": "missing_scope"},  # the scopes the start read were wrong, or taken away since
], ids=["rate limited", "5xx", "missing_scope"])
async def test_a_failed_lookup_keeps_the_id_and_the_message_goes_on(fake: FakeSlack, caplog, failure) -> None:
    caplog.set_level(logging.WARNING, logger="platforms.slack")
    fake.add_user(ALICE, "alice")
    fake.fail_next("users.info", **failure)
    slack, sink = slack_on(fake), Sink()
    await slack.start(sink)
    try:
        await fake.push_dm("U1", f"ask <@{ALICE}>")
        await fake.wait_for(lambda: sink.inbound)
        await fake.push_dm("U1", f"tell <@{ALICE}>")  # the lookups rest (or stop): no wait, no second warning
        await fake.wait_for(lambda: len(sink.inbound) == 2)
        await fake.wait_for(lambda: all(e.acked for e in fake.envelopes.values()))
    finally:
        await slack.stop()
    assert [i.text for i in sink.inbound] == [f"ask <@{ALICE}>", f"tell <@{ALICE}>"]
    assert looked_up(fake) == [ALICE]
    assert len(warnings(caplog, "reach the model as ids")) == 1


async def test_a_message_read_back_at_start_is_named_too(fake: FakeSlack) -> None:
    fake.add_user(ALICE, "alice")
    earlier = fake._store(DM, None, {"user": "U1", "text": "hello"})
    fake._store(DM, None, {"user": "U1", "text": f"<@{ALICE}> should see this"})  # sent while the gateway was down
    last_seen = {conversation_key((DM, None)): earlier["ts"]}
    slack, sink = slack_on(fake, catch_up=Limits(pace=0.0)), Sink()
    slack.bind_last_seen(dict(last_seen), last_seen.__setitem__, last_seen.get)
    await slack.start(sink)
    try:
        await fake.wait_for(lambda: sink.inbound)
    finally:
        await slack.stop()
    assert [i.text for i in sink.inbound] == ["@alice should see this"]
