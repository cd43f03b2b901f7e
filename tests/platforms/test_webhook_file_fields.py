"""A webhook message is its text: a file a caller puts in the body is refused naming its field, not dropped
unseen while the caller believes the agent got it (`platforms.webhook._parse`). A body in Slack's incoming-webhook
format (``text`` plus message ``attachments``: coloured blocks of alert text, as GitLab and many scripts written
for Slack send) is a message, answered for its ``text`` as before: its ``attachments`` hold no file, and refusing
them lost every alert such a sender relays."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from platforms.base import Accepted, Inbound
from platforms.fakes.webhook_receiver import signed_post
from platforms.webhook import WebhookAdapter

SECRET = "files-secret-0123456789"
NOW = 1_700_000_000.0
ALERT = {"color": "danger", "title": "[FIRING:1] DiskFull", "title_link": "https://grafana.example/alerting/1",
         "text": "disk 95% full on db-1", "fallback": "[FIRING:1] DiskFull", "footer": "Grafana",
         "image_url": "https://grafana.example/render/panel.png", "fields": [{"title": "host", "value": "db-1"}]}


class Sink:
    def __init__(self) -> None:
        self.inbound: list[Inbound] = []

    async def __call__(self, inbound: Inbound) -> Accepted:
        self.inbound.append(inbound)
        return Accepted(f"turn-{len(self.inbound)}", f"webhook:{inbound.chat_id}")


@pytest.fixture
async def served() -> AsyncIterator[tuple[str, Sink]]:
    adapter, sink = WebhookAdapter({"alerts": (SECRET, None)}, clock=lambda: NOW), Sink()
    await adapter.start(sink)
    app = web.Application()
    app.add_routes(adapter.web_routes())
    runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=1.0)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    yield f"http://127.0.0.1:{runner.addresses[0][1]}/webhooks/alerts", sink
    await runner.cleanup()
    await adapter.stop()


@pytest.mark.parametrize("field, value", [
    ("files", [{"name": "report.pdf", "data": "JVBERi0xLjc="}]),
    ("file", "https://example.com/report.pdf"),
    ("attachments", [{"url": "https://example.com/graph.png"}]),
    ("attachment", {"name": "notes.txt", "content": "the notes"}),
])
async def test_a_file_in_the_body_is_refused_naming_its_field(served, field: str, value: object) -> None:
    url, sink = served
    reply = await signed_post(url, SECRET, {"text": "what does this show?", field: value}, timestamp=str(int(NOW)))
    assert reply.status == 400
    error = reply.json()["error"]
    assert error.startswith(f'"{field}" cannot be taken') and '"text"' in error
    assert sink.inbound == []


async def test_a_file_without_text_is_refused_for_the_file_not_the_missing_text(served) -> None:
    url, sink = served
    reply = await signed_post(url, SECRET, {"files": ["report.pdf"]}, timestamp=str(int(NOW)))
    assert reply.status == 400 and reply.json()["error"].startswith('"files" cannot be taken')


@pytest.mark.parametrize("empty", [None, [], {}, ""])
async def test_an_empty_file_field_loses_nothing_and_is_ignored(served, empty: object) -> None:
    url, sink = served
    reply = await signed_post(url, SECRET, {"text": "disk full", "files": empty, "severity": "page"},
                              timestamp=str(int(NOW)))
    assert reply.status == 202 and [i.text for i in sink.inbound] == ["disk full"]


@pytest.mark.parametrize("field, value", [("attachments", [ALERT, {"pretext": "@oncall", "text": "2nd"}]),
                                          ("attachment", {"text": "disk 95% full", "color": "#ff0000"})])
async def test_slack_message_attachments_are_no_file_and_the_text_is_answered(served, field: str,
                                                                              value: object) -> None:
    url, sink = served
    body = {"text": "disk full on db-1", "username": "Grafana", "icon_emoji": ":fire:", field: value}
    reply = await signed_post(url, SECRET, body, timestamp=str(int(NOW)))
    assert reply.status == 202 and [i.text for i in sink.inbound] == ["disk full on db-1"]


@pytest.mark.parametrize("value", [
    [ALERT, {"name": "graph.png", "url": "https://example.com/graph.png"}],  # one file among them is a file
    [{"title": "report.pdf", "mimetype": "application/pdf", "url_private": "https://files.slack.com/F1"}],
    [{"id": "F1"}],  # nothing of a message attachment: taken for a file, as before
    "report.pdf",
])
async def test_a_file_among_attachments_is_still_refused(served, value: object) -> None:
    url, sink = served
    reply = await signed_post(url, SECRET, {"text": "what does this show?", "attachments": value},
                              timestamp=str(int(NOW)))
    assert reply.status == 400 and reply.json()["error"].startswith('"attachments" cannot be taken')
    assert sink.inbound == []
