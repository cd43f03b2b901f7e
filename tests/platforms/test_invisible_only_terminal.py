"""The terminal chat (`switchboard chat`) given a line that shows nothing, only invisible characters (zero-width spaces,
word joiners: what `platforms.formatting.blank.is_blank` calls blank), typed or piped: passed over as an empty line
is, where it cost a turn of the model answering what no one could read; and in a pasted block of commands, such a
line is no line of words that would make the block one message."""

from __future__ import annotations

import asyncio
import io

from platforms.local import LocalAdapter
from platforms.local_messages import commands_alone
from tests.platforms.sink import Sink


async def test_piped_lines_of_invisible_characters_alone_are_passed_over_as_empty_ones() -> None:
    ended, sink = asyncio.Event(), Sink()
    piped = io.StringIO("\u200b\nhello\n\u200b\u2060\n\ufeff \u200d\n/stop\n\ufe0f\n\n/new\n")
    adapter = LocalAdapter(input=piped, output=io.StringIO(), on_input_end=ended.set)
    await adapter.start(sink)
    try:
        await asyncio.wait_for(ended.wait(), 5)
    finally:
        await adapter.stop()
    assert [inbound.text for inbound in sink.inbound] == ["hello", "/stop", "/new"]


def test_a_pasted_block_of_commands_with_a_line_of_invisible_characters_is_still_commands_alone() -> None:
    assert commands_alone("/stop\n\u200b\n/new")
    assert commands_alone("/stop\n\n/new")
    assert not commands_alone("\u200b\n\u2060")
    assert not commands_alone("/stop\nnow\n/new")


def test_a_pasted_block_of_commands_one_with_an_invisible_character_glued_on_is_still_commands_alone() -> None:
    """The gateway reads ``\\u2060/new`` as ``/new`` (`gateway.commands.parse`): the block went whole, one message,
    ``/help`` with ``\\u2060/new`` as its arguments, and /new never ran."""
    assert commands_alone("/help\n\u2060/new")
    assert commands_alone("\u200b/stop\n/new")


async def test_quit_with_an_invisible_character_glued_on_still_quits() -> None:
    ended, sink = asyncio.Event(), Sink()
    piped = io.StringIO("/quit\u200b\nhello\n")
    adapter = LocalAdapter(input=piped, output=io.StringIO(), on_input_end=ended.set, on_exit=ended.set)
    await adapter.start(sink)
    try:
        await asyncio.wait_for(ended.wait(), 5)
    finally:
        await adapter.stop()
    assert [inbound.text for inbound in sink.inbound] == []
