"""A 4xx answer that is not the Bot API's JSON: a proxy, or the web server in front of a self-hosted Bot API
server, refused the request (nginx's 413 "Request Entity Too Large" for an upload over its
``client_max_body_size``, a corporate proxy's 403 page). aiogram raises `ClientDecodeError` for it, which
carries no status: taken for a `NetworkError`, the outbox tried the part again for up to an hour, uploading
the file again each time, to be refused the same way. The adapter's session keeps the status: a 413 is
final at once (`MessageTooLong`, as Telegram's own 413 is); any other such refusal is retried as an outage
(a proxy's policy may be lifted), named by its status and page, never a refusal of the token nor of the
chat, nor a message that is gone. The real aiogram client against the loopback fake."""

from __future__ import annotations

from pathlib import Path

import pytest

from platforms.base import MessageTooLong, NetworkError, NotFound, Outbound, OutboundFile
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter
from tests.platforms.telegram_client import fake_telegram, running_telegram

CHAT = "7"
TOO_LARGE = ("<html>\r\n<head><title>413 Request Entity Too Large</title></head>\r\n<body>\r\n<center><h1>413"
             " Request Entity Too Large</h1></center>\r\n<hr><center>nginx/1.24.0</center>\r\n</body>\r\n</html>\r\n")


def page(status: str) -> str:
    return f"<html><head><title>{status}</title></head><body><h1>{status}</h1><hr>proxy</body></html>"


fake = fake_telegram()
adapter = running_telegram()


async def test_an_upload_a_proxy_refuses_as_too_large_is_refused_for_good_not_uploaded_again(
        fake: FakeTelegram, adapter: TelegramAdapter, tmp_path: Path) -> None:
    path = tmp_path / "report.bin"
    path.write_bytes(b"\x00" * 2_000)
    fake.fail_next("sendDocument", 413, body=TOO_LARGE, content_type="text/html")
    with pytest.raises(MessageTooLong) as refused:
        await adapter.send_file(Outbound(CHAT, None, "the report"), OutboundFile(str(path), "report.bin", 2_000))
    # The outbox fails a file refused as too long at once (`gateway.sender._FILE_REFUSED`); a NetworkError
    # was uploaded again, with backoff, for up to an hour.
    assert "HTTP 413" in str(refused.value) and "413 Request Entity Too Large" in str(refused.value)
    assert "<" not in str(refused.value)  # the page's title, not its markup
    assert len(fake.calls_to("sendDocument")) == 1 and not fake.messages[CHAT]


@pytest.mark.parametrize(("status", "body", "content_type"), [
    (403, page("403 Forbidden"), "text/html"),
    (400, page("400 Bad Request"), "text/html"),
    (401, page("401 Authorization Required"), "text/html"),
    (404, page("404 Not Found"), "text/html"),
    (403, '{"error": "blocked by policy"}', "application/json"),
    (403, "", "text/plain"),
], ids=["403-page", "400-page", "401-page", "404-page", "403-json-of-its-own", "403-empty"])
async def test_a_proxys_4xx_page_is_tried_again_named_by_its_status(
        fake: FakeTelegram, adapter: TelegramAdapter, status: int, body: str, content_type: str) -> None:
    fake.fail_next("sendMessage", status, body=body, content_type=content_type)
    with pytest.raises(NetworkError) as refused:
        await adapter.send(Outbound(CHAT, None, "hello"))
    assert f"HTTP {status}" in str(refused.value)
    # Not Telegram refusing the token: the platform is not `down`, its replies not held for a new token.
    assert adapter.connection().status != "down"


async def test_a_deletion_a_proxy_answers_404_is_not_taken_for_a_message_already_gone(
        fake: FakeTelegram, adapter: TelegramAdapter) -> None:
    sent = await adapter.send(Outbound(CHAT, None, "⏳ working"))
    fake.fail_next("deleteMessage", 404, body=page("404 Not Found"), content_type="text/html")
    # Telegram's own 404 means the message is gone (deleted); a web server's page says nothing of it.
    with pytest.raises(NetworkError) as refused:
        await adapter.delete(CHAT, None, sent.message_id)
    assert not isinstance(refused.value, NotFound)
    assert len(fake.messages[CHAT]) == 1


@pytest.mark.parametrize("status", [408, 429, 500, 502, 504])
async def test_a_page_at_a_status_worth_another_try_stays_a_network_error(
        fake: FakeTelegram, adapter: TelegramAdapter, status: int) -> None:
    fake.fail_next("sendMessage", status, body=page(f"{status} Whatever"), content_type="text/html")
    with pytest.raises(NetworkError):
        await adapter.send(Outbound(CHAT, None, "hello"))
    await adapter.send(Outbound(CHAT, None, "hello"))  # the outbox's next try
    assert [m["text"] for m in fake.messages[CHAT]] == ["hello"]


async def test_a_page_that_quotes_the_address_does_not_show_the_token(
        fake: FakeTelegram, adapter: TelegramAdapter) -> None:
    encoded = fake.token.replace(":", "%3A")
    echo = f"Forbidden: POST /bot{fake.token}/sendMessage (/bot{encoded}/sendMessage) is not allowed by policy"
    fake.fail_next("sendMessage", 403, body=echo, content_type="text/plain")
    with pytest.raises(NetworkError) as refused:
        await adapter.send(Outbound(CHAT, None, "hello"))
    assert fake.token.partition(":")[2] not in str(refused.value)
    assert fake.token.partition(":")[2] not in repr(refused.value.__cause__)
    assert "is not allowed by policy" in str(refused.value)


async def test_a_long_page_is_cut_short_in_the_error(fake: FakeTelegram, adapter: TelegramAdapter) -> None:
    fake.fail_next("sendMessage", 403, body="denied " * 10_000, content_type="text/plain")
    with pytest.raises(NetworkError) as refused:
        await adapter.send(Outbound(CHAT, None, "hello"))
    assert len(str(refused.value)) < 400
