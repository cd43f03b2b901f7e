"""The terminal chat after a terminal that hung up mid-turn: what the next `switchboard chat` shows."""

from __future__ import annotations

import io
import os

import pytest

from platforms.base import EditUnsupported, Outbound
from platforms.local import LocalAdapter
from tests.platforms.test_local_adapter import TTY, screen
from tests.scenarios.test_terminal_chat import Terminal, working_terminal

GONE_WITHIN = 30


async def test_an_edit_kept_from_an_earlier_chat_never_redraws_this_chats_message():
    """Both chats numbered their messages from 1: the earlier chat's card ("1"), whose final edit the outbox
    kept, was taken for this chat's first message, the answer printed before it, and drawn over it."""
    earlier = LocalAdapter(input=io.StringIO(""), output=TTY())
    card = await earlier.send(Outbound("terminal", None, "⏳ Working — 1 s", kind="notice"))
    out = TTY()
    adapter = LocalAdapter(input=io.StringIO(""), output=out)
    await adapter.send(Outbound("terminal", None, "the answer", kind="reply"))
    with pytest.raises(EditUnsupported):  # the gateway prints it anew, under the answer
        await adapter.edit("terminal", None, card.message_id, "✓ Done in 2 s")
    assert screen(out.getvalue()) == ["agent> the answer"]


def test_the_next_chat_shows_the_answer_of_a_turn_its_terminal_hung_up_on(tmp_path):
    """The turn ran on after its window closed; the next chat printed its answer, then drew the turn's card
    edit ("✓ Done") over it, five rows up: the answer flashed and was gone, the screen saying only "Done"."""
    chat = working_terminal(tmp_path, child_steps=4)
    try:
        chat.read_until(b"you> ")
        chat.hang_up()
        assert chat.proc.wait(GONE_WITHIN) == 0
    finally:
        chat.close()
    again = Terminal(tmp_path, model={"demo": {"child_steps": 4, "step_seconds": 0.5}},
                     delegation={"gateway_mode": "inline"}, agent={"gateway_notify_interval": 0.2})
    try:
        again.read_until(b"you> ", after=b"Done in")  # the card's end comes after the answer: the outbox's order
        os.write(again.controller, b"\x04")
        assert again.wait() == 0
    finally:
        again.close()
    # What stays on the screen (80 columns: a pseudo-terminal given no size), the answer whole, then the card's end.
    shown = "\n".join(screen(again.seen.decode().replace("\r\n", "\n")))
    assert "agent> [demo] Results:\n- apples: completed" in shown, shown
    assert shown.index("pears: completed") < shown.index("✓ Done in "), shown
