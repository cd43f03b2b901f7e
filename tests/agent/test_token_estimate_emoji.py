"""Emoji and other four-byte characters in the token estimate: a tokenizer spends two to three tokens on each,
so counted at the byte rule's one and three eighths, a chat of reactions and flags came to half the provider's
count, and at the default trigger (half the window) the server refused it before it was ever compacted."""

import math

from agent import AgentSession, Compactor
from agent._compaction import SUMMARY_HEADER
from agent._token_estimate import estimate_tokens, weight, within_tokens
from agent.models.scripted import ScriptedModel

WINDOW = 4_000
ROCKETS, FLAGS = "🚀" * 40, "🇺🇸" * 20
CL100K = {ROCKETS: 120, FLAGS: 120}
"""cl100k_base's counts of these texts (measured with a tiktoken-compatible encoder): three tokens a rocket,
three for each half of a flag."""


def user(text):
    return {"role": "user", "content": text}


def provider_tokens(messages):
    """What a server with cl100k_base counts: the texts above as measured, ASCII at four characters a token."""
    total = 0
    for message in messages:
        content = message.get("content") or ""
        assert content in CL100K or content.isascii(), content
        total += CL100K.get(content) or math.ceil(len(content) / 4)
        total += 4
    return total


def test_a_four_byte_character_counts_three_tokens():
    assert estimate_tokens([user("🎉" * 8)]) == 24 + 4
    assert estimate_tokens([user(FLAGS)]) == 120 + 4  # a flag is two characters of four bytes
    assert weight("a🎉中") == 2 + 24 + 8
    assert within_tokens("🎉🎉🎉", 6) == "🎉🎉" and within_tokens("a🎉", 3) == "a"
    for text in (ROCKETS, FLAGS):
        assert estimate_tokens([user(text)]) >= CL100K[text] + 4  # not less than the provider counts


async def test_a_chat_of_emoji_is_compacted_before_the_server_refuses_it():
    refused = []

    def parent(request):
        tokens = provider_tokens(request.messages)
        if tokens > WINDOW:
            refused.append(tokens)
            return {"error": "bad_request", "message": f"This model's maximum context length is {WINDOW} tokens. "
                                                       f"However, your messages resulted in {tokens} tokens."}
        return {"text": FLAGS}

    model = ScriptedModel({"parent": parent, "compactor": lambda r: {"text": "the team cheered the launch"}},
                          context_window=WINDOW)
    session = AgentSession(model=model, system_prompt="you are the team's bot", compactor=(compactor := Compactor()))
    for _ in range(40):
        result = await session.run_turn(ROCKETS)
        assert (result.exit_reason, result.text) == ("completed", FLAGS)
    assert refused == []  # every compaction came before the window, none after a refusal
    assert compactor.compactions >= 2
    assert session.messages[1]["content"] == f"{SUMMARY_HEADER}\nthe team cheered the launch"
