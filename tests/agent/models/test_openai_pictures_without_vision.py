"""A chat that holds pictures from a vision model, after the operator switched to a model that reads none
(``model.supports_vision: false``). Its stored conversation kept them inline, every later request sent them,
and a text-only server (vLLM, Ollama) refused each: the chat failed every message until /new. The real SDK
over a loopback server that refuses image parts as such a server does."""

from __future__ import annotations

import contextlib
from typing import Any

from aiohttp import web

from agent import AgentSession, CompactionPolicy, Compactor
from agent.models import OpenAIModel
from agent.models.openai import PICTURE_NOT_SHOWN
from agent.settings import ModelSettings
from agent.testing import FakeOpenAIServer

PHOTO = {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64," + "A" * 4_000}}
LINKED = {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}


class TextOnlyServer(FakeOpenAIServer):
    """Refuses a request holding an image part, as vLLM serving a model without vision does (400)."""

    async def _answer(self, request: web.Request, body: Any) -> web.StreamResponse:
        if "image_url" in str(body.get("messages")):
            error = {"message": "fake-model is not a multimodal model: this model does not support image input",
                     "type": "BadRequestError", "param": None, "code": 400}
            return web.json_response({"error": error, "object": "error"}, status=400)
        return await super()._answer(request, body)


@contextlib.asynccontextmanager
async def served(server: FakeOpenAIServer, *, vision: bool):
    model = OpenAIModel(ModelSettings(provider="openai", name="m", base_url=server.base_url, api_key="sk-test",
                                      max_retries=0, timeout_seconds=10, supports_vision=vision), env={})
    try:
        yield model
    finally:
        await model.aclose()


def stored_with_pictures() -> list[dict]:
    """A conversation stored while the model read pictures: one message of two, then the answer."""
    return [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": [{"type": "text", "text": "what are these?"}, PHOTO, LINKED]},
        {"role": "assistant", "content": "a dog and a cat"},
    ]


async def test_a_text_only_model_is_sent_a_note_for_each_earlier_picture_and_the_chat_goes_on():
    async with TextOnlyServer() as server, served(server, vision=False) as model:
        server.push_text("the dog was brown")
        session = AgentSession(model=model, system_prompt="be brief")
        session.messages = stored = stored_with_pictures()
        result = await session.run_turn("what colour was the dog?")
    assert (result.exit_reason, result.text) == ("completed", "the dog was brown")
    sent = server.requests[0]["messages"]
    assert sent[1] == {"role": "user", "content": "what are these?\n\n" + PICTURE_NOT_SHOWN + "\n\n"
                       + PICTURE_NOT_SHOWN.replace("a picture", "a picture at https://example.com/cat.png")}
    assert sent[2:] == [{"role": "assistant", "content": "a dog and a cat"},
                        {"role": "user", "content": "what colour was the dog?"}]
    # The stored conversation keeps them: a vision model configured again is shown them again.
    assert session.messages is stored and stored[1]["content"][1:] == [PHOTO, LINKED]


async def test_a_vision_model_is_still_sent_the_pictures_as_stored():
    async with FakeOpenAIServer() as server, served(server, vision=True) as model:
        session = AgentSession(model=model, system_prompt="be brief")
        session.messages = stored_with_pictures()
        result = await session.run_turn("and now?")
    assert result.exit_reason == "completed"
    assert server.requests[0]["messages"][1]["content"] == [{"type": "text", "text": "what are these?"}, PHOTO, LINKED]


async def test_compacting_on_a_text_only_model_sends_no_picture_neither_to_the_summariser_nor_after():
    async with TextOnlyServer() as server, served(server, vision=False) as model:
        server.push_text("a summary")
        server.push_text("the answer")
        compactor = Compactor(CompactionPolicy(threshold_tokens=1, keep_recent_messages=3))
        session = AgentSession(model=model, system_prompt="be brief", compactor=compactor)
        session.messages = [*stored_with_pictures(), {"role": "user", "content": [{"type": "text", "text": "and this?"},
                                                                                 PHOTO]},
                            {"role": "assistant", "content": "a photo again"}]
        result = await session.run_turn("thanks")
    assert (result.exit_reason, result.text, compactor.compactions) == ("completed", "the answer", 1)
    assert len(server.requests) == 2 and "image_url" not in str(server.requests)
    # The message kept after the summary tells of its picture.
    assert server.requests[1]["messages"][1]["content"].endswith("and this?\n\n" + PICTURE_NOT_SHOWN)
