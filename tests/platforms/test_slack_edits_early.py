"""An edit Slack sent before its message (`platforms.slack_edits.LatestEdits.kept`, `as_edited`): the message, when
it comes, reads as the latest such edit made it, for as long as Slack may still send it, and no longer."""

from __future__ import annotations

from agent.testing import FakeClock
from platforms import slack_edits
from platforms.slack_edits import LatestEdits

TS = "1700000000.000100"


def message(text: str = "deploy to prod") -> dict:
    return {"type": "message", "channel": "D1", "ts": TS, "user": "U1", "text": text, "channel_type": "im",
            "blocks": [{"type": "rich_text", "elements": []}]}


def edit(text: str, edited_ts: str, ts: str = TS) -> dict:
    return {"channel": "D1", "ts": ts, "user": "U1", "text": text, "edited": {"user": "U1", "ts": edited_ts}}


def test_the_message_reads_as_the_latest_edit_kept_whatever_the_order_they_came_in() -> None:
    latest = LatestEdits()
    latest.kept(edit("deploy to dev", "1700000090.000000"))
    latest.kept(edit("deploy to staging", "1700000060.000000"))  # an older one, sent again
    read = latest.as_edited(message())
    assert (read["text"], read["user"], read["channel_type"], "blocks" in read) == ("deploy to dev", "U1", "im", False)
    assert latest.as_edited({**message(), "ts": "1700000000.000200"})["text"] == "deploy to prod"


def test_an_edit_is_kept_as_long_as_slack_may_send_its_message_and_of_the_most_recent_only() -> None:
    clock = FakeClock(autojump=False)
    latest = LatestEdits(monotonic=clock.monotonic, early=3)
    latest.kept(edit("deploy to staging", "1700000060.000000"))
    clock.advance(slack_edits.KEPT_FOR - 1)
    assert latest.as_edited(message())["text"] == "deploy to staging"
    clock.advance(1)
    assert latest.as_edited(message())["text"] == "deploy to prod"
    for n in range(4):
        latest.kept(edit(f"edit {n}", "1700000060.000000", ts=f"1700000000.00020{n}"))
    assert [latest.as_edited({**message(), "ts": f"1700000000.00020{n}"})["text"] for n in range(4)] == [
        "deploy to prod", "edit 1", "edit 2", "edit 3"]
