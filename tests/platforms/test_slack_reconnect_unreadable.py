"""Socket Mode asking ``apps.connections.open`` for a new URL on a reconnect, answered with something that is
not Slack's JSON: a proxy's 502 page (labelled ``application/json`` or not), an empty text 5xx.

slack-sdk hands such an answer over as aiohttp's own response, or keeps a text body as text; the connection
watch (`platforms.slack_connection`) read Slack's error code with ``exc.response.get("error")``, which crashed
(AttributeError) in place of the call's own error: the connection's reason never said the call failed, and the
log showed the watch's crash. The real slack-sdk Socket Mode client against the loopback fake."""

from __future__ import annotations

import logging

import pytest

from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from tests.platforms.slack_client import fake_slack, running_slack

PAGE = "<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"
OPEN = "apps.connections.open"


fake = fake_slack()
slack = running_slack()


@pytest.mark.parametrize(("status", "body", "content_type"), [
    (502, PAGE, "application/json"),  # slack-sdk: SlackApiError whose response is aiohttp's
    (502, PAGE, "text/html"),
    (503, "", "text/plain"),  # kept as text by slack-sdk
], ids=["502-page-as-json", "502-page", "503-text"])
async def test_a_reconnect_answered_with_no_json_of_slacks_says_so_and_reconnects(
        fake: FakeSlack, slack: SlackAdapter, caplog: pytest.LogCaptureFixture, status: int, body: str,
        content_type: str) -> None:
    with caplog.at_level(logging.INFO, logger="slack_sdk.socket_mode"):
        fake.fail_next(OPEN, status=status, body=body, content_type=content_type)
        opened = len(fake.calls_to(OPEN))
        fake.drop_socket()
        await fake.wait_for(lambda: len(fake.calls_to(OPEN)) > opened + 1)  # asked again at the next ping
        await fake.wait_for(lambda: slack.connection().status == "connected")
    failed = [r.getMessage() for r in caplog.records if r.name == "slack_sdk.socket_mode" and r.levelno >= logging.ERROR
              and "reconnect" in r.getMessage()]
    assert len(failed) == 1, failed
    assert f"(error: NetworkError, message: {OPEN}: an answer that is not Slack's JSON (HTTP {status})" in failed[0]
