"""`platforms.local_messages.next_message`: a Ctrl-C read with the lines entered before it, in one paste window."""

from __future__ import annotations

from collections import deque

from platforms.local_messages import CTRL_C, next_message, pressed_ctrl_c


class _Typed:
    """Lines readline hands over, all typed ahead (no descriptor: `typed_ahead` takes more as waiting)."""

    def __init__(self, *lines: str) -> None:
        self.lines = deque(lines)

    async def next(self, timeout: float | None) -> str:
        if self.lines:
            return self.lines.popleft()
        raise TimeoutError

    def keep(self, line: str) -> None:
        self.lines.appendleft(line)


async def _messages(typed: _Typed) -> list[str]:
    read = []
    while typed.lines:
        read.append(await next_message(typed.next, typed.keep, object(), editing=True))  # type: ignore[arg-type]
    return read


async def test_lines_entered_then_ctrl_c_are_a_message_and_the_key_another():
    typed = _Typed("first\n", "second\n", f"{CTRL_C}\n")
    assert await _messages(typed) == ["first\nsecond", CTRL_C]


async def test_ctrl_c_ending_a_continued_line_drops_that_line_only():
    """``a``, entered, then ``b\\`` continued, then Ctrl-C: the key drops the line it ends, ``b`` (as a shell's
    does), never ``a``, entered before it. Joined, the message held the key, and ``a`` was dropped with ``b``,
    silently: what the commit fixed for lines entered right before a Ctrl-C, left for these."""
    typed = _Typed("a\n", "b\\\n", f"{CTRL_C}\n")
    first, key = await _messages(typed)
    assert first == "a"
    assert pressed_ctrl_c(key, editing=True) and key.replace(CTRL_C, "").strip() == "b"


async def test_a_line_after_ctrl_c_ending_a_continued_line_is_a_message_of_its_own():
    """The key is never joined with the lines after it: after one ending a continued line, a line typed ahead
    (pasted) was joined with it, and dropped with it."""
    typed = _Typed("b\\\n", "c\\\n", f"{CTRL_C}\n", "next\n")
    key, after = await _messages(typed)
    assert pressed_ctrl_c(key, editing=True) and key.replace(CTRL_C, "") == "b\nc"
    assert after == "next"
