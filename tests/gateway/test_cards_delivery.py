"""The turn that delivers a background delegation's results shows no card of its own beside the delegation's:
one piece of work, one card, which goes on until the results are answered and is then finalised."""

from __future__ import annotations

from gateway.progress_message import covered_by
from gateway.testing import settled
from tests.gateway.test_ledger import delegating_with_cards


async def test_a_slow_delivery_turn_shows_no_second_card_beside_its_delegations(tmp_path, gateways):
    # Before, the delivery turn got a card of its own once it had run the delay (`⏳ Thinking — 3 s`, then
    # `✓ Done in 4 s`), under the delegation's card still reading `⏳ Waiting for subagents: 2 of 2 done`.
    chat, model, gateway, clock = await delegating_with_cards(
        tmp_path, gateways, lambda r: {"wait": "work", "text": "found"},
        completion={"wait": "answer", "text": "results: alpha"})
    card = next(m for m in chat.messages if m.kind == "notice")
    model.release("work")
    await model.reached("answer")  # the delivery turn writes its answer, and takes its time
    await clock.until_sleeping(lasting=3)  # the delivery turn's card, due after the delay
    clock.advance(3)
    await chat.wait_for(lambda: card.text.startswith("⏳ Waiting for subagents: 2 of 2 done — 6 s"))
    assert await gateway.outbox.flush(timeout=5)
    assert chat.kinds() == ["reply", "notice"]
    model.release("answer")
    await chat.wait_for(lambda: "completion" in chat.kinds())
    await chat.wait_for(lambda: card.text.startswith("✓ Done in"))
    clock.advance(600)
    await settled(gateway)
    assert chat.kinds() == ["reply", "notice", "completion"]  # one card, the delegation's
    assert card.text == "✓ Done in 6 s · 2 subagents"


class Shown:
    def __init__(self, exists: bool) -> None:
        self.exists = exists


def test_the_first_of_the_two_journaled_shows_and_the_decision_holds():
    turns, delegations = Shown(False), Shown(True)
    covered = covered_by(turns, delegations)  # type: ignore[arg-type]
    assert covered()
    delegations.exists = False  # pruned, say: the turn's card, never sent, is not sent anew now
    assert covered()
    assert not covered_by(Shown(True), Shown(True))()  # a replay's own message goes on being edited
    assert not covered_by(Shown(False), Shown(False))()
