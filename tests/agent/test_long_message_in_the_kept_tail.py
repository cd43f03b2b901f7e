"""A message too long for the model's window among the newest ones, which compaction keeps as they are (a paste
the server refused, followed by the user's next message): once the server refuses a request, those kept are
bounded by half of it, so the long one is summarised and the chat goes on, rather than every message being
refused as too long until six more had pushed it out of the newest."""

from agent import AgentSession, Compactor
from agent._compaction import SUMMARY_HEADER
from agent._token_estimate import estimate_tokens
from agent.models.scripted import ScriptedModel

WINDOW = 2_000
REFUSAL = {"error": "bad_request", "message": f"This model's maximum context length is {WINDOW} tokens. However, "
                                              "your messages resulted in 9000 tokens."}
PASTE = "the log: " + "z" * 12_000  # 3,000 estimated tokens: more than the window on its own


def strict_session(context_window=WINDOW):
    """A session whose server refuses, as a real one does, every request over the window."""
    model = ScriptedModel({"parent": lambda r: REFUSAL if estimate_tokens(r.messages) > WINDOW else {"text": "ok"},
                           "compactor": lambda r: {"text": "they talked; the user pasted a log"}},
                          context_window=context_window)
    return AgentSession(model=model, system_prompt="be brief", compactor=Compactor()), model


async def test_the_message_after_one_too_long_for_the_window_is_answered():
    s, model = strict_session()
    for text in ("first question", "second question"):
        assert (await s.run_turn(text)).exit_reason == "completed"
    refused = await s.run_turn(PASTE)  # the user's own message alone is too long: the chat hears so
    assert refused.exit_reason == "error" and "maximum context length" in refused.error
    result = await s.run_turn("sorry, in short: it fails at start")
    assert (result.exit_reason, result.text, result.error) == ("completed", "ok", None)
    assert s.messages[1]["content"] == f"{SUMMARY_HEADER}\nthey talked; the user pasted a log"
    assert s.messages[-2:] == [{"role": "user", "content": "sorry, in short: it fails at start"},
                               {"role": "assistant", "content": "ok"}]
    assert not any(PASTE in str(m["content"]) for m in s.messages)
    summarised = [r for r in model.requests if r.role == "compactor"][-1]
    assert "the log: zzz" in summarised.messages[1]["content"]  # its start went to the summariser
    assert (await s.run_turn("thanks")).exit_reason == "completed"


async def test_newest_messages_that_fit_are_kept_as_they_are_after_a_refusal():
    s, model = strict_session(context_window=128_000)  # the server's is smaller: it refuses before compacting
    s.messages.extend({"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i} " + "y" * 400}
                      for i in range(30))
    result = await s.run_turn("next")
    assert (result.exit_reason, result.text) == ("completed", "ok")
    assert [r.role for r in model.requests] == ["parent", "compactor", "parent"]
    assert s.messages[1]["content"].startswith(SUMMARY_HEADER)
    assert [m["content"][:3] for m in s.messages[2:-1]] == ["m25", "m26", "m27", "m28", "m29", "nex"]
