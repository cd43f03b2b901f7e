"""`gateway.refusals`: a stranger is refused once per chat in a while."""

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
    assert refusals.due(said(user="U3")) and refusals.due(said(chat="C2"))
    clock.now += 1
    assert refusals.due(said())
    assert not refusals.due(said())


def test_a_stranger_mentioning_the_bot_again_and_again_in_a_channel_is_refused_once():
    # Each Slack mention in a channel opens a thread of its own: refused per thread, a stranger was
    # answered under every one of their mentions.
    refusals = Refusals(FakeClock())
    assert refusals.due(said(thread="1700000000.000100"))
    assert not any(refusals.due(said(thread=f"17000000{n}.000200")) for n in range(5))
    assert not refusals.due(said(thread=None))


def test_a_refusal_recalled_from_an_earlier_process_covers_every_thread_of_its_chat():
    clock = FakeClock()
    refusals = Refusals(clock)
    refusals.told("slack", "C1", "1700000000.000100", "U2", ago=QUIET_SECONDS - 5)
    assert not refusals.due(said(thread="1700000099.000100"))
    clock.now += 5
    assert refusals.due(said(thread="1700000099.000100"))


def test_a_slash_command_answered_through_its_platform_is_always_answered():
    refusals = Refusals(FakeClock())
    assert refusals.due(said())
    assert refusals.due(said(is_command=True, reply_token="tok")) and refusals.due(said(is_command=True,
                                                                                        reply_token="tok"))


def test_a_telegram_command_is_refused_as_seldom_as_a_message():
    # A Telegram command is a message the whole group sees, as is its refusal: always answered, a
    # stranger sending "/help@bot" again and again had the bot reply under each one.
    refusals = Refusals(FakeClock())
    command = Inbound(platform="telegram", chat_id="-100", thread_id=None, user_id="999", user_name=None,
                      text="/help", event_id="1", is_command=True, is_private=False)
    assert refusals.due(command)
    assert not refusals.due(command)
