"""What the Slack adapter logs of deleting its `_working…_` placeholder, on the real slack-sdk client against
the loopback FakeSlack. A placeholder already gone (a deletion whose answer was lost, then tried again; a
workspace admin's clean-up) is deleted as far as the adapter goes: it warned ``slack chat.delete failed (channel
…): message_not_found`` all the same, a WARNING for an operator to act on with nothing to act on. A failure all of
Slack shares (an outage) is still warned of."""

from __future__ import annotations

import logging

import pytest

from platforms.fakes.slack import FakeSlack
from tests.platforms.slack_client import fake_slack, running_slack

fake = fake_slack()
slack = running_slack()


def deletion_lines(caplog: pytest.LogCaptureFixture) -> list[tuple[int, str]]:
    return [(r.levelno, r.getMessage()) for r in caplog.records if r.getMessage().startswith("slack chat.delete")]


async def test_a_placeholder_already_gone_is_no_warning(fake: FakeSlack, slack, caplog) -> None:
    await slack.typing("C1", None)
    fake.fail_next("chat.delete", "message_not_found")
    with caplog.at_level(logging.DEBUG, logger="platforms"):
        await slack.idle("C1", None)
    assert deletion_lines(caplog) == [
        (logging.DEBUG, "slack chat.delete failed (channel C1): message_not_found, HTTP 200")]


async def test_slack_failing_a_placeholders_deletion_is_still_warned_of(fake: FakeSlack, slack, caplog) -> None:
    await slack.typing("C1", None)
    fake.fail_next("chat.delete", "internal_error", status=500)
    with caplog.at_level(logging.DEBUG, logger="platforms"):
        await slack.idle("C1", None)
    assert deletion_lines(caplog) == [
        (logging.WARNING, "slack chat.delete failed (channel C1): internal_error, HTTP 500")]
