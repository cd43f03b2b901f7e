"""`Gateway.handle` raises no failure but the store's once the event is recorded. The platforms answer any
other failure of the sink as final: the web chat and webhooks 422 "could not handle", Telegram, Slack and
Discord commands `NOT_HANDLED`, others drop the event (`platforms.not_recorded`). Right only before the record:
after it, the event is handled anyway (now, or replayed at the next start), so its sender was told it could
not be handled and then answered, twice had they sent it again. These tests fail our own code past the record
and check that the event is answered once and `handle` returns its `Accepted`."""

from __future__ import annotations

from agent.testing import FakeClock
from gateway.dead_letters import APOLOGY, FIRST_PAUSE_SECONDS
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.test_dead_letters import echo
from tests.sqlite_errors import full_disk


def failing(times: int, real):
    """``real``, raising a bug's error on its first ``times`` calls."""
    calls = 0

    def call(*args, **kwargs):
        nonlocal calls
        calls += 1
        if calls <= times:
            raise RuntimeError("a bug past the record")
        return real(*args, **kwargs)

    return call


async def test_a_failure_reporting_the_arrival_does_not_raise_and_the_message_is_answered_once(tmp_path, gateways):
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path), [chat], script={"parent": echo})
    gateway.events.inbound = failing(2, gateway.events.inbound)
    accepted = await chat.say("hello", event_id="ev-1")  # before: raised, its sender told "could not handle"
    assert not accepted.duplicate and accepted.turn_id is not None
    await chat.wait_for(lambda: chat.texts() == ["re: hello"])
    await settled(gateway)
    again = await chat.say("hello", event_id="ev-1")  # sent again, as a sender told it failed would
    assert again.duplicate and again.turn_id == accepted.turn_id
    await settled(gateway)
    assert chat.texts() == ["re: hello"] and gateway.store.inbox.settled("chat", "ev-1")


async def test_a_failure_reading_a_duplicate_s_question_does_not_raise(tmp_path, gateways):
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path), [chat], script={"parent": echo})
    accepted = await chat.say("hello", event_id="ev-1")
    await chat.wait_for(lambda: chat.texts() == ["re: hello"])
    await settled(gateway)
    gateway.questions.handed = failing(1, gateway.questions.handed)
    again = await chat.say("hello", event_id="ev-1")  # before: raised, although the event was answered
    assert again.duplicate and again.turn_id == accepted.turn_id
    await settled(gateway)
    assert chat.texts() == ["re: hello"]


async def test_a_failed_attempt_whose_turn_id_read_fails_does_not_raise_and_is_tried_again(tmp_path, gateways):
    # Dispatching fails (counted a failed attempt, tried again after a pause), and so does reading the
    # question it may have answered after it: before, that raised out of `handle`.
    chat, clock = RecordingAdapter(), FakeClock(autojump=False)
    gateway = await gateways(make_config(tmp_path, inbox={"max_attempts": 3}), [chat], clock=clock,
                             script={"parent": echo})
    gateway.questions.handed = failing(2, gateway.questions.handed)
    accepted = await chat.say("hello", event_id="ev-1")
    assert not accepted.duplicate
    await clock.until_sleeping(lasting=FIRST_PAUSE_SECONDS)
    assert chat.messages == []
    clock.advance(FIRST_PAUSE_SECONDS)
    await chat.wait_for(lambda: chat.texts() == ["re: hello"])
    await settled(gateway)
    assert APOLOGY not in chat.texts() and gateway.store.dead_letters.all() == []
    assert gateway.store.inbox.settled("chat", "ev-1")


async def test_a_refused_handling_whose_retry_cannot_be_arranged_does_not_raise_and_keeps_the_event(
        tmp_path, gateways):
    # The store refuses what handling needs, and arranging the retry fails: before, that raised out of `handle`.
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path), [chat], script={"parent": echo})
    refusal = full_disk()

    def refuse(*args, **kwargs):
        raise refusal

    gateway.runner.submit = refuse
    gateway.dead_letters.refused = failing(1, gateway.dead_letters.refused)
    accepted = await chat.say("hello", event_id="ev-1")
    assert not accepted.duplicate
    await gateway.store.durable()
    # Kept unsettled and uncharged: the next start handles it.
    assert not gateway.store.inbox.settled("chat", "ev-1")
    assert [event.event_id for event, _ in gateway.store.inbox.unfinished()] == ["ev-1"]
    assert chat.messages == [] and gateway.store.dead_letters.all() == []
