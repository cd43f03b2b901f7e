"""The terminal chat when the gateway fails on a message before recording it: a fault the message trips
(which would fail alike at every try) is answered `NOT_HANDLED_MESSAGE` and the chat goes on; a refusal
of its storage (a full disk) still ends it, saying why. The same through `switchboard chat` on a
pseudo-terminal: tests/scenarios/test_terminal_chat.py."""

from __future__ import annotations

import asyncio
import io
import logging
import os
import threading

from platforms.local import LocalAdapter
from platforms.not_recorded import NOT_HANDLED_MESSAGE
from tests.polling import until
from tests.sqlite_errors import full_disk


class Failing:
    """The gateway's sink, failing on the texts in ``fails`` with what ``raises`` makes."""

    def __init__(self, fails: set[str], raises=lambda: RuntimeError("a fault this message trips")) -> None:
        self.fails, self.raises = fails, raises
        self.taken: list[str] = []

    async def __call__(self, inbound) -> None:
        if inbound.text in self.fails:
            raise self.raises()
        self.taken.append(inbound.text)


async def test_a_message_the_gateway_fails_on_is_answered_so_and_the_chat_goes_on(caplog) -> None:
    # Raised, it ended the whole chat ("(The chat has ended: …)"), every later line unread.
    read_fd, write_fd = os.pipe()
    reader, output, ended = os.fdopen(read_fd), io.StringIO(), asyncio.Event()
    sink = Failing({"odd"})
    adapter = LocalAdapter(input=reader, output=output, user="me", on_exit=ended.set,
                           on_input_end=ended.set)
    await adapter.start(sink)
    try:
        os.write(write_fd, b"odd\n")
        await until(lambda: NOT_HANDLED_MESSAGE in output.getvalue())
        os.write(write_fd, b"next\n")
        await until(lambda: sink.taken == ["next"])
        os.close(write_fd)
        await asyncio.wait_for(ended.wait(), 5)
    finally:
        await adapter.stop()
        reader.close()
    assert "The chat has ended" not in output.getvalue(), output.getvalue()
    logged = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(logged) == 1 and logged[0].exc_info is not None  # the traceback, for the operator


async def test_a_store_that_cannot_record_still_ends_the_chat_saying_why() -> None:
    # Nothing typed could be taken until there is room: the chat ends rather than drop line after line.
    read_fd, write_fd = os.pipe()
    reader, output, ended = os.fdopen(read_fd), io.StringIO(), asyncio.Event()
    adapter = LocalAdapter(input=reader, output=output, user="me", on_exit=ended.set)
    await adapter.start(Failing({"hello"}, raises=full_disk))
    try:
        os.write(write_fd, b"hello\n")
        await asyncio.wait_for(ended.wait(), 5)
    finally:
        await adapter.stop()
        os.close(write_fd)
        reader.close()
    assert "(The chat has ended: OperationalError: database or disk is full)" in output.getvalue()
    assert NOT_HANDLED_MESSAGE not in output.getvalue()


class TTY(io.StringIO):
    def isatty(self):
        return True


class LineEditing:
    """What the adapter asks of GNU readline, for a chat typed at a terminal."""

    def get_line_buffer(self):
        return ""

    def get_current_history_length(self):
        return 0

    def remove_history_item(self, index):
        raise ValueError(index)


async def test_a_ctrl_c_stop_the_gateway_fails_on_is_answered_so_and_the_chat_goes_on(monkeypatch) -> None:
    # Ctrl-C while a turn runs hands the gateway /stop: a fault there ended the chat, the turn running on.
    typed = iter(["\x03", "next"])
    done = threading.Event()

    def read_line(prompt=""):
        line = next(typed, None)
        if line is None:
            done.wait(5)
            raise EOFError
        return line

    monkeypatch.setattr("builtins.input", read_line)
    output, ended = io.StringIO(), asyncio.Event()
    sink = Failing({"/stop"})
    adapter = LocalAdapter(input=TTY(), output=output, user="me", on_exit=ended.set, busy=lambda: not sink.taken)
    adapter._readline = LineEditing()  # the line editing `start` sets up on a real terminal
    await adapter.start(sink)
    try:
        await until(lambda: sink.taken == ["next"])
        done.set()
        await asyncio.wait_for(ended.wait(), 5)
    finally:
        done.set()
        await adapter.stop()
    assert NOT_HANDLED_MESSAGE in output.getvalue()
    assert "The chat has ended" not in output.getvalue(), output.getvalue()
