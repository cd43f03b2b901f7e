"""End to end on Telegram (aiogram against the loopback `FakeTelegram`): what the chat reads when Telegram
refuses one of the bot's messages for good (a 400). A part of a long answer leaves a note in its place;
a progress card nobody saw gets no "✓ Done" line after the answer."""

from __future__ import annotations

from agent.models.scripted import ScriptedModel
from gateway.splitting import split_text
from gateway.testing import settled
from platforms.fakes.telegram import FakeTelegram
from tests.polling import until

REFUSAL = "Bad Request: wrong parameter action in request"


async def test_a_part_of_a_long_answer_telegram_refuses_leaves_a_note_in_its_place(telegram_gateways):
    answer = "\n\n".join(f"Paragraph {n}: " + "word " * 150 for n in range(12))  # about 9,000 characters
    parts = split_text(answer, 4096)
    assert len(parts) == 3
    async with FakeTelegram() as fake:
        gateway = await telegram_gateways(fake, ScriptedModel({"parent": [[{"text": answer}]]}), progress="off")
        fake.fail_next("sendMessage", 400, description=REFUSAL)
        fake.push_message(42, "tell me everything")
        await fake.wait_for(lambda: any("Paragraph 11" in m["text"] for m in fake.messages["42"]), timeout=10)
        await settled(gateway)
        texts = [m["text"] for m in fake.messages["42"]]
    assert texts[0] == "(part 1 of 3 could not be sent: the platform refused it)"
    assert [" ".join(t.split()) for t in texts[1:]] == [" ".join(p.split()) for p in parts[1:]]


async def test_a_card_telegram_refused_gets_no_done_line_after_the_answer(telegram_gateways):
    model = ScriptedModel({"parent": [[{"wait": "go", "text": "the answer"}]]})
    async with FakeTelegram() as fake:
        gateway = await telegram_gateways(fake, model, progress="card", progress_delay=0.01)
        fake.fail_next("sendMessage", 400, description=REFUSAL)
        fake.push_message(42, "take your time")
        await model.reached("go")
        await until(lambda: gateway.store.outbox.with_status("failed", 1))  # the card, refused
        model.release("go")
        await fake.wait_for(lambda: fake.messages["42"], timeout=10)
        await settled(gateway)
        assert [m["text"] for m in fake.messages["42"]] == ["the answer"]
        assert [call["text"] for call in fake.calls_to("sendMessage")][1:] == ["the answer"]
