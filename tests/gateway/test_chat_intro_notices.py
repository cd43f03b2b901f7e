"""`gateway.chat_intro`: the terminal's first screen promises a progress line only where one shows."""

from __future__ import annotations

from gateway.chat_intro import chat_intro
from gateway.testing import make_config


def _inline(tmp_path, **display):
    return make_config(tmp_path, delegation={"gateway_mode": "inline"}, agent={"gateway_notify_interval": 5},
                       display=display)


def test_an_inline_chat_promises_the_progress_line_its_notices_show(tmp_path):
    assert "with a ⏳ progress line every 5 s" in chat_intro(_inline(tmp_path))


def test_notices_turned_off_for_the_terminal_are_not_promised(tmp_path):
    # The screen said "with a ⏳ progress line every 5 s", and none came: the chat looked stuck while it worked.
    for display in ({"long_running_notifications": False},
                    {"platforms": {"local": {"long_running_notifications": False}}}):
        intro = chat_intro(_inline(tmp_path, **display))
        assert "delegated work finishes inside the turn, as one answer." in intro and "⏳" not in intro, display


def test_a_progress_card_shows_whatever_the_notices_say(tmp_path):
    intro = chat_intro(_inline(tmp_path, progress="card", long_running_notifications=False))
    assert "with a ⏳ progress line every 5 s" in intro
