"""The names of the files the model sends stay out of the operator's log at INFO and above (the model's words,
often a user's: logs are shipped where many read them). Telegram end to end, through the real aiogram client."""

from __future__ import annotations

import logging

from agent.models.scripted import ScriptedModel
from gateway.testing import settled
from tests.scenarios.test_send_file_telegram import PNG, config, fake, gateway_on, workspace  # noqa: F401

NAME = "scan of Ana Souza's passport.png"


async def test_a_picture_refused_as_a_photo_is_logged_by_size_not_name(fake, config, gateway_on, caplog):  # noqa: F811
    (workspace(config) / NAME).write_bytes(PNG)
    model = ScriptedModel({"parent": [[{"tool_calls": [{"name": "send_file", "arguments": {"path": NAME}}]},
                                       {"text": "done"}]]})
    gateway = await gateway_on(model)
    fake.fail_next("sendPhoto", status=400, description="Bad Request: PHOTO_INVALID_DIMENSIONS")
    with caplog.at_level(logging.INFO):
        fake.push_message(42, "send it")
        await fake.wait_for(lambda: len(fake.messages["42"]) == 2)
        await settled(gateway)
    assert fake.messages["42"][0]["document"]["data"] == PNG
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]
    assert any(f"a picture of {len(PNG)} bytes was refused as a photo" in line for line in lines)
    assert not [line for line in lines if "Souza" in line]
