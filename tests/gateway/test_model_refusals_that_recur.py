"""What the chat reads when the model provider refuses a request that asking again meets again: a setting or
the tool list the model does not take, a picture it cannot read (that message is then left out), a country or
network it does not serve. The openai provider against a fake server, through the gateway."""

from __future__ import annotations

import pytest

from gateway.replies import PICTURE_UNREADABLE, REFUSED, REGION_REFUSED, TOOLS_REFUSED, child_failure_reason
from gateway.testing import RecordingAdapter, make_config
from platforms.base import Attachment
from tests.gateway.wire import ask, openai_model
from tests.pictures import PNG


def error(message: str, code: str | None, param: str | None = None, kind: str = "invalid_request_error") -> dict:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


NO_TOOLS = error("registry.ollama.ai/library/gemma:2b does not support tools", None, kind="api_error")
TEMPERATURE = error("Unsupported value: 'temperature' does not support 0.2 with this model. Only the default (1) "
                    "value is supported.", "unsupported_value", "temperature")
UNREADABLE = error("You uploaded an unsupported image. Please make sure your image has of one the following formats: "
                   "['png', 'jpeg', 'gif', 'webp'].", "invalid_image_format")
REGION = error("Country, region, or territory not supported", "unsupported_country_region_territory",
               kind="request_forbidden")
BLOCK_PAGE = ("<!DOCTYPE html>\n<html><head><title>Attention Required! | Cloudflare</title></head><body>"
              "<h1>Sorry, you have been blocked</h1></body></html>")


class Photos(RecordingAdapter):
    max_attachment_bytes = 1_000_000

    async def download(self, attachment: Attachment) -> bytes:
        return PNG


def said(body: dict) -> list:
    return [m["content"] for m in body["messages"] if m["role"] == "user"]


def logged(caplog) -> str:
    return "\n".join(r.getMessage() for r in caplog.records if r.name == "gateway.replies")


@pytest.mark.parametrize(("refusal", "reply"), [(NO_TOOLS, TOOLS_REFUSED), (TEMPERATURE, REFUSED)],
                         ids=["ollama-tools", "temperature"])
async def test_a_request_the_model_does_not_take_is_not_to_be_tried_again_in_a_moment(tmp_path, llm, gateways,
                                                                                      caplog, refusal, reply):
    # "Please try again in a moment", and each try met the same 400, until the operator changed the model.
    server = await llm()
    server.push_error(400, refusal)
    server.push_error(400, refusal)
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, model=openai_model(server)), [chat])
    assert await ask(chat, gateway, "hello") == reply
    assert await ask(chat, gateway, "and again") == reply
    assert "hello" in said(server.requests[-1])[0]  # the message was not at fault: kept (joined to the next one)
    assert refusal["error"]["message"] in logged(caplog)


async def test_a_picture_the_provider_cannot_read_is_left_out_so_the_chat_goes_on(tmp_path, llm, gateways):
    server = await llm()
    server.push_text("hi there")
    server.push_error(400, UNREADABLE)
    server.push_text("fine")
    chat = Photos()
    gateway = await gateways(make_config(tmp_path, model=openai_model(server, supports_vision=True)), [chat])
    assert await ask(chat, gateway, "hello") == "hi there"
    replies = len(chat.texts("reply"))
    await chat.say("what is this?", attachments=[Attachment("image", "cat.png", "image/png", len(PNG), "f1")])
    await chat.wait_for(lambda: len(chat.texts("reply")) > replies)
    assert chat.texts("reply")[-1] == PICTURE_UNREADABLE
    assert any(part["type"] == "image_url" for part in said(server.requests[-1])[-1])  # the picture was sent
    assert await ask(chat, gateway, "other words") == "fine"
    assert said(server.requests[-1]) == ["hello", "other words"]


@pytest.mark.parametrize(("body", "content_type"), [(REGION, None), (BLOCK_PAGE, "text/html")],
                         ids=["region", "cloudflare"])
async def test_a_403_refusing_where_the_gateway_runs_does_not_blame_its_credentials(tmp_path, llm, gateways, caplog,
                                                                                    body, content_type):
    server = await llm()
    if content_type is None:
        server.push_error(403, body)
    else:
        server.push_raw(body, status=403, content_type=content_type)
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, model=openai_model(server)), [chat])
    assert await ask(chat, gateway, "hello") == REGION_REFUSED
    assert "model.api_key" not in logged(caplog) and "check that model.base_url" in logged(caplog)


@pytest.mark.parametrize(("error", "reason"), [
    ("model request failed (bad_request): Error code: 400 - registry.ollama.ai/library/gemma:2b does not support "
     "tools", "the model provider refused its request as one the model it was set up to use cannot take"),
    ("model request failed (bad_request): Error code: 400 - This model's maximum context length is 8192 tokens.",
     "its work grew longer than the model can take in"),
    ("model request failed (bad_image): Error code: 400 - You uploaded an unsupported image.",
     "the model provider could not read a picture it was given"),
    ("model request failed (blocked): Error code: 403 - Country, region, or territory not supported",
     "the model provider refuses requests from where this gateway runs"),
], ids=["refused", "too-long", "picture", "blocked"])
def test_a_subagent_failing_so_is_told_why(error, reason):
    assert child_failure_reason(error) == reason

