"""Code a Telegram user formatted as such (Telegram sends the bare text, the formatting as ``pre`` and ``code``
entities) reaches the model as Markdown: a block fenced with its language, on lines of its own, an inline span
between backticks, each fence longer than any run of backticks inside; a quote after ``>``, struck-out words
between ``~~``; emphasis as plain text. A command (``/new``) is recognised as before, its formatted words after it
read so too. The real aiogram client inside `TelegramAdapter` against `FakeTelegram` over loopback HTTP; the
rendering's robustness (`as_markdown`) to any entities as a property."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiogram.types import MessageEntity
from hypothesis import given, settings
from hypothesis import strategies as st

from platforms.base import CommandSpec
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter
from platforms.telegram_entities import as_markdown
from tests.platforms.sink import Sink

BOT = "switchboard_bot"


def entity(kind: str, offset: int, length: int, **more: str) -> dict:
    return {"type": kind, "offset": offset, "length": length, **more}


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(username=BOT) as fake:
        yield fake


@pytest.fixture
async def sink(fake: FakeTelegram) -> AsyncIterator[Sink]:
    adapter, sink = TelegramAdapter(fake.token, api_base=fake.base_url), Sink()
    await adapter.start(sink, [CommandSpec("new", "Start a new session")])
    yield sink
    await adapter.stop()


async def handed_over(fake: FakeTelegram, sink: Sink, count: int) -> list[tuple[str, bool]]:
    await fake.wait_for(lambda: len(sink.inbound) >= count)
    return [(inbound.text, inbound.is_command) for inbound in sink.inbound]


async def test_a_code_block_is_fenced_with_its_language(fake, sink) -> None:
    # As Telegram Desktop sends "why?\n```py\nprint(1)\n```": the fence gone, the block a pre entity.
    fake.push_message(7, "why?\nprint(1)", entities=[entity("pre", 5, 8, language="python")])
    # A block written on the line of the words before it is put on lines of its own; one holding ``` gets ````.
    fake.push_message(7, "fix: x = ```\nok", entities=[entity("pre", 5, 7)])
    assert await handed_over(fake, sink, 2) == [
        ("why?\n```python\nprint(1)\n```", False),
        ("fix: \n````\nx = ```\n````\nok", False),
    ]


async def test_inline_code_is_between_backticks(fake, sink) -> None:
    fake.push_message(7, "is ls -l safe? and a`b", entities=[entity("code", 3, 5), entity("code", 19, 3)])
    assert await handed_over(fake, sink, 1) == [("is `ls -l` safe? and ``a`b``", False)]


async def test_a_quote_and_struck_words_are_marked_emphasis_is_not(fake, sink) -> None:
    text = "he wrote\nship it today\nI want red blue, now"
    entities = [entity("blockquote", 9, 13), entity("strikethrough", 30, 4), entity("bold", 35, 4),
                entity("italic", 41, 3)]
    fake.push_message(7, text, entities=entities)
    assert await handed_over(fake, sink, 1) == [("he wrote\n> ship it today\n\nI want ~~red~~ blue, now", False)]


async def test_a_command_is_still_one_its_formatted_words_read_as_such(fake, sink) -> None:
    group = dict(chat_type="supergroup", user_id=5, username="bob")
    command = entity("bot_command", 0, len(f"/new@{BOT}"))
    text = f"/new@{BOT}, about ls -l"
    fake.push_message(-100, text, entities=[command, entity("code", len(text) - 5, 5)], **group)
    # Formatting over the command itself (a quote of the whole message) leaves the command as it was.
    fake.push_message(7, "/new now", entities=[entity("bot_command", 0, 4), entity("blockquote", 0, 8)])
    assert await handed_over(fake, sink, 2) == [("/new about `ls -l`", True), ("/new now", True)]


def test_formatting_after_a_command_keeps_its_offsets() -> None:
    text, code = "/new``x", MessageEntity(type="code", offset=6, length=1)
    assert as_markdown(text, [code], plain_to=6) == "/new``" + "`x`"


_KINDS = ["text_link", "code", "pre", "strikethrough", "blockquote", "bold", "text_mention"]


@st.composite
def formatted(draw: st.DrawFn) -> tuple[str, list[MessageEntity]]:
    text = draw(st.text(alphabet="ab `[]\\\n(😀", max_size=30))
    units = len(text.encode("utf-16-le")) // 2
    spans = st.tuples(st.sampled_from(_KINDS), st.integers(-1, units + 1), st.integers(0, units + 1))
    entities = [MessageEntity(type=kind, offset=offset, length=length, url="https://x.test/(a)",
                              language=draw(st.sampled_from(["", "py", "a`b"])))
                for kind, offset, length in draw(st.lists(spans, max_size=6))]
    return text, entities


@settings(max_examples=300, deadline=None)
@given(formatted())
def test_any_entities_lose_and_double_none_of_the_text(message: tuple[str, list[MessageEntity]]) -> None:
    # Telegram sends entities nested, within the text, whole characters: others (a shifted offset) are left out,
    # where aiogram's walk failed on them or wrote text twice. Every character is kept, in order, none twice;
    # whitespace aside, which a blank link label gives up for its address, as do the ends of a struck span.
    text, entities = message
    written = as_markdown(text, entities).replace("https://x.test/(a)", "")
    assert [written.count(character) for character in "ab😀"] == [text.count(character) for character in "ab😀"]
    left = iter(written)
    assert all(character in left for character in text if not character.isspace())
