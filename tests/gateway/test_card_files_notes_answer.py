"""The progress card of a turn its files' notes answered whole, no model called: a download slow enough for
the card to be in the chat before the note, and then refused for good. The turn counts as done in metrics and
traces (`tests.gateway.test_turn_outcome_metrics`), and its card reads so too."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.notices import final_text
from gateway.testing import make_config, settled
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter

EVERYONE = {"telegram": {"allow_all": True}}
DELAY = 3


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:  # asked for before ``gateways``: closed after they stopped
        yield fake


def texts(fake: FakeTelegram) -> list[str]:
    return [m["text"] for m in fake.messages["42"]]


@pytest.mark.parametrize("refusal, note", [
    ("Bad Request: file is too big", "which is larger than the 20.0 MB I can take on telegram"),
    ("Bad Request: wrong file_id or the file is temporarily unavailable",
     "I couldn't download report.pdf from telegram; please send it again."),
], ids=["too-large", "download-refused"])
async def test_a_card_shown_while_a_file_downloads_reads_done_when_the_files_note_is_the_answer(
        fake, gateways, tmp_path, refusal, note):
    clock = FakeClock(autojump=False)  # the card is due only when the test moves time on
    model = ScriptedModel({"parent": [[{"text": "unused"}]]})
    config = make_config(tmp_path, platforms=EVERYONE, display={"progress": "card", "progress_delay": DELAY})
    adapter = TelegramAdapter(fake.token, api_base=fake.base_url, polling_timeout=10)
    gateway = await gateways(config, [adapter], model=model, clock=clock)
    await fake.wait_for(lambda: fake.calls_to("getUpdates"))
    fake.hold("getFile")  # a slow download: the card is due before the file is taken
    fake.fail_next("getFile", 400, description=refusal)  # once let go, refused for good: not tried again
    fake.push_document(42, b"%PDF-1.7 report", "report.pdf")  # no caption: the note is the whole answer
    await fake.wait_for(lambda: fake.calls_to("getFile"))
    await clock.until_sleeping(lasting=DELAY)
    clock.advance(DELAY)
    [card] = await fake.wait_for(lambda: texts(fake))
    assert card.startswith("⏳")
    fake.release("getFile")
    await fake.wait_for(lambda: not gateway.runner.busy)  # over: the note and the card's end wait their pace
    clock.advance(1)  # the chat's pace, a message a second: the note, then the card's end
    await fake.wait_for(lambda: len(texts(fake)) == 2)
    clock.advance(1)
    await fake.wait_for(lambda: fake.messages["42"][0]["edits"])
    await settled(gateway)
    card, answer = texts(fake)
    assert note in answer
    assert card == final_text("done", DELAY)  # it read "⚠️ Failed", under a note that says what went wrong
    assert model.requests == [] and len(fake.calls_to("getFile")) == 1
