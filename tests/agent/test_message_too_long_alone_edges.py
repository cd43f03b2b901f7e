"""A turn whose own message is too long for the model's window (`TurnResult.message_too_long`): no compaction of the
conversation before it can make it fit, so none is paid for nor done (it summarised the chat away for nothing, and a
second request was refused the same); a setup whose system prompt and tools' schemas fill the window leaves no room
for any message, and the chat reads that, not that the model takes "about 0" words at a time; an album too big for
the window is told to send fewer pictures, not that its caption of three words comes to thousands."""

from agent import AgentSession, Compactor, ToolRegistry, TurnResult
from agent._model import Usage
from agent._token_estimate import estimate_tokens, schema_tokens
from agent.models.scripted import ScriptedModel
from gateway.replies import reply_text

WINDOW = 8_192
PASTE = "pump fault at start, " * 3_000  # 63,000 characters: about 15,750 estimated tokens, twice the window


def server(window: int = WINDOW, counted: float = 1.0):
    """Refuses, as a real server does, a request whose messages and tool schemas pass the window; ``counted``: its
    tokenizer's count against the estimate (English: about three quarters)."""
    def parent(request):
        if (estimate_tokens(request.messages) + schema_tokens(request.tools)) * counted > window:
            return {"error": "bad_request", "message": f"This model's maximum context length is {window} tokens"}
        return {"text": "ok"}

    return parent


def session(model, facts=10):
    s = AgentSession(model=model, system_prompt="be brief", compactor=Compactor())
    s.messages.extend({"role": "user" if i % 2 == 0 else "assistant", "content": f"fact {i}: " + "x" * 400}
                      for i in range(facts))
    return s


async def test_a_message_too_long_alone_is_refused_once_and_the_conversation_kept_whole():
    model = ScriptedModel({"parent": server(), "compactor": lambda r: {"text": "summary"}}, context_window=WINDOW)
    s = session(model)
    before = list(s.messages)
    result = await s.run_turn(PASTE)
    assert result.exit_reason == "error" and result.message_too_long is not None
    assert result.message_too_long[0] > WINDOW
    assert [r.role for r in model.requests] == ["parent"]  # no summary paid for, no second request refused
    assert s.messages[:-1] == before  # the facts of the chat are not summarised away for it


async def test_a_message_estimated_a_little_over_the_room_still_gets_the_conversation_compacted_to_fit():
    # Estimated over the room by less than the estimate's overcount of English (a third): the server's tokenizer
    # counts it within the room, and it fits once the chat before it is summarised, as it did before.
    model = ScriptedModel({"parent": server(counted=0.75), "compactor": lambda r: {"text": "summary"}},
                          context_window=WINDOW)
    s = session(model, facts=20)
    room = WINDOW - estimate_tokens(s.messages[:1])
    result = await s.run_turn("y" * int(room * 4 * 1.15))
    assert (result.exit_reason, result.text, result.message_too_long) == ("completed", "ok", None)
    assert [r.role for r in model.requests] == ["compactor", "parent"]


def test_a_window_filled_by_the_system_prompt_and_schemas_says_so_not_about_0_words():
    text = reply_text("reply", _refused(message_too_long=(6, 0)))
    assert "about 0" not in text
    assert "too small" in text and "/new" not in text


async def test_a_setup_over_the_window_gives_room_0():
    tools = ToolRegistry()
    tools.add("fetch", "Fetches a page. " + "Say which part of the page to fetch. " * 330, {"type": "object"},
              lambda a, c: "page", toolset="web")  # 3,000 tokens of schema
    model = ScriptedModel({"parent": server(2_048)}, context_window=2_048)
    s = AgentSession(model=model, tools=tools.resolve(), system_prompt="be brief", compactor=Compactor())
    result = await s.run_turn("hello")
    assert result.message_too_long is not None and result.message_too_long[1] == 0
    text = reply_text("reply", result)
    assert "about 0" not in text and "too small" in text


def test_an_album_too_long_is_told_to_send_fewer_pictures_not_a_length_in_words():
    caption = "what are these?"
    album = [{"type": "text", "text": caption}] + [
        {"type": "image_url", "image_url": {"url": f"https://example.com/{n}.jpg"}} for n in range(16)]
    tokens = estimate_tokens([{"role": "user", "content": album}])
    assert tokens > 16 * 512
    text = reply_text("reply", _refused(message_too_long=(tokens, 6_000)), pictures=16)
    assert "pictures" in text
    assert "6,200 words" not in text and "words, and" not in text  # 16 pictures are not 6,200 words


def test_a_long_text_with_a_picture_is_told_its_length_in_words_without_the_picture():
    text = reply_text("reply", _refused(message_too_long=(105_512, 2_850)), pictures=1)
    assert "about 79,000 words" in text  # 105,000 tokens of text; the picture's 512 are not words


def _refused(**fields):
    return TurnResult("t-1", "", "error", 1, Usage(), None, 0.0, (), "This model's maximum context length is 8192 "
                      "tokens", None, "scripted", False, "bad_request", **fields)
