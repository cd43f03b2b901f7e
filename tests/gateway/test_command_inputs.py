"""Commands given what they cannot use: words of thousands of characters, and the ids of another
chat's subagents, which must be refused, never acted on."""

from __future__ import annotations

from gateway.testing import RecordingAdapter, settled
from tests.gateway.test_agents_command import config, parent
from tests.gateway.wire import is_child

HUGE = "x" * 5000


async def command(chat: RecordingAdapter, text: str, where: str = "c1") -> str:
    answers = len(chat.texts("command"))
    await chat.say(text, chat=where)
    await chat.wait_for(lambda: len(chat.texts("command")) > answers)
    return chat.texts("command")[-1]


async def test_a_huge_id_or_backend_is_named_back_cut_short(tmp_path, llm, gateways):
    # Named back whole, a 5,000-character word made the bot post it again: over several messages on
    # Telegram or Discord, where any group member could have it do so at will.
    server = await llm()
    server.respond_with(parent({"tasks": [{"goal": "one"}, {"goal": "two"}]}, lambda body: {"hang": True}))
    chat = RecordingAdapter()
    await gateways(config(tmp_path, server), [chat])
    await chat.say("go")
    await chat.wait_for(lambda: chat.texts("reply") == ["on it"])
    for text in (f"/agents log {HUGE}", f"/agents stop {HUGE}", f"/agents retry sa-{HUGE}", f"/delegation {HUGE}",
                 f"/delegation {HUGE} --now"):
        answer = await command(chat, text)
        assert len(answer) < 300 and "xxxx…" in answer, answer[:100]


async def test_another_chats_subagents_cannot_be_stopped_retried_or_read(tmp_path, llm, gateways):
    server = await llm()
    server.respond_with(parent({"goal": "private work"}, lambda body: {"hang": True}))
    chat = RecordingAdapter()
    gateway = await gateways(config(tmp_path, server), [chat])
    await chat.say("go")
    await server.wait_for(lambda: any(is_child(b) for b in server.requests))
    session = gateway.sessions.find("chat", "c1", None)
    (child,) = gateway.host.children.children(session.session_id)
    await command(chat, "/help", where="c2")  # c2 has a session of its own, without subagents
    for action in ("stop", "retry", "log"):
        assert await command(chat, f"/agents {action} {child.subagent_id}", where="c2") == "No subagents in this chat."
    await chat.say("hi", chat="c3")  # one with subagents of its own
    await chat.wait_for(lambda: len(chat.texts("reply")) == 2)
    for action in ("stop", "retry", "log"):
        answer = await command(chat, f"/agents {action} {child.subagent_id}", where="c3")
        assert answer == f"No subagent {child.subagent_id!r} in this session: /agents lists them."
    assert child.subagent_id not in await command(chat, "/agents", where="c3")
    await command(chat, "/stop", where="c3")  # stops c3's own subagent only
    assert [c.subagent_id for c in gateway.host.children.children(session.session_id)] == [child.subagent_id]
    await command(chat, f"/agents stop {child.subagent_id}")  # its own chat may
    await gateway.host.children.wait_finished([child.subagent_id])
    await settled(gateway)
