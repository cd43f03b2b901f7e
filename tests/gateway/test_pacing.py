"""The outbox's pacer: each limit holds for its interval, and what it keeps stays bounded."""

from __future__ import annotations

import pytest

from agent.testing import FakeClock
from gateway.pacing import _PRUNE_AT, NO_PACING, Pacer, account_op, pacing_of
from platforms.pacing import Pacing
from platforms.telegram import GROUP_PACING, PRIVATE_PACING
from platforms.webhook import WebhookAdapter

CHAT = ("telegram", "-100", None)
GROUP = Pacing(call_interval=3.0, edit_interval=1.0)


def test_calls_and_edits_wait_for_their_intervals():
    clock = FakeClock()
    pacer = Pacer(clock)
    assert pacer.delay(CHAT) == 0.0
    pacer.called(CHAT, GROUP, edit_of="m1")
    assert pacer.delay(CHAT) == 3.0
    clock.advance(2.0)
    assert pacer.delay(CHAT, edit_of="m1") == 1.0
    assert pacer.delay(("telegram", "other", None)) == 0.0
    clock.advance(1.0)
    assert pacer.delay(CHAT, edit_of="m1") == 0.0


def test_edits_of_one_message_are_spaced_but_other_messages_are_not():
    clock = FakeClock()
    pacer = Pacer(clock)
    pacer.called(CHAT, Pacing(edit_interval=1.0), edit_of="m1")
    assert pacer.delay(CHAT, edit_of="m1") == 1.0
    assert pacer.delay(CHAT, edit_of="m2") == 0.0
    assert pacer.delay(CHAT) == 0.0


def test_edits_and_file_sends_are_spaced_across_all_of_a_platforms_chats_when_it_counts_them_so():
    clock = FakeClock()
    pacer = Pacer(clock)
    slack = Pacing(call_interval=1.0, edit_interval=1.0, account_edit_interval=1.2, account_file_interval=0.6)
    one, other = ("slack", "C1", None), ("slack", "C2", "1.5")
    pacer.called(one, slack, edit_of="m1", op=account_op("edit", "m1"))
    assert pacer.delay(other, edit_of="m2", op="edit") == pytest.approx(1.2)  # another channel's card waits its turn
    assert pacer.delay(other) == 0.0 and pacer.delay(other, op="file") == 0.0  # its posts and files do not
    assert pacer.delay(("telegram", "C2", None), edit_of="m2", op="edit") == 0.0  # nor another platform's edits
    pacer.called(other, slack, edit_of="m3")  # a new message (its first edit waits): no edit went out
    assert pacer.delay(("slack", "C3", None), edit_of="m4", op="edit") == pytest.approx(1.2)
    pacer.called(other, slack, op=account_op("file", None))
    assert pacer.delay(("slack", "C3", None), op="file") == pytest.approx(0.6)
    assert account_op("send", None) is None


def test_deletions_are_spaced_across_a_platforms_chats_the_adapters_own_included():
    # Slack's chat.delete is Tier 3 per workspace, like chat.update: the outbox's deletions and the
    # adapter's (its placeholders) share one count, the chat's own pace aside for the adapter's.
    clock = FakeClock()
    pacer = Pacer(clock)
    slack = Pacing(call_interval=1.0, account_edit_interval=1.2, account_delete_interval=1.2)
    pacer.called(("slack", "C1", None), slack, op=account_op("delete", None))
    assert pacer.delay(("slack", "C2", None), op="delete") == pytest.approx(1.2)
    assert pacer.account_delay("slack", "delete") == pytest.approx(1.2)
    assert pacer.delay(("slack", "C2", None), edit_of="m1", op="edit") == 0.0  # edits are counted apart
    clock.advance(1.2)
    pacer.account_called("slack", slack, "delete")  # a placeholder's, outside the outbox
    assert pacer.delay(("slack", "C3", None), op="delete") == pytest.approx(1.2)
    assert pacer.delay(("slack", "C3", None)) == 0.0 and pacer.delay(("slack", "C1", None)) == 0.0


def test_a_429_holds_the_chat_or_only_its_progress_messages():
    clock = FakeClock()
    pacer = Pacer(clock)
    pacer.block(CHAT, 5.0, progress=True)
    assert pacer.delay(CHAT) == 0.0
    assert pacer.delay(CHAT, progress=True) == 5.0
    pacer.block(CHAT, 2.0)
    assert pacer.delay(CHAT) == 2.0
    clock.advance(5.0)
    assert pacer.delay(CHAT, progress=True) == 0.0


def test_a_429_on_an_op_counted_across_chats_holds_that_op_in_every_chat():
    # Slack counts chat.update per workspace: refused in one channel, it is refused in every other
    # one too, and a channel asking to learn so draws a 429 of its own.
    clock = FakeClock()
    pacer = Pacer(clock)
    slack = Pacing(call_interval=1.0, edit_interval=1.0, account_edit_interval=1.2, account_file_interval=0.6,
                   account_delete_interval=1.2)
    one, other = ("slack", "C1", None), ("slack", "C2", "1.5")
    pacer.called(one, slack, edit_of="m1", op="edit")  # the refused call, counted as it went and was answered
    pacer.block(one, 20.0, progress=True, pacing=slack, op=account_op("edit", "m1"))
    assert pacer.delay(other, edit_of="m2", op="edit") == 20.0  # another channel's edits wait it out
    assert pacer.delay(other) == 0.0 and pacer.delay(other, op="file") == 0.0  # its posts and files do not
    assert pacer.delay(other, op="delete") == 0.0 and pacer.account_delay("slack", "delete") == 0.0
    assert pacer.delay(one, progress=True) == 20.0 and pacer.delay(one) == 1.0  # the chat's own hold as before
    clock.advance(1.0)
    pacer.called(other, slack, edit_of="m3", op="edit")  # a call in flight alongside, answered since
    assert pacer.delay(other, edit_of="m2", op="edit") == 19.0  # does not lift the hold
    pacer.block(one, 5.0, pacing=slack, op="delete")
    assert pacer.account_delay("slack", "delete") == 5.0  # a deletion's hold holds the placeholders' too
    pacer.account_called("slack", slack, "delete", refused_for=8.0)  # and a placeholder's 429, the outbox's
    assert pacer.delay(other, op="delete") == 8.0
    clock.advance(19.0)
    assert pacer.delay(other, edit_of="m2", op="edit") == 0.0


def test_a_429_on_a_per_chat_op_or_on_a_platform_counting_nothing_across_chats_holds_only_the_chat():
    clock = FakeClock()
    pacer = Pacer(clock)
    slack = Pacing(call_interval=1.0, account_edit_interval=1.2)
    pacer.block(("slack", "C1", None), 10.0, pacing=slack, op=account_op("send", None))  # chat.postMessage
    assert pacer.delay(("slack", "C2", None), edit_of="m1", op="edit") == 0.0
    pacer.block(CHAT, 10.0, pacing=GROUP_PACING, op=account_op("edit", "m1"))  # Telegram counts edits per chat
    assert pacer.delay(("telegram", "-200", None), edit_of="m2", op="edit") == 0.0
    assert pacer.delay(CHAT, edit_of="m1", op="edit") == 10.0


def test_a_platform_without_pacing_leaves_nothing_behind():
    pacer = Pacer(FakeClock())
    for i in range(5_000):
        pacer.called(("webhook", f"chat-{i}", None), NO_PACING, edit_of=f"m{i}")
    assert pacer.kept == 0


def test_a_busy_gateway_drops_lifted_limits_without_rescanning_holding_ones_on_every_send():
    """Every sent message starts an edit interval. While thousands still hold (a burst within
    one interval) a send does not walk them all again; once they have lifted they are dropped."""
    clock = FakeClock()
    pacer = Pacer(clock)
    slack = Pacing(edit_interval=1.0)
    burst = 10 * _PRUNE_AT
    for i in range(burst):
        pacer.called(("slack", f"C{i % 50}", None), slack, edit_of=f"m{i}")
    assert pacer.kept == burst  # nothing has lifted, nothing is lost
    assert pacer.delay(("slack", "C0", None), edit_of="m0") == 1.0
    assert pacer._prune_at >= burst  # the next drop waits until the count has grown again
    clock.advance(1.0)
    late = pacer._prune_at
    for i in range(late):
        pacer.called(("slack", "C0", None), slack, edit_of=f"late{i}")
    assert pacer.kept == late  # the burst's lifted limits are gone, the late ones all held
    assert pacer.delay(("slack", "C0", None), edit_of="m0") == 0.0


def test_an_adapter_is_paced_as_its_class_says():
    assert pacing_of(WebhookAdapter({}), "chat") is NO_PACING
    assert pacing_of(WebhookAdapter({}), "chat") is NO_PACING  # asked again: the class's answer is kept

    class Paced:
        def pacing(self, chat_id: str) -> Pacing:
            return GROUP_PACING if chat_id.startswith("-") else PRIVATE_PACING

    assert pacing_of(Paced(), "-100") is GROUP_PACING
    assert pacing_of(Paced(), "42") is PRIVATE_PACING


def test_the_topics_of_a_chat_share_its_pacing_and_its_429():
    """A forum group's topics (threads) are one chat to the platform: its limits and 429s hold for all."""
    clock = FakeClock()
    pacer = Pacer(clock)
    topic, other_topic = ("telegram", "-100", "11"), ("telegram", "-100", "12")
    pacer.called(topic, GROUP, edit_of="m1")
    assert pacer.delay(other_topic) == 3.0
    assert pacer.delay(other_topic, edit_of="m1") == 3.0
    clock.advance(3.0)
    pacer.block(other_topic, 5.0)
    assert pacer.delay(topic) == 5.0
