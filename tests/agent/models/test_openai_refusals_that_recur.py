"""OpenAIModel given refusals that asking again meets again: a 400 about a picture the server cannot read (the
message's fault), a 400 about a setting or the tool list (not the message's), and a 403 that refuses the
country or network the gateway runs from (not its key). The real SDK over loopback sockets."""

from __future__ import annotations

import base64

import pytest

from agent import ModelError
from agent._model import ModelRequest
from agent.models import OpenAIModel
from agent.settings import ModelSettings
from agent.testing import FakeOpenAIServer
from tests.pictures import PNG

KEY = "sk-test-very-secret-0123456789"
TEXT = [{"role": "user", "content": "hello"}]
PICTURE = [{"role": "user", "content": [
    {"type": "text", "text": "what is this?"},
    {"type": "image_url", "image_url": {"url": "data:image/png;base64," + base64.b64encode(PNG).decode()}}]}]
BLOCK_PAGE = ("<!DOCTYPE html>\n<html><head><title>Attention Required! | Cloudflare</title></head><body>"
              "<h1>Sorry, you have been blocked</h1><p>You are unable to access api.example.com</p></body></html>")


def error(message: str, code: str | None, param: str | None = None, kind: str = "invalid_request_error") -> dict:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


async def refused(status: int, body, messages=TEXT, *, content_type: str | None = None,
                  headers: dict[str, str] | None = None) -> ModelError:
    async with FakeOpenAIServer(api_key=KEY) as server:
        if content_type is None:
            server.push_error(status, body, headers)
        else:
            server.push_raw(body, status=status, content_type=content_type)
        model = OpenAIModel(ModelSettings(provider="openai", name="m", base_url=server.base_url, api_key=KEY,
                                          max_retries=0, supports_vision=True), env={})
        try:
            with pytest.raises(ModelError) as caught:
                await model.complete(ModelRequest(messages=messages))
        finally:
            await model.aclose()
    return caught.value


UNREADABLE = {
    "openai-format": error("You uploaded an unsupported image. Please make sure your image has of one the following "
                           "formats: ['png', 'jpeg', 'gif', 'webp'].", "invalid_image_format"),
    "openai-sanitizer": error("You uploaded an unsupported image. Please make sure your image is below 20 MB in size "
                              "and is of one the following formats: ['png', 'jpeg', 'gif', 'webp'].",
                              "sanitizer_server_error"),
    "openai-url": error("Timeout while downloading https://example.com/cat.png.", "invalid_image_url"),
    "vllm": {"object": "error", "message": "cannot identify image file <_io.BytesIO object at 0x7f>",
             "type": "BadRequestError", "param": None, "code": 400},
    "gemini": [{"error": {"code": 400, "message": "Provided image is not valid.", "status": "INVALID_ARGUMENT"}}],
}


@pytest.mark.parametrize("body", UNREADABLE.values(), ids=UNREADABLE.keys())
async def test_a_picture_the_server_cannot_read_is_told_apart(body):
    # A "bad_request" like any other: the session kept the message, and every later turn sent it again.
    error = await refused(400, body, PICTURE)
    assert error.kind == "bad_image" and error.status == 400


@pytest.mark.parametrize("body", [
    error("registry.ollama.ai/library/gemma:2b does not support tools", None, kind="api_error"),
    error("Unsupported value: 'temperature' does not support 0.2 with this model. Only the default (1) value is "
          "supported.", "unsupported_value", "temperature"),
    error("Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' "
          "instead.", "unsupported_parameter", "max_tokens"),
    error("Invalid content type. image_url is only supported by certain models.", None,
          "messages.[0].content.[1].type"),
], ids=["ollama-tools", "temperature", "parameter", "no-vision"])
async def test_a_refusal_of_a_setting_or_the_tools_is_no_pictures_fault(body):
    # The model given no pictures at all (model.supports_vision set for one that has none) is a setting too: the
    # picture stays, to be shown as a note once the operator sets it right.
    assert (await refused(400, body, PICTURE)).kind == "bad_request"


async def test_words_about_an_image_without_one_in_the_request_are_no_pictures_fault():
    assert (await refused(400, UNREADABLE["openai-format"], TEXT)).kind == "bad_request"


@pytest.mark.parametrize(("status", "body", "content_type"), [
    (403, error("Country, region, or territory not supported", "unsupported_country_region_territory",
                kind="request_forbidden"), None),
    (403, BLOCK_PAGE, "text/html"),
], ids=["region", "cloudflare"])
async def test_a_403_refusing_where_the_gateway_runs_is_not_blamed_on_its_key(status, body, content_type):
    error = await refused(status, body, content_type=content_type)
    assert error.kind == "blocked" and error.status == 403
    assert "(model 'm' at http://127.0.0.1:" in str(error)  # which route's server refuses it


async def test_a_403_that_is_about_access_is_still_the_keys():
    access = error("Project `proj_abc` does not have access to model `gpt-x`", "model_not_found")
    assert (await refused(403, access)).kind == "auth"


@pytest.mark.parametrize(("status", "headers"), [(409, None), (400, {"x-should-retry": "true"})],
                         ids=["lock-timeout", "marked-to-retry"])
async def test_a_refusal_the_sdk_asks_again_after_is_not_one_that_recurs(status, headers):
    # The SDK asks again after a 409 (a lock timeout) and after any answer its server marks x-should-retry: true:
    # failing still once its retries are spent, it read "trying again will not help" (`bad_request`).
    busy = error("Another request is being processed; try again.", None, kind="server_error")
    assert (await refused(status, busy, headers=headers)).kind == "server_error"


@pytest.mark.parametrize(("status", "body"), [
    (400, error("This model's maximum prompt length is 131072 but the request contains 136973 tokens.", None)),
    (422, {"error": "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 8192. Given: 6204 "
                    "`inputs` tokens and 2047 `max_new_tokens`", "error_type": "validation"}),
    (422, {"error": "Input validation error: `inputs` must have less than 4096 tokens. Given: 4545",
           "error_type": "validation"}),
], ids=["xai", "tgi-total", "tgi-inputs"])
async def test_a_conversation_past_the_window_in_other_words_is_too_long_not_a_setting(status, body):
    # xAI's 400 and text-generation-inference's 422: read as a setting the model does not take, the chat was told to
    # wait for the operator (and nothing compacted the conversation), where /new cures it.
    assert (await refused(status, body)).context_exceeded
