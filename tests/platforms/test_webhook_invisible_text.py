"""A message whose text shows nothing, only zero-width or other invisible characters (and whitespace), is refused
by the webhook routes and the web chat's API as an empty one is, naming the characters, through real HTTP: it was
taken, and cost a model turn on a message no one could read. Text with anything visible is taken as before."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from platforms.fakes.webhook_receiver import signed_post
from platforms.web import WebChatAdapter
from platforms.webhook import Route, WebhookAdapter
from tests.platforms.test_web_adapter import Sink as WebSink
from tests.platforms.test_webhook_adapter import Sink as HookSink
from tests.web_client import post_message, serve

SECRET = "invisible-secret-0123456789"
EMPTY = '"text" must be a non-empty string'
BLANK = [
    ("\u200b", "U+200B"),
    ("\u200c\u200d", "U+200C, U+200D"),
    ("\u2060", "U+2060"),
    ("\ufeff", "U+FEFF"),
    (" \u200b\n\ufeff\t\u200b ", "U+200B, U+FEFF"),
    ("\u200b\u200c\u200d\u2060\ufeff", "U+200B, U+200C, U+200D, …"),
    ("\u3164\u2800", "U+3164, U+2800"),  # a Hangul filler, a blank braille cell: shown as nothing too
]
SHOWN = ["a\u200b", "\u200bhi\ufeff", "👨\u200d👩\u200d👧", "\u00a0x", "-"]


@pytest.fixture
async def hook() -> AsyncIterator[tuple[str, HookSink]]:
    adapter, sink = WebhookAdapter({"alerts": Route(SECRET)}), HookSink()
    await adapter.start(sink)
    runner, base = await serve(adapter)
    yield f"{base}/webhooks/alerts", sink
    await adapter.stop()
    await runner.cleanup()


@pytest.fixture
async def chat() -> AsyncIterator[tuple[str, WebSink]]:
    adapter, sink = WebChatAdapter(), WebSink()
    await adapter.start(sink)
    runner, base = await serve(adapter)
    yield base, sink
    await adapter.stop()
    await runner.cleanup()


@pytest.mark.parametrize(("text", "named"), BLANK)
async def test_a_webhook_text_of_invisible_characters_is_refused_naming_them(hook, text: str, named: str) -> None:
    url, sink = hook
    reply = await signed_post(url, SECRET, {"text": text, "chat_id": "ops"})
    assert (reply.status, reply.json()) == (400, {"error": f"{EMPTY}, not only invisible characters ({named})"})
    assert sink.inbound == []


@pytest.mark.parametrize(("text", "named"), BLANK)
async def test_a_web_chat_text_of_invisible_characters_is_refused_naming_them(chat, http, text: str,
                                                                              named: str) -> None:
    base, sink = chat
    status, body = await post_message(http, base, "c1", text, key="key-00000001")
    assert (status, body) == (400, {"error": f"{EMPTY}, not only invisible characters ({named})"})
    assert sink.inbound == []


@pytest.mark.parametrize("text", ["", " ", "\n\t "])
async def test_empty_and_whitespace_keep_their_words(hook, chat, http, text: str) -> None:
    url, _ = hook
    reply = await signed_post(url, SECRET, {"text": text})
    assert (reply.status, reply.json()) == (400, {"error": EMPTY})
    assert await post_message(http, chat[0], "c1", text, key="key-00000001") == (400, {"error": EMPTY})


@pytest.mark.parametrize("text", SHOWN)
async def test_text_with_anything_visible_is_taken_as_sent(hook, chat, http, text: str) -> None:
    url, hook_sink = hook
    base, chat_sink = chat
    assert (await signed_post(url, SECRET, {"text": text})).status == 202
    assert (await post_message(http, base, "c1", text, key="key-00000001"))[0] == 202
    assert [i.text for i in hook_sink.inbound] == [text] and [i.text for i in chat_sink.inbound] == [text]


async def test_beside_slack_attachments_or_a_file_it_is_answered_as_an_empty_text_is(hook) -> None:
    # A webhook message carries text only: attachments of Slack's format are not read, a file is refused first.
    url, sink = hook
    for extra in ({"attachments": [{"text": "disk full", "color": "danger"}]}, {"file": {"url": "https://x/y.pdf"}}):
        empty = await signed_post(url, SECRET, {"text": "", **extra})
        invisible = await signed_post(url, SECRET, {"text": "\u200b", **extra})
        assert empty.status == invisible.status == 400
        assert invisible.json()["error"].startswith(empty.json()["error"])
    assert sink.inbound == []
