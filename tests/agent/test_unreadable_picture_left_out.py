"""What the conversation keeps after the server refused a picture it cannot read (`bad_image`): the turn's
own message that holds it is left out, as a message the content filter blocked is, or it would be sent, and
refused, with every later one; a message without the picture (a completion turn's background results, a
user's next words) is kept, the conversation's pictures left out instead and the model asked again; so are they
when the turn's own picture was read for an answer of the turn, then refused. A refusal
of a setting or of the tool list keeps the message: it is not at fault. The openai provider against a fake
server."""

from __future__ import annotations

import base64
import contextlib

from agent import AgentSession, ToolRegistry
from agent._session import NAMED_PICTURE_LEFT_OUT, PICTURE_LEFT_OUT
from agent.models import OpenAIModel
from agent.settings import ModelSettings
from agent.testing import FakeOpenAIServer
from tests.pictures import PNG

UNREADABLE = {"error": {"message": "You uploaded an unsupported image. Please make sure your image has of one the "
                                   "following formats: ['png', 'jpeg', 'gif', 'webp'].",
                        "type": "invalid_request_error", "param": None, "code": "invalid_image_format"}}
NO_TOOLS = {"error": {"message": "registry.ollama.ai/library/gemma:2b does not support tools", "type": "api_error",
                      "param": None, "code": None}}
PHOTO = [{"type": "text", "text": "what is this?"},
         {"type": "image_url", "image_url": {"url": "data:image/png;base64," + base64.b64encode(PNG).decode()}}]


@contextlib.asynccontextmanager
async def session_on(server: FakeOpenAIServer, tools: ToolRegistry | None = None):
    model = OpenAIModel(ModelSettings(provider="openai", name="m", base_url=server.base_url, api_key="sk-test",
                                      max_retries=0, supports_vision=True), env={})
    try:
        yield AgentSession(model=model, system_prompt="be brief", tools=tools.resolve() if tools else None)
    finally:
        await model.aclose()


def said(session: AgentSession) -> list:
    return [m["content"] for m in session.messages if m["role"] == "user"]


async def test_the_message_holding_a_picture_the_server_cannot_read_is_left_out():
    async with FakeOpenAIServer() as server, session_on(server) as session:
        server.push_text("hi")
        server.push_error(400, UNREADABLE)
        server.push_text("fine")
        await session.run_turn("hello")
        version = session.history_version
        result = await session.run_turn(PHOTO)
        assert (result.exit_reason, result.error_kind) == ("error", "bad_image")
        assert said(session) == ["hello"] and session.history_version > version  # a saver stores it again
        await session.run_turn("and now?")
        assert [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "user"] == ["hello", "and now?"]


async def test_an_earlier_picture_the_server_no_longer_reads_is_left_out_and_the_model_asked_again():
    # The picture at fault is an earlier message's (a URL the server no longer reaches): leaving this one out,
    # background results for a completion turn, would lose them and cure nothing. Kept, it failed this turn and
    # every later one, told to the chat as a setting the operator must change.
    async with FakeOpenAIServer() as server, session_on(server) as session:
        server.push_text("a cat")
        server.push_error(400, UNREADABLE)
        server.push_text("the report says the cat is fine")
        await session.run_turn(PHOTO)
        version = session.history_version
        result = await session.run_turn("[Background results] the report is ready")
        assert (result.exit_reason, result.text) == ("completed", "the report says the cat is fine")
        assert said(session) == [f"what is this?\n\n{PICTURE_LEFT_OUT}", "[Background results] the report is ready"]
        assert session.history_version > version  # a saver stores it again
        asked_again = server.requests[-1]["messages"]
        assert "image_url" not in str(asked_again) and PICTURE_LEFT_OUT in str(asked_again)


async def test_a_refusal_of_the_tool_list_keeps_the_message():
    async with FakeOpenAIServer() as server, session_on(server) as session:
        server.push_error(400, NO_TOOLS)
        result = await session.run_turn(PHOTO)
        assert result.error_kind == "bad_request"
        assert said(session) == [PHOTO]


async def test_a_picture_read_earlier_in_the_turn_and_refused_later_leaves_the_pictures_out_not_the_turn():
    # The server read the turn's own picture for its first answer, then refused it (a child's image URL that
    # expired while it worked, say): the turn's message is not one whose picture cannot be read, and leaving it
    # out threw away every step the turn had taken (a child failed, its work lost, told the picture was unreadable).
    tools = ToolRegistry()
    tools.add("look", "look closer", {"type": "object"}, lambda args, ctx: "a tabby", toolset="test")
    async with FakeOpenAIServer() as server, session_on(server, tools) as session:
        server.push_tool_calls([{"id": "c1", "name": "look", "arguments": "{}"}])
        server.push_error(400, UNREADABLE)
        server.push_text("a tabby cat")
        result = await session.run_turn(PHOTO)
        assert (result.exit_reason, result.text) == ("completed", "a tabby cat")
        assert said(session) == [f"what is this?\n\n{PICTURE_LEFT_OUT}"]
        assert [m["content"] for m in session.messages if m["role"] == "tool"] == ["a tabby"]
        assert "image_url" not in str(server.requests[-1]["messages"])


EXPIRED = "https://cdn.example.com/cat.png?Expires=1700000000&Signature=abc"
LINKED = [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": EXPIRED}}]
NOT_FETCHED = {"error": {"message": f"Timeout while downloading {EXPIRED}.", "type": "invalid_request_error",
                         "param": None, "code": "invalid_image_url"}}


async def test_an_earlier_picture_the_server_names_is_left_out_not_the_turns_own():
    # The server named the earlier message's URL, which had expired; the turn's own picture, fine, was blamed: its
    # message left out, the user told their picture could not be read, and each picture they sent again refused.
    async with FakeOpenAIServer() as server, session_on(server) as session:
        server.push_text("a cat")
        server.push_error(400, NOT_FETCHED)
        server.push_text("a dog")
        await session.run_turn(LINKED)
        result = await session.run_turn(PHOTO)
        assert (result.exit_reason, result.text) == ("completed", "a dog")
        assert said(session) == [f"look\n\n{NAMED_PICTURE_LEFT_OUT}", PHOTO]
        asked_again = server.requests[-1]["messages"]
        assert EXPIRED not in str(asked_again) and asked_again[-1] == {"role": "user", "content": PHOTO}


async def test_the_turns_own_picture_refused_once_the_named_one_is_left_out_leaves_its_message_out():
    async with FakeOpenAIServer() as server, session_on(server) as session:
        server.push_text("a cat")
        server.push_error(400, NOT_FETCHED)
        server.push_error(400, UNREADABLE)
        await session.run_turn(LINKED)
        result = await session.run_turn(PHOTO)
        assert (result.exit_reason, result.error_kind) == ("error", "bad_image")
        assert said(session) == [f"look\n\n{NAMED_PICTURE_LEFT_OUT}"]


def not_fetched(url: str) -> dict:
    return {"error": {"message": f"Timeout while downloading {url}.", "type": "invalid_request_error",
                      "param": None, "code": "invalid_image_url"}}


def linked(url: str, text: str = "look") -> list:
    return [{"type": "text", "text": text}, {"type": "image_url", "image_url": {"url": url}}]


async def test_each_earlier_picture_the_server_names_in_turn_is_left_out_not_the_turns_own():
    # Two earlier pictures expired (signed URLs of one lifetime): the server names one a request, the first, then
    # the second once the first is left out. The new picture was blamed for the second: its message left out, the
    # user told it could not be read, and so at each of their next pictures while an expired one was left.
    first, second = EXPIRED, EXPIRED.replace("cat", "dog")
    async with FakeOpenAIServer() as server, session_on(server) as session:
        server.push_text("a cat")
        server.push_text("a dog")
        server.push_error(400, not_fetched(first))
        server.push_error(400, not_fetched(second))
        server.push_text("a bird")
        await session.run_turn(linked(first))
        await session.run_turn(linked(second))
        result = await session.run_turn(PHOTO)
        assert (result.exit_reason, result.text) == ("completed", "a bird")
        assert said(session) == [f"look\n\n{NAMED_PICTURE_LEFT_OUT}"] * 2 + [PHOTO]
        assert len(server.requests) == 5


async def test_a_picture_whose_url_starts_the_one_the_server_names_is_kept():
    # ".../cat.png" is the start of the expired ".../cat.png?Expires=…": only the one the server quoted is left out.
    plain = EXPIRED.split("?")[0]
    async with FakeOpenAIServer() as server, session_on(server) as session:
        server.push_text("a cat")
        server.push_text("the same cat")
        server.push_error(400, NOT_FETCHED)
        server.push_text("a dog")
        await session.run_turn(linked(plain))
        await session.run_turn(linked(EXPIRED))
        result = await session.run_turn(PHOTO)
        assert (result.exit_reason, result.text) == ("completed", "a dog")
        assert said(session) == [linked(plain), f"look\n\n{NAMED_PICTURE_LEFT_OUT}", PHOTO]


async def test_an_earlier_picture_whose_url_starts_the_turns_own_is_kept_when_the_server_names_that():
    plain = EXPIRED.split("?")[0]
    async with FakeOpenAIServer() as server, session_on(server) as session:
        server.push_text("a cat")
        server.push_error(400, NOT_FETCHED)
        server.push_error(400, NOT_FETCHED)
        await session.run_turn(linked(plain))
        result = await session.run_turn(linked(EXPIRED, "and this?"))
        assert (result.exit_reason, result.error_kind) == ("error", "bad_image")
        assert said(session) == [linked(plain)] and len(server.requests) == 2


async def test_the_turns_own_picture_at_an_earlier_ones_url_is_not_left_out_with_it():
    # The user sent the expired link again: the earlier one is left out and the turn's own asked again, refused, its
    # message left out as any picture the server cannot read (it was replaced by a note too, the user never told).
    async with FakeOpenAIServer() as server, session_on(server) as session:
        server.push_text("a cat")
        server.push_error(400, NOT_FETCHED)
        server.push_error(400, NOT_FETCHED)
        await session.run_turn(LINKED)
        result = await session.run_turn(linked(EXPIRED, "again"))
        assert server.requests[-1]["messages"][-1] == {"role": "user", "content": linked(EXPIRED, "again")}
        assert (result.exit_reason, result.error_kind) == ("error", "bad_image")
        assert said(session) == [f"look\n\n{NAMED_PICTURE_LEFT_OUT}"]
