"""Random chats on llama.cpp's default 4,096-token window at the default threshold (half) with about 1,200 tokens of
tools' schemas, against a server that counts the messages and the tools' schemas and refuses a request over the
window: the compactor is to keep every request under the window (no user message here is too long alone), and no
summariser is called while the request fits with a quarter of the window to spare."""

import random

import pytest

from agent import AgentSession, CompactionPolicy, Compactor, ToolRegistry
from agent._compaction import SUMMARY_HEADER
from agent._token_estimate import estimate_tokens, schema_tokens
from agent.models.scripted import ScriptedModel

WINDOW = 4_096
CASES = 320


def _words(rng: random.Random, tokens: int) -> str:
    words = ("pump", "fault", "valve", "logs", "at", "start", "pressure", "the", "reading", "sensor", "drops")
    return " ".join(rng.choices(words, k=tokens))[: 4 * tokens]


async def _chat(seed: int, repeat: int = 125, threshold: float = 0.5) -> tuple[list[int], list[int]]:
    """(the sizes of the requests the server refused, those of the conversations a summariser was called for while
    the request fitted with a quarter of the window to spare, its messages under the ``threshold``) of one random
    chat, whose every turn is answered."""
    rng = random.Random(seed)
    tools = ToolRegistry()
    tools.add("fetch", "Fetches a page. " + "Say which part of the page to fetch. " * repeat, {"type": "object"},
              lambda a, c: _words(rng, int(a["n"])), toolset="web")
    plan: list[dict] = []
    refused: list[int] = []
    needless: list[int] = []
    overflowed = [False]

    def refusal(size):
        refused.append(size)
        return {"error": "bad_request",
                "message": f"request ({size} tokens) exceeds the available context size ({WINDOW} tokens)"}

    def parent(request):
        size = estimate_tokens(request.messages) + schema_tokens(request.tools)
        overflowed[0] = size > WINDOW
        return refusal(size) if size > WINDOW else plan.pop(0)

    def compactor(request):
        size = estimate_tokens(request.messages)
        if size > WINDOW:
            return refusal(size)
        messages = estimate_tokens(session.messages)
        prompt = messages + schema_tokens(session.tool_schemas())
        if not overflowed[0] and prompt <= WINDOW * 3 // 4 and messages < threshold * WINDOW:
            needless.append(prompt)
        return {"text": _words(rng, rng.choice((60, 300, 800, 1_500, 2_000)))}

    model = ScriptedModel({"parent": parent, "compactor": compactor}, context_window=WINDOW)
    session = AgentSession(model=model, tools=tools.resolve(), system_prompt="be brief",
                           compactor=Compactor(CompactionPolicy(threshold_ratio=threshold)))
    for turn in range(rng.randint(1, 14)):
        plan[:] = [{"tool_calls": [{"name": "fetch", "arguments": {"n": rng.choice((20, 200, 600, 1_200, 3_000))}}
                                   for _ in range(rng.randint(1, 3))]}
                   for _ in range(rng.choice((0, 0, 1, 1, 2, 3)))] + [{"text": "done"}]
        result = await session.run_turn(_words(rng, rng.choice((10, 50, 200, 600))))
        assert result.text == "done", (seed, turn, result.error)
    return refused, needless


@pytest.mark.parametrize(("repeat", "threshold"), [(125, 0.5), (20, 0.5), (125, 0.75), (125, 0.9)])
async def test_random_chats_on_a_4k_window_are_never_refused(repeat, threshold):
    """Every turn answered (`_chat`), no request refused, no summary paid for while the request fitted; with the
    built-in tools' 1,200 tokens of schemas (125) or a child's fewer (20), at the default threshold or higher ones."""
    failures = []
    for seed in range(CASES):
        refused, needless = await _chat(seed, repeat, threshold)
        if refused or needless:
            failures.append((seed, refused, needless))
    assert not failures, (len(failures), failures[:10])



def _fetching_session(model):
    tools = ToolRegistry()
    tools.add("fetch", "Fetches a page. " + "Say which part of the page to fetch. " * 125, {"type": "object"},
              lambda a, c: "page", toolset="web")
    return AgentSession(model=model, tools=tools.resolve(), system_prompt="be brief", compactor=Compactor())


async def test_a_summary_leaves_the_messages_kept_after_it_room_in_the_window():
    """The summary was cut at 2,000 tokens whatever the window: on 4,096 with 1,200 of schemas, it and the messages
    kept after it came to more than the window, and the server refused the request compaction had made."""
    sizes = []

    def parent(request):
        sizes.append(estimate_tokens(request.messages) + schema_tokens(request.tools))
        return {"text": "done"}

    model = ScriptedModel({"parent": parent, "compactor": lambda r: {"text": "word " * 1_700}}, context_window=WINDOW)
    session = _fetching_session(model)
    for turn in range(8):
        assert (await session.run_turn(f"note {turn}: " + "the pump logs a fault at start. " * 40)).text == "done"
    assert any(r.role == "compactor" for r in model.requests)
    assert max(sizes) <= WINDOW - WINDOW // 8, sizes


async def test_a_refusal_with_only_a_long_summary_before_the_kept_messages_is_compacted_and_answered():
    """After a refusal, a conversation whose older part was one earlier summary was given up as having nothing to
    summarise, though that summary (2,000 tokens) was what kept it over the window: the turn ended unanswered."""
    refusals = []

    def parent(request):
        size = estimate_tokens(request.messages) + schema_tokens(request.tools)
        if size > WINDOW:
            refusals.append(size)
            return {"error": "bad_request",
                    "message": f"request ({size} tokens) exceeds the available context size ({WINDOW} tokens)"}
        return {"text": "done"}

    model = ScriptedModel({"parent": parent, "compactor": lambda r: {"text": "short summary"}},
                          context_window=128_000)  # the configured window says more than the server's
    session = _fetching_session(model)
    paste = "the pump logs a fault at start. " * 75  # some 600 tokens
    session.messages.extend([
        {"role": "user", "content": f"{SUMMARY_HEADER}\n" + "word " * 1_600},
        {"role": "assistant", "content": "ok"}, {"role": "user", "content": paste},
        {"role": "assistant", "content": "ok"}, {"role": "user", "content": paste},
        {"role": "assistant", "content": "ok"},
    ])
    result = await session.run_turn(paste)
    assert len(refusals) == 1 and result.text == "done", result.error
    assert session.messages[1]["content"] == f"{SUMMARY_HEADER}\nshort summary"
