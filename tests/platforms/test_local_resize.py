"""The terminal chat's window resized between a message and its update (`LocalAdapter.edit`)."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import struct
import termios

import pytest

from platforms.base import EditUnsupported, Outbound
from platforms.local import LocalAdapter

NOTICE = "⏳ Working — {} s — running " + "検索" * 30  # 147 columns: two rows at 80, one at 160 or more


class Window(io.StringIO):
    """A terminal's output, of the size of a pseudo-terminal that the test resizes as a person drags a window."""

    def __init__(self) -> None:
        super().__init__()
        self._master, self._slave = pty.openpty()
        self.resize(80, 24)

    def isatty(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._slave

    def resize(self, columns: int, rows: int) -> None:
        fcntl.ioctl(self._slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))

    def close(self) -> None:
        os.close(self._master)
        os.close(self._slave)
        super().close()


@pytest.fixture
def window():
    out = Window()
    yield out
    out.close()


@pytest.mark.parametrize("columns", [200, 40], ids=["widened", "narrowed"])
async def test_a_notice_is_printed_anew_once_the_window_was_resized(window, columns):
    """The rows a notice took were counted at the width it was printed at: a terminal that rewraps its lines
    when resized shows it on fewer rows (widened) or more (narrowed), and the redraw went up over the old
    count: over the end of the message above it, erased, or short of the notice's first rows, left stale."""
    adapter = LocalAdapter(input=io.StringIO(), output=window, user="me")
    await adapter.send(Outbound("terminal", None, "the answer above", kind="reply"))
    sent = await adapter.send(Outbound("terminal", None, NOTICE.format(1), kind="notice"))
    await adapter.edit("terminal", None, sent.message_id, NOTICE.format(2))  # the same width: redrawn in place
    window.resize(columns, 24)
    with pytest.raises(EditUnsupported):
        await adapter.edit("terminal", None, sent.message_id, NOTICE.format(3))
    assert window.getvalue().count("the answer above") == 1


async def test_a_notice_printed_after_a_resize_is_redrawn_in_place(window):
    adapter = LocalAdapter(input=io.StringIO(), output=window, user="me")
    window.resize(160, 24)
    sent = await adapter.send(Outbound("terminal", None, NOTICE.format(1), kind="notice"))
    await adapter.edit("terminal", None, sent.message_id, NOTICE.format(2))
    assert window.getvalue().endswith(f"\r\x1b[1A\x1b[J{NOTICE.format(2)}\n")
