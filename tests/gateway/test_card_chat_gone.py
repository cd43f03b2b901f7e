"""A progress card whose chat is gone (the bot removed from it, blocked, the chat deleted): the platform refuses
it for good, and the card stops asking, rather than calling the platform every couple of seconds for as long as
its subagents run, each call refused, logged and kept as a failure. Its final edit is still tried, once."""

from __future__ import annotations

import pytest

from gateway.testing import settled
from platforms.base import BadRequest, Forbidden, NotFound
from tests.gateway.test_ledger import delegating_with_cards
from tests.polling import until

TICKS = 30
"""A minute of subagents at work, the card looking at them every 2 s."""


async def refused_while_at_work(gateway, chat, clock, refusal: Exception) -> list:
    refused = []

    async def refuse(*args, **kw):
        refused.append(args)
        raise refusal

    chat.edit = chat.send = refuse
    for _ in range(TICKS):
        clock.advance(2)
        await clock.until_sleeping(lasting=2)
        await until(lambda: gateway.outbox.idle)
    del chat.edit, chat.send  # the chat is back (the bot invited again)
    return refused


@pytest.mark.parametrize("refusal", [Forbidden("Forbidden: bot was kicked from the group chat", method="edit"),
                                     NotFound("Bad Request: chat not found", method="send")])
async def test_a_card_in_a_chat_that_is_gone_stops_asking_and_still_tries_its_final_edit(tmp_path, gateways,
                                                                                           refusal):
    chat, model, gateway, clock = await delegating_with_cards(tmp_path, gateways,
                                                              lambda r: {"wait": "work", "text": "found"})
    card = next(m for m in chat.messages if m.kind == "notice")
    refused = await refused_while_at_work(gateway, chat, clock, refusal)
    assert 1 <= len(refused) <= 2  # an edit refused (sent anew where it was not found, refused too), then no more
    model.release("work")
    await chat.wait_for(lambda: "completion" in chat.kinds())
    await settled(gateway)
    assert card.text.startswith("✓ Done in")  # its final edit was tried all the same


async def test_a_card_the_platform_refuses_for_its_text_goes_on(tmp_path, gateways):
    # A refusal of what one state says (a markup the platform cannot parse) says nothing of the next one.
    chat, model, gateway, clock = await delegating_with_cards(tmp_path, gateways,
                                                              lambda r: {"wait": "work", "text": "found"})
    refused = await refused_while_at_work(gateway, chat, clock, BadRequest("can't parse entities", method="edit"))
    assert len(refused) >= TICKS
    model.release("work")
    await chat.wait_for(lambda: "completion" in chat.kinds())
    await settled(gateway)
