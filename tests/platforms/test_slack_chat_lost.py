"""The bot removed from a Slack channel, or the channel archived or deleted: `SlackAdapter` (real slack-bolt and
slack-sdk against the loopback `FakeSlack`, over Socket Mode and HTTP) tells the gateway once that it can no
longer write to the channel (`platforms.base.LosesChats`), by Slack's events or, when none came, by a write Slack
refuses so; added back, unarchived or written to, a later loss is told again. Direct messages are left alone."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from platforms.base import Forbidden, NotFound, Outbound, OutboundFile
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from tests.platforms.chat_lost import Lost, losing
from tests.platforms.sink import Sink
from tests.platforms.slack_client import fake_slack, slack_on
from tests.platforms.test_slack_adapter import SECRET, mounted, settled

fake = fake_slack()


@pytest.fixture
async def started(fake) -> AsyncIterator[tuple[SlackAdapter, Lost, Sink]]:
    async with losing(slack_on(fake)) as started:
        yield started


def reply(channel: str, text: str = "an answer", thread: str | None = None) -> Outbound:
    return Outbound(chat_id=channel, thread_id=thread, text=text)


async def test_the_bot_removed_or_the_channel_archived_or_deleted_is_told_once_by_slacks_events(fake, started):
    adapter, lost, sink = started
    await fake.remove_bot("C1")  # member_left_channel and channel_left: one loss
    await fake.archive("C2")
    await fake.delete_channel("C3")
    await fake.remove_bot("G4", private=True)  # group_left
    await fake.remove_bot("C5", by="U2", events=("channel_left",))  # member_left_channel withheld
    await settled(fake)
    await fake.wait_for(lambda: len(lost.told) == 5)
    assert sorted(lost.told) == [("C1", "the bot was removed from the channel"), ("C2", "the channel was archived"),
                                 ("C3", "the channel was deleted"), ("C5", "the bot was removed from the channel"),
                                 ("G4", "the bot was removed from the channel")]
    # Its answers, refused for the same reason, tell nothing more; nor does the archive's own message.
    for channel, refused in (("C1", Forbidden), ("C2", Forbidden), ("C3", NotFound), ("G4", NotFound)):
        with pytest.raises(refused):
            await adapter.send(reply(channel))
    await adapter.typing("C2", "1700000000.000100")  # a placeholder, refused too
    assert len(lost.told) == 5 and sink.inbound == []


async def test_another_members_leaving_says_nothing_and_the_bot_back_is_told_again_when_removed_again(fake, started):
    adapter, lost, sink = started
    await fake.push_event({"type": "member_left_channel", "user": "U2", "channel": "C1", "channel_type": "C",
                           "team": fake.team_id})
    await fake.push_event({"type": "member_joined_channel", "user": "U3", "channel": "C1", "channel_type": "C",
                           "team": fake.team_id, "inviter": "U2"})
    await settled(fake)
    assert lost.told == []
    await fake.remove_bot("C1")
    await fake.wait_for(lambda: lost.told)
    await fake.add_bot("C1")
    await settled(fake)
    assert (await adapter.send(reply("C1"))).message_id
    await fake.remove_bot("C1", events=("member_left_channel",))
    await fake.archive("C2")
    await fake.wait_for(lambda: len(lost.told) == 3)  # unarchived before it was told, there would be nothing to stop
    await fake.unarchive("C2")
    await settled(fake)
    await fake.archive("C2")
    await fake.wait_for(lambda: len(lost.told) == 4)
    assert lost.told == [("C1", "the bot was removed from the channel")] * 2 + [("C2", "the channel was archived")] * 2


async def test_a_write_refused_so_tells_it_once_when_no_event_came(fake, started, tmp_path):
    adapter, lost, sink = started
    await fake.remove_bot("C1", events=())  # the app not subscribed, or the events lost while it was down
    await fake.archive("C2", event=False)
    await fake.delete_channel("C3", event=False)
    for text in ("first part", "second part"):
        with pytest.raises(Forbidden):
            await adapter.send(reply("C1", text))
    await adapter.typing("C1", "1700000000.000100")
    with pytest.raises(Forbidden):
        await adapter.edit("C2", None, "1700000000.000100", "an edit")
    (path := tmp_path / "report.txt").write_text("numbers")
    with pytest.raises(NotFound):
        await adapter.send_file(reply("C3", "the report"), OutboundFile(path=str(path), name="report.txt", size=7))
    await fake.wait_for(lambda: len(lost.told) == 3)
    assert sorted(lost.told) == [("C1", "the bot is not in the channel"), ("C2", "the channel is archived"),
                                 ("C3", "the channel was not found")]
    # A refusal for a right the bot lacks is no loss of the channel; nor is a direct message's, whatever it says.
    fake.fail_next("chat.postMessage", "restricted_action")
    with pytest.raises(Forbidden):
        await adapter.send(reply("C9"))
    fake.fail_next("chat.postMessage", "channel_not_found")
    with pytest.raises(NotFound):
        await adapter.send(reply("DU1"))
    # Added back without a word (no event), then written to there, then removed again: told again.
    await fake.add_bot("C1", event=False)
    await fake.push_mention("C1", "U1", "are you back?")
    await fake.wait_for(lambda: sink.inbound)
    await fake.remove_bot("C1", events=())
    with pytest.raises(Forbidden):
        await adapter.send(reply("C1", "third part"))
    await fake.wait_for(lambda: len(lost.told) == 4)
    assert lost.told[-1] == ("C1", "the bot is not in the channel")


async def test_a_loss_the_store_refused_is_told_again_until_it_takes_it(fake, started):
    adapter, lost, sink = started
    lost.refuse = 1
    await fake.remove_bot("C1")
    await settled(fake)  # acknowledged at once: the telling is the adapter's
    await fake.wait_for(lambda: lost.told, timeout=5)
    assert lost.told == [("C1", "the bot was removed from the channel")]


async def test_over_http_the_events_are_told_as_over_socket_mode(fake: FakeSlack):
    adapter, lost = SlackAdapter(bot_token=fake.bot_token, mode="http", signing_secret=SECRET,
                                 api_base=fake.api_base), Lost()
    adapter.bind_chat_lost(lost)
    async with mounted(adapter) as url:
        fake.events_url, fake.signing_secret = url, SECRET
        await adapter.start(Sink())
        try:
            await fake.archive("C1")
            await fake.wait_for(lambda: lost.told)
            assert all(result.status == 200 for result in fake.http_results)
            assert lost.told == [("C1", "the channel was archived")]
        finally:
            await adapter.stop()


async def test_a_loss_the_store_refused_is_not_told_once_the_bot_is_back_meanwhile(fake, started):
    adapter, lost, sink = started
    lost.refuse = 2
    await fake.remove_bot("C1")
    await fake.wait_for(lambda: lost.refuse == 1)  # refused: asked again in a moment
    await fake.remove_bot("C2", events=("channel_left",))  # refused too, a moment after C1: asked again after it
    await fake.wait_for(lambda: lost.refuse == 0)
    await fake.add_bot("C1")  # back before the store takes the stop, which would stop its new work
    await settled(fake)
    await fake.wait_for(lambda: lost.told, timeout=5)  # C2's retry, due after C1's
    assert lost.told == [("C2", "the bot was removed from the channel")]
