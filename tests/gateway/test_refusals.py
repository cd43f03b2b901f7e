"""`gateway.refusals`: a stranger is refused once per chat or thread in a while."""

from __future__ import annotations

from agent.testing import FakeClock
from gateway.refusals import QUIET_SECONDS, Refusals
from platforms.base import Inbound


def said(user: str = "U2", chat: str = "C1", thread: str | None = "1700000000.000100", **kw) -> Inbound:
    return Inbound(platform="slack", chat_id=chat, thread_id=thread, user_id=user, user_name=None, text="hi",
                   event_id="e", **kw)


def test_a_stranger_is_refused_again_once_the_quiet_time_is_over():
    clock = FakeClock()
    refusals = Refusals(clock)
    assert refusals.due(said())
    clock.now += QUIET_SECONDS - 1
    assert not refusals.due(said())
    assert refusals.due(said(thread=None)) and refusals.due(said(user="U3")) and refusals.due(said(chat="C2"))
    clock.now += 1
    assert refusals.due(said())
    assert not refusals.due(said())


def test_a_slash_command_is_always_answered():
    refusals = Refusals(FakeClock())
    assert refusals.due(said())
    assert refusals.due(said(is_command=True)) and refusals.due(said(is_command=True))
