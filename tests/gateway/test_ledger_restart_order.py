"""With ``busy_input_mode: queue``, messages queued behind a running completion turn (background results)
when the process dies or stops are answered after those results after the restart too, the model reading
the results first; one given up on is sent as it is, first, and each message is answered once."""

import pytest

from gateway.ledger import COMPLETION_PREFIX
from gateway.ledger_failures import UNDELIVERABLE
from gateway.testing import make_config
from tests.gateway.ledger_restarts import RESULTS, delegating, started_again, stopped


async def restarted_with_two_waiting(tmp_path, gateways, *, crash: bool, **config):
    """A gateway restarted after it died (``crash``) or stopped while its completion turn ran, with ``second``
    and ``third`` queued behind it; its chat, and what its model read when it was asked each message."""
    config = make_config(tmp_path, display={"busy_input_mode": "queue", "interim_assistant_messages": True},
                         **config)
    gateway, chat, _ = await delegating(gateways, config)
    await chat.say("second")
    await chat.say("third")
    await stopped(gateway, tmp_path, crash=crash)
    return await started_again(gateways, config, 3, leaf=[[{"text": "found it"}]])


@pytest.mark.parametrize("crash", [True, False])
async def test_messages_queued_behind_a_completion_turn_are_answered_after_it_across_a_restart(
        tmp_path, gateways, crash):
    gateway, chat, read = await restarted_with_two_waiting(tmp_path, gateways, crash=crash)
    assert chat.texts() == ["results", "re: second", "re: third"]
    assert any(text.startswith(COMPLETION_PREFIX) for text in read["second"])  # the results, then "second"
    [row] = gateway.store.delegations.recent(1)
    assert row.status == "delivered"


async def test_a_completion_turn_given_up_on_at_the_restart_is_sent_as_it_is_before_the_messages(
        tmp_path, gateways):
    gateway, chat, read = await restarted_with_two_waiting(tmp_path, gateways, crash=True, inbox={"max_attempts": 1})
    texts = chat.texts()
    assert texts[0].startswith(UNDELIVERABLE) and "found it" in texts[0]
    assert texts[1:] == ["re: second", "re: third"]
    assert not any(asked.startswith(RESULTS) for asked in read)  # sent as they are: not handed to the model
    [row] = gateway.store.delegations.recent(1)
    assert row.status == "delivered"
