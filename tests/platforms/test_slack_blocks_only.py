"""A Slack message with blocks and no ``text`` (`platforms.slack_blocks.blocks_text`): its words reach the
model, never an empty turn. The real slack-bolt / slack-sdk clients against `FakeSlack` over Socket Mode."""

from __future__ import annotations

from typing import Any

from platforms.fakes.slack import FakeSlack
from tests.platforms.sink import Sink
from tests.platforms.slack_client import fake_slack, slack_on

fake = fake_slack()


def section(*elements: dict[str, Any]) -> dict[str, Any]:
    return {"type": "rich_text_section", "elements": list(elements)}


async def push_blocks(fake: FakeSlack, user: str, blocks: list[dict[str, Any]], ts: str) -> None:
    """A DM with ``blocks`` and an empty ``text``, as a message an app posted for ``user`` comes."""
    await fake.push_event({"type": "message", "channel": fake.dm_channel(user), "user": user, "text": "",
                           "blocks": blocks, "ts": ts, "event_ts": ts, "channel_type": "im", "team": fake.team_id})


async def test_a_message_of_blocks_alone_is_read_from_its_blocks(fake: FakeSlack) -> None:
    adapter, sink = slack_on(fake), Sink()
    await adapter.start(sink)
    try:
        rich = {"type": "rich_text", "block_id": "r1", "elements": [
            section({"type": "text", "text": "Deploy "}, {"type": "emoji", "name": "rocket", "unicode": "1f680"},
                    {"type": "text", "text": " by "}, {"type": "user", "user_id": "U0B"},
                    {"type": "text", "text": ", see "},
                    {"type": "link", "url": "https://ci.example/1", "text": "the run"},
                    {"type": "text", "text": " & "}, {"type": "link", "url": "https://ci.example/2"}),
            {"type": "rich_text_list", "style": "bullet", "elements": [
                section({"type": "text", "text": "tests"}), section({"type": "text", "text": "lint"})]},
        ]}
        await push_blocks(fake, "U1", [rich], "1700000000.000100")
        await push_blocks(fake, "U1", [
            {"type": "header", "text": {"type": "plain_text", "text": "Incident"}},
            {"type": "section", "text": {"type": "mrkdwn", "text": "*Sev 2* in <#C1|ops>"},
             "fields": [{"type": "mrkdwn", "text": "Owner: <@U0B>"}]},
            {"type": "divider"},
            {"type": "context", "elements": [{"type": "image", "image_url": "https://x/i.png", "alt_text": "i"},
                                             {"type": "mrkdwn", "text": "opened 5 min ago"}]},
        ], "1700000000.000200")
        await fake.wait_for(lambda: len(sink.inbound) == 2)
        assert [i.text for i in sink.inbound] == [
            "Deploy :rocket: by <@U0B>, see [the run](https://ci.example/1) & https://ci.example/2\n- tests\n- lint",
            "Incident\n*Sev 2* in #ops\nOwner: <@U0B>\nopened 5 min ago",
        ]
    finally:
        await adapter.stop()
