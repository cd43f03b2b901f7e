"""A 200 whose body is no JSON object of Slack's: text (``text/plain``, which slack-sdk keeps as a string) or
JSON that is a list, a number or ``true`` (a proxy, a misconfigured gateway in front of Slack). slack-sdk's
``SlackResponse.validate`` calls ``.get("ok")`` of such a body and raised `AttributeError`, which no
translation of ours took for Slack's answer: a post failed with an unknown exception, the outbox saw no
`DeliveryError`. Each is a `NetworkError` now, named and logged as the other answers that are not Slack's
JSON (`platforms.slack_errors`), tried again by the outbox; the token is in no line. The real slack-sdk
client against the loopback fake."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from gateway.outbox import Outbox
from gateway.store import GatewayStore
from platforms.base import Inbound, NetworkError, Outbound
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from tests.platforms.slack_client import fake_slack, running_slack

WAIT = 5.0
OPEN = "apps.connections.open"
NOT_OBJECTS = pytest.mark.parametrize(("body", "content_type"), [
    ("OK", "text/plain"),
    ("<html>proxy</html>", "text/plain"),
    ('["ok"]', "application/json"),
    ("[]", "application/json"),
    ("42", "application/json"),
    ("true", "application/json"),
], ids=["text", "page-as-text", "json-list", "json-empty-list", "json-number", "json-true"])


fake = fake_slack()
slack = running_slack()


@NOT_OBJECTS
async def test_a_post_answered_200_with_no_json_object_is_a_network_error(
        fake: FakeSlack, slack: SlackAdapter, body: str, content_type: str, caplog: pytest.LogCaptureFixture) -> None:
    fake.fail_next("chat.postMessage", status=200, body=body, content_type=content_type)
    with caplog.at_level(logging.DEBUG):
        with pytest.raises(NetworkError) as caught:
            await slack.send(Outbound("C1", None, "hello"))
    assert caught.value.method == "chat.postMessage" and caught.value.chat_id == "C1"
    assert "not Slack's JSON" in str(caught.value)
    [line] = [r.getMessage() for r in caplog.records if r.name == "platforms.slack" and r.levelno >= logging.WARNING]
    assert line == "slack chat.postMessage failed (channel C1): an answer that is not Slack's JSON, HTTP 200"
    assert fake.bot_token not in caplog.text and fake.bot_token not in str(caught.value)


@NOT_OBJECTS
async def test_the_outbox_sends_a_part_answered_200_with_no_json_object_again(
        fake: FakeSlack, slack: SlackAdapter, tmp_path: Path, body: str, content_type: str) -> None:
    store = GatewayStore(tmp_path / "state.db")
    outbox = Outbox(store.outbox, {"slack": slack})
    await outbox.start()
    try:
        fake.fail_next("chat.postMessage", status=200, body=body, content_type=content_type)
        outbox.enqueue("slack", "C1", None, "hello", kind="final", key="t1")
        await outbox.wait_sent("t1:0", timeout=WAIT)
    finally:
        await outbox.close()
        store.close()
    assert fake.texts("C1") == ["hello"]
    assert len(fake.calls_to("chat.postMessage")) == 2


@NOT_OBJECTS
async def test_a_start_whose_auth_test_is_answered_200_with_no_json_object_fails_as_a_network_error(
        fake: FakeSlack, body: str, content_type: str) -> None:
    fake.fail_next("auth.test", status=200, body=body, content_type=content_type)
    adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base)
    with pytest.raises(NetworkError, match="auth.test: an answer that is not Slack's JSON"):
        await adapter.start(_ignore, [])


@pytest.mark.parametrize(("body", "content_type"), [("OK", "text/plain"), ('["ok"]', "application/json")],
                         ids=["text", "json-list"])
async def test_a_reconnect_answered_200_with_no_json_object_says_so_and_reconnects(
        fake: FakeSlack, slack: SlackAdapter, caplog: pytest.LogCaptureFixture, body: str, content_type: str) -> None:
    """Socket Mode's own ``apps.connections.open``: the watch names the failure as for any other answer that is not
    Slack's JSON (it saw ``AttributeError``), and slack-sdk asks again."""
    with caplog.at_level(logging.INFO, logger="slack_sdk.socket_mode"):
        fake.fail_next(OPEN, status=200, body=body, content_type=content_type)
        opened = len(fake.calls_to(OPEN))
        fake.drop_socket()
        await fake.wait_for(lambda: len(fake.calls_to(OPEN)) > opened + 1)  # asked again at the next ping
        await fake.wait_for(lambda: slack.connection().status == "connected")
    failed = [r.getMessage() for r in caplog.records if r.name == "slack_sdk.socket_mode" and r.levelno >= logging.ERROR
              and "reconnect" in r.getMessage()]
    assert len(failed) == 1, failed
    assert f"(error: NetworkError, message: {OPEN}: an answer that is not Slack's JSON (HTTP 200)" in failed[0]
    assert fake.bot_token not in caplog.text and fake.app_token not in caplog.text


async def _ignore(_inbound: Inbound) -> None:
    return None
