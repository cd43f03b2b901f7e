import asyncio
import io
import os

import pytest

from platforms.base import EditUnsupported, Outbound
from platforms.local import LocalAdapter


class TTY(io.StringIO):
    def isatty(self):
        return True


async def test_lines_become_inbound_messages_and_eof_ends_the_chat():
    read_fd, write_fd = os.pipe()
    reader = os.fdopen(read_fd)
    ended = asyncio.Event()
    got = []
    arrived = asyncio.Queue()

    async def sink(inbound):
        got.append(inbound)
        arrived.put_nowait(inbound)

    async def message() -> None:
        await asyncio.wait_for(arrived.get(), 5)

    adapter = LocalAdapter(input=reader, output=io.StringIO(), user="me", on_exit=ended.set)
    await adapter.start(sink)
    os.write(write_fd, b"hello\n")
    await message()  # each write waits for the last message: lines written apart stay apart
    os.write(write_fd, b"Compare:\n- a\n- b\n")  # pasted together: one message
    await message()
    os.write(write_fd, b"one \\\ntwo\n")  # a trailing backslash continues the message
    await message()
    os.write(write_fd, b"/agents\n\n/help\n")  # a pasted block of commands only: one command per line
    await message()
    await message()
    os.write(write_fd, b"/stop\n")
    os.close(write_fd)
    await asyncio.wait_for(ended.wait(), 5)
    assert [(m.text, m.is_command, m.user_id, m.platform) for m in got] == [
        ("hello", False, "me", "local"), ("Compare:\n- a\n- b", False, "me", "local"),
        ("one \ntwo", False, "me", "local"), ("/agents", True, "me", "local"), ("/help", True, "me", "local"),
        ("/stop", True, "me", "local")]
    assert len({m.event_id for m in got}) == 6
    await adapter.stop()
    reader.close()


async def test_replies_are_printed_with_their_kind():
    out = io.StringIO()
    adapter = LocalAdapter(input=io.StringIO(""), output=out)
    await adapter.send(Outbound("terminal", None, "hi there", kind="reply"))
    await adapter.send(Outbound("terminal", None, "looking", kind="interim"))
    assert out.getvalue().splitlines() == ["agent> hi there", "agent (working)> looking"]


async def test_notices_are_redrawn_in_place_on_a_terminal_only_when_last():
    out = TTY()
    adapter = LocalAdapter(input=io.StringIO(""), output=out)
    sent = await adapter.send(Outbound("terminal", None, "⏳ Working — 5 s", kind="notice"))
    await adapter.edit("terminal", None, sent.message_id, "⏳ Working — 10 s")
    assert "\x1b[1A\x1b[2K⏳ Working — 10 s" in out.getvalue()
    await adapter.send(Outbound("terminal", None, "other"))
    with pytest.raises(EditUnsupported):
        await adapter.edit("terminal", None, sent.message_id, "⏳ Working — 15 s")
    plain = LocalAdapter(input=io.StringIO(""), output=io.StringIO())
    sent = await plain.send(Outbound("terminal", None, "⏳", kind="notice"))
    with pytest.raises(EditUnsupported):
        await plain.edit("terminal", None, sent.message_id, "⏳⏳")


async def test_control_characters_in_a_reply_are_shown_never_obeyed():
    # A model quoting a file or a web page may pass on escape sequences: clear the screen, set the
    # window title, write the clipboard (OSC 52), hide what follows, return to the line's start.
    out = TTY()
    adapter = LocalAdapter(input=io.StringIO(""), output=out)
    evil = "a\x1b[2J\x1b]52;c;ZXZpbA==\x07b\rc\x9b31md\x7f\r\nnext\tline"
    sent = await adapter.send(Outbound("terminal", None, evil, kind="reply"))
    assert out.getvalue() == "agent> a␛[2J␛]52;c;ZXZpbA==␇b␍c\ufffd31md␡\nnext\tline\n"
    await adapter.send(Outbound("terminal", None, "⏳ working", kind="notice"))
    out.seek(0)
    out.truncate()
    with pytest.raises(EditUnsupported):
        await adapter.edit("terminal", None, sent.message_id, "x")  # not the last line
    notice = str(int(sent.message_id) + 1)
    await adapter.edit("terminal", None, notice, "⏳ still\x1b[8m hidden")
    assert out.getvalue() == "\r\x1b[1A\x1b[2K⏳ still␛[8m hidden\n"
