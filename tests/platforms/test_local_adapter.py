import asyncio
import io
import os
import re
import threading
import unicodedata
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from platforms.base import Closed, EditUnsupported, Outbound, OutboundFile
from platforms.local import LocalAdapter
from platforms.local_input import reader_of
from tests.polling import until


class TTY(io.StringIO):
    def isatty(self):
        return True


class Gone(io.StringIO):
    """The output of `switchboard chat | head -1` once head has exited."""

    def write(self, text):
        raise BrokenPipeError(32, "Broken pipe")


def screen(written: str, columns: int = 80) -> list[str]:
    """The rows a terminal ``columns`` wide shows after ``written``, for as much of VT100 as the adapter
    uses: CR, LF (as CR LF, a terminal's onlcr), cursor up, erase line, erase below; lines wrap, and a
    wide character takes two columns (wrapping whole)."""
    rows: list[list[str]] = [[]]
    row = col = 0
    i = 0
    while i < len(written):
        if escape := re.match(r"\x1b\[(\d*)([AJK])", written[i:]):
            count, command = int(escape.group(1) or 0), escape.group(2)
            if command == "A":
                row = max(0, row - max(count, 1))
            elif command == "K":  # only ever 2K here: the whole line
                rows[row] = []
            else:  # J: from the cursor to the end of the screen
                rows[row] = rows[row][:col]
                del rows[row + 1:]
            i += len(escape.group())
            continue
        c = written[i]
        i += 1
        if c in "\r\n":
            row, col = (row + 1, 0) if c == "\n" else (row, 0)
        else:
            width = 2 if unicodedata.east_asian_width(c) in "WF" else 1
            if col + width > columns:
                row, col = row + 1, 0
            while len(rows) <= row:
                rows.append([])
            cells = rows[row]
            cells.extend(" " * (col + width - len(cells)))
            cells[col:col + width] = [c] + [""] * (width - 1)
            col += width
        while len(rows) <= row:
            rows.append([])
    return ["".join(cells).rstrip() for cells in rows if cells or rows.index(cells) < row]


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


async def test_blank_lines_pasted_together_are_skipped_as_one_blank_line_is():
    # They were taken for a pasted block of commands (every line that is not blank was one: none),
    # whose first command was not there: the reader failed and the chat ended.
    read_fd, write_fd = os.pipe()
    reader, output, ended = os.fdopen(read_fd), io.StringIO(), asyncio.Event()
    got = []

    async def sink(inbound):
        got.append(inbound.text)

    adapter = LocalAdapter(input=reader, output=output, user="me", on_exit=ended.set)
    await adapter.start(sink)
    os.write(write_fd, b"\n \n\n")
    os.close(write_fd)
    await asyncio.wait_for(ended.wait(), 5)
    await adapter.stop()
    reader.close()
    assert got == [] and "The chat has ended" not in output.getvalue()


class Pipe:
    """The chat's input pipe, seen from its writer's end, and where its reader thread stands: the kernel
    shows a thread blocked in a system call in /proc/self/task/<id>/syscall, as the call's number and
    then its arguments (for a read, the descriptor first; for a select, the highest descriptor
    watched plus one). A blocked read or select of an empty pipe is all a reader does while it waits."""

    def __init__(self) -> None:
        try:
            Path("/proc/self/syscall").read_text()
        except OSError:
            pytest.skip("the reader thread's waits are seen through /proc/<pid>/task/<tid>/syscall (Linux)")
        self.read_fd, self.write_fd = os.pipe()

    def write(self, data: bytes) -> None:
        os.write(self.write_fd, data)

    async def reading(self) -> int:
        """The reader thread's id, once it is blocked reading the pipe: it has taken everything written
        so far, and waits for more with no time limit."""
        return await until(lambda: next((tid for tid, args in _blocked().items() if args[0] == self.read_fd), None),
                           5, every=0.001)

    async def taken(self, reader: int) -> None:
        """Return once thread ``reader`` has taken everything written so far and waits on the pipe again:
        reading it, or looking (select) whether more comes. Called after a write, which wakes it: a
        thread the write woke is running, not blocked, until it has read."""
        await until(lambda: _blocked().get(reader, [-1])[0] in (self.read_fd, self.read_fd + 1), 5, every=0.001)


def _blocked() -> dict[int, list[int]]:
    """The arguments of the system call each thread of this process is blocked in, by thread id."""
    calls = {}
    for task in Path("/proc/self/task").iterdir():
        try:
            call = (task / "syscall").read_text().split()
        except OSError:  # the thread has ended
            continue
        if call[0] not in ("running", "-1"):  # -1: blocked outside any call
            calls[int(task.name)] = [int(arg, 16) for arg in call[1:7]]
    return calls


class LateReader(io.TextIOWrapper):
    """A pipe read by a thread the machine schedules late: its first look comes only once everything is
    written (``written``), and each line after the first only once the chat has taken a message
    (``taken``), later than any wait for the next line of a paste. A reader of the descriptor asks for
    it (``fileno``) just before its first look."""

    def __init__(self, fd: int, written: threading.Event, taken: threading.Event) -> None:
        super().__init__(io.BufferedReader(io.FileIO(fd)), encoding="utf-8")
        self._written, self._taken, self._lines = written, taken, 0

    def fileno(self) -> int:
        self._written.wait(5)
        return super().fileno()

    def readline(self, *args):
        (self._taken if self._lines else self._written).wait(5)
        self._lines += 1
        return super().readline(*args)


async def pasted(write: Callable[[Pipe], Awaitable[None]], input_for: Callable[[int], object] = os.fdopen, *,
                 taken: threading.Event | None = None) -> list[str]:
    """The messages of a chat whose input pipe ``write`` writes to (then closes), read as ``input_for``
    opens it; ``taken`` is set as the chat takes each message."""
    pipe = Pipe()
    reader = input_for(pipe.read_fd)
    got, ended = [], asyncio.Event()

    async def sink(inbound):
        got.append(inbound.text)
        if taken is not None:
            taken.set()

    adapter = LocalAdapter(input=reader, output=io.StringIO(), user="me", on_exit=ended.set)
    try:
        await adapter.start(sink)
        await write(pipe)
        os.close(pipe.write_fd)
        await asyncio.wait_for(ended.wait(), 5)
    finally:
        await adapter.stop()
        reader.close()
    return got


async def test_lines_that_arrived_together_are_one_message_however_late_the_reader_runs():
    # On a loaded machine the reader thread ran more than 50 ms after the line before: a pasted
    # list became two or three messages, though all of it was in the pipe.
    written, taken = threading.Event(), threading.Event()

    async def write(pipe):
        pipe.write(b"Compare these:\n- apples\n")
        pipe.write(b"- pears\n")
        written.set()

    got = await pasted(write, lambda fd: LateReader(fd, written, taken), taken=taken)
    assert got == ["Compare these:\n- apples\n- pears"]


async def test_lines_written_one_at_a_time_in_one_burst_are_one_message():
    # bash's printf writes each line on its own: the reader, woken by the first, read it alone.
    async def write(pipe):
        reader = await pipe.reading()  # the reader is waiting, as it is for a pipe's writer started after the chat
        for line in (b"Compare these:\n", b"- apples\n", b"- pears\n"):
            pipe.write(line)
            await pipe.taken(reader)  # each line read alone: the next comes while the reader looks for more

    assert await pasted(write) == ["Compare these:\n- apples\n- pears"]


async def test_a_line_cut_where_its_reader_looked_is_waited_for():
    # A paste bigger than the pipe's buffer comes in pieces cut anywhere: the rest of a line is on its way.
    async def write(pipe):
        pipe.write(b"Compare these:\n- apples\n- pe")
        await pipe.reading()  # the reader took the cut line, and waits for the rest with no time limit
        pipe.write(b"ars\n")

    assert await pasted(write) == ["Compare these:\n- apples\n- pears"]


def test_what_arrived_together_is_read_at_once_and_what_comes_later_apart():
    read_fd, write_fd = os.pipe()
    with os.fdopen(read_fd, encoding="utf-8") as stream:
        read = reader_of(stream)
        os.write(write_fd, b"a\r\nb \\\n")
        os.write(write_fd, b"c\xff\n")  # a second write, before the read: already there
        assert read() == "a\nb \\\nc\ufffd\n"
        os.write(write_fd, b"d\n")
        assert read() == "d\n"
        os.write(write_fd, b"no newline")
        os.close(write_fd)
        assert read() == "no newline"
        assert read() == read() == ""


class Keyboard(io.FileIO):
    """A terminal's input nobody types at: a descriptor that never has anything to read."""

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


@pytest.mark.parametrize("ending", [["\x03", "\x03"], ["/quit"]])
async def test_with_line_editing_no_prompt_is_drawn_once_the_line_that_ends_the_chat_is_typed(monkeypatch, ending):
    """The reader started its next read (drawing "you> ") while the chat was still ending on the line
    before: the shell's line was left with a stray prompt, or half of one."""
    typed = iter(ending)
    prompts = []
    another_read = threading.Event()
    release = threading.Event()

    def read_line(prompt=""):
        prompts.append(prompt)
        line = next(typed, None)
        if line is None:
            another_read.set()
            release.wait(5)
            raise EOFError
        return line

    monkeypatch.setattr("builtins.input", read_line)
    ended = asyncio.Event()
    read_fd, write_fd = os.pipe()
    keyboard = Keyboard(read_fd)
    adapter = LocalAdapter(input=keyboard, output=io.StringIO(), user="me", on_exit=ended.set)
    adapter._readline = LineEditing()
    try:
        await adapter.start(lambda inbound: asyncio.sleep(0))
        await asyncio.wait_for(ended.wait(), 5)
        # Asked for, the read would start at once; a quarter second is ample on a loaded machine.
        assert not await asyncio.to_thread(another_read.wait, 0.25), prompts
        assert prompts == ["you> "] * len(ending)
    finally:
        release.set()
        await adapter.stop()
        keyboard.close()
        os.close(write_fd)


class HookedLineEditing(LineEditing):
    """GNU readline's pre-input hook too: called once the prompt shows, before keys are read."""

    def __init__(self):
        self.hook = None

    def set_pre_input_hook(self, hook=None):
        self.hook = hook


async def test_a_reply_printed_while_readline_draws_its_prompt_goes_above_it(monkeypatch):
    """The reader had decided that "you> " shows but readline had not drawn it yet: a reply printed
    then went out first, the prompt glued after it ("you> you> " or "you> agent> ..." on a terminal)."""
    readline = HookedLineEditing()
    entered, go, drawn, release = (threading.Event() for _ in range(4))
    output = io.StringIO()

    def read_line(prompt=""):
        entered.set()
        go.wait(5)  # readline is slow to draw (a loaded machine)
        output.write(prompt)
        if readline.hook is not None:
            readline.hook()
        drawn.set()
        release.wait(5)
        raise EOFError

    monkeypatch.setattr("builtins.input", read_line)
    read_fd, write_fd = os.pipe()
    keyboard = Keyboard(read_fd)
    adapter = LocalAdapter(input=keyboard, output=output, user="me")
    adapter._readline = readline
    try:
        await adapter.start(lambda inbound: asyncio.sleep(0))
        assert await asyncio.to_thread(entered.wait, 5)
        # Correct whenever the prompt is drawn; without the wait, only if it is drawn before the reply.
        threading.Timer(0.02, go.set).start()
        await adapter.send(Outbound("terminal", None, "hi", kind="reply"))
        assert await asyncio.to_thread(drawn.wait, 5)
        assert output.getvalue() == "you> \nagent> hi\nyou> "
    finally:
        go.set()
        release.set()
        await adapter.stop()
        keyboard.close()
        os.close(write_fd)


async def test_a_typed_line_does_not_wait_for_a_place_in_the_default_thread_pool(monkeypatch):
    """The look for lines pasted with the one typed ran in asyncio's shared default thread pool: with
    that full of the gateway's other blocking work, a typed line waited until a place came free."""
    loop = asyncio.get_running_loop()
    pool = ThreadPoolExecutor(max_workers=1)
    loop.set_default_executor(pool)
    full = threading.Event()
    work = loop.run_in_executor(None, full.wait, 30)  # the pool's one place, taken until the test ends
    typed = iter(["hello"])
    release = threading.Event()

    def read_line(prompt=""):
        if (line := next(typed, None)) is not None:
            return line
        release.wait(30)
        raise EOFError

    monkeypatch.setattr("builtins.input", read_line)
    read_fd, write_fd = os.pipe()
    keyboard = Keyboard(read_fd)
    arrived: asyncio.Queue[str] = asyncio.Queue()
    adapter = LocalAdapter(input=keyboard, output=io.StringIO(), user="me")
    adapter._readline = LineEditing()
    try:
        await adapter.start(lambda inbound: arrived.put_nowait(inbound.text) or asyncio.sleep(0))
        assert await asyncio.wait_for(arrived.get(), 10) == "hello"
    finally:
        release.set()
        full.set()
        await work
        await adapter.stop()
        keyboard.close()
        os.close(write_fd)


class Unreadable(io.StringIO):
    """A terminal whose reads fail (hung up, as EIO) instead of ending."""

    def readline(self, *args):
        raise OSError(5, "Input/output error")


async def test_a_reader_that_fails_ends_the_chat_saying_why():
    """The reader thread died with the error and the chat waited for its next line for good."""
    ended = asyncio.Event()
    output = io.StringIO()
    adapter = LocalAdapter(input=Unreadable(), output=output, user="me", on_exit=ended.set)
    await adapter.start(lambda inbound: asyncio.sleep(0))
    try:
        await asyncio.wait_for(ended.wait(), 5)
    finally:
        await adapter.stop()
    assert "(The chat has ended: OSError: [Errno 5] Input/output error)" in output.getvalue()


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
    assert screen(out.getvalue()) == ["⏳ Working — 10 s"]
    await adapter.send(Outbound("terminal", None, "other"))
    with pytest.raises(EditUnsupported):
        await adapter.edit("terminal", None, sent.message_id, "⏳ Working — 15 s")


async def test_progress_printed_to_a_pipe_or_a_file_stays_as_first_printed():
    """Each update went out as a line of its own: one a second with `make run`'s settings, a whole card each
    time with ``display.progress: card``, for whatever read the chat's output (a log, another program)."""
    out = io.StringIO()
    adapter = LocalAdapter(input=io.StringIO(""), output=out)
    sent = await adapter.send(Outbound("terminal", None, "⏳ Working — 1 s", kind="notice"))
    for seconds in range(2, 6):
        await adapter.edit("terminal", None, sent.message_id, f"⏳ Working — {seconds} s")
    await adapter.send(Outbound("terminal", None, "done", kind="reply"))
    await adapter.edit("terminal", None, sent.message_id, "✓ Done in 5 s")  # news of nothing, after the answer
    assert out.getvalue() == "⏳ Working — 1 s\nagent> done\n"


async def test_a_card_of_several_lines_is_redrawn_in_place_while_the_screen_holds_it():
    """An update of a card (one line per subagent) went out whole, under the last, at every heartbeat."""
    out = TTY()  # 80 columns and 24 rows, as for a terminal whose size cannot be read
    adapter = LocalAdapter(input=io.StringIO(""), output=out)
    await adapter.send(Outbound("terminal", None, "hello"))
    card = "⏳ Waiting for subagents: 0 of 2 done — {} s\n  ▸ apples — running\n  ▸ pears — running"
    sent = await adapter.send(Outbound("terminal", None, card.format(2), kind="notice"))
    for seconds in (4, 6):
        await adapter.edit("terminal", None, sent.message_id, card.format(seconds))
    assert screen(out.getvalue()) == ["agent> hello", *card.format(6).split("\n")]
    tall = "\n".join(f"  ▸ task {i}" for i in range(30))  # its first rows have scrolled out of reach
    sent = await adapter.send(Outbound("terminal", None, tall, kind="notice"))
    with pytest.raises(EditUnsupported):
        await adapter.edit("terminal", None, sent.message_id, tall + " again")


async def test_a_notice_wider_than_the_terminal_is_redrawn_over_all_its_rows():
    """A notice wraps in a narrow window (or with wide characters): its redraw leaves no stale rows."""
    out = TTY()  # 80 columns, as for a terminal whose size cannot be read
    adapter = LocalAdapter(input=io.StringIO(""), output=out)
    await adapter.send(Outbound("terminal", None, "hello"))
    notice = "⏳ Working — {} s — running " + "検索" * 30  # 150 columns: two rows
    sent = await adapter.send(Outbound("terminal", None, notice.format(1), kind="notice"))
    for seconds in (2, 3):
        await adapter.edit("terminal", None, sent.message_id, notice.format(seconds))
    rows = screen(out.getvalue())
    assert rows[0] == "agent> hello" and "".join(rows[1:]) == notice.format(3), rows


async def test_control_characters_in_a_reply_are_shown_never_obeyed():
    # A model quoting a file or a web page may pass on escape sequences: clear the screen, set the
    # window title, write the clipboard (OSC 52), hide what follows, return to the line's start.
    out = TTY()
    adapter = LocalAdapter(input=io.StringIO(""), output=out)
    evil = "a\x1b[2J\x1b]52;c;ZXZpbA==\x07b\rc\x9b31md\x7f\r\nnext\tline"
    sent = await adapter.send(Outbound("terminal", None, evil, kind="reply"))
    assert out.getvalue() == "agent> a␛[2J␛]52;c;ZXZpbA==␇b␍c\ufffd31md␡\nnext\tline\n"
    notice = await adapter.send(Outbound("terminal", None, "⏳ working", kind="notice"))
    out.seek(0)
    out.truncate()
    with pytest.raises(EditUnsupported):
        await adapter.edit("terminal", None, sent.message_id, "x")  # not the last line
    await adapter.edit("terminal", None, notice.message_id, "⏳ still\x1b[8m hidden")
    assert out.getvalue() == "\r\x1b[1A\x1b[J⏳ still␛[8m hidden\n"


async def test_a_sent_file_is_kept_in_files_dir_and_its_path_printed(tmp_path):
    out = io.StringIO()
    adapter = LocalAdapter(input=io.StringIO(), output=out, user="me", files_dir=tmp_path / "sent")
    (tmp_path / "copy").write_text("a,b\n")
    file = OutboundFile(str(tmp_path / "copy"), "report.csv", 4)
    await adapter.send_file(Outbound("terminal", None, "**Q3**", kind="interim"), file)
    await adapter.send_file(Outbound("terminal", None, ""), file)  # the same name again: kept beside it
    first, second = tmp_path / "sent" / "report.csv", tmp_path / "sent" / "report-2.csv"
    assert first.read_text() == second.read_text() == "a,b\n"
    assert out.getvalue() == f"agent (working)> 📎 report.csv: {first}\n**Q3**\nagent> 📎 report.csv: {second}\n"


async def test_a_file_that_could_not_be_shown_leaves_no_copy_behind(tmp_path):
    # Nothing read the output: each try (the outbox's retries, then the next chat) copied the file
    # again, so sent-files filled with report.csv, report-2.csv... and the path printed at last was not the first.
    (tmp_path / "copy").write_text("a,b\n")
    file = OutboundFile(str(tmp_path / "copy"), "report.csv", 4)
    gone = LocalAdapter(input=io.StringIO(), output=Gone(), user="me", files_dir=tmp_path / "sent")
    for _ in range(2):
        with pytest.raises(Closed):
            await gone.send_file(Outbound("terminal", None, "Q3"), file)
    assert not list((tmp_path / "sent").glob("*"))
    out = io.StringIO()
    next_chat = LocalAdapter(input=io.StringIO(), output=out, user="me", files_dir=tmp_path / "sent")
    await next_chat.send_file(Outbound("terminal", None, "Q3"), file)
    assert out.getvalue() == f"agent> 📎 report.csv: {tmp_path / 'sent' / 'report.csv'}\nQ3\n"


@pytest.mark.parametrize("busy", [False, True], ids=["idle", "busy"])
async def test_a_ctrl_c_character_in_piped_input_is_text(busy):
    """A pipe has no keys: 0x03 in it is a byte of the text, as for most tools. Read as Ctrl-C pressed, it
    dropped every line that arrived with it (or, while a turn ran, sent /stop instead of them)."""
    read_fd, write_fd = os.pipe()
    reader = os.fdopen(read_fd)
    got, ended = [], asyncio.Event()

    async def sink(inbound):
        got.append(inbound.text)

    adapter = LocalAdapter(input=reader, output=io.StringIO(), user="me", on_exit=ended.set, busy=lambda: busy)
    try:
        await adapter.start(sink)
        os.write(write_fd, b"Compare these:\n- ap\x03ples\n- pears\n")
        os.close(write_fd)
        await asyncio.wait_for(ended.wait(), 5)
    finally:
        await adapter.stop()
        reader.close()
    assert got == ["Compare these:\n- ap\x03ples\n- pears"]


@pytest.mark.parametrize("busy", [False, True], ids=["idle", "during a turn"])
async def test_a_terminal_that_hangs_up_under_line_editing_ends_the_chat_quietly(monkeypatch, caplog, busy):
    """Readline reports a hung-up terminal as EIO at times, rather than as the end of input: the chat
    took it for a fault of its own, logged a traceback and said it had ended with an error. During a
    turn the first read ends (Ctrl-D, as the hang-up often reads) and the next one, for Ctrl-C, fails."""
    reads = iter([EOFError()] if busy else [])

    def hung_up(prompt=""):
        raise next(reads, OSError(5, "Input/output error"))

    monkeypatch.setattr("builtins.input", hung_up)
    ended = asyncio.Event()
    output = io.StringIO()
    turn = asyncio.Event()
    adapter = LocalAdapter(input=TTY(), output=output, user="me", on_exit=ended.set,
                           busy=lambda: busy and not turn.is_set())
    adapter._readline = type(os)("readline")  # the line editing `start` sets up on a real terminal
    await adapter.start(lambda inbound: asyncio.sleep(0))
    try:
        if busy:
            await until(lambda: "leaving" in output.getvalue().lower())
            turn.set()
        await asyncio.wait_for(ended.wait(), 5)
    finally:
        await adapter.stop()
    assert "The chat has ended" not in output.getvalue(), output.getvalue()
    assert not [r for r in caplog.records if r.levelname == "ERROR"], caplog.text
