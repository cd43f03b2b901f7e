"""Markdown on Telegram: the adapter renders HTML, aiogram sends it with parse_mode=HTML, and
FakeTelegram parses it as Telegram does; what reaches the chat is read back as text + entities."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiogram.exceptions import TelegramBadRequest

from gateway.splitting import split_text
from platforms.base import BadRequest, NotFound, Outbound
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:
        yield fake


@pytest.fixture
async def adapter(fake: FakeTelegram) -> AsyncIterator[TelegramAdapter]:
    adapter = TelegramAdapter(fake.token, api_base=fake.base_url)
    yield adapter
    await adapter.stop()


async def send(fake: FakeTelegram, adapter: TelegramAdapter, markdown: str) -> dict[str, Any]:
    await adapter.send(Outbound(chat_id="42", thread_id=None, text=markdown))
    return fake.messages["42"][-1]


def spans(message: dict[str, Any]) -> list[tuple[str, str]]:
    """(entity type, the text it covers) for every entity (texts here are BMP-only)."""
    text = message["text"]
    return [(e["type"], text[e["offset"]:e["offset"] + e["length"]]) for e in message["entities"]]


@pytest.mark.parametrize(
    ("markdown", "text", "expected"),
    [
        ("a **bold** b", "a bold b", [("bold", "bold")]),
        ("a *italic* and _this_", "a italic and this", [("italic", "italic"), ("italic", "this")]),
        ("~~gone~~ now", "gone now", [("strikethrough", "gone")]),
        ("run `ls -l` here", "run ls -l here", [("code", "ls -l")]),
        ("see [the docs](https://example.com/d?a=1&b=2)", "see the docs", [("text_link", "the docs")]),
        ("> quoted **words**", "quoted words", [("blockquote", "quoted words"), ("bold", "words")]),
        ("# Title\n\nbody", "Title\n\nbody", [("bold", "Title")]),
        ("***both***", "both", [("italic", "both"), ("bold", "both")]),
    ],
)
async def test_each_inline_element(fake: FakeTelegram, adapter: TelegramAdapter, markdown: str, text: str,
                                   expected: list[tuple[str, str]]) -> None:
    message = await send(fake, adapter, markdown)
    assert message["parse_mode"] == "HTML"
    assert message["text"] == text
    assert sorted(spans(message)) == sorted(expected)


async def test_a_link_keeps_its_url(fake: FakeTelegram, adapter: TelegramAdapter) -> None:
    message = await send(fake, adapter, "[docs](https://example.com/d?a=1&b=2)")
    assert message["entities"] == [{"type": "text_link", "offset": 0, "length": 4,
                                    "url": "https://example.com/d?a=1&b=2"}]


@pytest.mark.parametrize(("markdown", "text"), [
    ("[write us](mailto:help@example.com)", "write us (help@example.com)"),
    ("[help@example.com](mailto:help@example.com)", "help@example.com"),
    ("**[write us](MAILTO:help@example.com)**", "write us (help@example.com)"),
])
async def test_a_mail_link_is_its_address_written_out(fake: FakeTelegram, adapter: TelegramAdapter, markdown: str,
                                                      text: str) -> None:
    # Telegram makes no mail link of <a href="mailto:…">: it reads the target as an http address and
    # the label opened http://mailto:help@example.com/, the web site example.com. The address itself
    # Telegram links as one to write to.
    message = await send(fake, adapter, markdown)
    assert message["text"] == text
    assert not [e for e in message["entities"] if e["type"] == "text_link"]


@pytest.mark.parametrize(
    ("markdown", "text", "expected"),
    [
        ("see https://example.com/_a_/b and *this*", "see https://example.com/_a_/b and this", [("italic", "this")]),
        # Telegram would link ".../~x~*y*", its "*" too: the address is a link to itself.
        ("**https://example.com/a_b_c**, (https://example.com/~x~*y*)", "https://example.com/a_b_c, "
         "(https://example.com/~x~*y*)", [("bold", "https://example.com/a_b_c"),
                                          ("text_link", "https://example.com/~x~*y")]),
        ("`https://example.com/_a_` <https://example.com/_b_>", "https://example.com/_a_ https://example.com/_b_",
         [("code", "https://example.com/_a_")]),
        ("[the _docs_](https://example.com/_a_)", "the docs", [("text_link", "the docs"), ("italic", "docs")]),
        # Between <>, as written too: not percent-encoded, nor an e-mail address behind "mailto:".
        ("<https://ru.wikipedia.org/wiki/Москва> <me@example.com>", "https://ru.wikipedia.org/wiki/Москва me@example.com",
         []),
        # A trailing underscore closes the italics around it, as on GitHub: it is not the address's.
        ("_Source: https://example.com/a_ and more", "Source: https://example.com/a and more",
         [("italic", "Source: https://example.com/a")]),
    ],
)
async def test_a_bare_url_is_shown_as_written(fake: FakeTelegram, adapter: TelegramAdapter, markdown: str, text: str,
                                              expected: list[tuple[str, str]]) -> None:
    # Telegram links a URL in the text itself; its characters are never formatting.
    message = await send(fake, adapter, markdown)
    assert message["text"] == text
    assert sorted(spans(message)) == sorted(expected)


async def test_a_code_block_is_pre_with_its_language(fake: FakeTelegram, adapter: TelegramAdapter) -> None:
    message = await send(fake, adapter, "Try:\n\n```python\nif a < b and c > d:\n    print('&')\n```")
    assert message["text"] == "Try:\n\nif a < b and c > d:\n    print('&')"
    assert message["entities"] == [{"type": "pre", "offset": 6, "length": 34, "language": "python"}]


async def test_everything_else_is_escaped_text(fake: FakeTelegram, adapter: TelegramAdapter) -> None:
    message = await send(fake, adapter, "1 < 2 && <b>not bold</b> &amp; 3 > 2")
    assert message["text"] == "1 < 2 && <b>not bold</b> & 3 > 2"
    assert message["entities"] == []


async def test_lists_and_tables(fake: FakeTelegram, adapter: TelegramAdapter) -> None:
    message = await send(fake, adapter, "- one\n- **two**\n\n| a | b |\n|---|---|\n| 1 | 22 |")
    assert message["text"] == "• one\n• two\n\na | b\n--+---\n1 | 22"
    assert sorted(spans(message)) == [("bold", "two"), ("pre", "a | b\n--+---\n1 | 22")]


async def test_a_table_keeps_the_targets_of_its_links_and_images(fake: FakeTelegram, adapter: TelegramAdapter) -> None:
    # A table is a code block, which holds no link: the target is written after the label.
    message = await send(fake, adapter, "| what | where |\n|---|---|\n| docs | [the docs](https://example.com/d) |\n"
                                        "| logo | ![logo](https://example.com/l.png) |\n| site | <https://example.org> |")
    assert message["text"] == ("what | where\n-----+---------------------------------\n"
                               "docs | the docs (https://example.com/d)\n"
                               "logo | logo (https://example.com/l.png)\n"
                               "site | https://example.org")


async def test_plain_text_goes_without_a_parse_mode(fake: FakeTelegram, adapter: TelegramAdapter) -> None:
    message = await send(fake, adapter, "just words, nothing to format")
    assert message["parse_mode"] is None and message["text"] == "just words, nothing to format"


async def test_edits_are_rendered_too(fake: FakeTelegram, adapter: TelegramAdapter) -> None:
    sent = await adapter.send(Outbound(chat_id="42", thread_id=None, text="⏳ *working*"))
    await adapter.edit("42", None, sent.message_id, "✓ **done**")
    message = fake.messages["42"][-1]
    assert message["text"] == "✓ done" and spans(message) == [("bold", "done")]
    await adapter.edit("42", None, sent.message_id, "✓ **done**")  # unchanged: "not modified" is success
    assert len(fake.calls_to("editMessageText")) == 2


async def test_the_fake_refuses_malformed_html_like_telegram(fake: FakeTelegram, adapter: TelegramAdapter) -> None:
    with pytest.raises(TelegramBadRequest) as caught:
        await adapter.bot.send_message(chat_id=42, text="<b>unclosed", parse_mode="HTML")
    assert 'can\'t parse entities: Can\'t find end tag corresponding to start tag "b"' in caught.value.message
    with pytest.raises(TelegramBadRequest) as caught:
        await adapter.bot.send_message(chat_id=42, text="a <p>b</p>", parse_mode="HTML")
    assert 'Unsupported start tag "p" at byte offset 2' in caught.value.message
    assert fake.messages["42"] == []


async def test_a_parse_error_falls_back_to_plain_text_exactly_once(fake: FakeTelegram,
                                                                  adapter: TelegramAdapter) -> None:
    fake.fail_next("sendMessage", 400, description="Bad Request: can't parse entities: Unexpected end tag at byte offset 9")
    sent = await adapter.send(Outbound(chat_id="42", thread_id=None, text="the **answer**"))
    first, second = fake.calls_to("sendMessage")
    assert (first["parse_mode"], first["text"]) == ("HTML", "the <b>answer</b>")
    assert "parse_mode" not in second and second["text"] == "the **answer**"
    assert [m["text"] for m in fake.messages["42"]] == ["the **answer**"]
    assert fake.messages["42"][0]["message_id"] == int(sent.message_id)


async def test_an_edit_falls_back_to_plain_text_too(fake: FakeTelegram, adapter: TelegramAdapter) -> None:
    sent = await adapter.send(Outbound(chat_id="42", thread_id=None, text="first"))
    fake.fail_next("editMessageText", 400, description="Bad Request: can't parse entities: Unsupported start tag")
    await adapter.edit("42", None, sent.message_id, "_second_")
    assert fake.messages["42"][0]["text"] == "_second_" and len(fake.calls_to("editMessageText")) == 2


async def test_only_a_parse_error_triggers_the_fallback(fake: FakeTelegram, adapter: TelegramAdapter) -> None:
    fake.fail_next("sendMessage", 400, description="Bad Request: chat not found")
    with pytest.raises(NotFound):
        await adapter.send(Outbound(chat_id="42", thread_id=None, text="the **answer**"))
    fake.fail_next("sendMessage", 400, description="Bad Request: wrong remote file identifier")
    with pytest.raises(BadRequest):
        await adapter.send(Outbound(chat_id="42", thread_id=None, text="the **answer**"))
    assert len(fake.calls_to("sendMessage")) == 2


async def test_a_plain_text_adapter_never_formats(fake: FakeTelegram) -> None:
    adapter = TelegramAdapter(fake.token, api_base=fake.base_url, parse_mode=None)
    try:
        await adapter.send(Outbound(chat_id="42", thread_id=None, text="the **answer**"))
    finally:
        await adapter.stop()
    assert fake.messages["42"][0]["text"] == "the **answer**" and fake.messages["42"][0]["parse_mode"] is None


async def test_the_fake_ignores_formatting_past_the_100th_entity_like_telegram(fake: FakeTelegram,
                                                                              adapter: TelegramAdapter) -> None:
    await adapter.send(Outbound(chat_id="42", thread_id=None, text=" ".join(f"**{n}**" for n in range(120))))
    message = fake.messages["42"][-1]
    assert message["text"] == " ".join(str(n) for n in range(120))
    assert len(message["entities"]) == 100 and spans(message)[-1] == ("bold", "99")


async def test_a_reply_with_more_than_100_links_is_split_so_that_every_link_keeps_its_address(
        fake: FakeTelegram, adapter: TelegramAdapter) -> None:
    # 130 short links fit 4,096 characters easily, but Telegram reads only 100 entities a message.
    markdown = "\n".join(f"- [{n}](https://e.co/{n})" for n in range(130))
    for part in split_text(markdown, adapter.text_limit, adapter.measure):
        await adapter.send(Outbound(chat_id="42", thread_id=None, text=part))
    links = [e["url"] for m in fake.messages["42"] for e in m["entities"] if e["type"] == "text_link"]
    assert links == [f"https://e.co/{n}" for n in range(130)]


def test_measure_counts_what_telegram_counts(adapter: TelegramAdapter) -> None:
    assert adapter.measure("\\*😀\\*") == 6  # the Markdown as written: the plain fallback must fit too
    assert adapter.measure(" ".join(["**a**"] * 100)) == 599  # the most entities Telegram reads: the text counts
    assert adapter.measure(" ".join(["**a**"] * 101)) > 4096  # past them: too long for any message or caption
    table = "| a | bbbbbbbbbbbbbbbbbbbb |\n|-|-|\n| ccccc | d |"  # drawn wider than written
    drawn = f"a     | {'b' * 20}\n------+{'-' * 21}\nccccc | d"
    assert adapter.measure(table) == len(drawn) > len(table)
    bold = "**" + "x" * 5000 + "**"
    assert adapter.measure(bold) == 5004
