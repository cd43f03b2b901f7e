"""SlackAdapter's Socket Mode connection state (`platforms.slack_connection`): the real slack_sdk
Socket Mode client against FakeSlack, which answers apps.connections.open with ``invalid_auth`` for
an app token it does not know, as Slack does for a revoked one."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from platforms.base import Outbound, OutboundFile, Unauthorized
from platforms.connection import Connects
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from tests.platforms.connection_state import status
from tests.platforms.sink import Sink
from tests.platforms.slack_client import fake_slack, running_slack

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"


fake = fake_slack()
slack = running_slack()


async def test_connected_after_start_and_again_after_slack_asks_for_a_reconnect(fake: FakeSlack, slack) -> None:
    assert isinstance(slack, Connects) and slack.connection().status == "connected"
    opened = len(fake.calls_to("apps.connections.open"))
    await fake.disconnect()
    await fake.wait_for(lambda: len(fake.calls_to("apps.connections.open")) > opened)
    await status(slack, fake, "connected")


async def test_a_revoked_app_token_is_down_and_back_once_valid_again(fake: FakeSlack, slack,
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    app_token = fake.app_token
    with caplog.at_level(logging.ERROR, logger="platforms.connection"):
        fake.app_token = "xapp-the-new-one"  # the old one was revoked: apps.connections.open says invalid_auth
        fake.drop_socket()
        reason = await status(slack, fake, "down")
    assert "invalid_auth" in reason and "platforms.slack.app_token" in reason and app_token not in reason
    ours = [r for r in caplog.records if r.name == "platforms.connection"]
    assert len(ours) == 1 and "invalid_auth" in ours[0].getMessage()  # not once per retry
    assert "keeps trying" in ours[0].getMessage() and "cannot fix it" not in ours[0].getMessage()
    fake.app_token = app_token  # slack_sdk keeps retrying: a token valid again reconnects
    await status(slack, fake, "connected")


async def test_http_mode_has_no_connection(fake: FakeSlack) -> None:
    adapter = SlackAdapter(bot_token=fake.bot_token, mode="http", signing_secret=SECRET, api_base=fake.api_base)
    assert adapter.connection().status == "no_connection"


async def test_a_revoked_bot_token_is_down_though_the_socket_stays_up(fake: FakeSlack, slack,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    # Socket Mode runs on the app token, which an uninstall or a revoked bot token leaves good:
    # the connection stayed "connected" while every reply failed.
    bot_token = fake.bot_token
    with caplog.at_level(logging.ERROR, logger="platforms.slack_connection"):
        fake.bot_token = "xoxb-the-new-one"  # the old one answers invalid_auth
        await fake.push_event({"type": "tokens_revoked", "tokens": {"bot": [fake.bot_user_id]}})
        reason = await status(slack, fake, "down")
        for _ in range(3):
            with pytest.raises(Unauthorized):
                await slack.send(Outbound(chat_id="C1", thread_id=None, text="hello"))
    assert "tokens_revoked" in reason and "platforms.slack.bot_token" in reason and bot_token not in reason
    ours = [r for r in caplog.records if r.name == "platforms.slack_connection"]
    assert len(ours) == 1 and "tokens_revoked" in ours[0].getMessage()  # not once per failed reply
    fake.bot_token = bot_token  # a call Slack takes again: the token is good after all
    await slack.send(Outbound(chat_id="C1", thread_id=None, text="hello"))
    assert slack.connection().status == "connected"


async def test_a_reply_refused_for_the_bot_token_makes_http_mode_down(fake: FakeSlack) -> None:
    # HTTP mode holds no connection, so nothing at all showed that Slack no longer took the bot.
    adapter = SlackAdapter(bot_token=fake.bot_token, mode="http", signing_secret=SECRET, api_base=fake.api_base)
    await adapter.start(Sink())
    try:
        fake.fail_next("chat.postMessage", "token_revoked")
        with pytest.raises(Unauthorized):
            await adapter.send(Outbound(chat_id="C1", thread_id=None, text="hello"))
        assert adapter.connection().status == "down"
        assert "chat.postMessage answered token_revoked" in (adapter.connection().reason or "")
    finally:
        await adapter.stop()


def a_file(tmp_path: Path) -> OutboundFile:
    path = tmp_path / "report.txt"
    path.write_text("the report")
    return OutboundFile(path=str(path), name="report.txt", size=10)


async def test_an_upload_refused_for_the_bot_token_makes_slack_down(fake: FakeSlack, slack, tmp_path: Path,
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    # Uploads went around the watch: Slack stayed "connected" (and /healthz healthy) while they failed.
    with caplog.at_level(logging.ERROR, logger="platforms.slack_connection"):
        fake.bot_token_revoked = True
        with pytest.raises(Unauthorized):
            await slack.send_file(Outbound(chat_id="C1", thread_id=None, text="here"), a_file(tmp_path))
    assert slack.connection().status == "down"
    assert "files.upload_v2 answered token_revoked" in (slack.connection().reason or "")
    assert [r.levelno for r in caplog.records if r.name == "platforms.slack_connection"] == [logging.ERROR]


async def test_an_upload_slack_takes_shows_it_takes_the_bot_token_again(fake: FakeSlack, slack,
                                                                         tmp_path: Path) -> None:
    await slack.typing("C1", None)
    fake.bot_token_revoked = True  # the app uninstalled mid-turn
    with pytest.raises(Unauthorized):
        await slack.send(Outbound(chat_id="C1", thread_id=None, text="the answer"))
    await slack.idle("C1", None)  # the placeholder's deletion refused too: left until the token is taken
    assert slack.connection().status == "down" and fake.texts("C1") == ["_working…_"]
    fake.bot_token_revoked = False  # reinstalled with the same token
    await slack.send_file(Outbound(chat_id="C1", thread_id=None, text="here"), a_file(tmp_path))
    assert slack.connection().status == "connected"
    await fake.wait_for(lambda: fake.texts("C1") == ["here"])  # and the placeholder went
