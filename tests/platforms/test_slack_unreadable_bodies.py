"""Answers of the Web API that are not Slack's JSON: a proxy's 502 page (labelled ``application/json`` or
not), an empty or text 5xx, a body cut short, a 200 page of a proxy in between. slack-sdk hands such an
answer over as aiohttp's own response or as text, and reading Slack's error code of it crashed the
adapter's translation (AttributeError, no `DeliveryError`: a placeholder's post failed its turn's typing);
a 2xx without Slack's JSON was a `BadRequest`, and the part was dropped. Each is a `NetworkError`, which the
outbox tries again, looking for the post first; a 4xx page and Slack's own error codes are still refusals.
The real slack-sdk client against the loopback fake."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.outbox import Outbox
from gateway.store import GatewayStore
from platforms.base import BadRequest, NetworkError, Outbound
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from tests.platforms.slack_client import fake_slack, running_slack

PAGE = "<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"
JSON = "application/json"
WAIT = 5.0

UNREADABLE = pytest.mark.parametrize(("status", "body", "content_type", "after"), [
    (502, PAGE, "text/html", False),
    (502, PAGE, JSON, False),  # slack-sdk: SlackApiError whose response is aiohttp's
    (503, "", "text/plain", False),  # kept as text by slack-sdk
    (200, '{"ok": true, "chan', JSON, True),  # cut short: posted all the same
    (200, "<html>proxy</html>", "text/html", False),  # a 200 that is no answer of Slack's
], ids=["502-page", "502-page-as-json", "503-text", "200-cut-short", "200-page"])


fake = fake_slack()
slack = running_slack()


@UNREADABLE
async def test_a_post_answered_with_no_json_of_slacks_is_a_network_error(
        fake: FakeSlack, slack: SlackAdapter, status: int, body: str, content_type: str, after: bool) -> None:
    fake.fail_next("chat.postMessage", status=status, body=body, content_type=content_type, after=after)
    with pytest.raises(NetworkError) as caught:
        await slack.send(Outbound("C1", None, "hello"))
    assert caught.value.method == "chat.postMessage" and caught.value.chat_id == "C1"


@UNREADABLE
async def test_a_placeholder_answered_with_no_json_of_slacks_fails_no_turn(
        fake: FakeSlack, slack: SlackAdapter, status: int, body: str, content_type: str, after: bool) -> None:
    fake.fail_next("chat.postMessage", status=status, body=body, content_type=content_type, after=after)
    await slack.typing("C1", None)  # a progress display never fails a turn
    await slack.idle("C1", None)


@pytest.mark.parametrize(("status", "body", "content_type", "error"), [
    (400, "<html>400 Bad Request</html>", "text/html", None),  # a proxy's refusal: as sure as Slack's
    (200, None, JSON, "invalid_arguments"),  # Slack's own JSON error
], ids=["400-page", "slack-error"])
async def test_a_refusal_stays_a_bad_request(fake: FakeSlack, slack: SlackAdapter, status: int, body: str | None,
                                             content_type: str, error: str | None) -> None:
    fake.fail_next("chat.postMessage", error or "ratelimited", status=status, body=body, content_type=content_type)
    with pytest.raises(BadRequest):
        await slack.send(Outbound("C1", None, "hello"))


@UNREADABLE
async def test_the_outbox_sends_a_part_answered_with_no_json_of_slacks_once(
        fake: FakeSlack, slack: SlackAdapter, tmp_path: Path, status: int, body: str, content_type: str,
        after: bool) -> None:
    """Tried again rather than dropped; one posted though its answer was cut short is looked for and found,
    not posted twice."""
    store = GatewayStore(tmp_path / "state.db")
    outbox = Outbox(store.outbox, {"slack": slack})
    await outbox.start()
    try:
        fake.fail_next("chat.postMessage", status=status, body=body, content_type=content_type, after=after)
        outbox.enqueue("slack", "C1", None, "hello", kind="final", key="t1")
        await outbox.wait_sent("t1:0", timeout=WAIT)
    finally:
        await outbox.close()
        store.close()
    assert fake.texts("C1") == ["hello"]
