"""What the chat reads when the model provider cannot read a picture of a message that held several (a Telegram
album, several attachments on Slack or Discord): it refuses the request for any one of them, without saying which.
The openai provider against a fake server, through the gateway."""

from __future__ import annotations

from gateway.replies import PICTURE_UNREADABLE, PICTURES_UNREADABLE
from gateway.testing import make_config
from platforms.base import Attachment
from tests.gateway.test_model_refusals_that_recur import UNREADABLE, Photos, said
from tests.gateway.wire import ask, openai_model
from tests.pictures import PNG


def photo(name: str) -> Attachment:
    return Attachment("image", name, "image/png", len(PNG), f"file-{name}")


async def test_one_picture_of_an_album_the_provider_cannot_read_is_told_as_one_of_them(tmp_path, llm, gateways):
    server = await llm()
    server.push_error(400, UNREADABLE)
    server.push_text("fine")
    chat = Photos()
    gateway = await gateways(make_config(tmp_path, model=openai_model(server, supports_vision=True)), [chat])
    await chat.say("what are these?", attachments=[photo("cat.png"), photo("dog.png")])
    await chat.wait_for(lambda: chat.texts("reply"))
    assert chat.texts("reply")[-1] == PICTURES_UNREADABLE
    assert PICTURES_UNREADABLE != PICTURE_UNREADABLE
    assert sum(part["type"] == "image_url" for part in said(server.requests[-1])[-1]) == 2  # both were sent
    assert await ask(chat, gateway, "other words") == "fine"
    assert said(server.requests[-1]) == ["other words"]  # the album's message was left out
