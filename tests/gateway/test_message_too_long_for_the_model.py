"""A message longer on its own than the model's window (a pasted log): the chat reads that the message is too long,
how long it is against what the model takes, and to send a shorter part; not that the conversation has grown too
long and to send /new, which would not help, the same message being as long in a new conversation."""

from gateway.testing import RecordingAdapter, make_config
from tests.gateway.wire import ask, openai_model

WINDOW = 4_096
LOG = "pump fault at start, " * 20_000  # 80,000 words: 105,000 estimated tokens


async def test_a_message_longer_than_the_window_is_told_so(tmp_path, llm, gateways):
    server = await llm(context_window=WINDOW)
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, model=openai_model(server, context_window=WINDOW)), [chat])
    assert await ask(chat, gateway, "hello") == "ok"
    reply = await ask(chat, gateway, LOG)
    # The window less the system prompt and the built-in tools' schemas: about 2,850 tokens.
    assert reply == ("Sorry — your message is too long for the model to take in: it comes to about 79,000 words, and "
                     "the model takes about 2,100 at a time. Please send a shorter part of it, or a summary of it.")
    assert await ask(chat, gateway, "in short: the pump faults at start") == "ok"  # the chat goes on

