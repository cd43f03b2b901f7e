"""A busy Telegram group stays inside Telegram's flood limits, end to end: one turn fans out a
background batch of ten subagents whose card changes as each one finishes, another member asks
questions meanwhile, and the results come back as an answer long enough to be split. The fake
enforces Telegram's limits (one message a second per chat, 20 a minute per group, 30 a second
overall, edits counted) on the gateway's own fake clock, so minutes of pacing pass in a moment.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.app import Gateway
from gateway.testing import make_config, settled, start_gateway
from platforms.fakes._telegram_flood import FloodControl
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter
from tests.clock_steps import run_clock, run_clock_until

BOT = "sb_flood_bot"
GROUP = -1001234567
ALICE = dict(chat_type="supergroup", user_id=5, username="alice")
BOB = dict(chat_type="supergroup", user_id=6, username="bob")
GOALS = [f"survey source {n}" for n in range(1, 11)]
QUESTIONS = ["what time is it?", "is the build green?", "who is on call?", "where are the logs?", "any news?"]


def final_answer() -> str:
    """Paragraphs enough for three Telegram messages, each line saying where it belongs."""
    return "\n\n".join(f"Finding {n:03}: " + " ".join(["the sources agree on this point."] * 6) for n in range(1, 61))


def parent(request: ModelRequest) -> dict:
    last = request.messages[-1]
    said = str(last["content"])
    if last["role"] == "tool":
        return {"text": "On it: ten subagents are surveying the sources."}
    if "Background delegation results" in said:
        return {"text": final_answer()}
    if "fan out" in said:
        return {"tool_calls": [{"name": "delegate_task", "arguments": {"tasks": [{"goal": g} for g in GOALS]}}]}
    question = next(q for q in QUESTIONS if q in said)
    return {"text": f"Answer to {question!r}"}


def child(request: ModelRequest) -> dict:
    goal = request.metadata["goal"]
    return {"wait": goal, "text": f"notes on {goal}"}


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(username=BOT) as fake:
        yield fake


def busiest(flood: FloodControl, seconds: float) -> int:
    """The most writes to the group in any ``seconds`` (the window ending at each write)."""
    stamps = [w.at for w in flood.writes if w.chat_id == str(GROUP)]
    return max(sum(1 for t in stamps if end - seconds < t <= end) for end in stamps)


async def fan_out_gateway(fake, tmp_path) -> tuple[FakeClock, FloodControl, ScriptedModel, Gateway]:
    """A gateway on the fake Telegram with its flood limits on, on a fake clock, whose model fans
    out (`parent`, `child`): the clock, the limits, the model and the gateway."""
    clock = FakeClock(autojump=False)
    flood = fake.enforce_flood_limits(clock)
    config = make_config(tmp_path, platforms={"telegram": {"allow_all": True}}, display={"progress_delay": 1.0})
    model = ScriptedModel({"parent": parent, "leaf": child})
    adapter = TelegramAdapter(fake.token, api_base=fake.base_url, polling_timeout=10)
    return clock, flood, model, await start_gateway(config, [adapter], model=model, clock=clock)


@pytest.mark.parametrize("topics", [None, (11, 12)], ids=["group", "forum-topics"])
async def test_a_fan_out_in_a_busy_group_gets_no_429_and_every_answer_whole_and_in_order(fake, tmp_path, topics):
    """``topics``: alice and bob write in two topics of a forum group, one chat to Telegram."""
    alice, bob = (ALICE, BOB) if topics is None else ({**ALICE, "thread_id": topics[0]}, {**BOB, "thread_id": topics[1]})
    clock, flood, model, gateway = await fan_out_gateway(fake, tmp_path)
    try:
        await fake.wait_for(lambda: fake.calls_to("getUpdates"))
        fake.push_message(GROUP, f"@{BOT} please fan out over the sources", **alice)
        for goal in GOALS:
            await model.reached(goal)
        said = lambda: fake.messages[str(GROUP)]  # noqa: E731
        await run_clock_until(fake, clock, lambda: any(m["silent"] and "0 of 10 done" in m["text"] for m in said()))
        card = next(m for m in said() if m["silent"] and "0 of 10 done" in m["text"])  # the delegation's
        for n, goal in enumerate(GOALS):
            if n % 2:  # bob asks meanwhile, while the card keeps changing
                fake.push_message(GROUP, f"@{BOT} {QUESTIONS[n // 2]}", **bob)
            await run_clock(fake, clock, 5.0)
            model.release(goal)
            if n == 4:  # the card follows them
                await run_clock_until(fake, clock, lambda: any(" of 10 done" in e for e in card["edits"]))
        parts = lambda: [m["text"] for m in said() if m["text"].startswith("Finding")]  # noqa: E731
        await run_clock_until(fake, clock, lambda: "\n\n".join(parts()) == final_answer() and gateway.quiet)
        await run_clock(fake, clock, 10.0)  # anything still to come has its time
        await settled(gateway)

        assert flood.refused == []  # not one 429
        answers = [m["text"] for m in said() if not m["silent"]]
        assert answers[0] == "On it: ten subagents are surveying the sources."
        assert [a for a in answers if a.startswith("Answer")] == [f"Answer to {q!r}" for q in QUESTIONS]
        assert "\n\n".join(parts()) == final_answer()  # whole, in order, once
        assert len(parts()) > 1 and answers[-len(parts()):] == parts()  # split, its parts last and together
        assert len(answers) == 1 + len(QUESTIONS) + len(parts())  # nothing else, nothing twice
        *progress, final = card["edits"]  # edits are coalesced: only the newest state goes out
        assert card["text"] == final and final.startswith("✓ Done in") and final.endswith("· 10 subagents")
        assert progress and all(e.startswith("⏳ Waiting for subagents:") for e in progress)

        minute, second = busiest(flood, 60.0), busiest(flood, 1.0)
        print(f"\n{len(flood.writes)} writes to the group over {flood.writes[-1].at - flood.writes[0].at:.0f} s; "
              f"busiest minute {minute} (limit 20), busiest second {second} (limit 1); 429s: {len(flood.refused)}")
        assert minute <= 20 and second <= 1
    finally:
        await gateway.stop(grace=0)


async def test_a_fan_out_in_a_private_chat_gets_no_429_and_every_answer_whole_and_in_order(fake, tmp_path):
    """A private chat has Telegram's one message a second too: the card's edits, the answers to the
    questions asked meanwhile and the parts of the long answer share it."""
    user = dict(chat_type="private", user_id=5, username="alice")
    chat = user["user_id"]
    clock, flood, model, gateway = await fan_out_gateway(fake, tmp_path)
    try:
        await fake.wait_for(lambda: fake.calls_to("getUpdates"))
        fake.push_message(chat, "please fan out over the sources", **user)
        for goal in GOALS:
            await model.reached(goal)
        said = lambda: fake.messages[str(chat)]  # noqa: E731
        await run_clock_until(fake, clock, lambda: any(m["silent"] and "0 of 10 done" in m["text"] for m in said()))
        card = next(m for m in said() if m["silent"] and "0 of 10 done" in m["text"])
        for n, goal in enumerate(GOALS):
            if n % 2:
                fake.push_message(chat, QUESTIONS[n // 2], **user)
            await run_clock(fake, clock, 2.0)
            model.release(goal)
        parts = lambda: [m["text"] for m in said() if m["text"].startswith("Finding")]  # noqa: E731
        await run_clock_until(fake, clock, lambda: "\n\n".join(parts()) == final_answer() and gateway.quiet)
        await run_clock(fake, clock, 10.0)
        await settled(gateway)

        assert flood.refused == []  # not one 429
        answers = [m["text"] for m in said() if not m["silent"]]
        assert answers[0] == "On it: ten subagents are surveying the sources."
        assert [a for a in answers if a.startswith("Answer")] == [f"Answer to {q!r}" for q in QUESTIONS]
        assert "\n\n".join(parts()) == final_answer() and len(parts()) > 1  # whole, in order, once
        assert len(answers) == 1 + len(QUESTIONS) + len(parts())  # nothing else, nothing twice
        assert card["text"].startswith("✓ Done in")
        second = max(sum(1 for w in flood.writes if end.at - 1.0 < w.at <= end.at) for end in flood.writes)
        assert second <= 1
    finally:
        await gateway.stop(grace=0)
