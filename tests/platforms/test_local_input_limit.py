"""The terminal chat's messages are bounded as the web chat's are (`platforms.web.MAX_TEXT`): a longer one is
refused with a notice and none of it is sent, and what is read of it stays bounded however much arrives."""

import asyncio
import io
import os
import queue
import threading

from platforms.local import LocalAdapter
from platforms.local_input import CHUNK, reader_of
from platforms.web import MAX_TEXT
from tests.platforms.test_local_adapter import Keyboard, LineEditing, Pipe
from tests.polling import until

NOTICE = f"(Not sent: a message must be at most {MAX_TEXT} characters"


class Chat:
    """A terminal chat reading ``input``: the texts it takes, and what it prints."""

    def __init__(self, input) -> None:
        self.got: list[str] = []
        self.arrived: asyncio.Queue[str] = asyncio.Queue()
        self.output = io.StringIO()
        self.ended = asyncio.Event()
        self.adapter = LocalAdapter(input=input, output=self.output, user="me", on_exit=self.ended.set)

    async def start(self) -> None:
        async def sink(inbound):
            self.got.append(inbound.text)
            self.arrived.put_nowait(inbound.text)

        await self.adapter.start(sink)

    async def refused(self, times: int = 1) -> None:
        await until(lambda: self.output.getvalue().count(NOTICE) >= times, 10)


class Yes(threading.Thread):
    """``yes``: lines written to the pipe without end, until stopped (or ``total`` bytes are written)."""

    def __init__(self, fd: int, total: int | None = None) -> None:
        super().__init__(daemon=True)
        self.fd, self.total, self.stop, self.written = fd, total, threading.Event(), 0

    def run(self) -> None:
        block = b"y\n" * 4096
        while not self.stop.is_set() and (self.total is None or self.written < self.total):
            try:
                self.written += os.write(self.fd, block)
            except OSError:  # the chat's end of the pipe is closed: a test that failed
                return


async def test_a_piped_message_over_the_limit_is_refused_and_the_next_one_sent():
    # It was passed on whole: the model server refused it for its context, after the gateway had recorded it.
    pipe = Pipe()
    reader = os.fdopen(pipe.read_fd, encoding="utf-8")
    chat = Chat(reader)
    try:
        await chat.start()
        pipe.write(("x" * 20_000 + "\n" + "x" * (MAX_TEXT - 20_000) + "\n").encode())  # one character over
        await chat.refused()
        await pipe.reading()
        pipe.write(b"\xc3\xa9" * MAX_TEXT + b"\n")  # exactly the limit, in characters: sent whole
        assert await asyncio.wait_for(chat.arrived.get(), 10) == "é" * MAX_TEXT
        await pipe.reading()
        pipe.write(b"hello\n")
        os.close(pipe.write_fd)
        await asyncio.wait_for(chat.ended.wait(), 10)
    finally:
        await chat.adapter.stop()
        reader.close()
    assert chat.got == ["é" * MAX_TEXT, "hello"]
    assert chat.output.getvalue().count(NOTICE) == 1
    assert "none of it was sent" in chat.output.getvalue()


async def test_endless_piped_input_is_refused_at_once_and_none_of_it_becomes_a_message():
    # `yes | switchboard chat`: the reader kept everything readable as one message that never ended, growing in
    # memory until the process was killed; nothing was ever said.
    pipe = Pipe()
    reader = os.fdopen(pipe.read_fd, encoding="utf-8")
    chat = Chat(reader)
    writer = Yes(pipe.write_fd)
    try:
        await chat.start()
        writer.start()
        await chat.refused()  # while it is still arriving
        assert writer.is_alive()
        writer.stop.set()
        await asyncio.to_thread(writer.join, 10)
        await pipe.reading()  # the rest of it read and dropped: what comes now is a message of its own
        pipe.write(b"hello\n")
        os.close(pipe.write_fd)
        await asyncio.wait_for(chat.ended.wait(), 10)
    finally:
        writer.stop.set()
        await chat.adapter.stop()
        reader.close()
    assert chat.got == ["hello"]


def test_a_read_of_what_arrives_together_holds_a_bounded_part_of_it():
    read_fd, write_fd = os.pipe()
    writer = Yes(write_fd, total=8_000_000)
    with os.fdopen(read_fd, encoding="utf-8") as stream:
        read = reader_of(stream)
        writer.start()
        first = read()
        # Returned long before the end of what arrives: the writer cannot be done, the pipe holding 64 KiB.
        assert writer.is_alive() and len(first) <= 2 * MAX_TEXT + 2 + CHUNK
        rest = []
        dropping = threading.Thread(target=lambda: rest.append(read()))
        dropping.start()
        writer.join(30)
        os.close(write_fd)
        dropping.join(30)
        assert writer.written >= 8_000_000
        assert rest == [""]  # the rest was dropped, and the input has ended


async def test_a_paste_over_the_limit_at_a_line_editing_prompt_is_refused_and_its_lines_dropped(monkeypatch):
    # With readline a paste is the lines typed ahead, read one at a time: they were all joined and sent.
    pasted = ["a" * 999] * (MAX_TEXT // 1000 + 1)
    lines = iter(pasted)
    typed: queue.Queue[str | None] = queue.Queue()  # typed after the paste; None for Ctrl-D

    def read_line(prompt=""):
        if (line := next(lines, None) or typed.get(timeout=10)) is not None:
            return line
        raise EOFError

    monkeypatch.setattr("builtins.input", read_line)
    read_fd, write_fd = os.pipe()
    keyboard = Keyboard(read_fd)
    chat = Chat(keyboard)
    chat.adapter._readline = LineEditing()
    os.write(write_fd, b"k")  # the paste's keys still reach the terminal: every line read was pasted with the next
    try:
        await chat.start()
        await chat.refused()
        os.read(read_fd, 1)  # the paste is over: a line typed now is a message of its own
        typed.put("hello")
        assert await asyncio.wait_for(chat.arrived.get(), 10) == "hello"
        typed.put(None)  # Ctrl-D: the reader ends while this test's readline still stands in for the real one
        await asyncio.wait_for(chat.ended.wait(), 10)
    finally:
        typed.put(None)
        await chat.adapter.stop()
        keyboard.close()
        os.close(write_fd)
    assert chat.got == ["hello"]
