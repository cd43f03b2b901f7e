"""A background delegation's completion turn is bounded: each goal comes back as a recognisable excerpt, and
the results of a batch share half the parent model's context window, each summary cut beyond its share kept
whole in the chat's folder. Whole, ten 16,000-character goals and ten 24,000-character summaries were 400,000
characters in one user message, which compaction keeps word for word, read again at every later request."""

from __future__ import annotations

import json
import re

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from gateway.excerpt import at_word
from gateway.ledger import COMPLETION_GOAL_CHARS, COMPLETION_PREFIX
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.test_ledger import BACKGROUND

LONG_GOAL = 16_000


def goal(n: int) -> str:
    start = f"task {n}: "
    return start + " ".join(["survey the module and list what it imports"] * 400)[:LONG_GOAL - len(start)]


def parent(goals: list[str], seen: list[str]):
    def script(request: ModelRequest) -> dict:
        last = request.messages[-1]
        content = str(last.get("content"))
        if last["role"] == "user" and content.startswith(COMPLETION_PREFIX):
            seen.append(content)
            return {"text": "done"}
        if last["role"] == "user":
            return {"tool_calls": [{"name": "delegate_task", "arguments": {"tasks": [{"goal": g} for g in goals]}}]}
        return {"text": "on it"}

    return script


async def completion_text(tmp_path, gateways, goals, leaf, *, window=128_000, failed=False) -> tuple[str, dict]:
    seen: list[str] = []
    chat = RecordingAdapter()
    model = ScriptedModel({"parent": parent(goals, seen), "leaf": leaf}, context_window=window)
    gateway = await gateways(make_config(tmp_path, **BACKGROUND), [chat], model=model)
    await chat.say("please delegate")
    if failed:  # the answer says which failed
        await chat.wait_for(lambda: chat.texts()[:1] == ["on it"] and len(chat.texts()) == 2
                            and chat.texts()[1].startswith("done\n\n⚠️ Subagent failed: "))
    else:
        await chat.wait_for(lambda: chat.texts() == ["on it", "done"])
    await settled(gateway)
    [text] = seen
    return text, json.loads(text.removeprefix(COMPLETION_PREFIX))


async def test_long_goals_come_back_as_excerpts_saying_what_was_left_out(tmp_path, gateways):
    goals = [goal(n) for n in range(10)]
    text, payload = await completion_text(tmp_path, gateways, goals, lambda r: {"text": "found it"})
    assert len(text) < 10 * (COMPLETION_GOAL_CHARS + 600), len(text)  # whole: over 160,000
    assert list(payload) == ["delegation_id", "goals", "results"]
    for n, shown in enumerate(payload["goals"]):
        head, note = shown.split(" [... ")
        assert goals[n].startswith(head) and head.startswith(f"task {n}: survey")
        assert len(head) <= COMPLETION_GOAL_CHARS and not head.endswith(" ")
        assert goals[n][len(head)] == " "  # cut at a space: no word halved
        assert note == f"{LONG_GOAL - len(head):,} more characters of the goal not shown; the subagent had it whole]"
    assert [r["summary"] for r in payload["results"]] == ["found it"] * 10


async def test_a_short_goal_and_results_that_fit_come_back_as_they_were(tmp_path, gateways):
    goals = ["alpha", "x" * COMPLETION_GOAL_CHARS]
    answer = " ".join(["finding"] * 3_000)
    _, payload = await completion_text(tmp_path, gateways, goals, lambda r: {"text": answer})
    assert payload["goals"] == goals
    assert [r["summary"] for r in payload["results"]] == [answer] * 2
    assert all("summary_truncated" not in r for r in payload["results"])


async def test_long_summaries_share_half_the_context_window_each_kept_whole_in_the_chats_folder(tmp_path, gateways):
    # Ten children at the 24,000-character summary budget: 240,000 characters, about 60,000 tokens, for a
    # model whose window is 32,000 tokens: the turn could never be answered.
    answers = {f"job {n}": f"answer {n}: " + " ".join(["finding"] * 2_998) for n in range(10)}  # 23,993 each
    window = 32_000
    text, payload = await completion_text(tmp_path, gateways, list(answers),
                                          lambda r: {"text": answers[r.metadata["goal"]]}, window=window)
    assert len(text) <= window // 2 * 4, len(text)  # half the window, at four characters a token
    assert len(text) > window // 2 * 3  # and not much less: the budget is used
    state = tmp_path / "state"
    for n, result in enumerate(payload["results"]):
        assert result["status"] == "completed" and result["exit_reason"] == "completed"
        assert result["summary_truncated"] is True
        assert result["summary_original_chars"] == len(answers[f"job {n}"])
        assert result["summary"].startswith(f"answer {n}: finding")
        path = result["summary_full_path"]
        assert re.search(rf"characters omitted; full text: read_file path={re.escape(path)} ", result["summary"])
        [full] = list(state.rglob(path.rpartition("/")[2]))
        assert full.read_text() == answers[f"job {n}"]


def test_a_goal_without_a_space_near_the_cut_is_cut_between_whole_characters():
    flags = "🇩🇪" * 300  # 600 characters, each flag two: cut at an odd count, one showed as a stray letter
    assert at_word(flags, 501) == "🇩🇪" * 250
    assert at_word("word " * 60 + "x" * 300, 500) == ("word " * 60).rstrip()  # the space in the second half
    assert at_word("line\n" * 100, 300) == ("line\n" * 60).rstrip()
    assert at_word("short", 500) == "short"


async def test_long_errors_share_half_the_context_window_too_each_saying_how_much_was_left_out(tmp_path, gateways):
    # Each error was bounded on its own only, at 4,000 characters: ten came to over 40,000 characters, about
    # 10,000 tokens, for a model whose window is 8,192: over half of it, and over all of it with the goals.
    detail = " ".join(["the upstream refused the request"] * 200)
    window = 8_192
    text, payload = await completion_text(tmp_path, gateways, [f"job {n}" for n in range(10)],
                                          lambda r: {"error": "server_error", "message": f"{r.metadata['goal']}: "
                                                     + detail}, window=window, failed=True)
    assert len(text) <= window // 2 * 4, len(text)  # half the window, at four characters a token
    for n, result in enumerate(payload["results"]):
        assert result["status"] == "failed"
        shown, note = result["error"].split(" [... ")
        whole = f"job {n}: {detail}"
        assert whole.startswith(shown) and whole[len(shown)] == " " and len(shown) > 300
        assert note == f"{len(whole) - len(shown):,} more characters of the error not shown]"
