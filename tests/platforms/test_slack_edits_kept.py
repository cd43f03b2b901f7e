"""How long the Slack adapter remembers a message's latest edit (`platforms.slack_edits.LatestEdits`): for as long as
Slack may send an older edit of it again, however many other messages are edited meanwhile, and no longer."""

from __future__ import annotations

from agent.testing import FakeClock
from platforms import slack_edits
from platforms.slack_edits import LatestEdits


def edit(ts: str, edited_ts: str, channel: str = "C1") -> dict:
    """An `edited_message`: message ``ts`` as edited at ``edited_ts``."""
    return {"channel": channel, "ts": ts, "text": "edited", "edited": {"user": "U1", "ts": edited_ts}}


def test_an_older_edit_sent_again_after_a_busy_workspaces_other_edits_is_passed_over() -> None:
    # A thousand edits of other messages in the minutes before Slack's retry pushed the message out.
    latest = LatestEdits()
    latest.heard(edit("1700000000.000100", "1700000060.000000"))
    for n in range(1500):
        latest.heard(edit(f"1700000100.{n:06d}", f"1700000120.{n:06d}", channel=f"C{n % 40}"))
    assert latest.outdated(edit("1700000000.000100", "1700000030.000000"))
    assert not latest.outdated(edit("1700000000.000100", "1700000090.000000"))


def test_an_edit_is_forgotten_once_slack_no_longer_sends_older_ones_again() -> None:
    clock = FakeClock(autojump=False)
    latest = LatestEdits(monotonic=clock.monotonic)
    latest.heard(edit("1700000000.000100", "1700000060.000000"))
    clock.advance(slack_edits.KEPT_FOR - 1)
    latest.heard(edit("1700000000.000200", "1700000070.000000"))
    assert latest.outdated(edit("1700000000.000100", "1700000030.000000"))  # within the window: kept
    clock.advance(1)
    latest.heard(edit("1700000000.000300", "1700000080.000000"))  # each edit heard forgets those past the window
    assert not latest.outdated(edit("1700000000.000100", "1700000030.000000"))
    assert latest.outdated(edit("1700000000.000200", "1700000050.000000"))


def test_at_most_the_cap_is_kept_however_recent() -> None:
    latest = LatestEdits(most=2)
    for n in range(3):
        latest.heard(edit(f"1700000000.00000{n}", "1700000060.000000"))
    assert [latest.outdated(edit(f"1700000000.00000{n}", "1700000030.000000")) for n in range(3)] == [
        False, True, True]
