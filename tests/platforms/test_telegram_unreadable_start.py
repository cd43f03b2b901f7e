"""``getMe`` at the start, ``getFile`` before a download, answered with something that is not the Bot API's
JSON (a proxy's 502 page, a 200 page of something that is no Bot API, a body cut short) or with a result
aiogram cannot read. aiogram says "Failed to decode object" and nothing more: the start stopped with a line
naming neither what answered nor how, and a download failed the same way. The error names the method, the
status (and the page's title), never the token; the start is not a lasting failure
(exit status 1: a proxy or an outage mends by itself). The real aiogram client against the loopback fake."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from gateway.config import config_from_mapping
from gateway.startup_errors import explain, lasting
from platforms.base import NetworkError
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter
from tests.platforms.sink import Sink

PAGE = "<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"
JSON = "application/json"


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:
        yield fake


@pytest.mark.parametrize(("status", "body", "content_type", "said"), [
    (502, PAGE, "text/html", "not Bot API JSON (HTTP 502): 502 Bad Gateway"),
    (200, "<html>a captive portal</html>", "text/html", "not Bot API JSON (HTTP 200)"),
    (502, '{"error": "upstream"}', JSON, "not Bot API JSON (HTTP 502)"),
    (200, '{"id": 1', JSON, "not Bot API JSON (HTTP 200)"),
    (200, '{"ok": true, "result": {"is_bot": true}}', JSON, "done, with a result aiogram cannot read (result.id"),
    # Bytes that are no text in the charset it names: aiogram's UnicodeDecodeError read as a refusal for good (78).
    (502, "<html>Passerelle défaillante</html>", "text/html; charset=ascii",
     "bytes that are not text in the charset they name (ascii)"),
], ids=["502-page", "200-page", "other-json", "cut-short", "unread-result", "not-its-charset"])
async def test_a_start_whose_getme_is_answered_with_no_bot_api_json_says_so(
        fake: FakeTelegram, status: int, body: str, content_type: str, said: str) -> None:
    fake.fail_next("getMe", status, body=body, content_type=content_type)
    adapter = TelegramAdapter(fake.token, api_base=fake.base_url)
    with pytest.raises(NetworkError) as failed:
        await adapter.start(Sink())
    assert str(failed.value).startswith("Telegram answered getMe "), failed.value
    assert said in str(failed.value)
    config = config_from_mapping({"platforms": {"telegram": {
        "enabled": True, "token": fake.token, "api_base": fake.base_url, "allow_all": True}}}).config
    line = explain(failed.value, config)
    assert line.startswith("platforms.telegram.api_base: no working Telegram Bot API at"), line
    assert said in line and "Failed to decode" not in line and "\n" not in line
    assert not lasting(failed.value)  # exit 1: a supervisor starts it again


async def test_a_page_quoting_the_token_does_not_show_it(fake: FakeTelegram) -> None:
    secret = fake.token.partition(":")[2]
    page = f"<html><head><title>502 for /bot{fake.token}/getMe</title></head><body>{fake.token}</body></html>"
    fake.fail_next("getMe", 502, body=page, content_type="text/html")
    adapter = TelegramAdapter(fake.token, api_base=fake.base_url)
    with pytest.raises(NetworkError) as failed:
        await adapter.start(Sink())
    assert "502 for /bot***/getMe" in str(failed.value)
    cause = failed.value.__cause__
    assert secret not in str(failed.value) and secret not in str(cause) and secret not in repr(cause)


@pytest.mark.parametrize(("status", "body", "content_type", "said"), [
    (502, PAGE, "text/html", "Telegram answered getFile with something that is not Bot API JSON (HTTP 502)"),
    (200, '{"ok": true, "result": {"file_id": "x"}}', JSON, "Telegram answered getFile done, with a result aiogram"
                                                             " cannot read (result.file_unique_id"),
], ids=["502-page", "unread-result"])
async def test_a_getfile_answered_with_no_bot_api_json_names_it(
        fake: FakeTelegram, status: int, body: str, content_type: str, said: str) -> None:
    adapter = TelegramAdapter(fake.token, api_base=fake.base_url)
    sink = Sink()
    await adapter.start(sink)
    try:
        fake.push_document(42, b"some notes", "notes.txt")
        await fake.wait_for(lambda: sink.inbound)
        (attachment,) = sink.inbound[0].attachments
        fake.fail_next("getFile", status, body=body, content_type=content_type)
        with pytest.raises(NetworkError) as failed:
            await adapter.download(attachment)
        assert str(failed.value).startswith(said), failed.value
        assert await adapter.download(attachment) == b"some notes"  # the gateway's next try
    finally:
        await adapter.stop()
